/**
 * Public types of the Python bridge: what a model's `import` block looks like, what the pool
 * needs to load an instance and what it answers.
 *
 * @example
 * const options: CallOptions = { kwargs: { offset: 0.5 }, time: 1.0, dt: 0.1 }
 */
import type { Logger } from 'pino'
import type { MimicError } from '../errors.js'
import type { WorkerExpressionSpec } from './messages.js'

/**
 * An attribute bound to a Python property, or to getter/setter methods (no setter: read-only).
 *
 * @example
 * const b: AttributeBinding = { getter: 'read_t', setter: 'write_t' }
 */
export type AttributeBinding = { property: string } | { getter: string; setter?: string | null }

/**
 * One entry of an `import` block: a class of a .py file and how it is bound.
 *
 * @example
 * const spec: ImportSpec = { class: 'PyTempSensor', init: { kwargs: { start: 25 } }, methods: { run: 'tick' } }
 */
export interface ImportSpec {
  class: string
  init?: { args?: unknown[]; kwargs?: Record<string, unknown> }
  attributes?: Record<string, AttributeBinding>
  methods?: Record<string, string>
}

/**
 * A model's `import` block: file key -> one entry, or a list of entries for several classes.
 *
 * @example
 * const block: ImportBlock = { 'pair.py': [{ class: 'A' }, { class: 'B' }] }
 */
export type ImportBlock = Record<string, ImportSpec | ImportSpec[]>

/**
 * One class to instantiate, with its file already resolved to an absolute path.
 *
 * @example
 * const [entry] = await buildLoadEntries({ 'a.py': { class: 'A' } }, dirs)  // entry.path === 'import.a.py'
 */
export interface LoadEntry {
  /** The file key as written in the model, e.g. `py_temp_sensor.py`. */
  key: string
  /** Where the entry sits in the definition, e.g. `import.other.py[1]`; fault paths extend it. */
  path: string
  /** Absolute, symlink-free path of the .py file. */
  file: string
  class: string
  init: { args: unknown[]; kwargs: Record<string, unknown> }
  attributes: Record<string, AttributeBinding>
  methods: Record<string, string>
}

/**
 * Everything a worker needs to (re)load an instance.
 *
 * @example
 * const request: LoadRequest = { entries, definition: model, attributes: { setpoint: 20 }, time: 0, dt: 1 }
 */
export interface LoadRequest {
  entries: LoadEntry[]
  /** The model definition, given to MimicComponent subclasses as `self.definition`. */
  definition: Record<string, unknown>
  /** Current values of the model's attributes (declarative ones are what `self.attributes` reads). */
  attributes?: Record<string, unknown>
  time?: number
  dt?: number
  /** Action expressions the worker evaluates for this instance (`PythonPool.evaluate` names them by index). */
  expressions?: WorkerExpressionSpec[]
}

/**
 * What a successful load reports.
 *
 * @example
 * const { values, methods } = await pool.load('sensor', request)  // values: { temperature: 25 }
 */
export interface LoadResult {
  /** Worker slot the instance lives in (0 .. workers-1). */
  worker: number
  pid: number
  /** Every bound attribute with the object's own current value. */
  values: Record<string, unknown>
  /** Model method names that are bound to Python methods. */
  methods: string[]
  /** Model attribute names bound to Python. */
  bound: string[]
  /** Bound attributes without a setter. */
  readOnly: string[]
  /** Per entry: whether the class is a MimicComponent subclass. */
  components: boolean[]
  /** True when any entry is a MimicComponent (then calls should carry declarative values). */
  component: boolean
}

/**
 * Arguments and context of one call into Python.
 *
 * @example
 * const options: CallOptions = { kwargs: { offset: 0.5 }, time: 1.5, dt: 0.1 }
 */
export interface CallOptions {
  args?: unknown[]
  kwargs?: Record<string, unknown>
  time?: number
  dt?: number
  /** Current declarative attribute values (only sent to instances that have a MimicComponent). */
  attributes?: Record<string, unknown>
}

