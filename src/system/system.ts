import { randomBytes } from 'node:crypto'
import { NotFoundError, ValidationError, summarize, type ErrorDetail } from '../errors.js'
import { typedSystemDefinition } from '../values/definitions.js'
import { typedJson, valueJson } from '../values/encode.js'
import { parseAttributeRef, type SystemDefinition } from '../definition/validate.js'
import type { ParsedModelDefinition } from '../definition/model-schema.js'
import { behaviourChecker, type ActionImportPolicy } from '../language/model/index.js'
import { actionImportPolicy } from '../python/index.js'
import { Engine, RefusedValues } from '../engine/index.js'
import type { SaveOptions, SaveResult, SnapshotRecord, SnapshotState } from '../snapshots/index.js'
import { Component, noArguments, type CallArgs, type MethodHandler, type NodeDocument } from '../tree/component.js'
import { structureLock } from '../tree/lock.js'
import { Connections } from './connections.js'
import { CrossShard, valueSubject } from './cross-shard.js'
import type { Instance } from './instance.js'
import { Instances } from './instances.js'
import { Logs } from './logs.js'
import { Models } from './models.js'
import { Polling } from './polling.js'
import type { SystemServices } from './services.js'
import { ownsInstance, shardOf, shardText, type Shard } from './shard.js'
import { SnapshotsNode } from './snapshots-node.js'
import { SystemLifecycle, type SystemState } from './system-lifecycle.js'
import { reloadModules } from './system-python.js'
import { captureSystemState, loadSnapshot, saveSnapshot } from './system-saved-state.js'
import { putStructure, reloadSystemFile, replaceStructure, structureOf } from './system-structure.js'
import { Timer } from './timer.js'
import type { BodyValues } from '../values/request.js'

export type { SystemState } from './system-lifecycle.js'

/** Most steps one `run(steps=...)` call may ask for: bounds the time one request can hold. */
export const MAX_STEPS_PER_CALL = 100_000

/**
 * The root of the tree: models, instances, connections, the system timer and polling,
 * snapshots and the logs, and the routing of calls to the root. Stepping is the engine's
 * (src/engine): a system step runs every runnable instance once — all Python-backed instances in
 * one batched message per worker, workers in parallel — and then applies the connections. What
 * the root does is held by its parts: its lifecycle (system-lifecycle.ts), its structure
 * (system-structure.ts), its saved state (system-saved-state.ts), its Python binding
 * (system-python.ts). Structural changes take the structure lock it makes and gives to the nodes
 * it makes (src/tree/lock.ts), so that no request sees a half-built system.
 *
 * @example
 * const system = new System(services)
 * await system.models.put({ pt100: { attributes: { temperature: 0.0 } } })
 */
export class System extends Component {
  readonly type = 'System'
  override get bodyValues(): BodyValues {
    return 'system'
  }
  readonly services: SystemServices
  readonly models: Models
  readonly instances: Instances
  readonly connections: Connections
  readonly timer: Timer
  readonly polling: Polling
  readonly snapshots: SnapshotsNode
  readonly logs: Logs
  /** The values its instances' Python objects hold that their attributes refused (src/engine/refused-values.ts). */
  readonly refused = new RefusedValues()
  /** Checks a model's behaviour, its actions' imports against the server's `--extensions` and `--action-modules`. */
  readonly behaviourProblems: (model: ParsedModelDefinition) => ErrorDetail[]
  /** `--shard I/N`: this server keeps only the instances whose names hash to shard I (docs/scale-out.md). */
  readonly shard: Shard | undefined
  /** `--nats` on a shard: carries the values of connections across shards (cross-shard.ts). */
  readonly crossShard: CrossShard | undefined
  /** The structure lock, given to the nodes it makes (src/tree/lock.ts). */
  readonly lock = structureLock()
  /** Its stepping (src/engine): system steps, the system loop, the turns taken between steps. */
  readonly engine: Engine<Instance>
  /** Its state machine: prepare, start, stop, reset (system-lifecycle.ts). */
  readonly lifecycle: SystemLifecycle

  constructor(services: SystemServices) {
    super('system', null)
    this.services = services
    this.shard = services.shard
    this.crossShard =
      services.crossShard && this.shard
        ? new CrossShard({
            ...services.crossShard,
            logger: services.logger.child({ component: 'nats' }),
            read: (ref) => {
              const attr = this.instances.get(ref.instance)?.attributes.get(ref.attribute)
              return attr && valueJson(ref.side === 'internal' ? attr.internalValue : attr.externalValue, attr.valueType)
            },
          })
        : undefined
    const imports: ActionImportPolicy = actionImportPolicy({ extensions: services.extensions, modules: services.actionModules ?? [] })
    this.behaviourProblems = behaviourChecker(imports)
    this.models = new Models(this)
    this.instances = new Instances(this)
    this.connections = new Connections(this)
    this.timer = new Timer(this)
    this.engine = new Engine({
      system: this,
      python: services.python,
      stepBatch: services.stepBatch,
      logger: services.logger,
      observeStep: services.observeStep,
      polling: {
        interval: () => this.polling.interval,
        wanted: () => this.lifecycle.state === 'RUNNING' && this.polling.enabled,
        includes: (i) => i.polling.enabled && i.state === 'RUNNING',
      },
    })
    this.lifecycle = new SystemLifecycle(this, this.engine)
    this.polling = new Polling(this, { onChange: () => this.engine.pollingChanged() })
    this.snapshots = new SnapshotsNode(this)
    this.logs = new Logs(this, { buffer: services.logs })
    services.python.onLost?.((names, reason) => {
      for (const name of names) this.instances.get(name)?.lifecycle.lost(reason)
      this.engine.instancesLost(names, reason)
    })
  }

