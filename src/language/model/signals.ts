/**
 * The time-based and stateful action kinds as plain functions of their settings and the
 * action's time: ramp, saw, interpolate, pid and noise (MODEL_LANGUAGE.md section 3). They
 * know nothing of attributes or steps, so each formula can be read, and tested, alone;
 * docs/model-language.md (Actions) states each formula.
 *
 * @example
 * rampValue({ start: 0, stop: 10, duration: 5, type: 'linear', overshoot: 0, stabilization: 0 }, 2.5) // 5
 */
import type { ErrorDetail } from '../../errors.js'
import { PyRandom } from '../expression/index.js'
import { StateReader, type StateValue } from './state.js'

/** A ramp from `start` to `stop` over `duration` seconds, optionally overshooting and settling. */
export interface RampSettings {
  start: number
  stop: number
  duration: number
  /** `overshoot`: a spline that passes `stop` at `duration`, overshoots and settles (see rampValue). */
  type: 'linear' | 'spline' | 'overshoot'
  /** Peak overshoot past `stop`, in percent of `stop - start` (5: 5 %). */
  overshoot: number
  /** Seconds after `duration` over which the overshoot settles back onto `stop`. */
  stabilization: number
}

/**
 * The ramp's value at time `t` (seconds since the ramp began): `start` before 0, `stop` once it
 * has settled. In between:
 *
 * - `linear`, or `spline` (the smooth step 3u² - 2u³, flat at both ends) until `duration`; then,
 *   with an overshoot, `stop + (overshoot / 100)·(stop - start)·sin(π·v)·(1 - v)` for
 *   v = (t - duration) / stabilization in [0, 1] (one bump that dies out).
 * - `overshoot`: the reference product's curve, a natural cubic spline (second derivative 0 at
 *   both ends) through (0, start), (duration, stop), (duration + 0.2·S, stop + overshoot % of
 *   the span), (duration + 0.6·S, stop) and (duration + S, stop), S the stabilization time: it
 *   rises a little faster than a line, passes `stop` at `duration`, peaks just above the
 *   overshoot, dips below `stop` once and is at `stop` from duration + S on.
 */
export function rampValue(s: RampSettings, t: number): number {
  if (t <= 0) return s.start
  const span = s.stop - s.start
  if (s.type === 'overshoot') {
    if (!(s.stabilization > 0)) return t < s.duration ? s.start + (span * t) / s.duration : s.stop
    if (t >= s.duration + s.stabilization) return s.stop
    const d = s.duration
    const S = s.stabilization
    return naturalSpline([0, d, d + 0.2 * S, d + 0.6 * S, d + S], [s.start, s.stop, s.stop + (s.overshoot / 100) * span, s.stop, s.stop], t)
  }
  if (t < s.duration) {
    const u = t / s.duration
    return s.start + span * (s.type === 'spline' ? u * u * (3 - 2 * u) : u)
  }
  if (s.overshoot !== 0 && s.stabilization > 0 && t < s.duration + s.stabilization) {
    const v = (t - s.duration) / s.stabilization
    return s.stop + (s.overshoot / 100) * span * Math.sin(Math.PI * v) * (1 - v)
  }
  return s.stop
}

/**
 * The natural cubic spline through the points (xs[i], ys[i]) (xs rising) at `t` inside them:
 * the second derivatives solved by the tridiagonal (Thomas) algorithm with both ends 0, as
 * SciPy's `CubicSpline(xs, ys, bc_type='natural')` gives.
 */
