/**
 * sin and cos equal to double-double.ts's correctly rounded ones, many times faster (Ziv's
 * strategy): a fast evaluation precise to better than 2**-63 decides the rounding for nearly every
 * input, and the few whose result lies too close to a rounding boundary for it to decide go to the
 * double-double series. The fast evaluation reduces x by pi/128 in four parts (the products with
 * the first three exact) to x = k*pi/128 + r with |r| <= pi/256, and sums sin(k*pi/128)*cos(r) +
 * cos(k*pi/128)*sin(r), the table's sines and cosines as double-doubles (one table of 256 sines
 * round the circle: the cosine is the sine 64 entries on, and cos(x) is sin(x + pi/2), so no
 * quadrant is told apart) and short series in plain doubles for sin r and cos r.
 *
 * Written here because no library does it: JS's Math.sin/cos (fdlibm) are within 1 ulp but not
 * correctly rounded, and CPython's values (the C library's) are, in practice, the correctly
 * rounded ones. test/unit/language/fast-trig.test.ts checks that it changes nothing but speed.
 *
 * @example
 * sin(0.5) === 0.479425538604203 // as CPython's math.sin(0.5)
 */
import { cos as ddCos, sin as ddSin, sinPiTable } from './double-double.js'

// pi/128 as three 27-bit parts (their products with an integer below 2**26 are exact) and the
// rest; their sum is pi/128 within 4e-45 (computed from pi to 400 bits; the unit test checks the
// parts' bits and their sum against double-double's pi/2).
export const PI128_PARTS = [0.024543692590668797, 1.550146209311487e-11, 8.939357358849336e-20, 2.5697276463006653e-28] as const
const [C1, C2, C3, C4] = PI128_PARTS
const INV_PI128 = 40.74366543152521 // 128/pi
const SPLITTER = 134217729 // 2**27 + 1, Dekker's split: a double into two halves of 26 bits
const ROUNDER = 6755399441055744 // 1.5 * 2**52: a double below 2**51 added to it keeps no fraction

// Per entry j (k mod 256): sin(j*pi/128) as a double-double, then cos(j*pi/128) as its leading 26
// bits (so that its products with the halves of a Dekker split are exact) and the rest.
const TABLE = (() => {
  const { hi, lo } = sinPiTable(128)
  const table = new Float64Array(4 * 256)
  for (let j = 0; j < 256; j++) {
    const c = (j + 64) & 255
    const ch = hi[c] as number
    const t = SPLITTER * ch
    const c26 = t - (t - ch) // the leading 26 bits of ch
    table[4 * j] = hi[j] as number
    table[4 * j + 1] = lo[j] as number
    table[4 * j + 2] = c26
    table[4 * j + 3] = ch - c26 + (lo[c] as number)
  }
  return table
})()

// The error of the fast result is below 2**-63 of it. Its largest part is the rounding of cos r - 1
// (up to 2**-13.7, computed to 3 ulps) times S = sin a: where |S| = sin(pi/128) the result can be
// half of S, and that part reaches 2**-63.7 of the result; the roundings of sin r - r and of the
// rest of the sum add below 2**-64.9 there, the omitted series terms below 2**-69, the reduction
// and the table below 2**-80 (noted below). The largest error seen was 2**-64.7 over 4 million
// seeded inputs, and 2**-64.1 over 1.8 million within pi/256 of the entries where |S| is
// sin(pi/128). The rounding test allows 2**-61, four times the bound, and sends about one input in
// 170 to the slow path (one in 80 with 2**-60).
const BOUND = 2 ** -61

// The fast result goes out through OUT, and `fast` answers whether it decided: a double returned
// from a function V8 does not inline (this one is too large to be) is boxed, a new heap number per
// call, which the loop of benchmark 7 paid five times per meter step; an integer is not.
const OUT = new Float64Array(1)

/** sin(x + quarter*pi/128): sin for quarter 0, cos for 64; 1e-8 < |x| < 2**20; into OUT[0]: 1, or 0 when undecided. */
function fast(x: number, quarter: number): number {
  // k = x*128/pi rounded to an integer by adding and taking away 1.5 * 2**52 (exact for |k| < 2**51):
  // Math.round here cost a quarter of the fast path's time. Which way a tie goes does not matter.
  const k = x * INV_PI128 + ROUNDER - ROUNDER // |k| < 2**26
  // r = x - k*pi/128 as rh + rl: x - k*C1 is exact (Sterbenz), the products with C1, C2, C3 are
  // exact; the first subtraction is a two-sum, the rest add below 2**-90 absolute.
  const w = x - k * C1
  const p2 = k * C2
  const s0 = w - p2
  const v0 = s0 - w
  const e0 = w - (s0 - v0) + (-p2 - v0)
  const l0 = e0 - k * C3 - k * C4
  const rh = s0 + l0
  const rl = l0 - (rh - s0)
  // Near a zero of the result (k*pi/128 a multiple of pi), the result is about r itself: a
  // smaller r would make the reduction's absolute error a larger part of it.
  if (!(Math.abs(rh) >= 2 ** -18)) return 0
  const j = ((k + quarter) & 255) << 2
  const sh = TABLE[j] as number
  const sl = TABLE[j + 1] as number
  const ch = TABLE[j + 2] as number
  const cl = TABLE[j + 3] as number
  // sin(a + r) = S*cos r + C*sin r = sh + ch*rh + (the rest). ch*rh exactly as p + pe: ch has 26
  // bits, rh is split into two halves of 26 (Dekker), each product exact.
  const t = SPLITTER * rh
  const rhh = t - (t - rh)
  const rhl = rh - rhh
  const p = ch * rh
  const pe = ch * rhh - p + ch * rhl
  // sh + p as a two-sum: |sh| >= sin(pi/128) > |p| unless sh is 0.
  const s = sh + p
  const se = p - (s - sh)
  // sin r - rh and cos r - 1 with r = rh + rl, |r| <= pi/256: the omitted terms are below 2**-69
  // of the result (r**9/9! against a result of at least pi/256 or about r).
  const z = rh * rh
  const sb = rl + rh * z * (-1 / 6 + z * (1 / 120 - z / 5040))
  const cb = -0.5 * z - rh * rl + z * z * (1 / 24 - z * (1 / 720 - z / 40320))
  // ... and the small terms, from the smallest, in doubles (cl is below 2**-27 of C, so cl times
  // sin r is summed in one product).
  const rest = se + pe + sl + cl * (rh + sb) + ch * sb + sh * cb
  const hi = s + rest
  const lo = rest - (hi - s)
  // Decided when hi + lo and everything within the bound of it round to hi.
  const d = Math.abs(hi) * BOUND
  if (hi + (lo + d) !== hi || hi + (lo - d) !== hi) return 0
  OUT[0] = hi
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
  return inRange(x) && fast(x, 64) === 1 ? (OUT[0] as number) : ddCos(x)
}
