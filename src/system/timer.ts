import { ValidationError } from '../errors.js'
import type { TimerSettings } from '../definition/model-schema.js'
import type { TimeCells } from '../language/model/soa/store.js'
import type { TimerState } from '../snapshots/index.js'
import { Component, noArguments, type MethodHandler } from '../tree/component.js'
import { floatDocumentJson, floatPropertyJson } from '../values/float-properties.js'

/** Properties that are seconds: floats to a Python client even when integral (`dt: 1.0`). */
const FLOATS: ReadonlySet<string> = new Set(['time', 'dt', 'initial_time', 'max_duration'])

/**
 * Simulated time of an instance (or of the whole system). Each run advances `time` by `dt`;
 * setting `time` pins it, so every later run sees exactly that time until it is set again or
 * `reset()` unpins it — the way to step a model deterministically from a test. A model's `timer`
 * settings (MODEL_LANGUAGE.md section 4) give the first time, the step, a limit that clamps or
 * wraps, rounding of the time, and wall-clock time for live demos.
 *
 * @example
 * timer.setProperty('time', 1.5) // pinned: run() keeps time at 1.5
 */
export class Timer extends Component {
  readonly type = 'Timer'
  #time: number
  #dt: number
  #pinned = false
  readonly #defaultDt: number
  readonly #settings: TimerSettings
  /** With `real_time`: the wall-clock milliseconds at which simulated time was `initial_time`. */
  #wallStart: number | undefined
  /**
   * While its instance steps in its model's loop (language/model/soa/): its time and dt live in
   * the model's arrays, which the loop advances; `time`, `dt` and everything here read and write
   * them there.
   */
  #cells: TimeCells | undefined
  /** Whether it keeps its row out of the loop now (`cells.hold`): pinned, or settings the loop does not follow. */
  #holding = false

  constructor(parent: Component, dt = 1.0, settings: TimerSettings = {}) {
    super('timer', parent)
    this.#settings = settings
    this.#defaultDt = settings.time_step ?? settings.step ?? settings.dt ?? dt
    this.#dt = this.#defaultDt
    this.#time = settings.initial_time ?? 0
  }