function naturalSpline(xs: readonly number[], ys: readonly number[], t: number): number {
  const n = xs.length - 1
  const h: number[] = []
  for (let i = 0; i < n; i++) h.push((xs[i + 1] as number) - (xs[i] as number))
  // Second derivatives m[0..n], m[0] = m[n] = 0; solve for m[1..n-1].
  const m = new Array<number>(n + 1).fill(0)
  const c: number[] = new Array<number>(n).fill(0)
  const r: number[] = new Array<number>(n).fill(0)
  for (let i = 1; i < n; i++) {
    const a = h[i - 1] as number
    const b = 2 * ((h[i - 1] as number) + (h[i] as number))
    const right = 6 * (((ys[i + 1] as number) - (ys[i] as number)) / (h[i] as number) - ((ys[i] as number) - (ys[i - 1] as number)) / (h[i - 1] as number))
    const denominator = b - (i > 1 ? a * (c[i - 1] as number) : 0)
    c[i] = (h[i] as number) / denominator
    r[i] = (right - (i > 1 ? a * (r[i - 1] as number) : 0)) / denominator
  }
  for (let i = n - 1; i >= 1; i--) m[i] = (r[i] as number) - (c[i] as number) * (i < n - 1 ? (m[i + 1] as number) : 0)
  let k = 0
  while (k < n - 1 && t > (xs[k + 1] as number)) k++
  const x0 = xs[k] as number
  const x1 = xs[k + 1] as number
  const hk = h[k] as number
  const [m0, m1] = [m[k] as number, m[k + 1] as number]
  const [y0, y1] = [ys[k] as number, ys[k + 1] as number]
  return (m0 * (x1 - t) ** 3) / (6 * hk) + (m1 * (t - x0) ** 3) / (6 * hk) + (y0 / hk - (m0 * hk) / 6) * (x1 - t) + (y1 / hk - (m1 * hk) / 6) * (t - x0)
}

/** A sawtooth between `start` and `stop` with period `period`. */
export interface SawSettings {
  start: number
  stop: number
  period: number
  type: 'regular' | 'reverse'
}

/**
 * The sawtooth at time `t`: with phase p = (t mod period) / period in [0, 1), `regular` rises
 * `start + (stop - start)·p` and drops back, `reverse` falls `stop - (stop - start)·p`.
 */
export function sawValue(s: SawSettings, t: number): number {
  const phase = (((t % s.period) + s.period) % s.period) / s.period
  const span = s.stop - s.start
  return s.type === 'reverse' ? s.stop - span * phase : s.start + span * phase
}

/** Points [t, v] with strictly increasing t, and how to read between and beyond them. */
export interface InterpolateSettings {
  points: ReadonlyArray<readonly [number, number]>
  method: 'linear' | 'step' | 'spline'
  /** Beyond the first and last point: `extrapolate`, or a number answered there. */
  fill: 'extrapolate' | number
}

/**
 * A prepared interpolation: `linear` joins the points with lines, `step` holds each point's
 * value until the next, `spline` is the natural cubic spline through them (second derivative 0
 * at both ends). Beyond the ends, `fill: 'extrapolate'` continues the end segment (a line for
 * `linear` and `spline`, the end value for `step`), a number answers that number.
 */
export function interpolator(s: InterpolateSettings): (t: number) => number {
  const xs = s.points.map((p) => p[0])
  const ys = s.points.map((p) => p[1])
  const n = xs.length
  const m = s.method === 'spline' && n > 2 ? naturalSplineMoments(xs, ys) : undefined
  const segment = (t: number): number => {
    // The index i of the segment [x_i, x_{i+1}] holding t (clamped to the ends).
    let lo = 0
    let hi = n - 1
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1
      if ((xs[mid] as number) <= t) lo = mid
      else hi = mid
    }
    return lo
  }
  return (t) => {
    if (n === 1) return ys[0] as number
    const first = xs[0] as number
    const last = xs[n - 1] as number
    if ((t < first || t > last) && s.fill !== 'extrapolate') return s.fill
    if (s.method === 'step') {
      if (t < first) return ys[0] as number
      if (t >= last) return ys[n - 1] as number
      return ys[segment(t)] as number
    }
    const i = segment(t)
    const x0 = xs[i] as number
    const x1 = xs[i + 1] as number
    const y0 = ys[i] as number
    const y1 = ys[i + 1] as number
    const h = x1 - x0
    if (m === undefined || t < first || t > last) return y0 + ((y1 - y0) * (t - x0)) / h
    const a = (x1 - t) / h
    const b = (t - x0) / h
    const m0 = m[i] as number
    const m1 = m[i + 1] as number
    return a * y0 + b * y1 + (((a * a * a - a) * m0 + (b * b * b - b) * m1) * h * h) / 6
  }
}

