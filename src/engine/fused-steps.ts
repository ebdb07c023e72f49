/**
 * The fused step on the engine's side: instances whose model steps in one loop over a struct of
 * arrays (language/model/soa/) are gathered by model, their times and dts put in arrays, and
 * stepped by one call per model instead of one step each. The per-instance step
 * (instance-step.ts) stays the reference: an instance the loop cannot take is stepped by it, in
 * place, and gives the same values (test/unit/language/fused-differential.test.ts).
 *
 * Instances step in the system's order: gathered instances are stepped before any other instance
 * with declarative behaviour takes its step (that one may read their values through a lookup),
 * so what each step sees is what it would see stepping one instance after the other.
 *
 * Switched off with `--fused off` (MIMIC_FUSED=0): then no instance has a row, and every instance
 * takes its own step.
 *
 * @example
 * const fused = new FusedSteps<Instance>()
 * if (!fused.add(instance, dt)) stepAlone(instance)
 * fused.flush(dt, stepAlone)
 */
import type { Steppable } from './steppable.js'

/** A model's loop over its rows (language/model/soa/batch.ts). */
export interface FusedStepper {
  /** Steps rows[from] to rows[n - 1]; answers n, or the index of the row whose instance must step alone. */
  step(rows: Int32Array, times: Float64Array, dts: Float64Array, from: number, n: number): number
}

/** An instance's row in its model's struct of arrays. */
export interface FusedRow {
  readonly stepper: FusedStepper
  readonly row: number
  /** Whether the loop may step it now (else it steps alone this time). */
  ready(): boolean
}

/** The instances of one model gathered for one loop; its arrays are kept from step to step. */
interface Group {
  readonly stepper: FusedStepper
  size: number
  rows: Int32Array
  times: Float64Array
  dts: Float64Array
  instances: Steppable[]
}

/** The gathered instances of one engine, by model. */
export class FusedSteps<I extends Steppable> {
  readonly #groups = new Map<FusedStepper, Group>()
  #pending = 0

  /** Takes `instance` into its model's next loop when it has a row that is ready; false: step it alone. */
  add(instance: I, dt: number | undefined): boolean {
    const member = instance.behaviour?.fused
    if (member === undefined || !member.ready()) return false
    let group = this.#groups.get(member.stepper)
    if (group === undefined) {
      group = { stepper: member.stepper, size: 0, rows: new Int32Array(64), times: new Float64Array(64), dts: new Float64Array(64), instances: [] }
      this.#groups.set(member.stepper, group)
    }
    const k = group.size++
    if (k === group.rows.length) grow(group)
    // What the instance's own step does first (instance-step.ts): last step's presentation overrides end.
    instance.attributes.clearOverrides()
    group.rows[k] = member.row
    group.times[k] = instance.timer.time
    group.dts[k] = dt ?? instance.timer.dt
    group.instances[k] = instance
    this.#pending++
    return true
  }

  /** Whether instances wait for their loop. */
  get pending(): boolean {
    return this.#pending > 0
  }

  /**
   * Steps every gathered instance: one loop per model; an instance the loop leaves is stepped by
   * `alone` (its own step, which reports its fault). Each instance's time moves on after its step.
   */
  flush(dt: number | undefined, alone: (instance: I) => void): void {
    if (this.#pending === 0) return
    this.#pending = 0
    for (const group of this.#groups.values()) {
      const n = group.size
      if (n === 0) {
        // A model none of whose instances stepped this time (redefined, or its instances deleted).
        this.#groups.delete(group.stepper)
        continue
      }
      group.size = 0
      const { instances } = group
      let from = 0
      while (from < n) {
        const next = group.stepper.step(group.rows, group.times, group.dts, from, n)
        for (let k = from; k < next; k++) (instances[k] as I).timer.advance(dt)
        if (next < n) alone(instances[next] as I)
        from = next + 1
      }
      // Instances are not kept from one step to the next (one may be deleted in between).
      instances.length = 0
    }
  }
}

function grow(group: Group): void {
  const size = group.rows.length * 2
  const rows = new Int32Array(size)
  rows.set(group.rows)
  const times = new Float64Array(size)
  times.set(group.times)
  const dts = new Float64Array(size)
  dts.set(group.dts)
  group.rows = rows
  group.times = times
  group.dts = dts
}
