/**
 * The fused step on the engine's side: instances whose model steps in one loop over a struct of
 * arrays (language/model/soa/) are stepped by one call per model instead of one step each. The
 * per-instance step (instance-step.ts) stays the reference: an instance the loop cannot take is
 * stepped by it, in place, and gives the same values (test/unit/language/fused-differential.test.ts).
 *
 * Instances step in the system's order: the loops of the instances gathered so far run before any
 * other instance with declarative behaviour takes its step (that one may read their values through
 * a lookup), so what each step sees is what it would see stepping one instance after the other.
 *
 * That order is a plan kept from step to step: which instances go into which model's loop (their
 * rows), which step alone, where the loops run. It is made again only when the step's instances
 * are not the ones it was made for (one joined, left, stopped or was filtered out) or when a model's
 * rows changed (`FusedStepper.version`: a row joined or left, or started or stopped being ready:
 * a None value, an action enabled on one instance, a scenario in play, a mapping), so a step of
 * 10,000 instances of one model does not gather them again. A change inside a step (one instance's
 * step makes another one's row not ready) is seen when that model's loop is about to run: its rows
 * are then asked one by one for that step.
 *
 * Switched off with `--fused off` (MIMIC_FUSED=0): then no instance has a row, and every instance
 * takes its own step.
 *
 * @example
 * const fused = new FusedSteps<Instance>()
 * const withWorker = fused.run(stepped, dt, stepAlone) // the others have taken their step
 */
import type { Steppable } from './steppable.js'

/** A model's loop over its rows (language/model/soa/batch.ts). */
export interface FusedStepper {
  /**
   * Steps rows[from] to rows[n - 1], each at its instance's time and dt (or `dt` for every row,
   * NaN: each its own), and moves each one's time on by it: the timer of an instance with a row
   * keeps its time and dt in the model's arrays. Answers n, or the index of the row whose
   * instance must step alone (its time unmoved).
   */
  step(rows: Int32Array, from: number, n: number, dt: number): number
  /** Changes whenever a row joins or leaves, or starts or stops being ready. */
  readonly version: number
}

/** An instance's row in its model's struct of arrays. */
export interface FusedRow {
  readonly stepper: FusedStepper
  readonly row: number
  /** Whether the loop may step it now (else it steps alone this time). */
  ready(): boolean
}

type Overrides = { clearOverrides(): void }

/** The instances of one model that one loop of the plan steps, kept with the plan. */
class Batch<I extends Steppable> {
  readonly stepper: FusedStepper
  /** The stepper's version the plan was made at. */
  version: number
  readonly instances: I[] = []
  rows = new Int32Array(0)
  /**
   * Attribute containers of its instances that present an override (`external_value`): it ends
   * before the loop runs, as an instance's own step ends it first. Every container right after
   * the plan is made; then those that report one (`onOverride`), so that a step touches no other.
   */
  dirty: Overrides[] = []
  readonly noteOverride = (attributes: Overrides): void => {
    this.dirty.push(attributes)
  }

  constructor(stepper: FusedStepper) {
    this.stepper = stepper
    this.version = stepper.version
  }

  seal(): void {
    const n = this.instances.length
    this.rows = new Int32Array(n)
    this.instances.forEach((instance, k) => {
      this.rows[k] = (instance.behaviour?.fused as FusedRow).row
      instance.attributes.onOverride = this.noteOverride
    })
    this.dirty = this.instances.map((instance) => instance.attributes)
  }
}

/** A plan's entry: an instance that steps alone, or the loops that run at that point. */
type Entry<I extends Steppable> = I | Array<Batch<I>>

/** The fused steps of one system (a system's steps never overlap). */
export class FusedSteps<I extends Steppable> {
  /** The instances the plan was made for, in order. */
  #live: readonly I[] = []
  #plan: Array<Entry<I>> = []
  /** Instances whose step awaits their Python worker (system-step.ts steps them after the others). */
  #workers: I[] = []
  #batches: Array<Batch<I>> = []
  /** Each stepper of an instance in the plan, with its version then (in a loop or not). */
  #watched: Array<[FusedStepper, number]> = []
  /** The instances of the plan that hear of each step (`afterStep`, fixed for an instance's life), in order. */
  #hearing: I[] = []
  /** The list the last `run` was given. */
  #given: readonly I[] | undefined
  #stale = true