/** Second derivatives of the natural cubic spline through (xs, ys): a tridiagonal solve. */
function naturalSplineMoments(xs: number[], ys: number[]): number[] {
  const n = xs.length
  const m = new Array<number>(n).fill(0)
  const c = new Array<number>(n).fill(0)
  const d = new Array<number>(n).fill(0)
  for (let i = 1; i < n - 1; i++) {
    const h0 = (xs[i] as number) - (xs[i - 1] as number)
    const h1 = (xs[i + 1] as number) - (xs[i] as number)
    const rhs = 6 * (((ys[i + 1] as number) - (ys[i] as number)) / h1 - ((ys[i] as number) - (ys[i - 1] as number)) / h0)
    const diag = 2 * (h0 + h1) - h0 * (c[i - 1] as number)
    c[i] = h1 / diag
    d[i] = (rhs - h0 * (d[i - 1] as number)) / diag
  }
  for (let i = n - 2; i >= 1; i--) m[i] = (d[i] as number) - (c[i] as number) * (m[i + 1] as number)
  return m
}

/** A PID controller's gains and limits. */
export interface PidSettings {
  kp: number
  ki: number
  kd: number
  /** Seconds between updates; 0: every step. Between updates the output holds. */
  sampleTime: number
  min: number
  max: number
}

/**
 * A PID controller in the parallel form, on the error e = setpoint - input:
 * `out = kp·e + I + kd·(e - e_prev)/dt` with `I += ki·e·dt`. Without `sample_time` it updates every
 * step and dt is the step's dt; with one it updates when at least `sample_time` has passed since
 * its last update, and dt is that time (the step's dt at the first update). The output is clamped to [min, max]; while it is clamped,
 * the integral keeps its previous value (no windup). `reset()` forgets the integral and history.
 *
 * @example
 * const pid = new Pid({ kp: 2, ki: 0, kd: 0, sampleTime: 0, min: -Infinity, max: Infinity })
 * pid.update(10, 7, 0, 1) // 6
 */
export class Pid {
  readonly #s: PidSettings
  #integral = 0
  #previousError: number | undefined
  #lastTime: number | undefined
  #output = 0
  /** The four above as `remember` kept them, for `undo`. */
  #kept: { integral: number; previousError: number | undefined; lastTime: number | undefined; output: number } = {
    integral: 0,
    previousError: undefined,
    lastTime: undefined,
    output: 0,
  }

  constructor(settings: PidSettings) {
    this.#s = settings
  }

  /** The output at time `time` for this setpoint and input; `dt` is the step's dt. */
  update(setpoint: number, input: number, time: number, dt: number): number {
    const s = this.#s
    if (s.sampleTime > 0 && this.#lastTime !== undefined) {
      const since = time - this.#lastTime
      if (since < s.sampleTime) return this.#output
      dt = since
    }
    const error = setpoint - input
    const integral = this.#integral + s.ki * error * dt
    const derivative = this.#previousError === undefined || dt <= 0 ? 0 : (error - this.#previousError) / dt
    let out = s.kp * error + integral + s.kd * derivative
    if (out > s.max) out = s.max
    else if (out < s.min) out = s.min
    else this.#integral = integral
    this.#previousError = error
    this.#lastTime = time
    this.#output = out
    return out
  }

  reset(): void {
    this.#integral = 0
    this.#previousError = undefined
    this.#lastTime = undefined
    this.#output = 0
  }

  /** Keeps what it holds now, for `undo` (a step that fails takes its update back). */
  remember(): void {
    const kept = this.#kept
    kept.integral = this.#integral
    kept.previousError = this.#previousError
    kept.lastTime = this.#lastTime
    kept.output = this.#output
  }

  /** Puts back what `remember` kept. */
  undo(): void {
    const kept = this.#kept
    this.#integral = kept.integral
    this.#previousError = kept.previousError
    this.#lastTime = kept.lastTime
    this.#output = kept.output
  }

  /** What it keeps between steps: the integral, the last error, the time of the last update and the output held since. */
  saveState(): StateValue {
    return { integral: this.#integral, previous_error: this.#previousError ?? null, last_time: this.#lastTime ?? null, output: this.#output }
  }

  /** Takes back what `saveState` gave; on a problem nothing changes and the problems come back. */
  restoreState(state: unknown, path: string): ErrorDetail[] | void {
    const read = new StateReader(state, path)
    const integral = read.number('integral', {})
    const previous = read.number('previous_error', { nullable: true })
    const last = read.number('last_time', { nullable: true })
    const output = read.number('output', {})
    if (!read.ok) return read.problems
    this.#integral = integral
    this.#previousError = previous ?? undefined
    this.#lastTime = last ?? undefined
    this.#output = output
  }
}

