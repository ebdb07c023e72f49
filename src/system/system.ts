import { randomBytes } from 'node:crypto'
import { realpath } from 'node:fs/promises'
import { resolve, sep } from 'node:path'
import { ConflictError, ForbiddenError, InternalError, MimicError, NotFoundError, ValidationError, summarize, type ErrorDetail } from '../errors.js'
import { asSystemDefinition, checkDefinitionText, definitionFormat, locate, parseDefinitionText, readDefinitionText } from '../definition/load-file.js'
import { typedSystemDefinition } from '../values/definitions.js'
import { typedJson, valueJson } from '../values/encode.js'
import { joinPath, parseAttributeRef, validateSystem, type AttributeRef, type ConnectionEntry, type SystemDefinition } from '../definition/validate.js'
import { attributeDeclarations, type AttributeDeclaration, type AttributeType, type ParsedModelDefinition } from '../definition/model-schema.js'
import { behaviourChecker, type ActionImportPolicy } from '../language/model/index.js'
import { actionImportPolicy } from '../python/index.js'
import { combinedFault, Engine, RefusedValues } from '../engine/index.js'
import { Component, noArguments, type CallArgs, type MethodHandler, type NodeDocument } from '../tree/component.js'
import { structureLock } from '../tree/lock.js'
import { Connections } from './connections.js'
import { CrossShard, valueSubject } from './cross-shard.js'
import { Instances, type InstancesCheck } from './instances.js'
import { Logs } from './logs.js'
import { mappedDefaultProblems } from './mapping-check.js'
import { Models } from './models.js'
import { Polling } from './polling.js'
import type { SystemServices } from './services.js'
import { SnapshotsNode } from './snapshots-node.js'
import { Timer } from './timer.js'
import type { Instance } from './instance.js'
import { InstanceLifecycle } from './instance-lifecycle.js'
import { captureInstanceState, stageInstanceState } from './instance-saved-state.js'
import { STATE_VERSION, type InstanceState, type SaveOptions, type SaveResult, type SnapshotRecord, type SnapshotState } from '../snapshots/index.js'
import { isRecord } from '../definition/is-record.js'
import { ownsInstance, shardOf, shardText, type Shard } from './shard.js'
import type { BodyValues } from '../values/request.js'

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
  #state: SystemState = 'INITIALIZED'
  readonly #engine: Engine<Instance>

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
    this.#engine = new Engine({
      system: this,
      python: services.python,
      stepBatch: services.stepBatch,
      logger: services.logger,
      observeStep: services.observeStep,
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
      for (const name of names) this.instances.get(name)?.lifecycle.lost(reason)
      this.#engine.instancesLost(names, reason)
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
    return this.#state
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
    const definition = (): SystemDefinition => (structure ??= this.structure())
    return {
      state: this.#state,
      steps: this.#engine.steps,
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
    if (name === 'definition' || name === 'definition_snapshot') return typedJson(typedSystemDefinition(this.structure()))
    return super.propertyJson(name)
  }

  override async put(body: Record<string, unknown>): Promise<void> {
    const unknown = Object.keys(body).filter((k) => !['models', 'instances', 'connections'].includes(k))
    if (unknown.length)
      throw new NotFoundError(`The system root has no children ${unknown.map((k) => `'${k}'`).join(', ')} to write (models, instances, connections)`)
    // An empty part has nothing to write: what `GET definition` answers for a system without
    // connections (`"connections": {}`) is PUT as it is.
    const empty = (value: unknown): boolean => (isRecord(value) || Array.isArray(value)) && Object.keys(value).length === 0
    const models = body.models && !empty(body.models) ? asRecord(body.models, 'models') : undefined
    const instances = body.instances && !empty(body.instances) ? instanceRecord(body.instances) : undefined
    const connections = body.connections && !empty(body.connections) ? asRecord(body.connections, 'connections') : undefined
    await this.exclusive(async () => {
      this.#checkNamesExist(models, instances, connections)
      // Every part is checked against the system as it will be before anything is written: a
      // 422 (or 404) leaves the system as it was.
      const parsed = models ? this.models.check(models, 'models') : undefined
      const modelOf = (name: string): ParsedModelDefinition | undefined => parsed?.get(name)?.parsed ?? this.models.get(name)?.parsed
      const checked = instances ? this.instances.check(instances, modelOf) : undefined
      const details = (checked?.details ?? []).map((d) => ({ ...d, path: joinPath('instances', d.path) }))
      details.push(...(checked?.unknownModels ?? []).map((m) => ({ path: `models.${m}`, message: 'not found' })))
      if (connections && details.length === 0) {
        const future = this.#futureAttributes(modelOf, parsed, checked?.setups)
        const problems = this.connections.check(connections, future.names, future.type)
        details.push(...problems.map((d) => ({ ...d, path: joinPath('connections', d.path) })))
      }
      if (details.length) throw new ValidationError(`${summarize('System', details)}: nothing was written`, details)
      if (parsed) await this.models.apply(parsed)
      if (checked) await this.instances.apply(checked.setups)
      if (connections) this.connections.apply(connections)
    })
  }

  /**
   * The attributes each instance will have once a root PUT is applied, for checking its
   * connections: an instance the PUT makes or rebuilds (its entry changed, or its model is
   * replaced) has its model's attributes; one it leaves alone keeps its own, including any added
   * to it since it was made.
   */
  #futureAttributes(
    modelOf: (name: string) => ParsedModelDefinition | undefined,
    replaced: ReadonlyMap<string, unknown> | undefined,
    setups: InstancesCheck['setups'] | undefined,
  ): { names: (instance: string) => Set<string> | undefined; type: (ref: AttributeRef) => AttributeType | undefined } {
    const declared = (instance: string): AttributeDeclaration[] | Instance | undefined => {
      const setup = setups?.get(instance)
      const existing = this.instances.get(instance)
      const model = setup?.model ?? existing?.model.name
      if (model === undefined) return undefined
      const rebuilt = (setup !== undefined && this.instances.rebuilds(instance, setup)) || replaced?.has(model) === true
      return rebuilt || !existing ? attributeDeclarations(modelOf(model)!) : existing
    }
    return {
      names: (instance) => {
        const future = declared(instance)
        if (future === undefined) return undefined
        return new Set(Array.isArray(future) ? future.map((a) => a.name) : [...future.attributes.all()].map((a) => a.name))
      },
      type: (ref) => {
        const future = declared(ref.instance)
        if (future === undefined) return undefined
        return Array.isArray(future) ? future.find((a) => a.name === ref.attribute)?.type : future.attributes.get(ref.attribute)?.valueType
      },
    }
  }

  /**
   * A root PUT writes its three parts one after the other: what would fail a later one for lack
   * of a model or an instance (in the system or in the body) is found before the first, so
   * nothing is half-written.
   */
  #checkNamesExist(
    models: Record<string, unknown> | undefined,
    instances: Record<string, unknown> | undefined,
    connections: Record<string, unknown> | undefined,
  ): void {
    const modelNames = new Set([...this.models.all()].map((m) => m.name).concat(Object.keys(models ?? {})))
    const unknownModels = [
      ...new Set(
        Object.values(instances ?? {})
          .map((entry) => (typeof entry === 'string' ? entry : isRecord(entry) ? (entry.type ?? entry.model) : undefined))
          .filter((model): model is string => typeof model === 'string' && !modelNames.has(model)),
      ),
    ]
    if (unknownModels.length) {
      throw new NotFoundError(
        `Unknown model${unknownModels.length === 1 ? '' : 's'} ${unknownModels.map((m) => `'${m}'`).join(', ')}: nothing was written`,
        unknownModels.map((m) => ({ path: `models.${m}`, message: 'not found' })),
      )
    }
    const instanceNames = new Set([...this.instances.all()].map((i) => i.name).concat(Object.keys(instances ?? {})))
    const missing: ErrorDetail[] = []
    for (const [name, conn] of Object.entries(connections ?? {})) {
      for (const end of ['from', 'to'] as const) {
        const ref = isRecord(conn) ? parseAttributeRef(conn[end]) : undefined
        if (ref !== undefined && typeof ref !== 'string' && !instanceNames.has(ref.instance))
          missing.push({ path: `connections.${name}.${end}`, message: `unknown instance '${ref.instance}'` })
      }
    }
    if (missing.length) throw new ValidationError(`${summarize('Connections', missing)}: nothing was written`, missing)
  }

  override methods(): Record<string, MethodHandler> {
    return {
      prepare: noArguments(() => this.exclusive(async () => (await this.prepare(), true))),
      run: (call) => this.runSteps(call),
      start: noArguments(() => this.exclusive(async () => (await this.start(), true))),
      stop: noArguments(() => this.exclusive(async () => (await this.stop(), true))),
      reset: noArguments(() => this.exclusive(async () => (await this.reset(), true))),
      reload: noArguments(() => this.reload()),
      reload_modules: (call) => this.exclusive(() => this.reloadModules(call)),
    }
  }

  /**
   * `reload_modules` (the reference product's name): every instance whose Python objects are
   * loaded makes them anew from its `.py` files as they are now, so an edited extension takes
   * effect without a restart. kwarg `directories` (a path or a list, each inside an extension
   * directory, else 403) limits it to instances with a file there. Taken between two system
   * steps; an instance whose new code fails to load goes to ERROR and the first failure is
   * thrown after all were tried.
   *
   * @example
   * await system.call('reload_modules', { args: [], kwargs: { directories: ['extensions'] } })
   * // { reloaded: ['sensor_1'], files: ['/srv/extensions/py_temp_sensor.py'], directories: ['/srv/extensions'] }
   */
  async reloadModules(call: CallArgs): Promise<{ reloaded: string[]; files: string[]; directories: string[] }> {
    const unknown = Object.keys(call.kwargs).filter((k) => k !== 'directories')
    if (unknown.length || call.args.length > 1) {
      const details = [
        ...unknown.map((k) => ({ path: `kwargs.${k}`, message: 'unknown argument (reload_modules takes directories)' })),
        ...(call.args.length > 1 ? [{ path: 'args', message: 'reload_modules takes one argument, directories' }] : []),
      ]
      throw new ValidationError(summarize('reload_modules', details), details)
    }
    const given = call.kwargs.directories ?? call.args[0]
    const directories = given === undefined || given === null ? undefined : await extensionDirectories(given, this.services.extensions)
    const within = directories && ((file: string) => directories.some((dir) => file === dir || file.startsWith(dir.endsWith(sep) ? dir : dir + sep)))
    return await this.#engine.between(async () => {
      const reloaded: string[] = []
      const files = new Set<string>()
      let failure: unknown
      for (const instance of this.instances.all()) {
        try {
          const own = await instance.lifecycle.reloadPython(within)
          if (own.length === 0 && !(within === undefined && instance.binding)) continue
          reloaded.push(instance.name)
          for (const file of own) files.add(file)
        } catch (err) {
          failure ??= err
        }
      }
      if (failure !== undefined) throw failure
      return { reloaded, files: [...files], directories: directories ?? [...this.services.extensions].map((d) => resolve(d)) }
    })
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

  /** Prepares every instance; failures are collected and reported together after all were tried. */
  async prepare(): Promise<void> {
    const failures: ErrorDetail[] = []
    const errors: unknown[] = []
    for (const instance of this.instances.all()) {
      await instance.lifecycle.prepare().catch((err: unknown) => {
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

  /**
   * Starts every instance and the system loop that steps them every `polling.interval` seconds.
   * Every instance is tried; those that started stay started and the loop runs (it skips an
   * instance in ERROR). Then, when any failed to start or is left in ERROR, the call answers
   * their failures in one fault, one detail per instance at `instances.<name>`, as prepare does.
   */
  async start(): Promise<void> {
    const failures: ErrorDetail[] = []
    const errors: unknown[] = []
    for (const instance of this.instances.all()) {
      let failed = false
      await instance.lifecycle.start({ ownLoop: false }).catch((err: unknown) => {
        failed = true
        errors.push(err)
        failures.push({ path: `instances.${instance.name}`, message: (err as Error).message })
        this.services.logger.warn({ instance: instance.name, err: (err as Error).message }, 'instance failed to start')
      })
      instance.lifecycle.markRunning()
      if (!failed && instance.state === 'ERROR') {
        const message = `Instance '${instance.name}' is in ERROR: ${instance.lastError ?? 'unknown error'}`
        errors.push(new ConflictError(message))
        failures.push({ path: `instances.${instance.name}`, message })
      }
    }
    this.#state = 'RUNNING'
    this.#engine.startPolling()
    if (failures.length) throw combinedFault(errors, summarize('start', failures), failures)
  }

  /** Stops the system loop and every instance. */
  async stop(): Promise<void> {
    await this.#halt()
    for (const instance of this.instances.all()) await instance.lifecycle.stop()
    this.#state = 'STOPPED'
  }

  async #halt(): Promise<void> {
    this.#state = this.#state === 'RUNNING' ? 'STOPPED' : this.#state
    await this.#engine.halt()
  }

  /**
   * Ends system stepping for good (server shutdown): a `run` under way stops after its step under
   * way and answers 503 `shutting_down` with the steps it took, later runs are refused the same
   * way, and the polling loop stops. Values, lifecycle states and instances stay as they are, so
   * a snapshot taken now holds the state after the last complete step. `why` says why, in the
   * words the fault gives.
   */
  stopStepping(why: string): void {
    this.#engine.close(why)
  }

  /** Resets every instance and the system timer. */
  async reset(): Promise<void> {
    await this.#halt()
    for (const instance of this.instances.all()) await instance.lifecycle.reset()
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
   * The caller holds the structure lock. `at` is where the definition sits in its document
   * (`definition` in a snapshot), put before the path of each problem.
   */
  async replaceStructure(definition: unknown, subject = 'System definition', at = ''): Promise<{ models: number; instances: number; connections: number }> {
    const result = this.#validated(definition, subject, at)
    await this.#halt()
    await this.instances.clear()
    this.connections.clear()
    this.models.clear()
    for (const [name, model] of result.system.models) this.models.install(name, model.raw, model.parsed)
    const instances = this.#own(result.system.instances, subject)
    for (const inst of instances) this.instances.add(inst.name, inst.model, inst)
    const connections = result.system.connections.filter((c) => this.keepsConnection(c.name, c.from, c.to))
    for (const conn of connections) this.connections.add(conn.name, conn.from, conn.to, conn.enabled)
    this.timer.reset()
    this.#engine.resetCount()
    this.#state = 'INITIALIZED'
    return { models: result.system.models.size, instances: instances.length, connections: connections.length }
  }

  /** The instances of a definition this server keeps (on a shard, those it owns; the others are logged as a count). */
  #own<T extends { name: string }>(instances: T[], subject: string): T[] {
    if (!this.shard) return instances
    const own = instances.filter((i) => this.owns(i.name))
    if (own.length < instances.length) this.logShardSkips(instances.length - own.length, subject)
    return own
  }

  /**
   * Saves a snapshot of the structure and, with `includeState`, of the runtime state of every
   * instance and of the system (taken between two steps, so every value is of one moment).
   * `automatic` marks a snapshot the server saves by itself (retention deletes only those); it
   * is always written to a file. The caller holds the structure lock.
   */
  async saveSnapshot(options: SaveOptions, how: { includeState: boolean; automatic?: boolean; id?: string }): Promise<SaveResult> {
    const structure = this.structure()
    const state = how.includeState ? await this.#engine.between(() => this.captureState(true)) : undefined
    const automatic = how.automatic === true
    const id = how.id !== undefined ? { id: how.id } : {}
    return await this.services.snapshots.save(structure, options, { ...(state ? { state } : {}), ...(automatic ? { automatic, file: true } : {}), ...id })
  }

  /**
   * The runtime state of the system and of every instance, as a snapshot's `state` section. With
   * `marked`, float attribute values are marked to be written as floats. Call it between steps.
   */
  async captureState(marked: boolean, opts: { tolerant?: boolean } = {}): Promise<SnapshotState> {
    const instances: Record<string, InstanceState> = {}
    for (const instance of this.instances.all()) instances[instance.name] = await captureInstanceState(instance, marked, opts)
    return {
      version: STATE_VERSION,
      system: { state: this.#state, timer: this.timer.saveState(), polling: this.polling.saveState() },
      instances,
    }
  }

  /**
   * Loads a snapshot read from the store in place of the whole system: its structure and, when
   * it has one, its runtime state. The caller holds the structure lock.
   */
  async loadSnapshot(snapshot: SnapshotRecord): Promise<{ models: number; instances: number; connections: number; state?: true }> {
    const subject = `Snapshot '${snapshot.id}'`
    // Problems of the structure name their place in the snapshot file: `definition.models.m...`.
    if (snapshot.state === undefined) return await this.replaceStructure(snapshot.definition, subject, 'definition')
    return { ...(await this.#replaceWithState(snapshot.definition, snapshot.state, subject, true, 'definition')), state: true as const }
  }

  /**
   * Replaces the structure and takes the runtime state (a snapshot of schema_version 2). The
   * new system is built and given its state beside the old one, which keeps running meanwhile:
   * every problem of the structure or the state (an instance or attribute it names that does not
   * exist, a value of the wrong type, a malformed part) is a 422 listing each with its path, and
   * the old system is untouched. Only then is the old one stopped and the new one brought to its
   * saved lifecycle state (Python objects with their states, adapters, held actions); if that
   * fails (a `__setstate__` that raises, a port taken), the old system is put back as it was
   * (its structure and state, taken before) and the failure is thrown.
   */
  async #replaceWithState(
    definition: unknown,
    state: SnapshotState,
    subject: string,
    keepBackup = true,
    at = '',
  ): Promise<{ models: number; instances: number; connections: number }> {
    const result = this.#validated(definition, subject, at)
    const problems: ErrorDetail[] = []
    const names = new Set(result.system.instances.map((i) => i.name))
    for (const name of Object.keys(state.instances)) {
      if (!names.has(name)) problems.push({ path: `state.instances.${name}`, message: `the snapshot's structure has no instance '${name}'` })
    }
    if (state.system.state === 'ERROR') problems.push({ path: 'state.system.state', message: 'expected INITIALIZED, PREPARED, RUNNING or STOPPED' })
    const models = new Map([...result.system.models].map(([name, m]) => [name, this.models.stage(name, m.raw, m.parsed)]))
    const staged: Instance[] = []
    for (const inst of this.#own(result.system.instances, subject)) {
      const instance = this.instances.stage(inst.name, models.get(inst.model)!, inst)
      staged.push(instance)
      const saved = state.instances[inst.name]
      if (saved !== undefined) problems.push(...stageInstanceState(instance, saved, `state.instances.${inst.name}`))
    }
    if (problems.length) throw new ValidationError(summarize(`${subject}: its runtime state cannot be loaded`, problems), problems)

    // What could fail from here on starts something: only then is the old system kept to go back to.
    const resumes = staged.filter((i) => state.instances[i.name] !== undefined && InstanceLifecycle.resumeStarts(state.instances[i.name]!))
    const backup = keepBackup && (resumes.length || state.system.state === 'RUNNING') ? await this.#backup() : undefined
    await this.#halt()
    await this.instances.clear()
    this.connections.clear()
    this.models.clear()
    for (const model of models.values()) this.models.adopt(model)
    for (const instance of staged) this.instances.adopt(instance)
    const connections = result.system.connections.filter((c) => this.keepsConnection(c.name, c.from, c.to))
    for (const conn of connections) this.connections.add(conn.name, conn.from, conn.to, conn.enabled)
    this.timer.restoreState(state.system.timer)
    this.polling.restoreState(state.system.polling)
    this.#engine.resetCount()
    this.#state = 'INITIALIZED'
    try {
      for (const instance of staged) {
        const saved = state.instances[instance.name]
        // Most instances start nothing (INITIALIZED): no promise for each of ten thousand.
        if (saved === undefined) continue
        if (InstanceLifecycle.resumeStarts(saved)) await instance.lifecycle.resume(saved)
        else instance.lifecycle.resumeIdle(saved)
      }
      this.#state = state.system.state as SystemState
      if (this.#state === 'RUNNING') this.#engine.startPolling()
    } catch (err) {
      const restore = await this.#restoreBackup(backup, subject, err)
      if (restore === null) throw err
      // The client learns what the system is now, not only why the load failed.
      const detail = { path: 'restore', message: restore }
      if (err instanceof MimicError) {
        err.details.push(detail)
        throw err
      }
      throw new InternalError((err as Error).message, [detail], { cause: err })
    }
    return { models: result.system.models.size, instances: staged.length, connections: connections.length }
  }

  /** The system as it is (structure and state), to go back to when a load fails half-way; a Python state that cannot be read is left out (its objects are made anew). */
  async #backup(): Promise<{ definition: SystemDefinition; state: SnapshotState }> {
    const definition = this.structure()
    const state = await this.#engine.between(() => this.captureState(false, { tolerant: true }))
    return { definition, state }
  }

  /**
   * Puts back the system a failed load replaced. When that fails too (a `__setstate__` that
   * raises on every state), tries once more with its Python objects made anew (their state is
   * what cannot be taken); answers what is not as it was, or null when all of it is.
   */
  async #restoreBackup(backup: { definition: SystemDefinition; state: SnapshotState } | undefined, subject: string, cause: unknown): Promise<string | null> {
    const reason = (cause as Error).message
    if (backup === undefined) return null
    const logger = this.services.logger
    logger.warn({ err: reason }, `${subject} failed while starting the loaded system: the system it replaced is put back`)
    try {
      await this.#replaceWithState(backup.definition, backup.state, 'The system before the load', false)
      return null
    } catch (err) {
      const first = (err as Error).message
      logger.error({ err: first }, "putting back the system before a failed snapshot load failed too: trying again with its Python objects' state left out")
      const instances = Object.fromEntries(Object.entries(backup.state.instances).map(([name, { python: _python, ...rest }]) => [name, rest]))
      try {
        await this.#replaceWithState(backup.definition, { ...backup.state, instances }, 'The system before the load', false)
        return `the system before the load is back, with its Python objects made anew: putting back their state failed too (${first})`
      } catch (again) {
        logger.error({ err: (again as Error).message }, 'the system before a failed snapshot load could not be put back')
        return `the system before the load could not be put back (${first}; then ${(again as Error).message}): its instances are as this failure left them`
      }
    }
  }

  /**
   * A system definition validated, or a 422 listing every problem (nothing changes), each path
   * prefixed with `at`, where the definition sits in its document.
   */
  #validated(definition: unknown, subject: string, at = ''): Extract<ReturnType<typeof validateSystem>, { ok: true }> {
    const result = validateSystem(definition, this.behaviourProblems)
    const placed = (details: ErrorDetail[]): ErrorDetail[] => (at ? details.map((d) => ({ ...d, path: joinPath(at, d.path) })) : details)
    if (!result.ok) {
      const details = placed(result.details)
      throw new ValidationError(summarize(subject, details), details)
    }
    const unmappable = placed(
      [...result.system.models].flatMap(([name, model]) =>
        [...mappedDefaultProblems(model.parsed), ...this.models.strictProtocolProblems(model.parsed)].map((d) => ({ ...d, path: `models.${name}.${d.path}` })),
      ),
    )
    if (unmappable.length) throw new ValidationError(summarize(subject, unmappable), unmappable)
    return result
  }

  /**
   * `reload()`: reads the `--system` file again and replaces the whole structure with it, as a
   * snapshot load does. A file that cannot be read or is invalid is a 422 listing every problem
   * with its path and line:column, and the system stays as it was; a server started without
   * `--system` has no file to read (409).
   */
  async reload(): Promise<{ file: string; loaded: true; models: number; instances: number; connections: number }> {
    const given = this.services.systemFile
    if (!given)
      throw new ConflictError(
        'Nothing to reload: the server was started without --system (MIMIC_SYSTEM), so there is no system file to read again. Load a snapshot, or PUT models, instances and connections, instead.',
      )
    const file = resolve(given)
    return await this.exclusive(async () => {
      const subject = `System file ${file}`
      const text = await readDefinitionText(file)
      if (text.problem) throw new ValidationError(`${subject} cannot be read: ${text.problem.message}`, [text.problem])
      const format = definitionFormat(file)
      const loaded = checkDefinitionText(text.text, this.behaviourProblems, { format })
      if (loaded.details.length) throw new ValidationError(summarize(`${subject} is invalid`, withPositions(loaded.details)), loaded.details)
      if (loaded.kind === 'model')
        throw new ValidationError(`${subject} holds a single model, not a system (models, instances, connections)`, [
          { path: '', message: 'expected a system definition with models, instances, connections' },
        ])
      const counts = await this.replaceStructure(asSystemDefinition(loaded.data), subject).catch((err: unknown) => {
        // Problems found past the schema (a default a register cannot carry) are located in the file too.
        if (!(err instanceof ValidationError)) throw err
        const parsed = parseDefinitionText(text.text, { format })
        const located = parsed.doc ? err.details.map((d) => ({ ...d, ...locate(parsed.doc!, parsed.lines, d.path) })) : err.details
        throw new ValidationError(summarize(`${subject} is invalid`, withPositions(located)), located)
      })
      this.services.logger.info({ file, ...counts }, 'system file reloaded')
      return { file, loaded: true as const, ...counts }
    })
  }

  /** Stops everything and releases every instance (server shutdown). */
  override async destroy(): Promise<void> {
    await this.#halt()
    await this.instances.clear()
  }
}

/** Where the root document's definition text goes (random per process, so no value looks like it). */
const DEFINITION_SLOT = `~definition~${randomBytes(9).toString('base64url')}~`
const DEFINITION_SLOT_JSON = JSON.stringify(DEFINITION_SLOT)

/** Problems with their place in the file first: `12:5 models.m.attributes.t: ...`. */
function withPositions(details: ErrorDetail[]): ErrorDetail[] {
  return details.map((d) => (d.line ? { ...d, path: `${d.line}:${d.column} ${d.path || '(root)'}` } : d))
}

/**
 * The instances of a root PUT: a map `{"<instance>": entry}`, or the list of single-entry maps a
 * system definition (and `GET definition`) writes, so a definition read back can be PUT as it is.
 */
function instanceRecord(value: unknown): Record<string, unknown> {
  if (!Array.isArray(value)) return asRecord(value, 'instances')
  const out: Record<string, unknown> = {}
  const details: ErrorDetail[] = []
  value.forEach((entry: unknown, index) => {
    const keys = isRecord(entry) ? Object.keys(entry) : []
    if (keys.length !== 1) details.push({ path: `instances[${index}]`, message: 'expected a single-entry map: {"<instance>": "<model>"}' })
    else if (Object.hasOwn(out, keys[0]!)) details.push({ path: `instances[${index}]`, message: `instance '${keys[0]}' is listed twice` })
    else Object.defineProperty(out, keys[0]!, { value: (entry as Record<string, unknown>)[keys[0]!], enumerable: true, writable: true, configurable: true })
  })
  if (details.length) throw new ValidationError(summarize('instances', details), details)
  return out
}

function asRecord(value: unknown, path: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ValidationError(`'${path}' must be an object`, [{ path, message: 'expected an object' }])
  }
  return value as Record<string, unknown>
}

/**
 * The directories a `reload_modules` call names, each resolved (symlinks too) and checked to lie
 * inside one of the extension directories: 422 for a value that is not a path or a list of
 * them, 403 for a directory outside.
 */
async function extensionDirectories(given: unknown, extensions: readonly string[]): Promise<string[]> {
  const list = typeof given === 'string' ? [given] : given
  if (!Array.isArray(list) || list.length === 0 || !list.every((d): d is string => typeof d === 'string' && d !== '')) {
    throw new ValidationError('reload_modules: directories is a directory or a list of them', [
      { path: 'kwargs.directories', message: 'expected a path or a list of paths' },
    ])
  }
  const roots = await Promise.all(extensions.map(async (d) => await realpath(d).catch(() => resolve(d))))
  const inside = (dir: string): boolean => roots.some((root) => dir === root || dir.startsWith(root.endsWith(sep) ? root : root + sep))
  return await Promise.all(
    list.map(async (dir, i) => {
      // A relative directory is taken from the server's working directory (as --extensions is), else inside an extension directory.
      const candidates = dir.startsWith('/') ? [resolve(dir)] : [resolve(dir), ...roots.map((root) => resolve(root, dir))]
      for (const candidate of candidates) {
        const real = await realpath(candidate).catch(() => undefined)
        if (real !== undefined && inside(real)) return real
      }
      const path = `kwargs.directories${typeof given === 'string' ? '' : `[${i}]`}`
      const message = `'${dir}' is not a directory inside the extension directories (${extensions.join(', ') || 'none configured'})`
      throw new ForbiddenError(`reload_modules: ${message}`, [{ path, message }])
    }),
  )
}
