import { InstanceHandle } from './instance.js'
import { KeyedCollection } from './keyed-collection.js'

/**
 * The instances (`sim.instances`): create one from a model name, list, delete, or get a handle.
 *
 * @example
 * const s1 = await sim.instances.set('s1', 'pt100')
 * await sim.instances.keys() // [..., 's1']
 * await sim.instances.at('s1').prepare()
 * await sim.instances.delete('s1')
 */
export class InstancesCollection extends KeyedCollection {
  /** Creates the instance `name` of `model` (404 MimicApiError when the model is unknown). */
  async set(name: string, model: string): Promise<InstanceHandle> {
    await this.upsert(name, model)
    return this.at(name)
  }

  /** A handle on the instance; no request yet. */
  at(name: string): InstanceHandle {
    return new InstanceHandle(this.transport, [...this.node.segments, name])
  }
}
