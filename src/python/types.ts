/**
 * Public types of the Python bridge: what a model's `import` block looks like, what the pool
 * needs to load an instance and what it answers.
 *
 * @example
 * const item: StepItem = { instance: 'sensor', method: 'run', time: 1.0, dt: 0.1 }
 */
import type { Logger } from 'pino'
import type { MimicError } from '../errors.js'

/** An attribute bound to a Python property, or to getter/setter methods (no setter: read-only). */
export type AttributeBinding = { property: string } | { getter: string; setter?: string | null }

/** One entry of an `import` block: a class of a .py file and how it is bound. */
export interface ImportSpec {
  class: string
  init?: { args?: unknown[]; kwargs?: Record<string, unknown> }
  attributes?: Record<string, AttributeBinding>
  methods?: Record<string, string>
}

/** A model's `import` block: file key -> one entry, or a list of entries for several classes. */
export type ImportBlock = Record<string, ImportSpec | ImportSpec[]>

/** One class to instantiate, with its file already resolved to an absolute path. */
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

/** Everything a worker needs to (re)load an instance. */
export interface LoadRequest {
  entries: LoadEntry[]
  /** The model definition, given to MimicComponent subclasses as `self.definition`. */
  definition: Record<string, unknown>
  /** Current values of the model's attributes (declarative ones are what `self.attributes` reads). */
  attributes?: Record<string, unknown>
  time?: number
  dt?: number
}

/** What a successful load reports. */
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

/** Arguments and context of one call into Python. */
export interface CallOptions {
  args?: unknown[]
  kwargs?: Record<string, unknown>
  time?: number
  dt?: number
  /** Current declarative attribute values (only sent to instances that have a MimicComponent). */
  attributes?: Record<string, unknown>
}

/** The answer to a call. */
export interface CallResult {
  /** The method's return value, JSON-able (other values arrive as their repr string). */
  result: unknown
  /** Bound attribute values that changed since the previous answer for this instance. */
  values: Record<string, unknown>
  /** Declarative attributes the Python code wrote through `self.attributes`. */
  attributes: Record<string, unknown>
}

/** One call of a batched step; without `method` it only refreshes time and reads changed values. */
export interface StepItem extends CallOptions {
  instance: string
  method?: string
}

/** The outcome of one step item: never thrown, so one failure cannot hide the others. */
export type StepOutcome =
  | ({ ok: true; instance: string } & CallResult)
  | { ok: false; instance: string; error: MimicError }

/** Where an instance lives and what is bound. */
export interface InstanceInfo {
  worker: number
  pid: number
  files: string[]
  methods: string[]
  bound: string[]
  readOnly: string[]
  components: boolean[]
}

/** The state of one worker slot. */
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

/** Called when a worker dies or is killed, with the instances it held. */
export type InstancesLostListener = (instances: string[], reason: string) => void

/** Options of a PythonPool. */
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
}
