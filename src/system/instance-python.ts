/**
 * The Python binding of an instance: the objects its `import` block makes in a Python worker
 * (loaded, made anew, unloaded), the calls of its mapped methods and setters, the values those
 * objects report (taken into its attributes, or remembered as refused) and the action
 * expressions its worker evaluates. When the instance may call Python, and what a failure does
 * to its lifecycle state, is the lifecycle's (instance-lifecycle.ts).
 */

import { NotFoundError, UserCodeError } from '../errors.js'
import { floatValue } from '../values/number.js'
import { wrongTypes, type RefusedValues, type StepContext, type TypeProblem } from '../engine/index.js'
import { modelBehaviour, WorkerException } from '../language/model/index.js'
import { buildLoadEntries, workerImport, type LoadEntry, type WorkerExpressionSpec, type WorkerImport } from '../python/index.js'
import { Component, type CallArgs } from '../tree/component.js'
import type { Instance } from './instance.js'
import type { SystemServices } from './services.js'

/**
 * Which refused values an answer from Python fails with (see `takeValues`): every one its
 * objects still hold, only those the answer carried, or none.
 */
export type Refusals = 'held' | 'new' | 'none'

/** What an instance holds while its Python objects are alive. */
export interface Binding {
  worker: number | string
  methods: Map<string, string>
  component: boolean
}

export class InstancePython {
  readonly #instance: Instance
  readonly #services: SystemServices
  /** The system's record of values Python holds that attributes refused: this instance's are kept there. */
  readonly #refused: RefusedValues
  #binding: Binding | undefined
  /** A load of its Python worker context started by a step (an instance with worker expressions that was not prepared). */
  #loadingWorker: Promise<void> | undefined

  constructor(instance: Instance, services: SystemServices, refused: RefusedValues) {
    this.#instance = instance
    this.#services = services
    this.#refused = refused
  }

  get binding(): Readonly<Binding> | undefined {
    return this.#binding
  }

  /** Whether its objects are loaded and the model maps `method` to one of them. */
  maps(method: string): boolean {
    return this.#binding?.methods.has(method) ?? false
  }

  /** Whether a loaded object is a MimicComponent (it sees the declarative values in every call). */
  get component(): boolean {
    return this.#binding?.component ?? false
  }

