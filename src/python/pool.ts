/**
 * The pool of Python worker processes that run the behaviour of Python-backed instances.
 *
 * Each instance lives in one worker; a new one goes to the worker holding the fewest. A step
 * sends one batched message per worker, all workers at once. A worker that dies or hangs takes
 * only its own instances down: they are reported through `onInstancesLost`, the slot gets a
 * fresh process on the next load, and every other worker keeps serving.
 *
 * @example
 * const pool = new PythonPool({ python: 'python3', workers: 2, timeoutMs: 10_000, logger })
 * const entries = await buildLoadEntries(model.import, ['./extensions'])
 * await pool.load('sensor', { entries, definition: model, attributes: { temperature: 0 } })
 * const { result, values } = await pool.call('sensor', 'run', { time: 0.1, dt: 0.1 })
 * await pool.close()
 */
import { NotFoundError, WorkerGoneError } from '../errors.js'
import type { MimicError } from '../errors.js'
import type { Answer, CallMessage, Operation, Operations, SlotContext, StepAnswer, StepMessage, WireError, Write, WriteResult } from './messages.js'
import { remoteError } from './remote-error.js'
import type {
  CallOptions,
  StepSink,
  CallResult,
  InstanceInfo,
  InstancesLostListener,
  LoadRequest,
  LoadResult,
  PythonPoolOptions,
  StepInputs,
  WorkerStatus,
} from './types.js'
import { PythonWorker } from './worker-process.js'
import type { RequestLabel, WorkerExit } from './worker-process.js'
import { defaultWorkerScript } from './worker-script.js'
import { DEFAULT_MAX_VALUE_BYTES } from './protocol.js'

interface Placement {
  worker: PythonWorker
  /** The pool's slot of that worker (0 .. workers-1). */
  workerSlot: number
  /** Undefined while the first load is in flight. */
  info: InstanceInfo | undefined
  methods: Set<string>
  /** Declarative values are only worth sending to instances with a MimicComponent. */
  wantsAttributes: boolean
  /** The instance's slot inside its worker, by which a step names it. */
  slot: number
  /** Bound attribute names in the order a step answer indexes them. */
  order: string[]
  /** The pool's cache of the instance's bound values (the object `values()` copies). */
  cache: Values
}

/** The part of a compiled step plan that lives in one worker. */
interface PlanGroup {
  worker: PythonWorker
  /** Per instance of the group: its index in the plan, placement, slot and first value in `numbers`. */
  indices: number[]
  placements: Placement[]
  slots: number[]
  sizes: number[]
  bases: number[]
  /** Number of float64 values in an answer's `numbers`. */
  size: number
  /** Position in the group by slot. */
  bySlot: Map<number, number>
  /** Positions in the group of MimicComponents, which get their context with every step. */
  components: number[]
  /** Whether the worker holds this plan (a step then names it by id alone). */
  synced: boolean
}

/** A step plan as compiled against the placements of one pool generation. */
interface CompiledPlan {
  generation: number
  groups: PlanGroup[]
  /** Instances that cannot step at all (not loaded, lost, no such method), by plan index. */
  failures: Array<[number, MimicError]>
}

/**
 * The instances that step together, in order, and the method they run: built once by
 * `PythonPool.plan()` and run by `runPlan()` as often as wanted. The pool compiles it (which
 * worker, which slot, where each value lands in the answer) on first use and again only after
 * an instance was loaded, unloaded or lost; each worker keeps its part, so a step of a kept
 * plan is a message of a few bytes.
 *
 * @example
 * const plan = pool.plan(['s1', 's2'], 'run')
 * await pool.runPlan(plan, { time: 0, dt: 0.1 }, sink)
 */
export class StepPlan {
  /** @internal */
  compiled: CompiledPlan | undefined

  /** @internal use `PythonPool.plan()` */
  constructor(
    readonly instances: readonly string[],
    readonly method: string | undefined,
    /** @internal the worker-side id */
    readonly id: number,
  ) {}
}

type Values = Record<string, unknown>

/** A `set` waiting for the end of this turn of the event loop, to leave with the others. */
interface QueuedWrite {
  write: Write
  resolve: (result: WriteResult) => void
  reject: (err: unknown) => void
}