/**
 * The answer to a call.
 *
 * @example
 * const { result, values, attributes }: CallResult = await pool.call('sensor', 'run')
 */
export interface CallResult {
  /** The method's return value, JSON-able (other values arrive as their repr string). */
  result: unknown
  /** Bound values the server may not know: a plain class's numbers always, anything else when it changed. */
  values: Record<string, unknown>
  /** Declarative attributes the Python code wrote through `self.attributes`. */
  attributes: Record<string, unknown>
}

/**
 * What a step plan's run needs besides the plan itself (`PythonPool.runPlan`).
 *
 * @example
 * const inputs: StepInputs = { time: 1.5, dt: 0.1, context: (i) => ({ attributes: declared[i] }) }
 */
export interface StepInputs {
  /** Time and dt a MimicComponent sees unless its context says otherwise. */
  time?: number
  dt?: number
  /** Per plan index, what a MimicComponent sees: its own time, dt and declarative values. */
  context?: (index: number) => { time?: number; dt?: number; attributes?: Record<string, unknown> }
  /**
   * Steps to run in this one message (default 1). Only for plans without MimicComponents: the
   * values of the last step come back, and `fail` hears how many steps failed.
   */
  repeat?: number
}

/**
 * Receives a step's answers as they are decoded (`PythonPool.runPlan`): `value` for each changed
 * bound value, `done` for an instance that returned a result or wrote declarative attributes,
 * `fail` for one that failed; `index` is the instance's position in the plan.
 *
 * @example
 * const sink: StepSink = { value: (i, name, v) => cache[i]![name] = v, done: () => {}, fail: (i, e) => errors.set(i, e) }
 */
export interface StepSink {
  /** `position`: where `name` is in the instance's bound values, stable while it stays loaded. */
  value(index: number, name: string, value: unknown, position: number): void
  done(index: number, result: unknown, declared: Record<string, unknown> | undefined): void
  /** `steps`: in how many of the message's steps the instance failed (1 unless `repeat` > 1). */
  fail(index: number, error: MimicError, steps?: number): void
}

/**
 * Where an instance lives and what is bound.
 *
 * @example
 * const info: InstanceInfo | undefined = pool.info('sensor')  // { worker: 0, pid: 4242, ... }
 */
export interface InstanceInfo {
  worker: number
  pid: number
  files: string[]
  methods: string[]
  bound: string[]
  readOnly: string[]
  components: boolean[]
}

/**
 * The state of one worker slot.
 *
 * @example
 * pool.workers().map((w: WorkerStatus) => w.instances)  // [100, 100]
 */
export interface WorkerStatus {
  worker: number
  /** -1 while the slot has no process (it starts on the next load). */
  pid: number
  alive: boolean
  instances: number
  /** Requests sent to the current process; a batched step counts as one. */
  requests: number
  inFlight: number
}

/**
 * Called when a worker dies or is killed, with the instances it held.
 *
 * @example
 * const onLost: InstancesLostListener = (instances, reason) => log.warn({ instances }, reason)
 */
export type InstancesLostListener = (instances: string[], reason: string) => void

/**
 * Options of a PythonPool.
 *
 * @example
 * const options: PythonPoolOptions = { python: '/usr/bin/python3', workers: 2, timeoutMs: 10_000, logger }
 */
export interface PythonPoolOptions {
  /** Interpreter to run, e.g. `/usr/bin/python3` or a venv's python. */
  python: string
  /** Number of worker processes. */
  workers: number
  /** A request that gets no answer for this long kills its worker. */
  timeoutMs: number
  logger: Logger
  /** Defaults to `python/mimic_sdk/worker.py` of this package. */
  workerScript?: string
  /** How long close() waits for a clean exit before SIGKILL (default 1000 ms). */
  graceMs?: number
  /** `--action-modules`: modules actions may import beyond the pure ones; the workers check imports against them too. */
  actionModules?: readonly string[]
  /**
   * `--max-value-bytes`: the largest value (as JSON) a worker sends, checked by the worker before
   * it sends (default 4 MiB); a frame larger than `frameLimit` of it kills the worker.
   */
  maxValueBytes?: number
}
