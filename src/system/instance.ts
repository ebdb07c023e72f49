import { ConflictError, MimicError, NotFoundError, UserCodeError, ValidationError, WorkerGoneError, type ErrorDetail } from '../errors.js'
import { floatValue, unmarked } from '../definition/json-float.js'
import { attributeDeclarations, LIFECYCLE_METHODS } from '../definition/model-schema.js'
import { PollLoop, stepInstance, wrongTypes, type RefusedValues, type StepContext, type Steppable, type TypeProblem } from '../engine/index.js'
import { fromWorkerText, modelBehaviour, toPy, toWorkerText, WorkerException, type BehaviourState, type InstanceBehaviour } from '../language/model/index.js'
import { buildLoadEntries, workerImport, type LoadEntry, type WorkerExpressionSpec, type WorkerImport } from '../python/index.js'
import type { InstanceState as SavedInstance } from '../snapshots/index.js'
import { Component, noArguments, type CallArgs, type MethodHandler } from '../tree/component.js'
import type { StructureLock } from '../tree/lock.js'
import { Attributes, type AttributeOwner } from './attributes.js'
import { ActionsNode, InstanceHost, ScenariosNode } from './behaviour-host.js'
import { Communication } from './communication.js'
import { Logs } from './logs.js'
import type { Model } from './models.js'
import { Polling } from './polling.js'
import type { SystemServices } from './services.js'
import { Timer } from './timer.js'

export type InstanceState = 'INITIALIZED' | 'PREPARED' | 'RUNNING' | 'STOPPED' | 'ERROR'

/**
 * Which refused values an answer from Python fails with (see `#takeValues`): every one its
 * objects still hold, only those the answer carried, or none.
 */
type Refusals = 'held' | 'new' | 'none'

/** What an instance holds while its Python objects are alive. */
interface Binding {
  worker: number | string
  methods: Map<string, string>
  component: boolean
}

/**
 * A running copy of a model: its attributes, timer, polling settings, protocol adapters and,
 * when the model has an `import` block, the Python objects that back it. What a step does is the
 * engine's (src/engine/instance-step.ts); the instance answers what the engine asks (Steppable).
 *
 * @example
 * await instance.call('prepare', { args: [], kwargs: {} })
 * await instance.call('run', { args: [], kwargs: {} })
 */
