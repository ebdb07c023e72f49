import { InstanceHandle } from './instance.js'
import { KeyedCollection } from './keyed-collection.js'
import type { JsonValue } from './types.js'

/**
 * A fleet to generate (`sim.instances.generate`): `count` instances of the model `template`.
 * `name` is a pattern with `{i}` or `{i:04}` (zero-padded), or a prefix `P` for `P_0`, `P_1`, ...
 * (default: the model's name as prefix); `i` runs from `start` (default 0). Each parameter is a
 * value, `{cycle: [...]}`, `{range: [first, step]}` or `{format: 'dev_{i:04}'}`.
 */
export interface GenerateOptions {
  template: string
  count: number
  name?: string
  start?: number
  parameters?: Record<string, JsonValue>
  init_parameters?: Record<string, JsonValue>
}

/**
 * What `generate` made: how many, the first and last name, at most 100 names (`truncated` when
 * there were more); on a shard also `skipped` (owned by other shards) and `shard` (`"2/3"`).
 */
export interface GenerateResult {
  created: number
  first: string | null
  last: string | null
  names: string[]
  truncated?: true
  skipped?: number
  shard?: string
}

/**
 * The instances (`sim.instances`): create one from a model name, many from a template, list,
 * delete, or get a handle.
 *
 * @example
 * const s1 = await sim.instances.set('s1', 'pt100')
 * await sim.instances.keys() // [..., 's1']
 * await sim.instances.at('s1').prepare()
 * await sim.instances.delete('s1')
 * await sim.instances.generate({ template: 'meter', count: 1000, name: 'meter_{i:04}', parameters: { port: { range: [5020, 1] } } })
 */
export class InstancesCollection extends KeyedCollection {
  /** Creates the instance `name` of `model` (404 MimicApiError when the model is unknown). */
  async set(name: string, model: string): Promise<InstanceHandle> {
    await this.upsert(name, model)
    return this.at(name)
  }

  /**
   * Creates `count` instances of a model at once (`POST instances/method/generate`). All or
   * nothing: any problem is a 422 MimicApiError whose `details` name each (`kwargs.count`,
   * `kwargs.parameters.port`), and nothing is created.
   */
  async generate(options: GenerateOptions): Promise<GenerateResult> {
    return await this.node.call<GenerateResult>('generate', { ...options })
  }

  /** A handle on the instance; no request yet. */
  at(name: string): InstanceHandle {
    return new InstanceHandle(this.transport, [...this.node.segments, name])
  }
}
