import { plainJson } from '../values/number.js'
import { NotFoundError, ValidationError } from '../errors.js'
import type { ActionRuntime, BehaviourHost, HostAttribute, InstanceBehaviour, ScenarioRuntime } from '../language/model/index.js'
import type { TimeCells } from '../language/model/soa/store.js'
import { Component, noArguments, type MethodHandler } from '../tree/component.js'
import type { Attribute } from './attributes.js'
import { UnsupportedAdapterNode } from './communication.js'
import { floatDocumentJson, floatPropertyJson } from '../values/float-properties.js'

/** What the host needs of its instance. */
export interface HostInstance extends Component {
  readonly attributes: { get(name: string): Attribute | undefined }
  readonly parameters: Readonly<Record<string, unknown>>
  readonly timer: { pin(time: number): void; readonly time: number; readonly dt: number; attachCells(cells: TimeCells | undefined): void }
  warn(message: string, context: Record<string, unknown>): void
  evaluateInWorker(index: number, values: string): Promise<string>
  readonly communication: { unservedKind(name: string): string | undefined }
}

/**
 * An instance as its declarative behaviour sees it (src/language/model/runtime.ts): attributes
 * by name, parameters, and dotted paths from the instance (`communication.modbus_slave.detach`,
 * `polling.interval`) or from the system root (`~.timer.dt`).
 *
 * @example
 * const host = new InstanceHost(instance)
 * host.lookup('timer.dt') // { value: 1 }
 */
export class InstanceHost implements BehaviourHost {
  readonly #instance: HostInstance
  /** Paths into adapters Mimic does not serve that were skipped (each is said once); made on the first. */
  #skipped: Set<string> | undefined

  constructor(instance: HostInstance) {
    this.#instance = instance
  }

  get name(): string {
    return this.#instance.name
  }

  get time(): number {
    return this.#instance.timer.time
  }

  get dt(): number {
    return this.#instance.timer.dt
  }

  attribute(name: string): HostAttribute | undefined {
    return this.#instance.attributes.get(name)
  }

  parameter(name: string): unknown {
    return this.#instance.parameters[name]
  }

  lookup(path: string): { value: unknown } | undefined {
    const parts = this.#split(path)
    if (!parts) return undefined
    const { node, last } = parts
    if (last === undefined) return undefined
    const child = node.child(last)
    if (child?.type === 'Attribute') return { value: (child as Attribute).internalValue }
    // An adapter of a protocol Mimic does not serve answers every property with its default.
    if (node instanceof UnsupportedAdapterNode) return { value: node.property(last) }
    const props = node.properties()
    const name = last === 'default_step' && node.type === 'Timer' ? 'dt' : last
    return Object.hasOwn(props, name) ? { value: props[name] } : undefined
  }

  pinTime(time: number): void {
    this.#instance.timer.pin(time)
  }

  attachTime(cells: TimeCells | undefined): void {
    this.#instance.timer.attachCells(cells)
  }