/** Base64 of little-endian float64s, decoded into an aligned array (one copy, no per-value reads). */
function float64s(base64: string): Float64Array {
  const bytes = Buffer.from(base64, 'base64')
  const values = new Float64Array(bytes.length >>> 3)
  new Uint8Array(values.buffer).set(bytes.subarray(0, values.length * 8))
  if (BIG_ENDIAN) for (let i = 0; i < values.length; i++) values[i] = bytes.readDoubleLE(i * 8)
  return values
}

const BIG_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 0

/**
 * A fixed number of worker slots, each filled lazily (or by `start()`) with a Python process.
 *
 * @example
 * pool.onInstancesLost((instances, reason) => instances.forEach((i) => markError(i, reason)))
 * await pool.runPlan(pool.plan(names, 'run'), { time, dt }, sink)
 */
export class PythonPool {
  #options: Required<Omit<PythonPoolOptions, 'workerScript'>> & { workerScript: string }
  #slots: Array<PythonWorker | undefined>
  #placements = new Map<string, Placement>()
  #values = new Map<string, Values>()
  #lost = new Map<string, string>()
  #listeners = new Set<InstancesLostListener>()
  #closed = false
  /** Bumped by every load, unload and loss: compiled step plans older than it are rebuilt. */
  #generation = 0
  #nextPlanId = 1
  /** Attribute writes of this turn of the event loop, by worker: they leave together. */
  #writes = new Map<PythonWorker, QueuedWrite[]>()
  /** Counts for /metrics: processes started, those that ended while the pool was open, and the requests of ended ones. */
  #started = 0
  #exited = 0
  #requestsOfExited = 0

