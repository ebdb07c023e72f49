import { ValidationError } from '../errors.js'
import { unmarked } from '../values/number.js'
import { attributeDeclarations, LIFECYCLE_METHODS } from '../definition/model-schema.js'
import { stepInstance, type RefusedValues, type StepContext, type Steppable, type TypeProblem } from '../engine/index.js'
import { modelBehaviour, type InstanceBehaviour } from '../language/model/index.js'
import { Component, noArguments, type CallArgs, type MethodHandler } from '../tree/component.js'
import type { StructureLock } from '../tree/lock.js'
import { Attributes, declarationIndex, type AttributeOwner } from './attributes.js'
import { ActionsNode, InstanceHost, ScenariosNode } from './behaviour-host.js'
import { Communication } from './communication.js'
import { InstanceLifecycle, type InstanceState } from './instance-lifecycle.js'
import { ImportStatus, InstancePython, type Binding } from './instance-python.js'
import { Logs } from './logs.js'
import type { Model } from './models.js'
import { Polling } from './polling.js'
import type { SystemServices } from './services.js'
import { Timer } from './timer.js'
import type { BodyValues } from '../values/request.js'

export type { InstanceState } from './instance-lifecycle.js'

/** The model's attribute declarations, with the start values given for this instance. */
function startValues(parsed: Model['parsed'], initValues: Record<string, unknown> | undefined): ReturnType<typeof attributeDeclarations> {
  const declared = attributeDeclarations(parsed)
  if (initValues === undefined) return declared
  return declared.map((d) => (Object.hasOwn(initValues, d.name) ? { ...d, default: initValues[d.name] } : d))
}
/**
 * A running copy of a model: the tree's shape under it (attributes, timer, polling, protocol
 * adapters, actions, scenarios, logs, its `import` status) and the routing of calls to it. What
 * it does is held by its parts: its lifecycle (instance-lifecycle.ts), its Python binding
 * (instance-python.ts), its saved state (instance-saved-state.ts). What a step does is the
 * engine's (src/engine/instance-step.ts); the instance answers what the engine asks (Steppable).
 *
 * @example
 * await instance.call('prepare', { args: [], kwargs: {} })
 * await instance.call('run', { args: [], kwargs: {} })
 */
export class Instance extends Component implements AttributeOwner, Steppable {
  readonly type = 'Instance'
  // `PUT instances/<i>` {"<attr>": v} writes attribute values.
  override get bodyValues(): BodyValues {
    return 'values'
  }
  readonly model: Model
  readonly attributes: Attributes
  readonly timer: Timer
  readonly polling: Polling
  readonly communication: Communication
  readonly importNode: ImportStatus | undefined
  /** The model's actions and conditions bound to this instance; undefined when it has none. */
  readonly behaviour: InstanceBehaviour | undefined
  readonly actionsNode: ActionsNode | undefined
  readonly scenariosNode: ScenariosNode | undefined
  /** Its parameters (`meta_parameters` defaults with what the instance gave). */
  readonly parameters: Readonly<Record<string, unknown>>
  /** Parameters and start values as the instance entry gave them (written back in the system's definition). */
  readonly given: { parameters?: Record<string, unknown>; init_parameters?: Record<string, unknown> } | undefined
  readonly logs: Logs
  /** Its state machine: prepare, start, stop, reset, resume. */
  readonly lifecycle: InstanceLifecycle
  /** Its Python objects, when the model imports code or its actions use its worker. */
  readonly python: InstancePython
  readonly #services: SystemServices
  readonly #lock: StructureLock

