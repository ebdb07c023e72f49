import { Mutex } from 'async-mutex'
import { NotFoundError, ValidationError, summarize, type ErrorDetail } from '../errors.js'
import { validateSystem, type ConnectionEntry, type SystemDefinition } from '../definition/validate.js'
import { modelBehaviourProblems } from '../language/model/index.js'
import { combinedFault, Engine } from '../engine/index.js'
import { Component, type CallArgs, type MethodHandler } from '../tree/component.js'
import { Connections } from './connections.js'
import type { Instance } from './instance.js'
import { Instances } from './instances.js'
import { Logs } from './logs.js'
import { mappedDefaultProblems } from './mapping-check.js'
import { Models } from './models.js'
import { Polling } from './polling.js'
import type { SystemServices } from './services.js'
import { SnapshotsNode } from './snapshots-node.js'
import { Timer } from './timer.js'

export type SystemState = 'INITIALIZED' | 'PREPARED' | 'RUNNING' | 'STOPPED'

/** Most steps one `run(steps=...)` call may ask for: bounds the time one request can hold. */
export const MAX_STEPS_PER_CALL = 100_000

/**
 * The root of the tree: models, instances, connections, the system timer and polling,
 * snapshots and the logs. Stepping is the engine's (src/engine): a system step runs every runnable instance
 * once — all Python-backed instances in one batched message per worker, workers in parallel —
 * and then applies the connections. Structural changes are serialized by one mutex so that no
 * request sees a half-built system.
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
  readonly logs: Logs
  readonly #mutex = new Mutex()
  #state: SystemState = 'INITIALIZED'
  readonly #engine: Engine<Instance>

  constructor(services: SystemServices) {
    super('system', null)
    this.services = services
    this.models = new Models(this)
    this.instances = new Instances(this)
    this.connections = new Connections(this)
    this.timer = new Timer(this)
    this.#engine = new Engine({
      system: this,
      python: services.python,
      stepBatch: services.stepBatch,
      logger: services.logger,
      polling: {
        interval: () => this.polling.interval,
        wanted: () => this.#state === 'RUNNING' && this.polling.enabled,
        includes: (i) => i.polling.enabled && i.state === 'RUNNING',
      },
    })
    this.polling = new Polling(this, { onChange: () => this.#engine.pollingChanged() })
    this.snapshots = new SnapshotsNode(this)
    this.logs = new Logs(this, { buffer: services.logs })
    services.python.onLost?.((names, reason) => {
      for (const name of names) this.instances.get(name)?.lost(reason)
      this.#engine.instancesLost(names, reason)
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
    return [this.models, this.instances, this.connections, this.timer, this.polling, this.snapshots, this.logs]
  }

  override properties(): Record<string, unknown> {
    return { state: this.#state, steps: this.#engine.steps, server_version: this.services.serverVersion }
  }

  override async put(body: Record<string, unknown>): Promise<void> {
    const unknown = Object.keys(body).filter((k) => !['models', 'instances', 'connections'].includes(k))
    if (unknown.length)
      throw new NotFoundError(`The system root has no children ${unknown.map((k) => `'${k}'`).join(', ')} to write (models, instances, connections)`)
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
    if (failures.length) throw combinedFault(errors, summarize('prepare', failures), failures)
  }

  /** `run(steps=1, dt=None)`: that many system steps, then `true`. */
  async runSteps(call: CallArgs): Promise<boolean> {
    const steps = call.kwargs.steps ?? call.args[0] ?? 1
    const dt = call.kwargs.dt ?? call.args[1]
    const details: ErrorDetail[] = Object.keys(call.kwargs)
      .filter((k) => k !== 'steps' && k !== 'dt')
      .map((k) => ({ path: `kwargs.${k}`, message: 'unknown argument (run takes steps, dt)' }))
    if (!Number.isSafeInteger(steps) || (steps as number) < 1 || (steps as number) > MAX_STEPS_PER_CALL)
      details.push({ path: 'kwargs.steps', message: `expected an integer from 1 to ${MAX_STEPS_PER_CALL}` })
    if (dt !== undefined && dt !== null && (typeof dt !== 'number' || !Number.isFinite(dt) || dt <= 0))
      details.push({ path: 'kwargs.dt', message: 'expected a number > 0' })
    if (details.length) throw new ValidationError(summarize('run', details), details)
    await this.#engine.run(steps as number, (dt ?? undefined) as number | undefined)
    return true
  }

  /**
   * One system step of every runnable instance (src/engine/system-step.ts). Steps never overlap:
   * a step asked for while one runs waits for it. Failures of instances are thrown together once
   * the step completed for all others.
   */
  async step(dt?: number): Promise<void> {
    await this.#engine.step({ dt })
  }

  /** Starts every instance and the system loop that steps them every `polling.interval` seconds. */
  async start(): Promise<void> {
    for (const instance of this.instances.all()) {
      await instance
        .start({ ownLoop: false })
        .catch((err: unknown) => this.services.logger.warn({ instance: instance.name, err: (err as Error).message }, 'instance failed to start'))
      instance.markRunning()
    }
    this.#state = 'RUNNING'
    this.#engine.startPolling()
  }

  /** Stops the system loop and every instance. */
  async stop(): Promise<void> {
    await this.#halt()
    for (const instance of this.instances.all()) await instance.stop()
    this.#state = 'STOPPED'
  }

  async #halt(): Promise<void> {
    this.#state = this.#state === 'RUNNING' ? 'STOPPED' : this.#state
    await this.#engine.halt()
  }

  /** Resets every instance and the system timer. */
  async reset(): Promise<void> {
    await this.#halt()
    for (const instance of this.instances.all()) await instance.reset()
    this.timer.reset()
    this.#engine.resetCount()
    this.#state = this.#state === 'STOPPED' ? 'PREPARED' : this.#state
  }

  /** The structure of the system: what a snapshot holds. */
  structure(): SystemDefinition {
    const models: Record<string, unknown> = {}
    for (const model of this.models.all()) models[model.name] = model.definition
    const instances = [...this.instances.all()].map((i) => ({ [i.name]: i.given ? { type: i.model.name, ...i.given } : i.model.name }))
    const connections: Record<string, ConnectionEntry> = {}
    for (const conn of this.connections.all())
      connections[conn.name] = conn.enabled ? { from: conn.from, to: conn.to } : { from: conn.from, to: conn.to, enabled: false }
    return { models, instances, connections }
  }

  /**
   * Replaces the whole structure in place (snapshot load, `--system` at start-up). Everything is
   * validated before anything changes; on any problem the system is left exactly as it was.
   * The caller holds the structure lock.
   */
  async replaceStructure(definition: unknown, subject = 'System definition'): Promise<{ models: number; instances: number; connections: number }> {
    const result = validateSystem(definition, modelBehaviourProblems)
    if (!result.ok) throw new ValidationError(summarize(subject, result.details), result.details)
    const unmappable = [...result.system.models].flatMap(([name, model]) =>
      mappedDefaultProblems(model.parsed).map((d) => ({ ...d, path: `models.${name}.${d.path}` })),
    )
    if (unmappable.length) throw new ValidationError(summarize(subject, unmappable), unmappable)
    await this.#halt()
    await this.instances.clear()
    this.connections.clear()
    this.models.clear()
    for (const [name, model] of result.system.models) this.models.install(name, model.raw, model.parsed)
    for (const inst of result.system.instances) this.instances.add(inst.name, inst.model, inst)
    for (const conn of result.system.connections) this.connections.add(conn.name, conn.from, conn.to, conn.enabled)
    this.timer.reset()
    this.#engine.resetCount()
    this.#state = 'INITIALIZED'
    return { models: result.system.models.size, instances: result.system.instances.length, connections: result.system.connections.length }
  }

  /** Stops everything and releases every instance (server shutdown). */
  override async destroy(): Promise<void> {
    await this.#halt()
    await this.instances.clear()
  }
}

function asRecord(value: unknown, path: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ValidationError(`'${path}' must be an object`, [{ path, message: 'expected an object' }])
  }
  return value as Record<string, unknown>
}
