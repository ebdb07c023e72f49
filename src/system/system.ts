import { Mutex } from 'async-mutex'
import { MimicError, NotFoundError, ValidationError, WorkerGoneError, summarize, type ErrorDetail } from '../errors.js'
import { validateSystem, type SystemDefinition } from '../definition/validate.js'
import { Component, type CallArgs, type MethodHandler } from '../tree/component.js'
import { Connections } from './connections.js'
import type { StepPlan, PythonPool } from '../python/pool.js'
import type { Attribute } from './attributes.js'
import type { Instance } from './instance.js'
import { Instances } from './instances.js'
import { mappedDefaultProblems } from './mapping-check.js'
import { Models } from './models.js'
import { PollLoop } from '../engine/poll-loop.js'
import { Polling } from './polling.js'
import type { SystemServices } from './services.js'
import { SnapshotsNode } from './snapshots-node.js'
import { Timer } from './timer.js'

export type SystemState = 'INITIALIZED' | 'PREPARED' | 'RUNNING' | 'STOPPED'

/** The step plan of the instances that stepped last, and their bound attributes by position. */
interface StepPlanCache {
  pool: PythonPool
  owners: Instance[]
  plan: StepPlan
  targets: Array<Array<Attribute | undefined>>
  /** How long the workers took per step of this plan, as last measured; sizes the next batch. */
  stepMs?: number
  /** Steps in the last message: a batch grows at most fourfold from one message to the next. */
  lastBatch: number
}

/** Hears of an instance that failed in `count` steps (1 unless several ran in one message). */
type FailureSink = (instance: string, error: unknown, detail: ErrorDetail, count?: number) => void

/** Steps of a `run` one message to a Python worker carries unless configured otherwise. */
export const DEFAULT_STEP_BATCH = 100

/**
 * About how long one batched message may keep a worker busy: long enough to spread the round trip
 * over many steps, short enough that a request to an instance of that worker waits little, and
 * far below the worker time limit whatever the user code costs.
 */
const BATCH_TARGET_MS = 25

/** Most steps one `run(steps=...)` call may ask for: bounds the time one request can hold. */
export const MAX_STEPS_PER_CALL = 100_000

/**
 * The root of the tree: models, instances, connections, the system timer and polling, and
 * snapshots. A system step runs every runnable instance once — all Python-backed instances in
 * one batched message per worker, workers in parallel — and then applies the connections.
 * Structural changes are serialized by one mutex so that no request sees a half-built system.
 *
 * @example
 * const system = new System(services)
 * await system.models.put({ pt100: { attributes: { temperature: 0.0 } } })
 */
export class System extends Component {
  readonly type = 'System'
  readonly services: SystemServices
  readonly models: Models
  readonly instances: Instances
  readonly connections: Connections
  readonly timer: Timer
  readonly polling: Polling
  readonly snapshots: SnapshotsNode
  readonly #mutex = new Mutex()
  #state: SystemState = 'INITIALIZED'
  #steps = 0
  readonly #loop: PollLoop
  #stepping: Promise<void> | undefined
  /** While a `run(steps)` is going: hears of instances lost with their worker (see #runSteps). */
  #lostDuringRun: ((instance: string, reason: string) => void) | undefined
  #plan: StepPlanCache | undefined