  /** Model methods declared in the `import` block (known before prepare, so they are listed). */
  mappedMethods(): string[] {
    const names: string[] = []
    for (const value of Object.values(this.#instance.model.parsed.import ?? {})) {
      for (const entry of Array.isArray(value) ? value : [value]) names.push(...Object.keys(entry.methods ?? {}))
    }
    return names
  }

  /** The `.py` files its `import` block names, resolved under the extension directories. */
  async entries(): Promise<LoadEntry[]> {
    return await buildLoadEntries(this.#instance.model.parsed.import ?? {}, this.#services.extensions, `instance '${this.#instance.name}'`)
  }

  /** `refusals`: which values of the new objects that attributes refuse fail the load (see `takeValues`; a resume's fail none). */
  async load(refusals: Refusals = 'held'): Promise<LoadEntry[]> {
    const instance = this.#instance
    const pool = this.#services.python()
    if (this.#binding) {
      await pool.unload(instance.name).catch(() => {})
      this.#binding = undefined
    }
    // New objects: what the old ones held is gone with them.
    this.forgetRefused()
    for (const attr of instance.attributes.all()) attr.bind(undefined)
    const entries = await this.entries()
    const loaded = await pool.load(instance.name, {
      entries,
      definition: instance.model.definition as Record<string, unknown>,
      attributes: this.declarativeValues(),
      time: instance.timer.time,
      dt: instance.timer.dt,
      expressions: await this.#workerExpressions(),
    })
    const methods = new Map<string, string>()
    for (const entry of entries) for (const [model, cls] of Object.entries(entry.methods)) methods.set(model, cls)
    const readOnly = new Set(loaded.readOnly)
    for (const attr of loaded.bound) instance.attributes.get(attr)?.bind({ writable: !readOnly.has(attr) })
    this.#binding = { worker: loaded.worker, methods, component: loaded.components.some(Boolean) }
    this.takeValues(loaded.values, refusals)
    return entries
  }

  /** The model's action expressions its Python worker evaluates, their imports resolved under the extension directories. */
  async #workerExpressions(): Promise<WorkerExpressionSpec[]> {
    const dirs = this.#services.extensions
    return await Promise.all(
      modelBehaviour(this.#instance.model.parsed).workerExpressions.map(async (e) => {
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
  async evaluate(index: number, values: string): Promise<string> {
    if (!this.#binding) {
      this.#loadingWorker ??= this.load()
        .then(() => {})
        .finally(() => (this.#loadingWorker = undefined))
      await this.#loadingWorker
    }
    try {
      return await this.#services.python().evaluate(this.#instance.name, index, values)
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
  declarativeValues(): Record<string, unknown> {
    const values: Record<string, unknown> = {}
    for (const attr of this.#instance.attributes.all()) {
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
  takeValues(values: Record<string, unknown> | undefined, refusals: Refusals, declared: TypeProblem[] = []): void {
    const instance = this.#instance
    let carried: TypeProblem[] | undefined
    for (const [name, value] of Object.entries(values ?? {})) {
      const attr = instance.attributes.get(name)
      const problem = attr === undefined ? null : this.#refused.take(instance, attr, value)
      if (problem !== null) (carried ??= []).push({ attribute: name, problem })
    }
    const bound = refusals === 'held' ? this.#refused.problems(instance) : refusals === 'new' ? carried : undefined
    if (bound === undefined && declared.length === 0) return
    throw wrongTypes(instance.name, [...(bound ?? []), ...declared])
  }

  /** Takes declarative values a MimicComponent wrote through `self.attributes`; answers the values not taken (see `setCached`). */
  applyDeclarative(values: Record<string, unknown> | undefined): TypeProblem[] {
    const problems: TypeProblem[] = []
    if (!values) return problems
    for (const [name, value] of Object.entries(values)) {
      const attr = this.#instance.attributes.get(name)
      const problem = attr && !attr.bound ? attr.setCached(value) : null
      if (problem !== null) problems.push({ attribute: name, problem })
    }
    return problems
  }

  /** The context of its Python `run` in a system step (only a MimicComponent gets one). */
  stepContext(dt?: number): StepContext {
    const timer = this.#instance.timer
    const context: StepContext = { time: timer.time, dt: dt ?? timer.dt }
    if (this.#binding?.component) context.attributes = this.declarativeValues()
    return context
  }

  /** Calls a model method mapped by the `import` block and returns its result. */
  async callMapped(method: string, call: CallArgs): Promise<unknown> {
    this.#instance.lifecycle.checkRunnable()
    if (!this.#binding?.methods.has(method)) throw new NotFoundError(`Instance '${this.#instance.name}' has no method '${method}'`)
    return await this.call(method, call, this.#instance.timer.dt)
  }

  /** One call of a method of its loaded objects (its mapped `run` in a step, or a mapped method): the values it reports taken in. */
  async call(method: string, call: CallArgs, dt: number): Promise<unknown> {
    const { lifecycle, name, timer } = this.#instance
    const binding = this.#binding!
    const task = this.#services.python().call(name, method, {
      args: call.args,
      kwargs: call.kwargs,
      time: timer.time,
      dt,
      attributes: binding.component ? this.declarativeValues() : undefined,
    })
    lifecycle.busy(task)
    try {
      const answer = await task
      this.takeValues(answer.values, 'held', this.applyDeclarative(answer.attributes))
      return answer.result
    } catch (err) {
      lifecycle.stepFailed(err)
      throw err
    } finally {
      lifecycle.idle(task)
    }
  }

  /** Writes a bound attribute through its Python setter. */
  async write(attr: string, value: unknown): Promise<void> {
    this.#instance.lifecycle.checkRunnable()
    const answer = await this.#services.python().set(this.#instance.name, attr, value)
    this.takeValues(answer.values, 'new')
  }

  /** The states of its objects (`__getstate__`), as Python-typed JSON text. */
  async states(): Promise<string> {
    return await this.#services.python().getState(this.#instance.name)
  }

  /** Gives its objects saved states (`text`) and writes bound attributes (`values`, worker text); a refused value fails nothing. */
  async setStates(text: string, values: string | undefined): Promise<void> {
    const answer = await this.#services.python().setState(this.#instance.name, text, values)
    this.takeValues(answer.values, 'none')
  }

  /** Forgets what its objects hold that attributes refused: nothing runs them until they are made anew. */
  forgetRefused(): void {
    this.#refused.forget(this.#instance)
  }

  /** Its objects are gone (their worker died or timed out): forgotten without a word to the worker. */
  lose(): void {
    this.#binding = undefined
  }

  /** Unloads its objects from their worker (the instance is deleted); a worker already gone is no failure. */
  async unload(): Promise<void> {
    this.forgetRefused()
    if (this.#binding) {
      this.#binding = undefined
      await this.#services
        .python()
        .unload(this.#instance.name)
        .catch(() => {})
    }
  }
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