/** A noise source's settings. */
export interface NoiseSettings {
  type: 'white' | 'pink' | 'brownian'
  mean: number
  std: number
  seed: bigint
}

/**
 * Reproducible noise. Every sample starts from a Gaussian draw g of Python's
 * `random.Random(seed).gauss(mean, std)` (the same numbers CPython gives). `white` answers g;
 * `brownian` answers the running sum of the draws; `pink` answers g filtered by Paul Kellet's
 * economy filter (three poles), scaled so that its spread stays near `std`. `reset()` starts over.
 */
export class Noise {
  readonly #s: NoiseSettings
  #random: PyRandom
  #sum = 0
  #b0 = 0
  #b1 = 0
  #b2 = 0

  constructor(settings: NoiseSettings) {
    this.#s = settings
    this.#random = new PyRandom(settings.seed)
  }

  sample(): number {
    const s = this.#s
    const g = this.#random.gauss(s.mean, s.std)
    if (s.type === 'white') return g
    if (s.type === 'brownian') return (this.#sum += g)
    // Kellet's economy pink filter on the zero-mean part, the mean added back.
    const w = g - s.mean
    this.#b0 = 0.99765 * this.#b0 + w * 0.099046
    this.#b1 = 0.963 * this.#b1 + w * 0.2965164
    this.#b2 = 0.57 * this.#b2 + w * 1.0526913
    return s.mean + (this.#b0 + this.#b1 + this.#b2 + w * 0.1848) * PINK_SCALE
  }

  reset(): void {
    this.#random = new PyRandom(this.#s.seed)
    this.#sum = this.#b0 = this.#b1 = this.#b2 = 0
  }

  /**
   * Its generator's whole state (not its seed) and the filter's memory: restored, the noise goes
   * on with exactly the samples it would have given next.
   */
  saveState(): StateValue {
    return { random: { ...this.#random.getState() }, sum: this.#sum, b: [this.#b0, this.#b1, this.#b2] }
  }

  /** Takes back what `saveState` gave; on a problem nothing changes and the problems come back. */
  restoreState(state: unknown, path: string): ErrorDetail[] | void {
    const read = new StateReader(state, path)
    const sum = read.number('sum', {})
    const b = read.list('b')
    if (read.has('b') && (b.length !== 3 || !b.every((x) => typeof x === 'number' && Number.isFinite(x))))
      read.problem('b', 'expected a list of 3 finite numbers')
    if (!read.ok) return read.problems
    const random = new PyRandom(0n)
    const problem = random.setState(read.raw('random'))
    if (problem !== undefined) return [{ path: `${path}.random`, message: problem }]
    this.#random = random
    this.#sum = sum
    ;[this.#b0, this.#b1, this.#b2] = b as [number, number, number]
  }
}

/**
 * Kellet's filter amplifies unit white noise to a standard deviation of about 2.97 (measured over
 * 2·10^6 samples); dividing by it keeps `std` meaning the spread of the output.
 */
const PINK_SCALE = 1 / 2.97

/**
 * A stable 64-bit seed from text (FNV-1a), for noise seeded by instance and action name.
 *
 * @example
 * textSeed('meter_1/noise_0') === textSeed('meter_1/noise_0') // true
 */
export function textSeed(text: string): bigint {
  let h = 0xcbf29ce484222325n
  for (const byte of new TextEncoder().encode(text)) {
    h ^= BigInt(byte)
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn
  }
  return h
}