  constructor(opts: {
    name: string
    parent: Component
    model: Model
    services: SystemServices
    refused: RefusedValues
    /** The system's structure lock: its lifecycle calls and the DELETE of an attribute run under it. */
    lock: StructureLock
    /** The connections that wire an attribute of this instance (their names). */
    wiredBy: (instance: string, attribute: string) => string[]
    /** Resolved parameters and attribute start values (the caller checked them, see Instances). */
    given?: { parameters?: Record<string, unknown>; init_parameters?: Record<string, unknown> }
    parameters?: Record<string, unknown>
    initValues?: Record<string, unknown>
  }) {
    super(opts.name, opts.parent)
    this.model = opts.model
    this.#services = opts.services
    this.#lock = opts.lock
    this.parameters = opts.parameters ?? {}
    this.given = opts.given
    this.lifecycle = new InstanceLifecycle(this, opts.services)
    this.python = new InstancePython(this, opts.services, opts.refused)
    const parsed = opts.model.parsed
    const declarations = startValues(parsed, opts.initValues)
    // No closure here captures `opts` (the closures of a constructor share one context): one that
    // did kept the options and their start values alive for the life of the instance (0.16 KiB).
    const wiredBy = opts.wiredBy
    this.attributes = new Attributes(this, declarations, {
      time: () => this.timer.time,
      lock: opts.lock,
      wiredBy: (attribute) => wiredBy(this.name, attribute),
      names: declarationIndex(attributeDeclarations(parsed)),
    })
    const polling = parsed.polling ?? {}
    this.timer = new Timer(this, polling.interval ?? 1.0, parsed.timer)
    this.polling = new Polling(this, {
      interval: polling.interval,
      jitter: polling.jitter,
      maxIterations: polling.max_iterations,
      enabled: polling.enabled,
      onChange: () => this.lifecycle.pollingChanged(),
    })
    this.communication = new Communication(this, opts.model, opts.services, this.parameters)
    const communication = this.communication
    this.afterStep = communication.hearsSteps ? () => communication.afterStep() : undefined
    this.importNode = parsed.import ? new ImportStatus(this) : undefined
    const behaviour = modelBehaviour(parsed)
    this.behaviour = behaviour.empty ? undefined : behaviour.bind(new InstanceHost(this), { fused: opts.services.fusedStep !== false })
    this.actionsNode = this.behaviour && this.behaviour.actionCount > 0 ? new ActionsNode(this, this.behaviour) : undefined
    this.scenariosNode = this.behaviour && this.behaviour.scenarios.length > 0 ? new ScenariosNode(this, this.behaviour, () => this.timer.time) : undefined
    this.logs = new Logs(this, { buffer: opts.services.logs, instance: opts.name })
  }

  /** Logs a warning about this instance (behaviour that could not do something it was asked to). */
  warn(message: string, context: Record<string, unknown>): void {
    this.#services.logger.warn({ instance: this.name, ...context }, message)
  }

  override get state(): InstanceState {
    return this.lifecycle.state
  }

  get lastError(): string | null {
    return this.lifecycle.lastError
  }

  get binding(): Readonly<Binding> | undefined {
    return this.python.binding
  }

  /** Whether behaviour comes from Python (the model has an `import` block). */
  get codeDefined(): boolean {
    return this.importNode !== undefined
  }

  /** Whether some action expressions are evaluated by its Python worker (their action imports a module that is not native). */
  get usesWorker(): boolean {
    return this.behaviour?.usesWorker ?? false
  }

  override children(): Component[] {
    const list: Component[] = [this.attributes, this.timer, this.polling, this.communication, this.logs]
    if (this.actionsNode) list.push(this.actionsNode)
    if (this.scenariosNode) list.push(this.scenariosNode)
    if (this.importNode) list.push(this.importNode)
    return list
  }

  override properties(): Record<string, unknown> {
    const props: Record<string, unknown> = { state: this.lifecycle.state, model: this.model.name, last_error: this.lifecycle.lastError }
    if (Object.keys(this.parameters).length > 0) props.parameters = this.parameters
    const unsupported = [...this.communication.unsupported()].map((a) => a.kind)
    if (unsupported.length > 0) props.unsupported_protocols = [...new Set(unsupported)]
    return props
  }

  override async put(body: Record<string, unknown>): Promise<void> {
    // `PUT instances/<i>` with `{"<attr>": v}` is accepted as a shorthand for attribute values.
    await this.attributes.put(body)
  }