  constructor(options: PythonPoolOptions) {
    this.#options = {
      graceMs: 1000,
      actionModules: [],
      maxValueBytes: DEFAULT_MAX_VALUE_BYTES,
      ...options,
      workers: Math.max(1, Math.floor(options.workers)),
      workerScript: options.workerScript ?? defaultWorkerScript(),
    }
    this.#slots = new Array<PythonWorker | undefined>(this.#options.workers).fill(undefined)
  }

  /** Workers running, processes started and ended, and requests sent, for /metrics. */
  stats(): { workers: number; alive: number; started: number; exited: number; requests: number } {
    let alive = 0
    let requests = this.#requestsOfExited
    for (const worker of this.#slots)
      if (worker?.alive) {
        alive++
        requests += worker.requestsSent
      }
    return { workers: this.#slots.length, alive, started: this.#started, exited: this.#exited, requests }
  }

  /** Number of worker slots. */
  get workerCount(): number {
    return this.#slots.length
  }

  /**
   * Starts every worker slot now instead of on first use.
   *
   * @example
   * await pool.start()  // fails with WorkerGoneError when the interpreter cannot run
   */
  async start(): Promise<void> {
    await Promise.all(this.#slots.map((_, slot) => this.#ready(slot)))
  }

  /**
   * Subscribes to instances lost with their worker (crash, os._exit, signal, timeout).
   * Returns the unsubscribe function.
   *
   * @example
   * const off = pool.onInstancesLost((instances, reason) => console.log(instances, reason))
   */
  onInstancesLost(listener: InstancesLostListener): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /**
   * (Re)loads an instance: imports its files fresh, instantiates its classes and binds them.
   * Throws ValidationError naming the entry for every load problem.
   *
   * @example
   * const { values, methods, worker } = await pool.load('sensor', { entries, definition })
   */
  async load(instance: string, request: LoadRequest): Promise<LoadResult> {
    this.#assertOpen()
    const previous = this.#placements.get(instance)
    const workerSlot = previous && previous.worker.alive ? previous.workerSlot : this.#leastLoadedSlot()
    // Reserve the place before any await, so concurrent loads spread over the slots.
    const worker = this.#workerIn(workerSlot)
    if (previous && previous.worker !== worker) this.#forget(instance)
    const placement: Placement =
      previous?.worker === worker
        ? previous
        : { worker, workerSlot, info: undefined, methods: new Set(), wantsAttributes: false, slot: -1, order: [], cache: {} }
    worker.instances.add(instance)
    this.#placements.set(instance, placement)
    this.#lost.delete(instance)
    this.#generation++

    let reply: Answer<'load'>
    try {
      await worker.ready
      reply = await this.#send(
        worker,
        'load',
        {
          instance,
          entries: request.entries,
          definition: request.definition,
          attributes: request.attributes ?? {},
          time: request.time,
          dt: request.dt,
          ...(request.expressions?.length ? { expressions: request.expressions } : {}),
        },
        { label: `load of '${instance}'`, path: 'import' },
      )
    } catch (err) {
      this.#forgetIfOn(instance, worker)
      throw err
    }
    if (!reply.ok) {
      this.#forgetIfOn(instance, worker)
      throw remoteError(reply.error, { instance, action: 'load' })
    }
    if (this.#placements.get(instance) !== placement) {
      // unload() (or close) came while loading: release what was just built.
      if (worker.alive) this.#send(worker, 'unload', { instance }, { label: `unload of '${instance}'`, path: 'import' }).catch(() => {})
      throw new NotFoundError(`Instance '${instance}' was unloaded while its Python code was loading`)
    }
    const { components } = reply
    const info: InstanceInfo = {
      worker: workerSlot,
      pid: worker.pid,
      files: [...new Set(request.entries.map((e) => e.file))],
      methods: reply.methods,
      bound: reply.bound,
      readOnly: reply.read_only,
      components,
    }
    placement.info = info
    placement.methods = new Set(info.methods)
    placement.wantsAttributes = components.some(Boolean)
    placement.slot = reply.slot
    placement.order = reply.order
    this.#generation++
    const values = { ...reply.values }
    placement.cache = { ...values }
    this.#values.set(instance, placement.cache)
    return {
      worker: workerSlot,
      pid: worker.pid,
      values,
      methods: info.methods,
      bound: info.bound,
      readOnly: info.readOnly,
      components,
      component: placement.wantsAttributes,
    }
  }

  /**
   * Calls the Python method bound to a model method; one round trip.
   *
   * @example
   * const { result } = await pool.call('sensor', 'calibrate', { kwargs: { offset: 0.5 } })
   */
  async call(instance: string, method: string, options: CallOptions = {}): Promise<CallResult> {
    const placement = this.#placement(instance)
    if (!placement.methods.has(method)) throw this.#noMethod(instance, placement, method)
    // Only what the worker would not default travels.
    const message: CallMessage = { instance, method }
    if (options.args?.length) message.args = options.args
    if (options.kwargs && Object.keys(options.kwargs).length) message.kwargs = options.kwargs
    if (options.time !== undefined) message.time = options.time
    if (options.dt !== undefined) message.dt = options.dt
    if (placement.wantsAttributes && options.attributes) message.attributes = options.attributes
    const reply = await this.#send(placement.worker, 'call', message, { label: `call '${method}' of '${instance}'`, path: method })
    if (!reply.ok) throw remoteError(reply.error, { instance, action: `call '${method}'` })
    return { result: reply.result ?? null, values: this.#merge(instance, reply.values), attributes: reply.attributes ?? {} }
  }

  /**
   * Evaluates one of the action expressions the instance was loaded with (`LoadRequest.expressions`,
   * by index), its names bound to `values`; one round trip. Values and result are Python-typed
   * JSON text (2.0 a float, 2 an int). A Python error is a UserCodeError whose detail holds
   * Python's `Type: message` and the traceback.
   *
   * @example
   * await pool.evaluate('tank', 0, '[21.5]')  // '21.6'
   */
  async evaluate(instance: string, expression: number, values: string): Promise<string> {
    const placement = this.#placement(instance)
    const reply = await this.#send(placement.worker, 'eval', { instance, expression, values }, { label: `an expression of '${instance}'`, path: 'actions' })
    if (!reply.ok) throw remoteError(reply.error, { instance, action: 'an action expression' })
    return reply.value
  }

  /**
   * The state of an instance's objects, for a snapshot: Python-typed JSON text of a list, one
   * item per object in the order of its entries, what the class's `__getstate__` returned or
   * null for a class without the `__getstate__`/`__setstate__` pair. One round trip.
   *
   * @example
   * await pool.getState('tank')  // '[{"level":25.0,"history":[]}]'
   */
  async getState(instance: string): Promise<string> {
    const placement = this.#placement(instance)
    const reply = await this.#send(placement.worker, 'getstate', { instance }, { label: `the state of '${instance}'`, path: '__getstate__' })
    if (!reply.ok) throw remoteError(reply.error, { instance, action: 'getstate' })
    return reply.states
  }

  /**
   * Gives an instance's objects a saved state: `__setstate__` of each object whose item of
   * `states` is not null, then `values` (Python-typed JSON text of bound attribute -> value)
   * written through the setters that exist. Answers the bound values that changed.
   *
   * @example
   * await pool.setState('tank', '[{"level":25.0,"history":[]}]')
   */
  async setState(instance: string, states: string, values?: string): Promise<{ values: Values }> {
    const placement = this.#placement(instance)
    const message = values === undefined ? { instance, states } : { instance, states, values }
    const reply = await this.#send(placement.worker, 'setstate', message, { label: `the state of '${instance}'`, path: '__setstate__' })
    if (!reply.ok) throw remoteError(reply.error, { instance, action: 'setstate' })
    return { values: this.#merge(instance, reply.values) }
  }

  /**
   * Writes a bound attribute through its property setter or setter method. A binding without a
   * setter is read-only: ValidationError (422).
   *
   * @example
   * await pool.set('sensor', 'temperature', 30)
   */
  async set(instance: string, attr: string, value: unknown): Promise<{ values: Values }> {
    const placement = this.#placement(instance)
    const result = await new Promise<WriteResult>((resolve, reject) => {
      let queue = this.#writes.get(placement.worker)
      if (!queue) {
        this.#writes.set(placement.worker, (queue = []))
        process.nextTick(() => this.#flushWrites(placement.worker))
      }
      queue.push({ write: [instance, attr, value], resolve, reject })
    })
    if (!result.ok) throw remoteError(result.error, { instance, action: `write of '${attr}'` })
    return { values: this.#merge(instance, result.values) }
  }

  /**
   * Sends the writes queued for a worker in one `set` (the connections of a system step write
   * hundreds at once); each is answered on its own.
   */
  #flushWrites(worker: PythonWorker): void {
    const queue = this.#writes.get(worker)
    if (!queue) return
    this.#writes.delete(worker)
    const [first] = queue
    const about =
      queue.length === 1
        ? { label: `write of '${first!.write[0]}.${first!.write[1]}'`, path: `attributes.${first!.write[1]}` }
        : { label: `${queue.length} attribute writes`, path: 'attributes' }
    worker.request('set', { writes: queue.map((queued) => queued.write) }, about).then(
      (reply) => {
        queue.forEach((queued, i) => {
          const result = reply.ok ? reply.results[i] : { ok: false, error: reply.error }
          queued.resolve(result ?? { ok: false, error: { kind: 'protocol', message: 'the Python worker gave no answer for this write' } })
        })
      },
      (err: unknown) => {
        for (const queued of queue) queued.reject(err)
      },
    )
  }

  /** Every request to a worker goes out after the writes queued before it, in order. */
  #send<Op extends Operation>(worker: PythonWorker, op: Op, message: Operations[Op]['message'], about: RequestLabel): Promise<Answer<Op>> {
    this.#flushWrites(worker)
    return worker.request(op, message, about)
  }

  /**
   * A step plan for these instances and method (undefined: only refresh the bound values), to
   * be run by `runPlan()` as often as wanted. Building one costs nothing; it is compiled on
   * its first run.
   *
   * @example
   * const plan = pool.plan(names, 'run')
   */
  plan(instances: readonly string[], method: string | undefined): StepPlan {
    return new StepPlan([...instances], method, this.#nextPlanId++)
  }

  /**
   * Runs a step plan: per worker one `step`; a plan the worker already holds is named by its id
   * alone. Every bound value that changed goes to `sink.value` as it is decoded, then `done`
   * (results and MimicComponent writes) or `fail` per instance. Never throws for a single
   * instance. `inputs.context(index)` gives a MimicComponent its own time, dt and declarative
   * values; plain classes need nothing per step.
   *
   * @example
   * await pool.runPlan(plan, { time, dt, context: (i) => ({ attributes: values(i) }) }, sink)
   */
  async runPlan(plan: StepPlan, inputs: StepInputs, sink: StepSink): Promise<void> {
    this.#assertOpen()
    let compiled = plan.compiled
    if (!compiled || compiled.generation !== this.#generation) compiled = plan.compiled = this.#compile(plan)
    for (const [index, error] of compiled.failures) sink.fail(index, error, inputs.repeat)
    await Promise.all(compiled.groups.map((group) => this.#runGroup(plan, group, inputs, sink)))
  }

  #compile(plan: StepPlan): CompiledPlan {
    const groups = new Map<PythonWorker, PlanGroup>()
    const failures: Array<[number, MimicError]> = []
    plan.instances.forEach((instance, index) => {
      let placement: Placement
      try {
        placement = this.#placement(instance)
        if (plan.method !== undefined && !placement.methods.has(plan.method)) throw this.#noMethod(instance, placement, plan.method)
      } catch (err) {
        failures.push([index, err as MimicError])
        return
      }
      let group = groups.get(placement.worker)
      if (!group) {
        group = {
          worker: placement.worker,
          indices: [],
          placements: [],
          slots: [],
          sizes: [],
          bases: [],
          size: 0,
          bySlot: new Map(),
          components: [],
          synced: false,
        }
        groups.set(placement.worker, group)
      }
      const k = group.indices.length
      group.indices.push(index)
      group.placements.push(placement)
      group.slots.push(placement.slot)
      group.sizes.push(placement.order.length)
      group.bases.push(group.size)
      group.size += placement.order.length
      group.bySlot.set(placement.slot, k)
      if (placement.wantsAttributes) group.components.push(k)
    })
    return { generation: this.#generation, groups: [...groups.values()], failures }
  }

  async #runGroup(plan: StepPlan, group: PlanGroup, inputs: StepInputs, sink: StepSink): Promise<void> {
    try {
      const message: StepMessage = { plan: plan.id }
      if (inputs.time !== undefined) message.time = inputs.time
      if (inputs.dt !== undefined) message.dt = inputs.dt
      if (group.components.length && inputs.context) {
        const contexts: Record<string, SlotContext> = {}
        for (const k of group.components) {
          const context = inputs.context(group.indices[k]!)
          const own: SlotContext = {}
          if (context.time !== undefined && context.time !== inputs.time) own.time = context.time
          if (context.dt !== undefined && context.dt !== inputs.dt) own.dt = context.dt
          if (context.attributes) own.attributes = context.attributes
          contexts[String(group.slots[k])] = own
        }
        message.contexts = contexts
      }
      const repeat = inputs.repeat ?? 1
      if (repeat > 1) message.repeat = repeat
      const label = { label: `${repeat > 1 ? `${repeat} steps` : 'a step'} of ${group.slots.length} instance(s)`, path: 'run' }
      const send = async (): Promise<Answer<'step'>> => {
        if (!group.synced) Object.assign(message, { slots: group.slots, sizes: group.sizes, method: plan.method ?? null })
        return await this.#send(group.worker, 'step', message, label)
      }
      let reply = await send()
      if (!reply.ok && group.synced && reply.error.kind === 'plan') {
        // The worker forgot the plan (it only keeps a few): send it in full once more.
        group.synced = false
        reply = await send()
      }
      if (!reply.ok) throw remoteError(reply.error, { instance: plan.instances[group.indices[0]!]!, action: 'step' })
      group.synced = true
      this.#deliver(plan, group, reply, sink)
    } catch (err) {
      for (const index of group.indices) sink.fail(index, err as MimicError, inputs.repeat)
    }
  }

  /**
   * Hands a step answer to the sink: each changed value straight to `value` (and into the pool's
   * cache), then `done` or `fail` per instance. No per-instance objects are built on the way.
   */
  #deliver(plan: StepPlan, group: PlanGroup, reply: StepAnswer, sink: StepSink): void {
    const failed = new Map<number, WireError>()
    if (reply.errors) for (const [slot, error] of reply.errors) failed.set(slot, error)
    const numbers = reply.numbers === undefined ? undefined : float64s(reply.numbers)
    if (numbers && numbers.length !== group.size) {
      throw new WorkerGoneError(`Python worker ${group.worker.id} answered a step with ${numbers.length} values instead of ${group.size}`)
    }
    const { placements, indices, bases, slots } = group
    if (numbers) {
      for (let k = 0; k < placements.length; k++) {
        const placement = placements[k]!
        if (placement.wantsAttributes || (failed.size && failed.has(slots[k]!))) continue
        const { order, cache } = placement
        const index = indices[k]!
        const base = bases[k]!
        for (let j = 0; j < order.length; j++) {
          const value = numbers[base + j]!
          // NaN: not a finite number, which comes as a change below when it changed
          if (value !== value) continue
          const name = order[j]!
          if (cache[name] === value) continue
          cache[name] = value
          sink.value(index, name, value, j)
        }
      }
    }
    const changes = reply.changes
    for (let i = 0; i + 2 < changes.length; i += 3) {
      const k = group.bySlot.get(changes[i] as number)
      if (k === undefined) continue
      const placement = placements[k]!
      const position = changes[i + 1] as number
      const name = placement.order[position]
      if (name === undefined) continue
      placement.cache[name] = changes[i + 2]
      sink.value(indices[k]!, name, changes[i + 2], position)
    }
    const results = new Map<number, unknown>()
    const returned = reply.results ?? []
    for (let i = 0; i + 1 < returned.length; i += 2) results.set(returned[i] as number, returned[i + 1])
    const declared = reply.attributes
    // Several steps in one message: every instance that failed in any of them, with a count.
    const counted = new Map<number, [number, WireError]>()
    if (reply.failures) for (const [slot, steps, error] of reply.failures) counted.set(slot, [steps, error])
    if (!failed.size && !counted.size && !results.size && !declared) return
    const action = plan.method ? `call '${plan.method}'` : 'step'
    indices.forEach((index, k) => {
      const slot = slots[k]!
      const count = counted.get(slot)
      if (count) {
        sink.fail(index, remoteError(count[1], { instance: plan.instances[index]!, action }), count[0])
      } else if (failed.size && failed.has(slot)) {
        sink.fail(index, remoteError(failed.get(slot), { instance: plan.instances[index]!, action }))
      } else if (results.size || declared) {
        sink.done(index, results.get(slot) ?? null, declared ? (declared[String(slot)] ?? {}) : undefined)
      }
    })
  }

  /**
   * Releases an instance's Python objects. Unknown or lost instances are a no-op.
   *
   * @example
   * await pool.unload('sensor')
   */
  async unload(instance: string): Promise<void> {
    this.#lost.delete(instance)
    const placement = this.#placements.get(instance)
    if (!placement) return
    this.#forget(instance)
    if (!placement.worker.alive) return
    try {
      await this.#send(placement.worker, 'unload', { instance }, { label: `unload of '${instance}'`, path: 'import' })
    } catch {
      // The worker died meanwhile: the objects are gone with it.
    }
  }

  /**
   * Where an instance lives and what is bound; undefined when it is not loaded.
   *
   * @example
   * pool.info('sensor')  // { worker: 1, pid: 4242, methods: ['run'], bound: ['temperature'], ... }
   */
  info(instance: string): InstanceInfo | undefined {
    const info = this.#placements.get(instance)?.info
    return info && { ...info, pid: this.#placements.get(instance)!.worker.pid }
  }

  /**
   * The last known value of every bound attribute (kept current by every answer).
   *
   * @example
   * pool.values('sensor')  // { temperature: 25.5 }
   */
  values(instance: string): Values | undefined {
    const values = this.#values.get(instance)
    return values && { ...values }
  }

  /**
   * One status line per worker slot.
   *
   * @example
   * pool.workers()  // [{ worker: 0, pid: 4242, alive: true, instances: 100, requests: 101, inFlight: 0 }, ...]
   */
  workers(): WorkerStatus[] {
    return this.#slots.map((w, slot) => ({
      worker: slot,
      pid: w?.pid ?? -1,
      alive: w?.alive ?? false,
      instances: w?.instances.size ?? 0,
      requests: w?.requestsSent ?? 0,
      inFlight: w?.inFlight ?? 0,
    }))
  }

  /**
   * Why an instance was lost with its worker, if it was (cleared by the next load or unload).
   *
   * @example
   * pool.lostReason('sensor')  // "Python worker 0 (pid 4242) exited with code 1"
   */
  lostReason(instance: string): string | undefined {
    return this.#lost.get(instance)
  }

  /**
   * Stops every worker (SIGKILL after the grace period) and waits until all processes are gone.
   *
   * @example
   * await pool.close()
   */
  async close(): Promise<void> {
    this.#closed = true
    const workers = this.#slots.filter((w): w is PythonWorker => w !== undefined)
    this.#slots.fill(undefined)
    this.#placements.clear()
    this.#values.clear()
    await Promise.all(workers.map((w) => w.shutdown(this.#options.graceMs)))
  }

  // ---------------------------------------------------------------------------------------------

  #assertOpen(): void {
    if (this.#closed) throw new WorkerGoneError('The Python worker pool is closed')
  }

  #leastLoadedSlot(): number {
    let best = 0
    let bestLoad = Number.POSITIVE_INFINITY
    this.#slots.forEach((worker, slot) => {
      const load = worker?.alive ? worker.instances.size : 0
      if (load < bestLoad) {
        best = slot
        bestLoad = load
      }
    })
    return best
  }

  async #ready(slot: number): Promise<PythonWorker> {
    const worker = this.#workerIn(slot)
    await worker.ready
    return worker
  }

  #workerIn(slot: number): PythonWorker {
    this.#assertOpen()
    let worker = this.#slots[slot]
    if (!worker || !worker.alive) {
      worker = new PythonWorker({
        id: slot,
        python: this.#options.python,
        script: this.#options.workerScript,
        timeoutMs: this.#options.timeoutMs,
        logger: this.#options.logger,
        actionModules: this.#options.actionModules,
        maxValueBytes: this.#options.maxValueBytes,
        onExit: (w, exit) => this.#onWorkerExit(slot, w, exit),
      })
      this.#slots[slot] = worker
      this.#started++
    }
    return worker
  }

  #onWorkerExit(slot: number, worker: PythonWorker, exit: WorkerExit): void {
    if (this.#slots[slot] === worker) this.#slots[slot] = undefined
    this.#generation++
    if (this.#closed) return
    this.#exited++
    this.#requestsOfExited += worker.requestsSent
    const lost: string[] = []
    for (const instance of worker.instances) {
      const placement = this.#placements.get(instance)
      if (placement?.worker !== worker) continue
      this.#placements.delete(instance)
      this.#values.delete(instance)
      // An instance still in its first load hears about it from load() itself.
      if (!placement.info) continue
      this.#lost.set(instance, exit.reason)
      lost.push(instance)
    }
    worker.instances.clear()
    this.#options.logger.warn({ worker: slot, pid: worker.pid, instances: lost }, exit.reason)
    if (lost.length === 0) return
    for (const listener of this.#listeners) {
      try {
        listener(lost, exit.reason)
      } catch (err) {
        this.#options.logger.error({ err }, 'an onInstancesLost listener threw')
      }
    }
  }

  #placement(instance: string): Placement {
    this.#assertOpen()
    const placement = this.#placements.get(instance)
    if (placement?.info && placement.worker.alive) return placement
    const lost = this.#lost.get(instance)
    if (lost) {
      const message = `Python worker of instance '${instance}' is gone (${lost}); prepare() loads it again`
      throw new WorkerGoneError(message, [{ path: 'import', message: lost }])
    }
    const message = placement ? `Python code of instance '${instance}' is still loading` : `Instance '${instance}' has no Python code loaded (prepare it first)`
    throw new NotFoundError(message, [{ path: 'import', message }])
  }

  #noMethod(instance: string, placement: Placement, method: string): NotFoundError {
    const bound = [...placement.methods].sort().join(', ') || 'none'
    const message = `Instance '${instance}' has no method '${method}' bound to Python (bound: ${bound})`
    return new NotFoundError(message, [{ path: `methods.${method}`, message }])
  }

  #forget(instance: string): void {
    this.#generation++
    const placement = this.#placements.get(instance)
    placement?.worker.instances.delete(instance)
    this.#placements.delete(instance)
    this.#values.delete(instance)
  }

  #forgetIfOn(instance: string, worker: PythonWorker): void {
    if (this.#placements.get(instance)?.worker === worker) this.#forget(instance)
  }

  #merge(instance: string, changed: Values | undefined): Values {
    const values = changed ?? {}
    const cache = this.#values.get(instance)
    if (cache) Object.assign(cache, values)
    return values
  }
}
