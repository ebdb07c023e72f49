/**
 * What declarative behaviour runs against: the instance it belongs to (a {@link BehaviourHost},
 * implemented by the tree's Instance), the step's time, and the log that makes a step
 * all-or-nothing (MODEL_LANGUAGE.md section 4).
 */
import { MimicError, type ErrorDetail } from '../../errors.js'
import type { AttributeType } from '../../definition/model-schema.js'
import { PyException } from '../expression/index.js'
import type { SoaColumn, TimeCells } from './soa/store.js'

/** An attribute as behaviour reads and writes it. */
export interface HostAttribute {
  readonly name: string
  readonly valueType: AttributeType
  readonly internalValue: unknown
  readonly externalValue: unknown
  /** The presentation override, if one is set. */
  readonly presented: { value: unknown } | undefined
  /** Sets the internal value; `value` is already of the attribute's type. While pinned, it keeps the pinned value. */
  setComputed(value: unknown): void
  /**
   * Pins the internal value at `pinned.value` (or, with undefined, lets go): until let go, a
   * `setComputed` keeps it. A step pins what overrides hold, so the model's own actions and
   * conditions read the held value (behaviour.ts).
   */
  pin?(pinned: { value: unknown } | undefined): void
  /** Sets (or, with undefined, ends) the presentation override. */
  setPresented(value: { value: unknown } | undefined): void
  /** Why a protocol mapping cannot carry `value`, or null. */
  mappingProblem(value: unknown): string | null
  /** Whether a protocol adapter publishes it (only then `mappingProblem` can find one). */
  readonly mapped: boolean
  /**
   * Keeps a float attribute's number in `column` at `row` (the fused step's struct of arrays,
   * soa/store.ts), or in the attribute again with undefined. An attribute without it never joins.
   */
  attachColumn?(column: SoaColumn | undefined, row: number): void
}

/** The instance behaviour belongs to, as behaviour sees it. */
export interface BehaviourHost {
  readonly name: string
  /** The instance timer's time and step (hooks outside a step run at that time). */
  readonly time: number
  readonly dt: number
  attribute(name: string): HostAttribute | undefined
  /** An instance parameter (`$param(p)`), undefined when not set. */
  parameter(name: string): unknown
  /**
   * The value at a dotted path from the instance (`$attr(path)`, `$(path)`): `polling.interval`,
   * `~.timer.dt` (the system root), an attribute name; undefined when it names nothing.
   */
  lookup(path: string): { value: unknown } | undefined
  /** Pins the instance timer at `time` (a write to `__timer`). */
  pinTime(time: number): void
  /**
   * Keeps the instance timer's time and dt in `cells` (its row in the fused step's struct of
   * arrays, soa/store.ts), or in the timer again with undefined. A host without it never joins.
   */
  attachTime?(cells: TimeCells | undefined): void
  /** Calls the method a dotted path ends in (`communication.modbus_slave.detach`). */
  callPath(path: string, args: unknown[], kwargs: Record<string, unknown>): Promise<unknown>
  /** The property a dotted path names (`communication.modbus_slave.response_delay`), undefined if none. */
  readPath(path: string): Promise<{ value: unknown } | undefined>
  /** Sets the property a dotted path names. */
  writePath(path: string, value: unknown): Promise<void>
  /** Disables the component at a path; resolves to what re-enables it, or undefined when the path names nothing. */
  suspendPath(path: string): Promise<(() => Promise<void>) | undefined>
  warn(message: string, context: Record<string, unknown>): void
  /**
   * Evaluates worker expression `index` of the model (`ModelBehaviour.workerExpressions`) in the
   * instance's Python worker, its names bound to `values`; both are Python-typed JSON text
   * (worker-values.ts). The worker context is created on first use if prepare did not create
   * it. A Python error rejects as a {@link WorkerException}; a lost worker as its fault.
   */
  evaluate(index: number, values: string): Promise<string>
}