  /**
   * One step of `live` (the system's order): each instance in its model's loop or alone (`alone`:
   * its own step, which reports its fault). Answers the instances whose step awaits their Python
   * worker, which it leaves to the caller. A list once given is not changed (a step with other
   * instances gives another list): the next step of a batch gives the same one, and the plan is
   * then not compared with it again.
   */
  run(live: readonly I[], dt: number | undefined, alone: (instance: I) => void): readonly I[] {
    if (this.#changed(live)) this.#make(live)
    this.#given = live
    const plan = this.#plan
    for (let e = 0; e < plan.length; e++) {
      const entry = plan[e] as Entry<I>
      if (Array.isArray(entry)) for (let b = 0; b < entry.length; b++) this.#runBatch(entry[b] as Batch<I>, dt, alone)
      else alone(entry)
    }
    return this.#workers
  }

  /**
   * Those of `live` that hear of each step (`afterStep`), in order: the plan's list when `live`
   * is what the last `run` was given, so that a step of 10,000 instances none of which has
   * adapters that want each step does not read a field of each one.
   */
  hearing(live: readonly I[]): readonly I[] {
    return live === this.#given ? this.#hearing : live.filter((instance) => instance.afterStep !== undefined)
  }

  #changed(live: readonly I[]): boolean {
    if (this.#stale) return true
    for (const [stepper, version] of this.#watched) if (stepper.version !== version) return true
    // The list the last step was given, and found (or made) to be the plan's: 10,000 reads saved per step of a batch.
    if (live === this.#given) return false
    const kept = this.#live
    if (kept.length !== live.length) return true
    for (let i = 0; i < live.length; i++) if (kept[i] !== live[i]) return true
    return false
  }

  /** Makes the plan for `live` (see the module comment). */
  #make(live: readonly I[]): void {
    for (const batch of this.#batches) for (const instance of batch.instances) instance.attributes.onOverride = undefined
    const plan: Array<Entry<I>> = []
    const batches: Array<Batch<I>> = []
    const workers: I[] = []
    const watched = new Map<FusedStepper, number>()
    let open = new Map<FusedStepper, Batch<I>>()
    for (const instance of live) {
      const behaviour = instance.behaviour
      if (behaviour?.usesWorker) {
        workers.push(instance)
        continue
      }
      const member = behaviour?.fused
      if (member !== undefined) watched.set(member.stepper, member.stepper.version)
      if (member !== undefined && member.ready()) {
        let batch = open.get(member.stepper)
        if (batch === undefined) open.set(member.stepper, (batch = new Batch<I>(member.stepper)))
        batch.instances.push(instance)
        continue
      }
      // Another instance with behaviour of its own: the loops gathered so far run first.
      if (behaviour !== undefined && open.size > 0) {
        plan.push([...open.values()])
        batches.push(...open.values())
        open = new Map()
      }
      plan.push(instance)
    }
    if (open.size > 0) {
      plan.push([...open.values()])
      batches.push(...open.values())
    }
    for (const batch of batches) batch.seal()
    this.#live = [...live]
    this.#plan = plan
    this.#workers = workers
    this.#batches = batches
    this.#watched = [...watched]
    this.#hearing = live.filter((instance) => instance.afterStep !== undefined)
    this.#stale = false
  }

  #runBatch(batch: Batch<I>, dt: number | undefined, alone: (instance: I) => void): void {
    const { instances, stepper } = batch
    // What the instance's own step does first (instance-step.ts): last step's presentation overrides end.
    const dirty = batch.dirty
    if (dirty.length > 0) {
      batch.dirty = []
      for (const attributes of dirty) attributes.clearOverrides()
    }
    if (stepper.version !== batch.version) {
      // A row changed inside this step: each instance is asked (and the plan is made again next step).
      this.#stale = true
      this.#runChecked(batch, dt, alone)
      return
    }
    this.#loop(batch, batch.rows, instances.length, dt, alone)
  }

  /** Rows[0..n-1] of `batch` in its loop; a row the loop leaves steps alone. */
  #loop(batch: Batch<I>, rows: Int32Array, n: number, dt: number | undefined, alone: (instance: I) => void): void {
    const { instances, stepper } = batch
    const each = dt ?? NaN
    let from = 0
    while (from < n) {
      // The loop moves each row's time on too: nothing is done per instance here.
      const next = stepper.step(rows, from, n, each)
      if (next < n) alone(instances[next] as I)
      from = next + 1
    }
  }

  /** The batch with each row asked whether it is ready: in the system's order, those that are not step alone. */
  #runChecked(batch: Batch<I>, dt: number | undefined, alone: (instance: I) => void): void {
    const { instances } = batch
    const ready: I[] = []
    const flush = (): void => {
      if (ready.length === 0) return
      const part = new Batch<I>(batch.stepper)
      part.instances.push(...ready)
      part.rows = Int32Array.from(ready, (instance) => (instance.behaviour?.fused as FusedRow).row)
      this.#loop(part, part.rows, ready.length, dt, alone)
      ready.length = 0
    }
    for (const instance of instances) {
      if (instance.behaviour?.fused?.ready()) ready.push(instance)
      else {
        flush()
        alone(instance)
      }
    }
    flush()
  }
}