  /** `"2/3"` on a shard, else undefined. */
  get shardText(): string | undefined {
    return this.shard && shardText(this.shard)
  }

  /** Whether this server keeps the instance `name`: always, unless it is a shard and another owns it. */
  owns(name: string): boolean {
    return ownsInstance(this.shard, name)
  }

  /** Logs the instances a load or a PUT left to the other shards. */
  logShardSkips(count: number, where: string): void {
    this.services.logger.info(
      { shard: this.shardText, skipped: count },
      `${count} instance${count === 1 ? '' : 's'} of the ${where} belong${count === 1 ? 's' : ''} to other shards and ${count === 1 ? 'was' : 'were'} left out`,
    )
  }

  /**
   * Whether a connection is kept: on a shard, not when an end is an instance another shard owns
   * (logged as a warning), unless the shard is linked to the others (`--nats`): then a connection
   * with one end here is kept and carries its value across, and one with neither end here is
   * left to the other shards (logged at debug level).
   */
  keepsConnection(name: string, from: string, to: string): boolean {
    if (!this.shard) return true
    const ends = [parseAttributeRef(from), parseAttributeRef(to)]
    const far = ends.filter((ref) => typeof ref !== 'string' && !this.owns(ref.instance)).length
    if (far > 0 && this.crossShard) {
      if (far === 1) return true
      this.services.logger.debug({ connection: name, from, to, shard: this.shardText }, `connection '${name}' left to other shards: neither end is on this one`)
      return false
    }
    for (const ref of ends) {
      if (typeof ref === 'string' || this.owns(ref.instance)) continue
      this.services.logger.warn(
        { connection: name, from, to, shard: this.shardText, instance: ref.instance, owner: `${shardOf(ref.instance, this.shard.count)}/${this.shard.count}` },
        `connection '${name}' skipped: instance '${ref.instance}' is on shard ${shardOf(ref.instance, this.shard.count)}/${this.shard.count}, not on this one (${this.shardText}); connections across shards carry no values`,
      )
      return false
    }
    return true
  }

  /** On a shard linked to the others: which end of a kept connection another shard owns, and the subject its value travels on. */
  farEnd(from: string, to: string): { end: 'from' | 'to'; subject: string } | null {
    if (!this.crossShard) return null
    const fromRef = parseAttributeRef(from)
    const toRef = parseAttributeRef(to)
    if (typeof fromRef === 'string' || typeof toRef === 'string') return null
    const subject = valueSubject(this.crossShard.prefix, fromRef)
    if (!this.owns(fromRef.instance)) return { end: 'from', subject }
    if (!this.owns(toRef.instance)) return { end: 'to', subject }
    return null
  }

  /** Runs `fn` while no other structural change runs. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.lock.exclusive(fn)
  }

  override get state(): SystemState {
    return this.lifecycle.state
  }

  override children(): Component[] {
    return [this.models, this.instances, this.connections, this.timer, this.polling, this.snapshots, this.logs]
  }

  /**
   * `definition` (and its other name `definition_snapshot`) is the whole current structure as a
   * system definition, what a snapshot holds: read-only, built only when read.
   */
  override properties(): Record<string, unknown> {
    let structure: SystemDefinition | undefined
    const definition = (): SystemDefinition => (structure ??= structureOf(this))
    return {
      state: this.lifecycle.state,
      steps: this.engine.steps,
      server_version: this.services.serverVersion,
      ...(this.shard ? { shard: shardText(this.shard) } : {}),
      get definition() {
        return definition()
      },
      get definition_snapshot() {
        return definition()
      },
    }
  }

  /** The definition is in `attr` only: repeated at top level the structure would be in the document four times. */
  override document(): NodeDocument {
    const doc = super.document()
    delete doc.definition
    delete doc.definition_snapshot
    return doc
  }