/**
 * A Python error raised by an expression evaluated in the worker, with Python's traceback.
 *
 * @example
 * new WorkerException('ZeroDivisionError', 'division by zero', 'Traceback (most recent call last): ...')
 */
export class WorkerException extends PyException {
  readonly traceback: string | undefined
  constructor(type: string, message: string, traceback: string | undefined) {
    super(type, message)
    this.traceback = traceback
  }
}

/** The time of the step under way, shared by every action of one instance. */
export interface StepFrame {
  time: number
  dt: number
}

/**
 * The writes of one instance step, to take back if the step fails. Each entry is the attribute,
 * which value was written and what it held before; undone newest first.
 */
export class UndoLog {
  // Entries are kept and overwritten step after step (only `#size` goes back to 0), so a step
  // allocates nothing here once the arrays have grown to its number of writes. A number is kept
  // in `#numbers`, an array V8 stores unboxed: in `#before` each would be a new heap object.
  readonly #attrs: HostAttribute[] = []
  readonly #kind: number[] = []
  readonly #before: unknown[] = []
  readonly #numbers: number[] = [0.5]
  #size = 0

  internal(attr: HostAttribute): void {
    const i = this.#size++
    this.#attrs[i] = attr
    const value = attr.internalValue
    if (typeof value === 'number') {
      this.#kind[i] = NUMBER
      this.#numbers[i] = value
    } else {
      this.#kind[i] = INTERNAL
      this.#before[i] = value
    }
  }

  external(attr: HostAttribute): void {
    const i = this.#size++
    this.#attrs[i] = attr
    this.#kind[i] = EXTERNAL
    this.#before[i] = attr.presented
  }

  /** State a step changes besides attributes (a PID's integral, what a noise wrote last): taken back with them. */
  state(undoable: Undoable): void {
    const i = this.#size++
    this.#kind[i] = STATE
    this.#before[i] = undoable
  }

  commit(): void {
    this.#size = 0
  }

  rollback(): void {
    for (let i = this.#size - 1; i >= 0; i--) {
      const attr = this.#attrs[i] as HostAttribute
      const kind = this.#kind[i]
      if (kind === STATE) (this.#before[i] as Undoable).undo()
      else if (kind === EXTERNAL) attr.setPresented(this.#before[i] as { value: unknown } | undefined)
      else attr.setComputed(kind === NUMBER ? this.#numbers[i] : this.#before[i])
      this.#before[i] = undefined
    }
    this.#size = 0
  }
}

const INTERNAL = 0
const NUMBER = 1
const EXTERNAL = 2
const STATE = 3

/**
 * State of an action that a failed step must not keep: `undo()` puts back what it was when the
 * step recorded it (an object made once per action, so a step allocates nothing for it).
 */
export interface Undoable {
  undo(): void
}

/**
 * A step of declarative behaviour failed: which instance, which action (its name and path in the
 * model) and which expression, and Python's error.
 *
 * @example
 * err.message // "Instance 'meter_1': action 'power' (actions[2].call) failed: ZeroDivisionError: float division by zero in `p / i`"
 */
export class ActionError extends MimicError {
  constructor(message: string, details: ErrorDetail[], options?: ErrorOptions) {
    super('USER_CODE', message, details, options)
  }
}

/**
 * The attributes one step pinned at the values overrides hold (`HostAttribute.pin`): from before
 * the model's actions until the overrides are written again after them, so that every action and
 * condition reads the held value; then let go.
 */
export class Pins {
  readonly #attrs: HostAttribute[] = []

  /** Pins `attr` at `value` until `release`. */
  pin(attr: HostAttribute, value: unknown): void {
    if (attr.pin === undefined) return
    attr.pin({ value })
    this.#attrs.push(attr)
  }

  /** Lets go of every attribute pinned since the last release. */
  release(): void {
    const attrs = this.#attrs
    for (let i = 0; i < attrs.length; i++) (attrs[i] as HostAttribute).pin?.(undefined)
    attrs.length = 0
  }
}