  async callPath(path: string, args: unknown[], kwargs: Record<string, unknown>): Promise<unknown> {
    if (this.#unserved(path)) return null
    const parts = this.#split(path)
    if (!parts || parts.last === undefined) throw new NotFoundError(`'${path}' names no method on instance '${this.name}'`, [{ path, message: 'not found' }])
    // Arguments written in the model keep `2.0` a float (src/values/number.ts) only for a method that tells
    // them apart (a Python method); a built-in one takes plain JSON, as from HTTP.
    const call = { args, kwargs }
    return await parts.node.call(parts.last, parts.node.keepsFloatsIn(parts.last) ? call : (plainJson(call) as typeof call))
  }

  async readPath(path: string): Promise<{ value: unknown } | undefined> {
    // An override of an unserved adapter's setting holds nothing: its write is skipped too.
    if (this.#unserved(path)) return { value: null }
    return this.lookup(path)
  }

  async writePath(path: string, value: unknown): Promise<void> {
    if (this.#unserved(path)) return
    const parts = this.#split(path)
    if (!parts || parts.last === undefined) throw new NotFoundError(`'${path}' names no property on instance '${this.name}'`, [{ path, message: 'not found' }])
    await parts.node.setProperty(parts.last, value)
  }

  async suspendPath(path: string): Promise<(() => Promise<void>) | undefined> {
    if (this.#unserved(path)) return async () => undefined
    const node = this.#node(path)
    if (!node) return undefined
    const methods = node.methods()
    const props = node.properties()
    const none = { args: [], kwargs: {} }
    if (typeof props.enabled === 'boolean') {
      const before = props.enabled
      await node.setProperty('enabled', false)
      return async () => node.setProperty('enabled', before)
    }
    if (methods.disable && methods.enable) {
      await node.call('disable', none)
      return async () => void (await node.call('enable', none))
    }
    if (methods.detach && methods.attach) {
      await node.call('detach', none)
      return async () => void (await node.call('attach', none))
    }
    throw new ValidationError(`'${path}' on instance '${this.name}' cannot be suspended (it has no enabled property, disable or detach)`, [
      { path, message: 'cannot be suspended' },
    ])
  }

  warn(message: string, context: Record<string, unknown>): void {
    this.#instance.warn(message, context)
  }

  evaluate(index: number, values: string): Promise<string> {
    return this.#instance.evaluateInWorker(index, values)
  }

  /**
   * Whether a path is into an adapter of a protocol Mimic does not serve
   * (`communication.lwm2m_client.detach`): the model runs without that protocol, so what the path
   * would do is skipped, and said once.
   */
  #unserved(path: string): boolean {
    const adapter = /^communication\.([^.]+)/.exec(path)?.[1]
    const kind = adapter === undefined ? undefined : this.#instance.communication.unservedKind(adapter)
    if (kind === undefined) return false
    const skipped = (this.#skipped ??= new Set())
    if (!skipped.has(path)) {
      skipped.add(path)
      this.#instance.warn(`'${path}' is on the ${kind} adapter, which Mimic does not serve: skipped`, { path, protocol: kind })
    }
    return true
  }

  /** The node a whole path names, or undefined. */
  #node(path: string): Component | undefined {
    const parts = this.#split(path)
    if (!parts) return undefined
    return parts.last === undefined ? parts.node : parts.node.child(parts.last)
  }

  /** The node of every part but the last, and the last part. */
  #split(path: string): { node: Component; last: string | undefined } | undefined {
    let node: Component = this.#instance
    let text = path
    if (text.startsWith('~')) {
      while (node.parent) node = node.parent
      text = text.replace(/^~\.?/, '')
    }
    const segments = text.split('.').filter((s) => s !== '')
    const last = segments.pop()
    for (const segment of segments) {
      const next = node.child(segment)
      if (!next) return undefined
      node = next
    }
    return { node, last }
  }
}

/**
 * `instances/<i>/actions`: the model's actions on this instance, each a node whose `enabled`
 * can be switched while it runs (the dashboard's toggle).
 */
export class ActionsNode extends Component {
  readonly type = 'Actions'
  readonly #behaviour: InstanceBehaviour
  /** Made when first asked for: ten thousand instances stepping need no nodes. */
  #nodes: Map<string, ActionNode> | undefined

  constructor(parent: Component, behaviour: InstanceBehaviour) {
    super('actions', parent)
    this.#behaviour = behaviour
  }

  #all(): Map<string, ActionNode> {
    this.#nodes ??= new Map(this.#behaviour.actions.map((a) => [a.plan.name, new ActionNode(this, a)]))
    return this.#nodes
  }

  override children(): Component[] {
    return [...this.#all().values()]
  }

  override child(name: string): Component | undefined {
    return this.#all().get(name)
  }
}

/** One action of an instance: its kind, targets and where it sits in the model; `enabled` is settable. */
export class ActionNode extends Component {
  readonly type = 'Action'
  readonly #runtime: ActionRuntime

  constructor(parent: Component, runtime: ActionRuntime) {
    super(runtime.plan.name, parent)
    this.#runtime = runtime
  }

  override properties(): Record<string, unknown> {
    const plan = this.#runtime.plan
    const props: Record<string, unknown> = { kind: plan.kind, enabled: this.#runtime.enabled, targets: [...plan.targets], model_path: plan.path }
    if (plan.description !== undefined) props.description = plan.description
    return props
  }

  override propertyProblem(name: string, value: unknown): string | null {
    if (name === 'enabled') return typeof value === 'boolean' ? null : 'expected true or false'
    return super.propertyProblem(name, value)
  }

  override async setProperty(name: string, value: unknown): Promise<void> {
    if (name !== 'enabled') return await super.setProperty(name, value)
    const problem = this.propertyProblem(name, value)
    if (problem) throw new ValidationError(`Property 'enabled' of '${this.displayPath}': ${problem}`, [{ path: 'enabled', message: problem }])
    this.#runtime.enabled = value as boolean
  }

  override methods(): Record<string, MethodHandler> {
    return {
      enable: noArguments(() => ((this.#runtime.enabled = true), true)),
      disable: noArguments(() => ((this.#runtime.enabled = false), true)),
    }
  }
}

/**
 * `instances/<i>/scenarios`: the model's scenarios on this instance (MODEL_LANGUAGE.md section 6),
 * each a node with `start` and `stop`.
 */
export class ScenariosNode extends Component {
  readonly type = 'Scenarios'
  readonly #nodes: Map<string, ScenarioNode>

  constructor(parent: Component, behaviour: InstanceBehaviour, time: () => number) {
    super('scenarios', parent)
    this.#nodes = new Map(behaviour.scenarios.map((s) => [s.plan.name, new ScenarioNode(this, s, time)]))
  }

  override children(): Component[] {
    return [...this.#nodes.values()]
  }

  override child(name: string): Component | undefined {
    return this.#nodes.get(name)
  }
}

const SCENARIO_FLOATS: ReadonlySet<string> = new Set(['elapsed', 'duration', 'period'])

/** One scenario of an instance: `state` (idle, active, finished), `elapsed` (its own time), `runs`. */
export class ScenarioNode extends Component {
  readonly type = 'Scenario'
  readonly #runtime: ScenarioRuntime
  readonly #time: () => number

  constructor(parent: Component, runtime: ScenarioRuntime, time: () => number) {
    super(runtime.plan.name, parent)
    this.#runtime = runtime
    this.#time = time
  }

  override get state(): string {
    return this.#runtime.state
  }

  override properties(): Record<string, unknown> {
    const plan = this.#runtime.plan
    const props: Record<string, unknown> = { display_name: plan.displayName, elapsed: this.#runtime.elapsed, runs: this.#runtime.runs }
    if (plan.description !== undefined) props.description = plan.description
    if (plan.duration !== undefined) props.duration = plan.duration
    if (plan.period !== undefined) props.period = plan.period
    if (plan.runLimit !== undefined) props.run_limit = plan.runLimit
    props.enabled = plan.enabled
    return props
  }

  /** Its seconds (`elapsed`, `duration`, `period`) are floats to a Python client even when integral. */
  override documentJson(): string {
    return floatDocumentJson(this, SCENARIO_FLOATS)
  }

  override propertyJson(name: string): string | undefined {
    return floatPropertyJson(this, name, SCENARIO_FLOATS)
  }

  override methods(): Record<string, MethodHandler> {
    return {
      start: noArguments(async () => (await this.#runtime.start(this.#time()), true)),
      stop: noArguments(async () => (await this.#runtime.stop(), true)),
    }
  }
}
