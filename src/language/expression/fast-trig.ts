/**
 * sin and cos equal to double-double.ts's correctly rounded ones, many times faster (Ziv's
 * strategy): a fast evaluation precise to about 2**-64 decides the rounding for nearly every
 * input, and the few whose result lies too close to a rounding boundary for it to decide (about
 * one in a hundred) go to the double-double series. The fast evaluation reduces x by pi/2 in
 * three exact parts, then splits the reduced r = a + b, with a = i/64 whose sine and cosine come
 * from a table (computed at load by the double-double series) and |b| <= 1/128, where a few
 * series terms in plain doubles are precise enough.
 *
 * Written here because no library does it: JS's Math.sin/cos (fdlibm) are within 1 ulp but not
 * correctly rounded, and CPython's values (the C library's) are, in practice, the correctly
 * rounded ones. test/unit/fast-trig.test.ts checks that it changes nothing but speed.
 *
 * @example
 * sin(0.5) === 0.479425538604203 // as CPython's math.sin(0.5)
 */
import { cos as ddCos, sinCosTable, sin as ddSin } from './double-double.js'

// pi/2 as three 33-bit parts (their products with an integer below 2**20 are exact) and the rest
// (fdlibm's split; their sum is pi/2 within 1e-48).
export const PIO2_PARTS = [1.5707963267341256, 6.077100506303966e-11, 2.0222662487111665e-21, 8.4784276603689e-32] as const
const [P1, P2, P3, P3T] = PIO2_PARTS
const TWO_OVER_PI = 0.6366197723675814

// sin(i/64) and cos(i/64) as double-doubles, i = -51..51 (|r| <= pi/4 < 51/64).
const STEPS = 64
const OFFSET = 51
const { sinHi: SIN_HI, sinLo: SIN_LO, cosHi: COS_HI, cosLo: COS_LO } = sinCosTable(OFFSET, STEPS)

// The error of the fast result is below 2**-64 of it (each step's bound is noted below); the
// rounding test allows 2**-60, sixteen times more, and sends one input in about a hundred to the
// slow path.
const BOUND = 2 ** -60
const SPLITTER = 134217729 // 2**27 + 1, Dekker's split

// The fast result goes out through OUT, and `fast` answers whether it decided: a double returned
// from a function V8 does not inline (this one is too large to be) is boxed, a new heap number per
// call, which the loop of benchmark 7 paid five times per meter step; an integer is not.
const OUT = new Float64Array(1)

/** sin(x) (wantCos 0) or cos(x) (wantCos 1) for 1e-8 < |x| < 2**20 into OUT[0]: 1, or 0 when the fast evaluation cannot decide. */
function fast(x: number, wantCos: number): number {
  const k = Math.round(x * TWO_OVER_PI)
  // r = x - k*pi/2 as rh + rl. x - k*P1 is exact (the two are within a factor of 2: Sterbenz), the
  // products with P1, P2, P3 are exact; the first subtraction is a two-sum, the rest add about
  // 2**-100 absolute, below 2**-76 of r once |r| >= 2**-24 (smaller r take the slow path).
  const w = x - k * P1
  const p2 = k * P2
  const s0 = w - p2
  const v0 = s0 - w
  const e0 = w - (s0 - v0) + (-p2 - v0)
  const l0 = e0 - k * P3 - k * P3T
  const rh = s0 + l0
  const rl = l0 - (rh - s0)
  if (!(Math.abs(rh) >= 2 ** -24)) return 0
  // r = a + b, a = i/64 from the table; bh = rh - a is exact (Sterbenz again, or a = 0).
  const i = Math.round(rh * STEPS)
  const bh = rh - i / STEPS
  const z = bh * bh
  // sin b = bh + sb and cos b = 1 + cb with b = bh + rl, |b| <= 1/128: the omitted terms are below
  // 2**-70 of the result, the double rounding of these terms below 2**-66.
  const sb = rl + bh * z * (-1 / 6 + z * (1 / 120 - z / 5040))
  const cb = -0.5 * z - bh * rl + z * z * (1 / 24 - z / 720)
  // sin(k*pi/2 + r) is, for k mod 4 = 0..3: sin r, cos r, -sin r, -cos r; cos(x) = sin(x + pi/2).
  const q = (k + wantCos) & 3
  const j = i + OFFSET
  // f(a + b) = A*cos b + B*sin b with (A, B) = (sin a, cos a) for sin r, (cos a, -sin a) for cos r.
  let ah: number, al: number, bh2: number, bl2: number
  if (q & 1) {
    ah = COS_HI[j] as number
    al = COS_LO[j] as number
    bh2 = -(SIN_HI[j] as number)
    bl2 = -(SIN_LO[j] as number)
  } else {
    ah = SIN_HI[j] as number
    al = SIN_LO[j] as number
    bh2 = COS_HI[j] as number
    bl2 = COS_LO[j] as number
  }
  // A + B*bh exactly as a double-double (two-product, then two-sum) ... written out here rather
  // than through double-double.ts's helpers, which pass results through an array: here they stay
  // in registers, and this is the hot path.
  const p = bh2 * bh
  let t = SPLITTER * bh2
  const xh = t - (t - bh2)
  const xl = bh2 - xh
  t = SPLITTER * bh
  const yh = t - (t - bh)
  const yl = bh - yh
  const pe = xh * yh - p + xh * yl + xl * yh + xl * yl
  const s = ah + p
  const v = s - ah
  const se = ah - (s - v) + (p - v)
  // ... and the small terms (each below 2**-15 of the result) in doubles.
  const rest = se + pe + al + bl2 * bh + ah * cb + bh2 * sb
  const hi = s + rest
  const lo = rest - (hi - s)
  // Decided when hi + lo and everything within the bound of it round to hi.
  const d = Math.abs(hi) * BOUND
  if (hi + (lo + d) !== hi || hi + (lo - d) !== hi) return 0
  OUT[0] = q & 2 ? -hi : hi
  return 1
}

function inRange(x: number): boolean {
  const a = Math.abs(x)
  return a < 2 ** 20 && a > 1e-8
}

/** sin(x), correctly rounded (double-double.ts's value). */
export function sin(x: number): number {
  return inRange(x) && fast(x, 0) === 1 ? (OUT[0] as number) : ddSin(x)
}

/** cos(x), correctly rounded (double-double.ts's value). */
export function cos(x: number): number {
  return inRange(x) && fast(x, 1) === 1 ? (OUT[0] as number) : ddCos(x)
}
