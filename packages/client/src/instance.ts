import { AttributesHandle } from './attribute.js'
import { LogsHandle } from './logs.js'
import { MimicNode } from './node.js'
import { PollingHandle } from './polling.js'
import { AdapterHandle, ScenariosHandle } from './scenarios.js'
import type { MimicState } from './types.js'

/**
 * Options of {@link InstanceHandle.run}.
 *
 * @example
 * await sim.instances.at('s1').run({ dt: 0.5 })
 */
export interface InstanceRunOptions {
  /** Simulated seconds of this step; the instance timer's `dt` when omitted. */
  dt?: number
}

/**
 * A handle on one instance, from `sim.instances.at(name)`. Creating it sends nothing.
 *
 * @example
 * const s1 = sim.instances.at('s1')
 * await s1.polling.disable()
 * await s1.prepare()
 * await s1.run()
 * await s1.call('calibrate', { offset: 0.5 })
 * await s1.scenarios.start('voltage_sag')
 * await s1.adapter('modbus_slave').setFaults({ no_response: { every: 3 } })
 */
export class InstanceHandle extends MimicNode {
  readonly polling: PollingHandle
  readonly attributes: AttributesHandle
  /** The instance's timer (properties `time`, `dt`; method `reset`). */
  readonly timer: MimicNode
  /** Protocol adapters by key, e.g. `communication.node('modbus_slave')`. */
  readonly communication: MimicNode
  /** The log records about this instance (its Python output, its faults). */
  readonly logs: LogsHandle
  /** The model's scenarios on this instance: `list()`, `start(name)`, `stop(name)`. */
  readonly scenarios: ScenariosHandle

  constructor(...args: ConstructorParameters<typeof MimicNode>) {
    super(...args)
    this.polling = new PollingHandle(this.transport, [...this.segments, 'polling'])
    this.attributes = new AttributesHandle(this.transport, [...this.segments, 'attributes'])
    this.timer = this.node('timer')
    this.communication = this.node('communication')
    this.logs = new LogsHandle(this.transport, [...this.segments, 'logs'])
    this.scenarios = new ScenariosHandle(this.transport, [...this.segments, 'scenarios'])
  }

  /** A handle on one protocol adapter by key (`'modbus_slave'`), with its faults; no request yet. */
  adapter(key: string): AdapterHandle {
    return new AdapterHandle(this.transport, [...this.segments, 'communication', key])
  }

  /** The instance's name. */
  get name(): string {
    return this.segments[this.segments.length - 1] ?? ''
  }

  /** Loads the model's Python class (if any), binds it and starts its adapters. */
  async prepare(): Promise<boolean> {
    return await this.call<boolean>('prepare')
  }

  /** Advances the instance by one step (the model's `run` method). */
  async run(options: InstanceRunOptions = {}): Promise<boolean> {
    return await this.call<boolean>('run', options.dt === undefined ? {} : { dt: options.dt })
  }

  /** Starts background polling (stepping on its own) unless polling is disabled. */
  async start(): Promise<boolean> {
    return await this.call<boolean>('start')
  }

  async stop(): Promise<boolean> {
    return await this.call<boolean>('stop')
  }

  async reset(): Promise<boolean> {
    return await this.call<boolean>('reset')
  }

  /** The lifecycle state (`INITIALIZED`, `PREPARED`, `RUNNING`, `STOPPED`, `ERROR`). */
  async state(): Promise<MimicState> {
    return await this.read<MimicState>('state')
  }

  /** Name of the model the instance uses. */
  async model(): Promise<string> {
    return await this.read<string>('model')
  }
}