  constructor(services: SystemServices) {
    super('system', null)
    this.services = services
    this.models = new Models(this)
    this.instances = new Instances(this)
    this.connections = new Connections(this)
    this.timer = new Timer(this)
    this.#loop = new PollLoop({
      interval: () => this.polling.interval,
      wanted: () => this.#state === 'RUNNING' && this.polling.enabled,
      tick: () => this.#pollTick(),
    })
    this.polling = new Polling(this, { onChange: () => this.#loop.update() })
    this.snapshots = new SnapshotsNode(this)
    services.python.onLost?.((names, reason) => {
      for (const name of names) {
        this.instances.get(name)?.lost(reason)
        this.#lostDuringRun?.(name, reason)
      }
    })
  }

  /** Runs `fn` while no other structural change runs. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.#mutex.runExclusive(fn)
  }

  override get state(): SystemState {
    return this.#state
  }

  override children(): Component[] {
    return [this.models, this.instances, this.connections, this.timer, this.polling, this.snapshots]
  }

  override properties(): Record<string, unknown> {
    return { state: this.#state, steps: this.#steps, server_version: this.services.serverVersion }
  }

  override async put(body: Record<string, unknown>): Promise<void> {
    const unknown = Object.keys(body).filter((k) => !['models', 'instances', 'connections'].includes(k))
    if (unknown.length) throw new NotFoundError(`The system root has no children ${unknown.map((k) => `'${k}'`).join(', ')} to write (models, instances, connections)`)
    if (body.models) await this.models.put(asRecord(body.models, 'models'))
    if (body.instances) await this.instances.put(asRecord(body.instances, 'instances'))
    if (body.connections) await this.connections.put(asRecord(body.connections, 'connections'))
  }

  override methods(): Record<string, MethodHandler> {
    return {
      prepare: () => this.exclusive(async () => (await this.prepare(), true)),
      run: (call) => this.runSteps(call),
      start: () => this.exclusive(async () => (await this.start(), true)),
      stop: () => this.exclusive(async () => (await this.stop(), true)),
      reset: () => this.exclusive(async () => (await this.reset(), true)),
    }
  }

  /** Instances whose model is `model`. */
  instancesOf(model: string): Instance[] {
    return [...this.instances.all()].filter((i) => i.model.name === model)
  }

  /** A 404 for a missing child of one of the root's containers. */
  notFound(container: string, name: string): NotFoundError {
    return new NotFoundError(`Component '${container}.${name}' not found`, [{ path: `${container}.${name}`, message: 'not found' }])
  }

  /** Prepares every instance; failures are collected and reported together after all were tried. */
  async prepare(): Promise<void> {
    const failures: ErrorDetail[] = []
    const errors: unknown[] = []
    for (const instance of this.instances.all()) {
      await instance.prepare().catch((err: unknown) => {
        errors.push(err)
        failures.push({ path: `instances.${instance.name}`, message: (err as Error).message })
      })
    }
    this.#state = 'PREPARED'
    if (failures.length) throw combined(errors, summarize('prepare', failures), failures)
  }

  /**
   * Runs every step even when some instances fail in some of them (faults stay local): the
   * failures are reported once per instance at the end, with how many steps failed.
   */
  async #runSteps(steps: number, dt: number | undefined): Promise<void> {
    const failed = new Map<string, { error: unknown; detail: ErrorDetail; count: number }>()
    const onFailure: FailureSink = (instance, error, detail, count = 1) => {
      const seen = failed.get(instance)
      if (seen) seen.count += count
      else failed.set(instance, { error, detail, count })
    }
    // A worker that dies between two steps takes its instances out of the steps that follow
    // without failing any of them: they are reported as failed in every step they missed.
    let done = 0
    const lost = new Map<string, { reason: string; missed: number }>()
    this.#lostDuringRun = (instance, reason) => {
      if (!lost.has(instance)) lost.set(instance, { reason, missed: steps - done })
    }
    try {
      while (done < steps) {
        const batch = this.#batchSize(steps - done)
        await this.step(dt, undefined, onFailure, batch)
        done += batch
      }
    } finally {
      this.#lostDuringRun = undefined
    }
    for (const [instance, { reason, missed }] of lost) {
      if (failed.has(instance)) continue // its step failed when the worker died: already counted
      const error = new WorkerGoneError(reason, [{ path: 'import', message: reason }])
      onFailure(instance, error, { path: `instances.${instance}`, message: error.message }, missed)
    }
    if (!failed.size) return
    const details = [...failed.values()].map(({ detail, count }) => ({ ...detail, message: steps > 1 ? `${detail.message} (failed in ${count} of ${steps} steps)` : detail.message }))
    throw combined([...failed.values()].map((f) => f.error), summarize(`run of ${steps} step${steps === 1 ? '' : 's'}`, details), details)
  }

  /**
   * How many of a run's remaining steps go to the Python workers in one message. Between the
   * steps of one message the server does nothing but count (clients see the values of the last
   * one), so a batch needs a system where no step depends on the server: no connections and no
   * MimicComponent (which sees the server's time and values). A batch is sized by time: the first
   * step of a new set of instances goes alone and is timed, and later messages carry about
   * BATCH_TARGET_MS of work (growing at most fourfold each time), so slow user code gets small
   * batches and never holds a worker for long.
   */
  #batchSize(remaining: number): number {
    const limit = Math.min(remaining, this.services.stepBatch ?? DEFAULT_STEP_BATCH)
    if (limit <= 1 || this.connections.size > 0) return 1
    const { owners } = this.#participants(undefined)
    if (owners.some((owner) => owner.needsServerEachStep)) return 1
    if (!owners.length) return limit
    const cached = this.#keptPlan(owners)
    if (!cached?.stepMs) return 1
    const fits = Math.floor(BATCH_TARGET_MS / cached.stepMs)
    return Math.max(1, Math.min(limit, fits, cached.lastBatch * 4))
  }

  /** `run(steps=1, dt=None)`: that many system steps, then `true`. */
  async runSteps(call: CallArgs): Promise<boolean> {
    const steps = call.kwargs.steps ?? call.args[0] ?? 1
    const dt = call.kwargs.dt ?? call.args[1]
    const details: ErrorDetail[] = Object.keys(call.kwargs)
      .filter((k) => k !== 'steps' && k !== 'dt')
      .map((k) => ({ path: `kwargs.${k}`, message: 'unknown argument (run takes steps, dt)' }))
    if (!Number.isSafeInteger(steps) || (steps as number) < 1 || (steps as number) > MAX_STEPS_PER_CALL) details.push({ path: 'kwargs.steps', message: `expected an integer from 1 to ${MAX_STEPS_PER_CALL}` })
    if (dt !== undefined && dt !== null && (typeof dt !== 'number' || !Number.isFinite(dt) || dt <= 0)) details.push({ path: 'kwargs.dt', message: 'expected a number > 0' })
    if (details.length) throw new ValidationError(summarize('run', details), details)
    await this.#runSteps(steps as number, (dt ?? undefined) as number | undefined)
    return true
  }

  /**
   * One system step. Steps never overlap: a step asked for while one runs waits for it.
   * Errors of single instances are collected; the step completes for all others.
   */
  async step(dt?: number, filter?: (i: Instance) => boolean, onFailure?: FailureSink, repeat = 1): Promise<void> {
    while (this.#stepping) await this.#stepping.catch(() => {})
    const task = this.#step(dt, filter, onFailure, repeat)
    this.#stepping = task
    try {
      await task
    } finally {
      if (this.#stepping === task) this.#stepping = undefined
    }
  }

  /**
   * The step plan of the instances that stepped last, if these are the same instances (else
   * undefined): while it is kept, the workers hold their part and a step costs one short
   * message per worker.
   */
  #keptPlan(owners: Instance[]): StepPlanCache | undefined {
    const cached = this.#plan
    const same = cached !== undefined && cached.pool === this.services.python() && cached.owners.length === owners.length && cached.owners.every((owner, i) => owner === owners[i])
    return same ? cached : undefined
  }

  #newPlan(owners: Instance[]): StepPlanCache {
    const pool = this.services.python()
    this.#plan = { pool, owners, plan: pool.plan(owners.map((owner) => owner.name), 'run'), targets: [], lastBatch: 1 }
    return this.#plan
  }

  /** The instances a step includes, and those of them whose Python `run` it calls. */
  #participants(filter: ((i: Instance) => boolean) | undefined): { stepped: Instance[]; owners: Instance[] } {
    const stepped: Instance[] = []
    const owners: Instance[] = []
    for (const instance of this.instances.all()) {
      if (!instance.runnable || (filter && !filter(instance))) continue
      stepped.push(instance)
      if (instance.stepsInPython) owners.push(instance)
    }
    return { stepped, owners }
  }

  async #step(dt: number | undefined, filter: ((i: Instance) => boolean) | undefined, onFailure: FailureSink | undefined, repeat: number): Promise<void> {
    const { stepped, owners } = this.#participants(filter)
    const kept = this.#keptPlan(owners)
    if (repeat > 1 && ((owners.length > 0 && !kept) || this.connections.size > 0 || owners.some((owner) => owner.needsServerEachStep))) {
      // The system changed since the batch was sized: one step at a time after all.
      for (let i = 0; i < repeat; i++) await this.#step(dt, filter, onFailure, 1)
      return
    }
    const failures: ErrorDetail[] = []
    const errors: unknown[] = []
    if (owners.length) {
      // Values go straight into the attribute caches as the answers are decoded. An instance
      // never loses or replaces an attribute, so each one is looked up once per plan.
      const cached = kept ?? this.#newPlan(owners)
      const { plan, targets } = cached
      const started = performance.now()
      await this.services.python().runPlan(plan, { context: (index) => owners[index]!.stepContext(dt), repeat }, {
        value: (index, name, value, position) => {
          const row = (targets[index] ??= [])
          let attr = row[position]
          if (attr?.name !== name) attr = row[position] = owners[index]!.attributes.get(name)
          attr?.setCached(value)
        },
        done: (index, _result, declared) => owners[index]!.applyDeclarative(declared),
        fail: (index, error, count) => {
          const instance = owners[index]!
          errors.push(error)
          instance.stepFailed(error)
          const detail = { ...(error.details[0] ?? {}), path: `instances.${instance.name}`, message: error.message }
          failures.push(detail)
          onFailure?.(instance.name, error, detail, count)
        },
      })
      cached.stepMs = (performance.now() - started) / repeat
      cached.lastBatch = repeat
    }
    for (const instance of stepped) instance.finishStep(dt, repeat)
    await this.connections.propagate()
    for (let i = 0; i < repeat; i++) this.timer.advance(dt)
    this.#steps += repeat
    if (failures.length && !onFailure) throw combined(errors, summarize(`Step ${this.#steps}`, failures), failures)
  }

  /** Starts every instance and the system loop that steps them every `polling.interval` seconds. */
  async start(): Promise<void> {
    for (const instance of this.instances.all()) {
      await instance.start({ ownLoop: false }).catch((err: unknown) => this.services.logger.warn({ instance: instance.name, err: (err as Error).message }, 'instance failed to start'))
      instance.markRunning()
    }
    this.#state = 'RUNNING'
    this.#loop.start()
  }

  async #pollTick(): Promise<void> {
    await this.step(undefined, (i) => i.polling.enabled && i.state === 'RUNNING').catch((err: unknown) => {
      this.services.logger.warn({ err: (err as Error).message }, 'system step failed')
    })
  }

  /** Stops the system loop and every instance. */
  async stop(): Promise<void> {
    await this.#halt()
    for (const instance of this.instances.all()) await instance.stop()
    this.#state = 'STOPPED'
  }

  async #halt(): Promise<void> {
    this.#state = this.#state === 'RUNNING' ? 'STOPPED' : this.#state
    this.#loop.stop()
    while (this.#stepping) await this.#stepping.catch(() => {})
  }

  /** Resets every instance and the system timer. */
  async reset(): Promise<void> {
    await this.#halt()
    for (const instance of this.instances.all()) await instance.reset()
    this.timer.reset()
    this.#steps = 0
    this.#state = this.#state === 'STOPPED' ? 'PREPARED' : this.#state
  }

  /** The structure of the system: what a snapshot holds. */
  structure(): SystemDefinition {
    const models: Record<string, unknown> = {}
    for (const model of this.models.all()) models[model.name] = model.definition
    const instances = [...this.instances.all()].map((i) => ({ [i.name]: i.model.name }))
    const connections: Record<string, { from: string; to: string }> = {}
    for (const conn of this.connections.all()) connections[conn.name] = { from: conn.from, to: conn.to }
    return { models, instances, connections }
  }

  /**
   * Replaces the whole structure in place (snapshot load, `--system` at start-up). Everything is
   * validated before anything changes; on any problem the system is left exactly as it was.
   * The caller holds the structure lock.
   */
  async replaceStructure(definition: unknown, subject = 'System definition'): Promise<{ models: number; instances: number; connections: number }> {
    const result = validateSystem(definition)
    if (!result.ok) throw new ValidationError(summarize(subject, result.details), result.details)
    const unmappable = [...result.system.models].flatMap(([name, model]) => mappedDefaultProblems(model.parsed).map((d) => ({ ...d, path: `models.${name}.${d.path}` })))
    if (unmappable.length) throw new ValidationError(summarize(subject, unmappable), unmappable)
    await this.#halt()
    await this.instances.clear()
    this.connections.clear()
    this.models.clear()
    for (const [name, model] of result.system.models) this.models.install(name, model.raw, model.parsed)
    for (const inst of result.system.instances) this.instances.add(inst.name, inst.model)
    for (const conn of result.system.connections) this.connections.add(conn.name, conn.from, conn.to)
    this.timer.reset()
    this.#steps = 0
    this.#state = 'INITIALIZED'
    return { models: result.system.models.size, instances: result.system.instances.length, connections: result.system.connections.length }
  }

  /** Stops everything and releases every instance (server shutdown). */
  override async destroy(): Promise<void> {
    await this.#halt()
    await this.instances.clear()
  }
}

/** One fault for failures of several instances: their common kind when they share one, else a 500. */
function combined(errors: unknown[], message: string, details: ErrorDetail[]): MimicError {
  const codes = new Set(errors.map((e) => (e instanceof MimicError ? e.code : 'INTERNAL')))
  const code = codes.size === 1 ? [...codes][0]! : 'USER_CODE'
  return new MimicError(code, message, details)
}

function asRecord(value: unknown, path: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ValidationError(`'${path}' must be an object`, [{ path, message: 'expected an object' }])
  }
  return value as Record<string, unknown>
}
