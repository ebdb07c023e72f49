/**
 * Double-double arithmetic (a value as an unevaluated sum hi + lo, about 106 bits) for the few
 * float functions where JS's own result can be 1 ulp away from CPython's: CPython calls the C
 * library's pow and its own hypot, which round (nearly always) correctly, while V8's Math.pow and
 * Math.hypot do not. Computing with twice the precision and rounding once gives the correctly
 * rounded result.
 *
 * @example
 * powInt(1.1, 10) // the double nearest 1.1**10, as CPython's 1.1 ** 10
 */

const SPLITTER = 134217729 // 2**27 + 1, Dekker's split

function twoProd(a: number, b: number): [number, number] {
  const p = a * b
  let t = SPLITTER * a
  const ah = t - (t - a)
  const al = a - ah
  t = SPLITTER * b
  const bh = t - (t - b)
  const bl = b - bh
  return [p, ah * bh - p + ah * bl + al * bh + al * bl]
}

function quickTwoSum(a: number, b: number): [number, number] {
  const s = a + b
  return [s, b - (s - a)]
}

function twoSum(a: number, b: number): [number, number] {
  const s = a + b
  const bb = s - a
  return [s, a - (s - bb) + (b - bb)]
}

function mul(ah: number, al: number, bh: number, bl: number): [number, number] {
  const [p, e] = twoProd(ah, bh)
  return quickTwoSum(p, e + (ah * bl + al * bh))
}

function add(ah: number, al: number, bh: number, bl: number): [number, number] {
  const [s, e] = twoSum(ah, bh)
  return quickTwoSum(s, e + al + bl)
}

function div(ah: number, al: number, bh: number, bl: number): [number, number] {
  const q1 = ah / bh
  const [ph, pl] = mul(q1, 0, bh, bl)
  const [rh, rl] = add(ah, al, -ph, -pl)
  const q2 = rh / bh
  const [p2h, p2l] = mul(q2, 0, bh, bl)
  const [r2h] = add(rh, rl, -p2h, -p2l)
  const q3 = r2h / bh
  const [s, e] = quickTwoSum(q1, q2)
  return add(s, e, q3, 0)
}

function sqrtDD(h: number, l: number): [number, number] {
  if (h <= 0) return [Math.sqrt(h), 0]
  const s = Math.sqrt(h)
  const [ph, pl] = twoProd(s, s)
  const [rh, rl] = add(h, l, -ph, -pl)
  return quickTwoSum(s, (rh + rl) / (2 * s))
}

/** x ** n for a finite x and an integer n (|n| <= 2**31), rounded once. */
export function powInt(x: number, n: number): number {
  let rh = 1
  let rl = 0
  let bh = x
  let bl = 0
  let e = Math.abs(n)
  while (e > 0) {
    if (e % 2 === 1) [rh, rl] = mul(rh, rl, bh, bl)
    e = Math.floor(e / 2)
    if (e > 0) [bh, bl] = mul(bh, bl, bh, bl)
    if (!Number.isFinite(rh) || !Number.isFinite(bh)) return Math.pow(x, n)
  }
  if (n < 0) [rh, rl] = div(1, 0, rh, rl)
  const r = rh + rl
  // Near the subnormal range the low word has lost bits: let the library decide there.
  return Math.abs(r) < 1e-290 || !Number.isFinite(r) ? Math.pow(x, n) : r
}

/** 1 / sqrt(x) for a positive finite x, rounded once (x ** -0.5). */
export function rsqrt(x: number): number {
  const [sh, sl] = sqrtDD(x, 0)
  const [qh, ql] = div(1, 0, sh, sl)
  return qh + ql
}

/** sqrt(sum of squares), rounded once, scaled away from overflow and underflow. */
export function hypot(values: readonly number[]): number {
  let max = 0
  for (const v of values) {
    const a = Math.abs(v)
    if (a === Infinity) return Infinity
    if (a > max || Number.isNaN(a)) max = a
  }
  if (Number.isNaN(max)) return NaN
  if (max === 0) return 0
  if (values.length === 1) return max
  // Scale by a power of two (exact) so the squares neither overflow nor underflow.
  const exp = Math.floor(Math.log2(max))
  const half = Math.trunc(-exp / 2)
  const scale1 = 2 ** half
  const scale2 = 2 ** (-exp - half)
  let sh = 0
  let sl = 0
  for (const v of values) {
    const a = Math.abs(v) * scale1 * scale2
    const [ph, pl] = twoProd(a, a)
    ;[sh, sl] = add(sh, sl, ph, pl)
  }
  const [rh, rl] = sqrtDD(sh, sl)
  return (rh + rl) * 2 ** exp
}