  override methods(): Record<string, MethodHandler> {
    const lifecycle = this.lifecycle
    const methods: Record<string, MethodHandler> = {
      prepare: noArguments(() => this.#lock.exclusive(async () => (await lifecycle.prepare(), true))),
      run: (call) => this.#runMethod(call),
      start: noArguments(() => this.#lock.exclusive(async () => (await lifecycle.start({ ownLoop: true }), true))),
      stop: noArguments(() => this.#lock.exclusive(async () => (await lifecycle.stop(), true))),
      reset: noArguments(() => this.#lock.exclusive(async () => (await lifecycle.reset(), true))),
    }
    for (const method of this.python.mappedMethods()) {
      if (!Object.hasOwn(methods, method)) methods[method] = (call) => this.python.callMapped(method, call)
    }
    return methods
  }

  /** A model method mapped to Python (not one of the lifecycle methods, which take precedence). */
  override keepsFloatsIn(method: string): boolean {
    return !LIFECYCLE_METHODS.has(method) && this.python.mappedMethods().includes(method)
  }

  /** `run` is what clients call most: answered without building the method table, or an extra promise. */
  override call(method: string, call: CallArgs): Promise<unknown> {
    return method === 'run' ? this.#runMethod(call) : super.call(method, call)
  }

  async #runMethod(call: CallArgs): Promise<boolean> {
    await this.run(numberKwarg(call, 'dt'))
    return true
  }

  /** Evaluates one of its worker expressions in its Python worker (instance-python.ts). */
  evaluateInWorker(index: number, values: string): Promise<string> {
    return this.python.evaluate(index, values)
  }

  /** Whether a system step should include this instance. */
  get runnable(): boolean {
    return this.lifecycle.runnable
  }

  /** One step of this instance alone (src/engine/instance-step.ts): its Python `run` is one round trip. */
  async run(dt?: number): Promise<void> {
    this.lifecycle.checkRunnable()
    await stepInstance(this, dt ?? this.timer.dt)
  }

  /** Its mapped Python `run`, one round trip: the behaviour part of a step taken alone. */
  async runPython(dt: number): Promise<void> {
    await this.python.call('run', { args: [], kwargs: {} }, dt)
  }

  /** Whether a system step calls this instance's Python `run`. */
  get stepsInPython(): boolean {
    return this.python.maps('run')
  }

  /** The context of this instance in a system step (only a MimicComponent gets one). */
  stepContext(dt?: number): StepContext {
    return this.python.stepContext(dt)
  }

  /**
   * Whether its step runs Python code that sees the server's time and values (a MimicComponent's
   * `run`, an action expression of its worker), or Python code and declarative behaviour that
   * must take turns in every step.
   */
  get needsServerEachStep(): boolean {
    return this.usesWorker || (this.stepsInPython && (this.python.component || this.behaviour !== undefined))
  }

  /** Takes declarative values a MimicComponent wrote through `self.attributes`; answers the values not taken (see `setCached`). */
  applyDeclarative(values: Record<string, unknown> | undefined): TypeProblem[] {
    return this.python.applyDeclarative(values)
  }

  /** Records a failure reported for this instance by a batched step. */
  stepFailed(err: unknown): void {
    this.lifecycle.stepFailed(err)
  }

  /**
   * After each step: the protocol adapters that hand each step's values to clients hear of it.
   * Undefined when none wants to (most instances): the engine's loop over 10,000 instances then
   * reads one field of each instead of making two calls (bench/ANALYSIS.md, benchmark 7).
   */
  readonly afterStep: (() => void) | undefined

  async writeBound(attr: string, value: unknown): Promise<void> {
    await this.python.write(attr, value)
  }

  mappedValueProblem(attr: string, value: unknown): string | null {
    return this.communication.valueProblem(attr, unmarked(value))
  }

  /** Runs the hooks of a client's write of `attr` (on_set, then on_internal_set or on_external_set). */
  attributeSet(attr: string, side: 'internal' | 'external'): Promise<void> | undefined {
    const behaviour = this.behaviour
    const specific = side === 'internal' ? 'on_internal_set' : 'on_external_set'
    if (!behaviour || (!behaviour.hooks.has('on_set', attr) && !behaviour.hooks.has(specific, attr))) return undefined
    return (async () => {
      await behaviour.fire('on_set', attr)
      await behaviour.fire(specific, attr)
    })()
  }

  mayPublish(attr: string): boolean {
    return this.communication.mentions(attr)
  }

  override async destroy(): Promise<void> {
    await this.lifecycle.destroy()
  }
}

function numberKwarg(call: CallArgs, name: string): number | undefined {
  const unknown = Object.keys(call.kwargs).filter((k) => k !== name)
  if (unknown.length)
    throw new ValidationError(
      `Unknown argument${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')} (takes ${name})`,
      unknown.map((k) => ({ path: `kwargs.${k}`, message: 'unknown argument' })),
    )
  const value = call.kwargs[name]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new ValidationError(`'${name}' must be a number greater than 0`, [{ path: `kwargs.${name}`, message: 'expected a number > 0' }])
  }
  return value
}
