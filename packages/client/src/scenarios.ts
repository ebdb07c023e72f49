import { MimicApiError } from './errors.js'
import { MimicNode } from './node.js'
import type { JsonObject, JsonValue, NodeDocument } from './types.js'

/**
 * One scenario of an instance as {@link ScenariosHandle.list} reports it.
 *
 * @example
 * const sag: ScenarioInfo = (await sim.instances.at('meter').scenarios.list())[0]
 * sag.state // 'idle' | 'active' | 'finished'
 */
export interface ScenarioInfo {
  name: string
  display_name: string
  /** `idle` (never started), `active` (running), `finished` (ended by stop or its duration). */
  state: string
  /** Simulated seconds since its last start. */
  elapsed: number
  /** How many times it has started. */
  runs: number
  description?: string
  /** Simulated seconds it lasts; absent when it runs until stopped. */
  duration?: number
  /** Simulated seconds between starts when it repeats. */
  period?: number
  run_limit?: number
  /** Whether it starts with the instance. */
  enabled: boolean
}

/**
 * The `scenarios` node of an instance (docs/model-language.md, Scenarios): the situations the
 * model can be put in on demand, each started and stopped by name.
 *
 * @example
 * const scenarios = sim.instances.at('meter').scenarios
 * await scenarios.start('voltage_sag')
 * (await scenarios.info('voltage_sag')).state // 'active'
 * await scenarios.stop('voltage_sag')            // every overridden value is put back
 */
export class ScenariosHandle extends MimicNode {
  /** A handle on one scenario's node; no request yet. */
  at(name: string): MimicNode {
    return this.node([name])
  }

  /** Every scenario of the instance with its state, in the model's order ([] for a model without scenarios). */
  async list(): Promise<ScenarioInfo[]> {
    let names: string[]
    try {
      names = await this.keys()
    } catch (err) {
      // An instance whose model declares no scenarios has no `scenarios` node: none to list.
      // The instance itself must exist; asking for it throws its own 404 when it does not.
      if (!(err instanceof MimicApiError) || err.status !== 404) throw err
      await new MimicNode(this.transport, this.segments.slice(0, -1)).get()
      return []
    }
    return await Promise.all(names.map(async (name) => await this.info(name)))
  }

  /** One scenario's state and settings (404 MimicApiError when the model has none of this name). */
  async info(name: string): Promise<ScenarioInfo> {
    return scenarioInfo(await this.at(name).get())
  }

  /** Starts a scenario (its overrides apply at once); starting an active one starts it again. */
  async start(name: string): Promise<boolean> {
    return await this.at(name).call<boolean>('start')
  }

  /** Stops a scenario and puts back every value it overrode. */
  async stop(name: string): Promise<boolean> {
    return await this.at(name).call<boolean>('stop')
  }
}

function scenarioInfo(doc: NodeDocument): ScenarioInfo {
  const attr = (key: string): JsonValue | undefined => doc.attr[key]?.value
  const info: ScenarioInfo = {
    name: doc.name,
    display_name: String(attr('display_name') ?? doc.name),
    state: String(doc.state ?? attr('state')),
    elapsed: Number(attr('elapsed') ?? 0),
    runs: Number(attr('runs') ?? 0),
    enabled: attr('enabled') === true,
  }
  const description = attr('description')
  if (typeof description === 'string') info.description = description
  for (const key of ['duration', 'period', 'run_limit'] as const) {
    const value = attr(key)
    if (typeof value === 'number') info[key] = value
  }
  return info
}

/**
 * A protocol adapter of an instance (`communication/<key>`). On a Modbus adapter the faults
 * (docs/modbus-faults.md) are one property, `faults`, set here as a whole.
 *
 * @example
 * const modbus = sim.instances.at('plc').adapter('modbus_slave')
 * await modbus.setFaults({ exception: { code: 6, functions: [3] }, clear_after: { requests: 2 } })
 * await modbus.faults()      // { exception: { code: 6, functions: [3] }, clear_after: { requests: 2 } }
 * await modbus.clearFaults() // normal service at once
 */
export class AdapterHandle extends MimicNode {
  /** The faults in force, `{}` when none. */
  async faults(): Promise<JsonObject> {
    return ((await this.read('faults')) ?? {}) as JsonObject
  }

  /**
   * Replaces the faults in force with `value` and resolves to what the server kept. A bad value
   * rejects with a 422 MimicApiError naming each problem (`value.exception.code`), and the faults
   * in force stay as they were.
   */
  async setFaults(value: JsonObject): Promise<JsonObject> {
    return ((await this.set('faults', value)) ?? {}) as JsonObject
  }

  /** Ends every fault: normal service from the next request. */
  async clearFaults(): Promise<JsonObject> {
    return await this.setFaults({})
  }

  /** What the adapter counted (requests, errors and the `fault_*` counters). */
  async counters(): Promise<Record<string, number>> {
    return ((await this.read('counters')) ?? {}) as Record<string, number>
  }
}