  /**
   * The document with the definition's float values written as floats (`25.0`), as a model
   * document writes its definition. The definition's text is written once and put in both places:
   * it is most of the document of a large system.
   */
  override documentJson(): string {
    const doc = this.document()
    const definition = doc.attr.definition!.value as SystemDefinition
    doc.attr.definition = { value: DEFINITION_SLOT }
    doc.attr.definition_snapshot = { value: DEFINITION_SLOT }
    const parts = JSON.stringify(doc).split(DEFINITION_SLOT_JSON)
    const text = typedJson(typedSystemDefinition(definition))
    if (parts.length === 3) return parts.join(text)
    // Not expected: the document's other strings are the server's own (state, version).
    const typed = typedSystemDefinition(definition)
    doc.attr.definition = { value: typed }
    doc.attr.definition_snapshot = { value: typed }
    return typedJson(doc)
  }

  override propertyJson(name: string): string | undefined {
    if (name === 'definition' || name === 'definition_snapshot') return typedJson(typedSystemDefinition(structureOf(this)))
    return super.propertyJson(name)
  }

  /** Root PUT: models, instances and connections, all checked before any is written (system-structure.ts). */
  override async put(body: Record<string, unknown>): Promise<void> {
    await putStructure(this, body)
  }

  override methods(): Record<string, MethodHandler> {
    return {
      prepare: noArguments(() => this.exclusive(async () => (await this.lifecycle.prepare(), true))),
      run: (call) => this.runSteps(call),
      start: noArguments(() => this.exclusive(async () => (await this.lifecycle.start(), true))),
      stop: noArguments(() => this.exclusive(async () => (await this.lifecycle.stop(), true))),
      reset: noArguments(() => this.exclusive(async () => (await this.lifecycle.reset(), true))),
      reload: noArguments(() => reloadSystemFile(this)),
      reload_modules: (call) => this.exclusive(() => reloadModules(this, call)),
    }
  }

  /** The adapters of protocols Mimic does not serve, per instance (GET /health lists them). */
  unsupportedAdapters(): Array<{ instance: string; adapter: string; kind: string }> {
    const out: Array<{ instance: string; adapter: string; kind: string }> = []
    for (const instance of this.instances.all()) {
      for (const node of instance.communication.unsupported()) out.push({ instance: instance.name, adapter: node.name, kind: node.kind })
    }
    return out
  }

  /** Instances whose model is `model`. */
  instancesOf(model: string): Instance[] {
    return [...this.instances.all()].filter((i) => i.model.name === model)
  }

  /** A 404 for a missing child of one of the root's containers. */
  notFound(container: string, name: string): NotFoundError {
    return new NotFoundError(`Component '${container}.${name}' not found`, [{ path: `${container}.${name}`, message: 'not found' }])
  }

  /** Prepares every instance (system-lifecycle.ts). */
  prepare(): Promise<void> {
    return this.lifecycle.prepare()
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
    await this.engine.run(steps as number, (dt ?? undefined) as number | undefined)
    return true
  }

  /** Starts every instance and the system loop (system-lifecycle.ts). */
  start(): Promise<void> {
    return this.lifecycle.start()
  }

  /**
   * Ends system stepping for good (server shutdown): a `run` under way stops after its step under
   * way and answers 503 `shutting_down` with the steps it took, later runs are refused the same
   * way, and the polling loop stops. Values, lifecycle states and instances stay as they are, so
   * a snapshot taken now holds the state after the last complete step. `why` says why, in the
   * words the fault gives.
   */
  stopStepping(why: string): void {
    this.engine.close(why)
  }

  /**
   * Replaces the whole structure in place (snapshot load, `--system` at start-up), everything
   * validated first (system-structure.ts). The caller holds the structure lock.
   */
  replaceStructure(definition: unknown, subject?: string, at?: string): Promise<{ models: number; instances: number; connections: number }> {
    return replaceStructure(this, definition, subject, at)
  }

  /** Saves a snapshot, with the runtime state when `includeState` (system-saved-state.ts). The caller holds the structure lock. */
  saveSnapshot(options: SaveOptions, how: { includeState: boolean; automatic?: boolean; id?: string }): Promise<SaveResult> {
    return saveSnapshot(this, options, how)
  }

  /** The runtime state of the system and of every instance, as a snapshot's `state` section. Call it between steps. */
  captureState(marked: boolean, opts: { tolerant?: boolean } = {}): Promise<SnapshotState> {
    return captureSystemState(this, marked, opts)
  }

  /** Loads a snapshot in place of the whole system (system-saved-state.ts). The caller holds the structure lock. */
  loadSnapshot(snapshot: SnapshotRecord): Promise<{ models: number; instances: number; connections: number; state?: true }> {
    return loadSnapshot(this, snapshot)
  }

  /** Stops everything and releases every instance (server shutdown). */
  override async destroy(): Promise<void> {
    await this.lifecycle.halt()
    await this.instances.clear()
  }
}

/** Where the root document's definition text goes (random per process, so no value looks like it). */
const DEFINITION_SLOT = `~definition~${randomBytes(9).toString('base64url')}~`
const DEFINITION_SLOT_JSON = JSON.stringify(DEFINITION_SLOT)