  // Methods, not private accessors (`get #now()`): V8 did not inline those, and advancing the
  // timers of a batch of 1,000 instances took 12 ns per step against 1.7 (benchmark 1,
  // bench/ANALYSIS.md).
  #now(): number {
    const cells = this.#cells
    return cells === undefined ? this.#time : (cells.time.values[cells.row] as number)
  }

  #setNow(time: number): void {
    const cells = this.#cells
    if (cells === undefined) this.#time = time
    else cells.time.values[cells.row] = time
  }

  #step(): number {
    const cells = this.#cells
    return cells === undefined ? this.#dt : (cells.dt.values[cells.row] as number)
  }

  #setStep(dt: number): void {
    const cells = this.#cells
    if (cells === undefined) this.#dt = dt
    else cells.dt.values[cells.row] = dt
  }

  /**
   * Keeps its time and dt in `cells` (its instance joins its model's loop, which advances them
   * as `advance` would: time + dt), or in itself again with undefined. A pinned timer, or one whose
   * settings the loop does not follow, holds its row out of the loop (its instance steps alone).
   */
  attachCells(cells: TimeCells | undefined): void {
    const time = this.#now()
    const dt = this.#step()
    this.#cells = cells
    this.#holding = false
    this.#setNow(time)
    this.#setStep(dt)
    this.#hold()
  }

  /** Holds the row out of the loop while the loop cannot advance it as `advance` would. */
  #hold(): void {
    const cells = this.#cells
    if (cells === undefined) return
    const s = this.#settings
    const holding = this.#pinned || Boolean(s.real_time) || s.max_duration !== undefined || s.resolution !== undefined || s.decimal_places !== undefined
    if (holding !== this.#holding) cells.hold(holding ? 1 : -1)
    this.#holding = holding
  }

  get time(): number {
    return this.#now()
  }

  get dt(): number {
    return this.#step()
  }

  get pinned(): boolean {
    return this.#pinned
  }

  /** Moves time on after a step (unless pinned); `dt` overrides the timer's own step once. */
  advance(dt = this.#step()): void {
    if (this.#pinned) return
    const s = this.#settings
    const initial = s.initial_time ?? 0
    let time: number
    if (s.real_time) {
      this.#wallStart ??= performance.now() - (this.#now() - initial) * 1000
      time = initial + (performance.now() - this.#wallStart) / 1000
    } else time = this.#now() + dt
    if (s.max_duration !== undefined && time - initial > s.max_duration) {
      // auto_reset starts the time over, as reset() would: the step after the one that reached
      // max_duration is at initial_time, so every cycle has the same steps.
      if (s.auto_reset) {
        time = initial
        this.#wallStart = undefined
      } else time = initial + s.max_duration
    }
    this.#setNow(this.#quantize(time))
  }

  /** `resolution` (a multiple of it) and `decimal_places`, so 0.1 + 0.2 steps read 0.3. */
  #quantize(time: number): number {
    const { resolution, decimal_places: places } = this.#settings
    let t = time
    if (resolution !== undefined) {
      const perUnit = 1 / resolution
      t = Math.abs(perUnit - Math.round(perUnit)) < 1e-9 ? Math.round(t * Math.round(perUnit)) / Math.round(perUnit) : Math.round(t / resolution) * resolution
    }
    if (places !== undefined) t = Number(t.toFixed(places))
    return t
  }

  override properties(): Record<string, unknown> {
    const props: Record<string, unknown> = { time: this.#now(), dt: this.#step(), pinned: this.#pinned }
    const s = this.#settings
    if (s.initial_time !== undefined) props.initial_time = s.initial_time
    if (s.max_duration !== undefined) props.max_duration = s.max_duration
    if (s.auto_reset !== undefined) props.auto_reset = s.auto_reset
    if (s.real_time !== undefined) props.real_time = s.real_time
    return props
  }

  override documentJson(): string {
    return floatDocumentJson(this, FLOATS)
  }

  override propertyJson(name: string): string | undefined {
    return floatPropertyJson(this, name, FLOATS)
  }

  override propertyProblem(name: string, value: unknown): string | null {
    if (name === 'time' || name === 'dt') {
      if (typeof value !== 'number' || !Number.isFinite(value)) return 'expected a finite number'
      return name === 'dt' && value <= 0 ? 'must be > 0' : null
    }
    if (name === 'pinned') return typeof value === 'boolean' ? null : 'expected true or false'
    return super.propertyProblem(name, value)
  }

  override async setProperty(name: string, value: unknown): Promise<void> {
    if (name !== 'time' && name !== 'dt' && name !== 'pinned') return await super.setProperty(name, value)
    const problem = this.propertyProblem(name, value)
    if (problem) throw new ValidationError(`Timer '${name}': ${problem}`, [{ path: name, message: problem }])
    if (name === 'time') this.pin(value as number)
    else if (name === 'dt') this.#setStep(value as number)
    else {
      this.#pinned = value as boolean
      this.#hold()
    }
  }

  /** Sets the time and pins it there (a write of `time`, or of `__timer` by an action). */
  pin(time: number): void {
    this.#setNow(time)
    this.#pinned = true
    this.#hold()
  }

  /** Its time, step and whether it is pinned (for a snapshot with state). */
  saveState(): TimerState {
    return { time: this.#now(), dt: this.#step(), pinned: this.#pinned }
  }

  /** Takes back what `saveState` gave (checked by the snapshot's schema); wall-clock time starts over from it. */
  restoreState(state: TimerState): void {
    this.#setNow(state.time)
    this.#setStep(state.dt)
    this.#pinned = state.pinned
    this.#hold()
    this.#wallStart = undefined
  }

  /** Back to time 0, unpinned, with the original dt. */
  reset(): void {
    this.#setNow(this.#settings.initial_time ?? 0)
    this.#setStep(this.#defaultDt)
    this.#pinned = false
    this.#hold()
    this.#wallStart = undefined
  }

  override methods(): Record<string, MethodHandler> {
    return {
      reset: noArguments(() => (this.reset(), true)),
    }
  }
}
