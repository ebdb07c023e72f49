/**
 * A model's struct of arrays: one Float64Array per float attribute of the model, one row per
 * instance. An instance bound to it keeps its float attributes' numbers here (the attribute reads
 * and writes its cell: `SoaColumn.values[row]`), so a step of all its instances is one loop over
 * rows (batch.ts), and a read over HTTP or a protocol sees the value the last step wrote, with
 * nothing copied back.
 *
 * A float attribute may hold a value that is not a number (None from Python): then the attribute
 * keeps it itself, and the row counts it in `holds`; a row with any such attribute is stepped
 * by its instance's own step, not by the loop.
 *
 * @example
 * const store = new SoaStore(slots.types)
 * const row = store.allocate()
 * attribute.attachColumn(store.columns[slot], row)
 */
import type { AttributeType } from '../../../definition/model-schema.js'

/** One float attribute of every instance of a model: `values[row]`. Replaced arrays keep the same column object. */
export interface SoaColumn {
  values: Float64Array
  readonly store: SoaStore
}

const FIRST_CAPACITY = 64

/**
 * Where an instance's timer keeps its time and dt while the instance has a row (system/timer.ts):
 * `time.values[row]`, `dt.values[row]`, which the loop reads and advances. `hold(+1)` while the
 * timer cannot be advanced by the loop (pinned, or settings other than a plain step: real time,
 * a maximum duration, a resolution, decimal places), `hold(-1)` when it can again.
 */
export interface TimeCells {
  readonly time: SoaColumn
  readonly dt: SoaColumn
  readonly row: number
  hold(change: number): void
}

/** The struct of arrays of one model (see the module comment). */
export class SoaStore {
  /** By attribute slot: the column of a float attribute, undefined for the others. */
  readonly columns: ReadonlyArray<SoaColumn | undefined>
  /** Each row's instance time and dt (its timer's, while it has the row): the loop reads and advances them. */
  readonly time: SoaColumn
  readonly dt: SoaColumn
  /**
   * Per row: how many reasons it has to step alone now: each float attribute holding something
   * that is not a number, and its member's own (batch.ts BatchMember). 0: the loop takes it.
   */
  holds: Int32Array
  /** Changes whenever a row is allocated or released or its `holds` change (engine/fused-steps.ts makes its plan again). */
  version = 0
  #capacity = FIRST_CAPACITY
  #next = 0
  readonly #free: number[] = []

  constructor(types: readonly AttributeType[]) {
    this.columns = types.map((type) => (type === 'float' ? { values: new Float64Array(FIRST_CAPACITY), store: this } : undefined))
    this.time = { values: new Float64Array(FIRST_CAPACITY), store: this }
    this.dt = { values: new Float64Array(FIRST_CAPACITY), store: this }
    this.holds = new Int32Array(FIRST_CAPACITY)
  }

  /** A row for a new instance (its cells hold 0 until its attributes are attached). */
  allocate(): number {
    const row = this.#free.pop() ?? this.#next++
    if (row >= this.#capacity) this.#grow()
    this.holds[row] = 0
    this.version++
    return row
  }

  /** One more (+1) or one fewer (-1) reason for `row` to step alone. */
  countHold(row: number, change: number): void {
    this.holds[row] = (this.holds[row] as number) + change
    this.version++
  }

  /** Gives a row back (its instance is gone). */
  release(row: number): void {
    this.holds[row] = 0
    this.#free.push(row)
    this.version++
  }

  /** Rows in use. */
  get rows(): number {
    return this.#next - this.#free.length
  }

  #grow(): void {
    const capacity = this.#capacity * 2
    for (const column of [...this.columns, this.time, this.dt]) {
      if (column === undefined) continue
      const values = new Float64Array(capacity)
      values.set(column.values)
      column.values = values
    }
    const counts = new Int32Array(capacity)
    counts.set(this.holds)
    this.holds = counts
    this.#capacity = capacity
  }
}