export class Instance extends Component implements AttributeOwner, Steppable {
  readonly type = 'Instance'
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
  readonly #services: SystemServices
  /** The system's record of values Python holds that attributes refused: this instance's are kept there. */
  readonly #refused: RefusedValues
  readonly #lock: StructureLock
  #state: InstanceState = 'INITIALIZED'
  #binding: Binding | undefined
  #lastError: string | null = null
  readonly #loop: PollLoop
  #inFlight: Promise<unknown> | undefined
  #ownLoop = false
  /** A load of its Python worker context started by a step (an instance with worker expressions that was not prepared). */
  #loadingWorker: Promise<void> | undefined

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
    this.#refused = opts.refused
    this.#lock = opts.lock
    this.parameters = opts.parameters ?? {}
    this.given = opts.given
    const parsed = opts.model.parsed
    const declarations = attributeDeclarations(parsed).map((d) =>
      opts.initValues && Object.hasOwn(opts.initValues, d.name) ? { ...d, default: opts.initValues[d.name] } : d,
    )
    this.attributes = new Attributes(this, declarations, {
      time: () => this.timer.time,
      lock: opts.lock,
      wiredBy: (attribute) => opts.wiredBy(this.name, attribute),
    })
    const polling = parsed.polling ?? {}
    this.timer = new Timer(this, polling.interval ?? 1.0, parsed.timer)
    this.#loop = new PollLoop({
      interval: () => this.polling.nextInterval(),
      wanted: () => this.#state === 'RUNNING' && this.#ownLoop && this.polling.enabled,
      tick: () => this.#pollTick(),
    })
    this.polling = new Polling(this, {
      interval: polling.interval,
      jitter: polling.jitter,
      maxIterations: polling.max_iterations,
      enabled: polling.enabled,
      onChange: () => this.#loop.update(),
    })
    this.communication = new Communication(this, opts.model, opts.services, this.parameters)
    this.importNode = parsed.import ? new ImportStatus(this) : undefined
    const behaviour = modelBehaviour(parsed)
    this.behaviour = behaviour.empty ? undefined : behaviour.bind(new InstanceHost(this))
    this.actionsNode = this.behaviour && this.behaviour.actionCount > 0 ? new ActionsNode(this, this.behaviour) : undefined
    this.scenariosNode = this.behaviour && this.behaviour.scenarios.length > 0 ? new ScenariosNode(this, this.behaviour, () => this.timer.time) : undefined
    this.logs = new Logs(this, { buffer: opts.services.logs, instance: opts.name })
  }

  /** Logs a warning about this instance (behaviour that could not do something it was asked to). */
  warn(message: string, context: Record<string, unknown>): void {
    this.#services.logger.warn({ instance: this.name, ...context }, message)
  }

  override get state(): InstanceState {
    return this.#state
  }

  get lastError(): string | null {
    return this.#lastError
  }

  get binding(): Readonly<Binding> | undefined {
    return this.#binding
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
    const props: Record<string, unknown> = { state: this.#state, model: this.model.name, last_error: this.#lastError }
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
    const methods: Record<string, MethodHandler> = {
      prepare: noArguments(() => this.#lock.exclusive(async () => (await this.prepare(), true))),
      run: (call) => this.#runMethod(call),
      start: noArguments(() => this.#lock.exclusive(async () => (await this.start({ ownLoop: true }), true))),
      stop: noArguments(() => this.#lock.exclusive(async () => (await this.stop(), true))),
      reset: noArguments(() => this.#lock.exclusive(async () => (await this.reset(), true))),
    }
    for (const method of this.#mappedMethods()) {
      if (!Object.hasOwn(methods, method)) methods[method] = (call) => this.callMapped(method, call)
    }
    return methods
  }

  /** A model method mapped to Python (not one of the lifecycle methods, which take precedence). */
  override keepsFloatsIn(method: string): boolean {
    return !LIFECYCLE_METHODS.has(method) && this.#mappedMethods().includes(method)
  }

  /** `run` is what clients call most: answered without building the method table, or an extra promise. */
  override call(method: string, call: CallArgs): Promise<unknown> {
    return method === 'run' ? this.#runMethod(call) : super.call(method, call)
  }

  async #runMethod(call: CallArgs): Promise<boolean> {
    await this.run(numberKwarg(call, 'dt'))
    return true
  }

  /** Model methods declared in the `import` block (known before prepare, so they are listed). */
  #mappedMethods(): string[] {
    const names: string[] = []
    for (const value of Object.values(this.model.parsed.import ?? {})) {
      for (const entry of Array.isArray(value) ? value : [value]) names.push(...Object.keys(entry.methods ?? {}))
    }
    return names
  }

  /**
   * Loads the Python objects (when the model imports code) and starts the protocol adapters.
   * A second prepare reloads the code, which is how an edited .py file is picked up.
   */
  async prepare(): Promise<void> {
    this.#loop.stop()
    await this.#waitIdle()
    try {
      if (this.codeDefined || this.usesWorker) await this.#loadPython()
      await this.communication.startAll()
      this.#state = 'PREPARED'
      this.#lastError = null
      if (this.#binding?.methods.has('prepare')) await this.callMapped('prepare', { args: [], kwargs: {} })
      await this.behaviour?.activate()
      await this.behaviour?.fire('on_prepare')
    } catch (err) {
      this.#fail(err)
      throw err
    }
  }

  /** `refusals`: which values of the new objects that attributes refuse fail the load (see `#takeValues`; a resume's fail none). */
  async #loadPython(refusals: Refusals = 'held'): Promise<LoadEntry[]> {
    const pool = this.#services.python()
    if (this.#binding) {
      await pool.unload(this.name).catch(() => {})
      this.#binding = undefined
    }
    // New objects: what the old ones held is gone with them.
    this.#refused.forget(this)
    for (const attr of this.attributes.all()) attr.bind(undefined)
    const entries = await buildLoadEntries(this.model.parsed.import ?? {}, this.#services.extensions, `instance '${this.name}'`)
    const loaded = await pool.load(this.name, {
      entries,
      definition: this.model.definition as Record<string, unknown>,
      attributes: this.#declarativeValues(),
      time: this.timer.time,
      dt: this.timer.dt,
      expressions: await this.#workerExpressions(),
    })
    const methods = new Map<string, string>()
    for (const entry of entries) for (const [model, cls] of Object.entries(entry.methods)) methods.set(model, cls)
    const readOnly = new Set(loaded.readOnly)
    for (const attr of loaded.bound) this.attributes.get(attr)?.bind({ writable: !readOnly.has(attr) })
    this.#binding = { worker: loaded.worker, methods, component: loaded.components.some(Boolean) }
    this.#takeValues(loaded.values, refusals)
    return entries
  }

  /**
   * Makes its Python objects anew from the `.py` files as they are now, as a second prepare
   * does, without running what a prepare runs (adapters, mapped `prepare`, hooks): the
   * `reload_modules` of the system. Only an instance whose objects are loaded reloads, and with
   * `within`, only when one of its files lies in those directories. Answers the files reloaded.
   */
  async reloadPython(within?: (file: string) => boolean): Promise<string[]> {
    if (!this.#binding || !(this.codeDefined || this.usesWorker)) return []
    const files = (await buildLoadEntries(this.model.parsed.import ?? {}, this.#services.extensions, `instance '${this.name}'`)).map((e) => e.file)
    if (within !== undefined && !files.some(within)) return []
    this.#loop.stop()
    await this.#waitIdle()
    try {
      await this.#loadPython()
    } catch (err) {
      this.#fail(err)
      throw err
    } finally {
      this.#loop.update()
    }
    return [...new Set(files)]
  }

  /** The model's action expressions its Python worker evaluates, their imports resolved under the extension directories. */
  async #workerExpressions(): Promise<WorkerExpressionSpec[]> {
    const dirs = this.#services.extensions
    return await Promise.all(
      modelBehaviour(this.model.parsed).workerExpressions.map(async (e) => {
        const spec: WorkerExpressionSpec = { path: e.path, text: e.text, form: e.form, names: [...e.names] }
        const imports = Object.entries(e.imports)
        if (imports.length > 0) {
          const resolved: Record<string, WorkerImport> = {}
          for (const [alias, module] of imports) resolved[alias] = await workerImport(module, `${e.importsPath}.${alias}`, dirs)
          spec.imports = resolved
        }
        if (e.constants !== undefined) spec.constants = e.constants
        return spec
      }),
    )
  }

  /**
   * Evaluates one of its worker expressions (`ModelBehaviour.workerExpressions`) in its Python
   * worker; the worker context is loaded first when no prepare loaded it. A Python error comes
   * back as a {@link WorkerException}; a lost worker puts the instance in ERROR like any other.
   */
  async evaluateInWorker(index: number, values: string): Promise<string> {
    if (!this.#binding) {
      this.#loadingWorker ??= this.#loadPython()
        .then(() => {})
        .finally(() => (this.#loadingWorker = undefined))
      await this.#loadingWorker
    }
    try {
      return await this.#services.python().evaluate(this.name, index, values)
    } catch (err) {
      if (!(err instanceof UserCodeError)) throw err
      const detail = err.details[0]
      const text = typeof detail?.message === 'string' ? detail.message : err.message
      const m = /^([A-Za-z_][\w.]*): ([\s\S]*)$/.exec(text)
      const traceback = typeof detail?.traceback === 'string' ? detail.traceback : undefined
      throw m ? new WorkerException(m[1] as string, m[2] as string, traceback) : new WorkerException(text, '', traceback)
    }
  }

  /** Values of the attributes Python does not own, for MimicComponent context (a whole float marked, so Python gets `2.0`, not `2`). */
  #declarativeValues(): Record<string, unknown> {
    const values: Record<string, unknown> = {}
    for (const attr of this.attributes.all()) {
      if (attr.bound) continue
      const value = attr.internalValue
      values[attr.name] = attr.valueType === 'float' && typeof value === 'number' ? floatValue(value) : value
    }
    return values
  }

  /**
   * Takes bound values reported by Python into the attribute caches. A value of a type its
   * attribute cannot hold is not taken, and is remembered as refused until Python reports another
   * value for that attribute (the worker sends a value only when it changed: src/engine/refused-values.ts).
   * Which refusals fail this answer with a 500 naming them: `held`, every one Python still holds
   * (a method call or a step); `new`, those this answer carried (a write through a setter: the
   * write itself was taken); `none`. `declared`: what a MimicComponent's declarative writes of the
   * same answer could not set, which always fails it.
   */
  #takeValues(values: Record<string, unknown> | undefined, refusals: Refusals, declared: TypeProblem[] = []): void {
    let carried: TypeProblem[] | undefined
    for (const [name, value] of Object.entries(values ?? {})) {
      const attr = this.attributes.get(name)
      const problem = attr === undefined ? null : this.#refused.take(this, attr, value)
      if (problem !== null) (carried ??= []).push({ attribute: name, problem })
    }
    const bound = refusals === 'held' ? this.#refused.problems(this) : refusals === 'new' ? carried : undefined
    if (bound === undefined && declared.length === 0) return
    throw wrongTypes(this.name, [...(bound ?? []), ...declared])
  }

  /** Takes declarative values a MimicComponent wrote through `self.attributes`; answers the values not taken (see `setCached`). */
  applyDeclarative(values: Record<string, unknown> | undefined): TypeProblem[] {
    const problems: TypeProblem[] = []
    if (!values) return problems
    for (const [name, value] of Object.entries(values)) {
      const attr = this.attributes.get(name)
      const problem = attr && !attr.bound ? attr.setCached(value) : null
      if (problem !== null) problems.push({ attribute: name, problem })
    }
    return problems
  }

  #checkRunnable(): void {
    if (this.#state === 'ERROR')
      throw new ConflictError(`Instance '${this.name}' is in ERROR: ${this.#lastError ?? 'unknown error'} (call prepare() to recover)`)
    if (this.codeDefined && !this.#binding) throw new ConflictError(`Instance '${this.name}' is not prepared: call prepare() first`)
  }

  /** Whether a system step should include this instance. */
  get runnable(): boolean {
    return this.#state !== 'ERROR' && (!this.codeDefined || this.#binding !== undefined)
  }

  /** One step of this instance alone (src/engine/instance-step.ts): its Python `run` is one round trip. */
  async run(dt?: number): Promise<void> {
    this.#checkRunnable()
    await stepInstance(this, dt ?? this.timer.dt)
  }

  /** Its mapped Python `run`, one round trip: the behaviour part of a step taken alone. */
  async runPython(dt: number): Promise<void> {
    await this.#python('run', { args: [], kwargs: {} }, dt)
  }

  /** Whether a system step calls this instance's Python `run`. */
  get stepsInPython(): boolean {
    return this.#binding?.methods.has('run') ?? false
  }

  /** The context of this instance in a system step (only a MimicComponent gets one). */
  stepContext(dt?: number): StepContext {
    const context: StepContext = { time: this.timer.time, dt: dt ?? this.timer.dt }
    if (this.#binding?.component) context.attributes = this.#declarativeValues()
    return context
  }

  /**
   * Whether its step runs Python code that sees the server's time and values (a MimicComponent's
   * `run`, an action expression of its worker), or Python code and declarative behaviour that
   * must take turns in every step.
   */
  get needsServerEachStep(): boolean {
    return this.usesWorker || (this.stepsInPython && ((this.#binding?.component ?? false) || this.behaviour !== undefined))
  }

  /** Records a failure reported for this instance by a batched step. */
  stepFailed(err: unknown): void {
    if (err instanceof WorkerGoneError || (err instanceof MimicError && err.code === 'WORKER_TIMEOUT')) this.#fail(err)
    else this.#lastError = (err as Error).message
  }

  /** After each step: the protocol adapters that hand each step's values to clients hear of it. */
  afterStep(): void {
    this.communication.afterStep()
  }

  /** Calls a model method mapped by the `import` block and returns its result. */
  async callMapped(method: string, call: CallArgs): Promise<unknown> {
    this.#checkRunnable()
    if (!this.#binding?.methods.has(method)) throw new NotFoundError(`Instance '${this.name}' has no method '${method}'`)
    return await this.#python(method, call, this.timer.dt)
  }

  async #python(method: string, call: CallArgs, dt: number): Promise<unknown> {
    const binding = this.#binding!
    const task = this.#services.python().call(this.name, method, {
      args: call.args,
      kwargs: call.kwargs,
      time: this.timer.time,
      dt,
      attributes: binding.component ? this.#declarativeValues() : undefined,
    })
    this.#inFlight = task
    try {
      const answer = await task
      this.#takeValues(answer.values, 'held', this.applyDeclarative(answer.attributes))
      return answer.result
    } catch (err) {
      this.stepFailed(err)
      throw err
    } finally {
      if (this.#inFlight === task) this.#inFlight = undefined
    }
  }

  async writeBound(attr: string, value: unknown): Promise<void> {
    this.#checkRunnable()
    const answer = await this.#services.python().set(this.name, attr, value)
    this.#takeValues(answer.values, 'new')
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

  /**
   * Starts the instance: prepares it if needed, then (with `ownLoop`, and polling enabled)
   * calls run() every `polling.interval` seconds. The system's start drives instances from its
   * own loop instead, so connections are applied after every system step.
   */
  async start(opts: { ownLoop: boolean }): Promise<void> {
    if (this.#state === 'INITIALIZED' || this.#state === 'ERROR' || (this.codeDefined && !this.#binding)) await this.prepare()
    await this.communication.startAll()
    if (this.#binding?.methods.has('start')) await this.callMapped('start', { args: [], kwargs: {} })
    await this.behaviour?.activate()
    this.#state = 'RUNNING'
    await this.behaviour?.fire('on_start')
    this.#ownLoop = opts.ownLoop
    this.#loop.start()
  }

  async #pollTick(): Promise<void> {
    this.polling.counted()
    const task = this.run().catch((err: unknown) => {
      this.#services.logger.warn({ instance: this.name, err: (err as Error).message }, 'polling run failed')
    })
    this.#inFlight = task
    await task
    if (this.#inFlight === task) this.#inFlight = undefined
  }

  async #waitIdle(): Promise<void> {
    while (this.#inFlight) await this.#inFlight.catch(() => {})
  }

  /** Stops polling and the protocol adapters; the Python objects stay (run() still works). */
  async stop(): Promise<void> {
    this.#loop.stop()
    this.#ownLoop = false
    await this.#waitIdle()
    if (this.#binding?.methods.has('stop') && this.#state !== 'ERROR') {
      await this.callMapped('stop', { args: [], kwargs: {} }).catch((err: unknown) =>
        this.#services.logger.warn({ instance: this.name, err: (err as Error).message }, 'stop method failed'),
      )
    }
    await this.#deactivate()
    await this.behaviour?.fire('on_stop').catch((err: unknown) => this.warn('an on_stop hook failed', { err: (err as Error).message }))
    await this.communication.stopAll()
    if (this.#state === 'RUNNING' || this.#state === 'PREPARED') this.#state = 'STOPPED'
  }

  /** Timer back to 0, declarative attributes back to their defaults, the mapped `reset` called. */
  async reset(): Promise<void> {
    this.#loop.stop()
    this.#ownLoop = false
    await this.#waitIdle()
    await this.#deactivate()
    this.timer.reset()
    for (const attr of this.attributes.all()) attr.resetValue()
    await this.behaviour?.reset()
    if (this.#binding?.methods.has('reset') && this.#state !== 'ERROR') await this.callMapped('reset', { args: [], kwargs: {} })
    if (this.#state === 'RUNNING' || this.#state === 'STOPPED') this.#state = this.#binding || !this.codeDefined ? 'PREPARED' : 'INITIALIZED'
  }

  /** Marks the instance as system-driven RUNNING (the system loop steps it). */
  markRunning(): void {
    if (this.#state !== 'ERROR') this.#state = 'RUNNING'
  }

  /**
   * Called when the Python worker holding this instance died or was killed. Its attributes stay
   * bound (read-only ones too): until prepare() loads the code again, a write to one is refused
   * with the ERROR (409), as a run or a method call is, instead of being kept where no code sees it.
   */
  lost(reason: string): void {
    this.#binding = undefined
    this.#refused.forget(this)
    this.#loop.stop()
    this.#state = 'ERROR'
    this.#lastError = reason
  }

  /**
   * Puts the instance in ERROR. What its Python objects held that attributes refused is forgotten:
   * nothing runs them until prepare() makes them anew.
   */
  #fail(err: unknown): void {
    this.#state = 'ERROR'
    this.#lastError = (err as Error).message
    this.#refused.forget(this)
    if (err instanceof WorkerGoneError || (err instanceof MimicError && err.code === 'WORKER_TIMEOUT')) this.#binding = undefined
  }

  /** Ends what held actions hold (overrides restored, suspended components back); a failure is logged. */
  async #deactivate(): Promise<void> {
    await this.behaviour?.deactivate().catch((err: unknown) => this.warn('ending held actions failed', { err: (err as Error).message }))
  }

  /**
   * Its runtime state for a snapshot: lifecycle state, timer, polling, attribute values (floats
   * marked to be written as floats when `marked`), its behaviour's state and, when its Python
   * objects are loaded, their states (`__getstate__`). Waits for a step of its own loop under way.
   * `tolerant`: objects whose state cannot be read are left out (logged), not a failure.
   */
  async captureState(marked: boolean, opts: { tolerant?: boolean } = {}): Promise<SavedInstance> {
    await this.#waitIdle()
    const state: SavedInstance = {
      state: this.#state,
      timer: this.timer.saveState(),
      polling: this.polling.saveState(),
      attributes: this.attributes.saveState(marked),
    }
    if (this.#ownLoop) state.own_loop = true
    if (this.#lastError !== null) state.last_error = this.#lastError
    if (this.behaviour) state.behaviour = this.behaviour.saveState() as unknown as Record<string, unknown>
    if (this.#binding && this.codeDefined) {
      try {
        state.python = { states: await this.#services.python().getState(this.name) }
      } catch (err) {
        if (!opts.tolerant) throw err
        this.warn('the state of its Python objects could not be read: they would be made anew', { err: (err as Error).message })
      }
    }
    return state
  }

  /**
   * Takes the part of a saved state that needs nothing started (timer, polling, attribute values,
   * the behaviour's state) into this instance, which nothing runs yet (a snapshot load builds new
   * instances); answers every problem with its path under `path`. `resume` then brings it to its
   * saved lifecycle state.
   */
  stageState(state: SavedInstance, path: string): ErrorDetail[] {
    const problems = this.attributes.checkState(state.attributes, `${path}.attributes`)
    if (state.python !== undefined) problems.push(...this.#pythonStateProblems(state.python.states, `${path}.python.states`))
    if (state.behaviour !== undefined && this.behaviour === undefined)
      problems.push({ path: `${path}.behaviour`, message: `model '${this.model.name}' has no actions, conditions, scenarios or hooks` })
    if (problems.length) return problems
    this.timer.restoreState(state.timer)
    this.polling.restoreState(state.polling)
    this.attributes.restoreState(state.attributes)
    if (state.behaviour !== undefined) problems.push(...(this.behaviour?.restoreState(state.behaviour as unknown as BehaviourState, `${path}.behaviour`) ?? []))
    return problems
  }

  /** `resume` of a state that starts nothing (`INITIALIZED`, `ERROR`): the lifecycle state and last error. */
  resumeIdle(state: SavedInstance): void {
    this.#lastError = state.last_error ?? null
    this.#state = state.state
  }

  /** Whether `resume` of this state could fail (starts Python objects, adapters or held actions). */
  static resumeStarts(state: SavedInstance): boolean {
    return state.state === 'PREPARED' || state.state === 'RUNNING' || state.state === 'STOPPED'
  }

  /**
   * Brings a staged instance to its saved lifecycle state, as it was, without running what a
   * prepare or start runs for the first time (mapped `prepare`/`start`, `on_prepare`/`on_start`
   * hooks, scenarios marked `enabled`): its Python objects are loaded and given their saved
   * states, its adapters started and its held actions made to hold again. A value its objects
   * then hold that an attribute refuses fails no part of it: it is remembered, and the next call
   * or step fails with it, as the calls and steps before the save did.
   */
  async resume(state: SavedInstance): Promise<void> {
    if (!Instance.resumeStarts(state)) return this.resumeIdle(state)
    this.#lastError = state.last_error ?? null
    if (this.codeDefined || this.usesWorker) {
      const entries = await this.#loadPython('none')
      if (this.codeDefined) await this.#setPythonState(entries, state)
    }
    if (state.state !== 'STOPPED') {
      await this.communication.startAll()
      await this.behaviour?.activate()
    }
    this.#state = state.state
    if (state.state === 'RUNNING' && state.own_loop) {
      this.#ownLoop = true
      this.#loop.start()
    }
  }

  /**
   * Each object its saved state; the bound attributes of objects without one (or of every
   * object, when no object states were saved) written from the saved values.
   */
  async #setPythonState(entries: LoadEntry[], state: SavedInstance): Promise<void> {
    const text = state.python?.states ?? JSON.stringify(entries.map(() => null))
    const states = fromWorkerText(text) as unknown[]
    const values = new Map<string, ReturnType<typeof toPy>>()
    entries.forEach((entry, i) => {
      if (states[i] !== null) return
      for (const name of Object.keys(entry.attributes)) {
        const attr = this.attributes.get(name)
        const saved = state.attributes[name]
        if (attr && saved) values.set(name, toPy(saved.internal, attr.valueType))
      }
    })
    if (state.python === undefined && values.size === 0) return
    const answer = await this.#services.python().setState(this.name, text, values.size ? toWorkerText(values) : undefined)
    this.#takeValues(answer.values, 'none')
  }

  /** Whether saved object states fit this instance's `import` block: one per class it instantiates. */
  #pythonStateProblems(text: string, path: string): ErrorDetail[] {
    if (!this.codeDefined) return [{ path, message: `model '${this.model.name}' has no import block: there are no Python objects to restore` }]
    let states: unknown
    try {
      states = fromWorkerText(text)
    } catch (err) {
      return [{ path, message: `not Python-typed JSON text: ${(err as Error).message}` }]
    }
    let classes = 0
    for (const value of Object.values(this.model.parsed.import ?? {})) classes += Array.isArray(value) ? value.length : 1
    if (!Array.isArray(states) || states.length !== classes) {
      return [
        {
          path,
          message: `expected a list of ${classes} state${classes === 1 ? '' : 's'} (one per class of the import block, null for a class without __getstate__/__setstate__)`,
        },
      ]
    }
    return []
  }

  override async destroy(): Promise<void> {
    this.#loop.stop()
    await this.#waitIdle()
    await this.#deactivate()
    await this.behaviour?.fire('on_destroy').catch((err: unknown) => this.warn('an on_destroy hook failed', { err: (err as Error).message }))
    await this.communication.stopAll()
    this.#refused.forget(this)
    if (this.#binding) {
      this.#binding = undefined
      await this.#services
        .python()
        .unload(this.name)
        .catch(() => {})
    }
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

/**
 * The instance's `import` child: what is bound, the worker it lives in and the last error.
 */
export class ImportStatus extends Component {
  readonly type = 'Import'
  readonly #instance: Instance

  constructor(instance: Instance) {
    super('import', instance)
    this.#instance = instance
  }

  override properties(): Record<string, unknown> {
    const inst = this.#instance
    const files = Object.keys(inst.model.parsed.import ?? {})
    const boundAttributes = [...inst.attributes.all()].filter((a) => a.bound).map((a) => a.name)
    return {
      files,
      bound: inst.binding !== undefined,
      worker: inst.binding?.worker ?? null,
      bound_attributes: boundAttributes,
      bound_methods: inst.binding ? Object.fromEntries(inst.binding.methods) : {},
      component: inst.binding?.component ?? false,
      last_error: inst.lastError,
    }
  }
}
