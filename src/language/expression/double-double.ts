/**
 * Double-double arithmetic (a value as an unevaluated sum hi + lo, about 106 bits) for the float
 * functions where JS's own result is often 1 ulp away from CPython's: CPython calls the C
 * library's exp, log, log2, pow, sin, cos, tan, atan and atan2 and its own hypot, which round
 * nearly always correctly, while V8's (fdlibm) do not. Computing with twice the precision and
 * rounding once gives the correctly rounded result; it differs from CPython's only where the C
 * library itself is not correctly rounded (0.05-0.2% of random inputs, against 2-18% for V8's
 * own). log10 stays V8's: glibc's log10 is not correctly rounded and shares fdlibm's algorithm.
 *
 * @example
 * powInt(1.1, 10) // the double nearest 1.1**10, as CPython's 1.1 ** 10
 */

// Results of the primitives go to R (hi, lo, then the sine and cosine pairs) instead of returned
// arrays or module variables: these run dozens of times per call, and a float kept in a variable
// shared between functions is boxed on every write. A Float64Array holds them unboxed.
const R = new Float64Array(6)

const SPLITTER = 134217729 // 2**27 + 1, Dekker's split

function twoProd(a: number, b: number): void {
  const p = a * b
  let t = SPLITTER * a
  const ah = t - (t - a)
  const al = a - ah
  t = SPLITTER * b
  const bh = t - (t - b)
  const bl = b - bh
  R[0] = p
  R[1] = ah * bh - p + ah * bl + al * bh + al * bl
}

function quickTwoSum(a: number, b: number): void {
  const s = a + b
  R[0] = s
  R[1] = b - (s - a)
}

function add(ah: number, al: number, bh: number, bl: number): void {
  const s = ah + bh
  const bb = s - ah
  const e = ah - (s - bb) + (bh - bb)
  quickTwoSum(s, e + al + bl)
}

function mul(ah: number, al: number, bh: number, bl: number): void {
  twoProd(ah, bh)
  quickTwoSum(R[0] as number, (R[1] as number) + (ah * bl + al * bh))
}

function div(ah: number, al: number, bh: number, bl: number): void {
  const q1 = ah / bh
  mul(q1, 0, bh, bl)
  add(ah, al, -(R[0] as number), -(R[1] as number))
  const rh = R[0] as number
  const rl = R[1] as number
  const q2 = rh / bh
  mul(q2, 0, bh, bl)
  add(rh, rl, -(R[0] as number), -(R[1] as number))
  const q3 = (R[0] as number) / bh
  quickTwoSum(q1, q2)
  add(R[0] as number, R[1] as number, q3, 0)
}

function sqrtDD(h: number, l: number): void {
  if (h <= 0) {
    R[0] = Math.sqrt(h)
    R[1] = 0
    return
  }
  const s = Math.sqrt(h)
  twoProd(s, s)
  add(h, l, -(R[0] as number), -(R[1] as number))
  quickTwoSum(s, ((R[0] as number) + (R[1] as number)) / (2 * s))
}

/** 1/m as a double-double, for the series coefficients. */
function reciprocal(m: number): [number, number] {
  const hi = 1 / m
  twoProd(hi, m)
  return [hi, (1 - (R[0] as number) - (R[1] as number)) / m]
}

const FACT = Array.from({ length: 26 }, (_x, n) => {
  let f = 1
  for (let i = 2; i <= n; i++) f *= i
  return f
})
const INV_FACT_D = FACT.map((f) => 1 / f)
// 1/n! as double-doubles for the leading series terms; later terms are small enough for doubles.
const INV_FACT = FACT.map((f, n) => (n <= 7 ? reciprocal(f) : ([1 / f, 0] as [number, number])))

/** The series tail sum_{i>=0} (sign z)^i / (first + step*i)!, in plain doubles (Horner). */
function tail(z: number, first: number, step: number, count: number, sign: number): number {
  let acc = 0
  const sz = sign * z
  for (let i = count - 1; i >= 0; i--) acc = (INV_FACT_D[first + step * i] as number) + sz * acc
  return acc
}

/** x ** n for a finite x and an integer n (|n| <= 2**31), rounded once. */
export function powInt(x: number, n: number): number {
  let rh = 1
  let rl = 0
  let bh = x
  let bl = 0
  let e = Math.abs(n)
  while (e > 0) {
    if (e % 2 === 1) {
      mul(rh, rl, bh, bl)
      rh = R[0] as number
      rl = R[1] as number
    }
    e = Math.floor(e / 2)
    if (e > 0) {
      mul(bh, bl, bh, bl)
      bh = R[0] as number
      bl = R[1] as number
    }
    if (!Number.isFinite(rh) || !Number.isFinite(bh)) return Math.pow(x, n)
  }
  if (n < 0) {
    div(1, 0, rh, rl)
    rh = R[0] as number
    rl = R[1] as number
  }
  const r = rh + rl
  // Near the subnormal range the low word has lost bits: let the library decide there.
  return Math.abs(r) < 1e-290 || !Number.isFinite(r) ? Math.pow(x, n) : r
}

/** 1 / sqrt(x) for a positive finite x, rounded once (x ** -0.5). */
export function rsqrt(x: number): number {
  sqrtDD(x, 0)
  div(1, 0, R[0] as number, R[1] as number)
  return (R[0] as number) + (R[1] as number)
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
    twoProd(a, a)
    add(sh, sl, R[0] as number, R[1] as number)
    sh = R[0] as number
    sl = R[1] as number
  }
  sqrtDD(sh, sl)
  return ((R[0] as number) + (R[1] as number)) * 2 ** exp
}

const LN2_HI = 0.6931471805599453
const LN2_LO = 2.3190468138462996e-17
const LOG2E_HI = 1.4426950408889634
const LOG2E_LO = 2.0355273740931033e-17

/** e**(h + l) into (R[0] as number), (R[1] as number), for |h| well inside the float range (the caller checks). */
function expDD(h: number, l: number): void {
  const k = Math.round(h / LN2_HI)
  // r = (h + l) - k*ln2, carried in double-double so the reduction loses nothing.
  twoProd(k, LN2_HI)
  add(h, l, -(R[0] as number), -(R[1] as number))
  let rh = R[0] as number
  let rl = R[1] as number
  twoProd(k, LN2_LO)
  add(rh, rl, -(R[0] as number), -(R[1] as number))
  // Shrink r by 2**-4, sum the series of e**s - 1 (leading terms in double-double, the tail in
  // doubles), then square back: (1 + m)**2 = 1 + (2m + m*m).
  rh = (R[0] as number) * 2 ** -4
  rl = (R[1] as number) * 2 ** -4
  // m = e**s - 1 = s * (1 + s * (1/2 + s * (1/6 + s * (1/24 + s * tail))))
  let mh = tail(rh, 5, 1, 9, 1) * rh
  let ml = 0
  for (let n = 4; n >= 1; n--) {
    const c = INV_FACT[n] as [number, number]
    add(c[0], c[1], mh, ml)
    mul(R[0] as number, R[1] as number, rh, rl)
    mh = R[0] as number
    ml = R[1] as number
  }
  for (let i = 0; i < 4; i++) {
    mul(mh, ml, mh, ml)
    add(2 * mh, 2 * ml, R[0] as number, R[1] as number)
    mh = R[0] as number
    ml = R[1] as number
  }
  add(1, 0, mh, ml)
  // Scaling by 2**k is exact away from the subnormal range, which the caller avoids.
  const half = Math.trunc(k / 2)
  const f = 2 ** half * 2 ** (k - half)
  R[0] = (R[0] as number) * f
  R[1] = (R[1] as number) * f
}

/** Math.exp rounded once (as the C library, nearly always correctly rounded). */
export function exp(x: number): number {
  if (!(x > -700 && x < 709)) return Math.exp(x)
  expDD(x, 0)
  return (R[0] as number) + (R[1] as number)
}

/** ln(x) into (R[0] as number), (R[1] as number): the library's value plus one Newton step in double-double. */
function logDD(x: number): void {
  const y = Math.log(x)
  expDD(-y, 0)
  // x * e**-y - 1 is the relative error of y; y + that is ln(x) to about 2**-100.
  mul(x, 0, R[0] as number, R[1] as number)
  add(R[0] as number, R[1] as number, -1, 0)
  add(y, 0, R[0] as number, R[1] as number)
}

function normalLog(x: number): boolean {
  return x > 1e-300 && x < 1e300 && Math.abs(x - 1) > 1e-12
}

/** ln(x), rounded once. */
export function log(x: number): number {
  if (!normalLog(x)) return Math.log(x)
  logDD(x)
  return (R[0] as number) + (R[1] as number)
}

/** log2(x), rounded once. */
export function log2(x: number): number {
  if (!normalLog(x)) return Math.log2(x)
  logDD(x)
  mul(R[0] as number, R[1] as number, LOG2E_HI, LOG2E_LO)
  return (R[0] as number) + (R[1] as number)
}

/** x ** y for a positive finite x and a finite y, rounded once: e**(y * ln x) in double-double. */
export function powReal(x: number, y: number): number {
  if (!normalLog(x)) return Math.pow(x, y)
  logDD(x)
  mul(R[0] as number, R[1] as number, y, 0)
  if (!((R[0] as number) > -700 && (R[0] as number) < 709)) return Math.pow(x, y)
  expDD(R[0] as number, R[1] as number)
  return (R[0] as number) + (R[1] as number)
}

const PIO2_1 = 1.5707963267948966
const PIO2_2 = 6.123233995736766e-17
const PIO2_3 = -1.4973849048591698e-33

/** sin and cos of a double-double r with |r| <= pi/4, by their series, into (R[2] as number), (R[3] as number), (R[4] as number), (R[5] as number). */
function sinCosSmall(rh: number, rl: number): void {
  mul(rh, rl, rh, rl)
  const zh = R[0] as number
  const zl = R[1] as number
  // With z = r*r, Horner: sin r = r * (1 + z*(a1 + z*(a2 + z*(a3 + z*tail)))), a_n = (-1)^n/(2n+1)!,
  // and cos r the same with (2n)!; the tails (z^4 on, below 2**-21) are summed in doubles.
  let sh = zh * tail(zh, 9, 2, 8, -1)
  let sl = 0
  let ch = zh * tail(zh, 8, 2, 9, -1)
  let cl = 0
  for (let n = 3; n >= 1; n--) {
    const sign = n % 2 === 1 ? -1 : 1
    const cs = INV_FACT[2 * n + 1] as [number, number]
    add(sign * cs[0], sign * cs[1], sh, sl)
    mul(R[0] as number, R[1] as number, zh, zl)
    sh = R[0] as number
    sl = R[1] as number
    const cc = INV_FACT[2 * n] as [number, number]
    add(sign * cc[0], sign * cc[1], ch, cl)
    mul(R[0] as number, R[1] as number, zh, zl)
    ch = R[0] as number
    cl = R[1] as number
  }
  add(1, 0, sh, sl)
  mul(R[0] as number, R[1] as number, rh, rl)
  R[2] = R[0] as number
  R[3] = R[1] as number
  add(1, 0, ch, cl)
  R[4] = R[0] as number
  R[5] = R[1] as number
}

/** sin(x) and cos(x) into (R[2] as number), (R[3] as number), (R[4] as number), (R[5] as number) for |x| < 2**20 (Cody-Waite reduction by pi/2 in three parts). */
function sinCosDD(x: number): void {
  const k = Math.round(x / PIO2_1)
  twoProd(k, PIO2_1)
  add(x, 0, -(R[0] as number), -(R[1] as number))
  const rh = R[0] as number
  const rl = R[1] as number
  twoProd(k, PIO2_2)
  add(rh, rl, -(R[0] as number), -(R[1] as number))
  add(R[0] as number, R[1] as number, -k * PIO2_3, 0)
  sinCosSmall(R[0] as number, R[1] as number)
  const sh = R[2] as number
  const sl = R[3] as number
  switch (((k % 4) + 4) % 4) {
    case 1:
      R[2] = R[4] as number
      R[3] = R[5] as number
      R[4] = -sh
      R[5] = -sl
      break
    case 2:
      R[2] = -sh
      R[3] = -sl
      R[4] = -(R[4] as number)
      R[5] = -(R[5] as number)
      break
    case 3:
      R[2] = -(R[4] as number)
      R[3] = -(R[5] as number)
      R[4] = sh
      R[5] = sl
      break
  }
}

function trigRange(x: number): boolean {
  return Math.abs(x) < 2 ** 20 && Math.abs(x) > 1e-8
}

/**
 * sin(j*pi/n) for j = 0..2n-1 (the whole circle) as double-doubles, the table of fast-trig.ts; n is
 * a multiple of 4 and a power of 2, so that pi/n is exact to the last part. The first eighth is
 * computed by the series, the rest follows by symmetry (exactly).
 *
 * @example
 * sinPiTable(128).hi[64] // 1, sin(pi/2)
 */
export function sinPiTable(n: number): { hi: Float64Array; lo: Float64Array } {
  const hi = new Float64Array(2 * n)
  const lo = new Float64Array(2 * n)
  const quarter = n / 2
  for (let j = 0; j <= n / 4; j++) {
    // j*pi/n as a double-double: j * (2 * PIO2_1 / n) exactly as a two-product, plus the rest.
    twoProd(j, (2 * PIO2_1) / n)
    add(R[0] as number, R[1] as number, (j * 2 * PIO2_2) / n, (j * 2 * PIO2_3) / n)
    sinCosSmall(R[0] as number, R[1] as number)
    hi[j] = R[2] as number
    lo[j] = R[3] as number
    hi[quarter - j] = R[4] as number
    lo[quarter - j] = R[5] as number
  }
  for (let j = quarter + 1; j <= n; j++) {
    hi[j] = hi[n - j] as number
    lo[j] = lo[n - j] as number
  }
  for (let j = n + 1; j < 2 * n; j++) {
    hi[j] = -(hi[j - n] as number)
    lo[j] = -(lo[j - n] as number)
  }
  return { hi, lo }
}

/** sin(x), rounded once. */
export function sin(x: number): number {
  if (!trigRange(x)) return Math.sin(x)
  sinCosDD(x)
  return (R[2] as number) + (R[3] as number)
}

/** cos(x), rounded once. */
export function cos(x: number): number {
  if (!trigRange(x)) return Math.cos(x)
  sinCosDD(x)
  return (R[4] as number) + (R[5] as number)
}

/** tan(x), rounded once. */
export function tan(x: number): number {
  if (!trigRange(x)) return Math.tan(x)
  sinCosDD(x)
  div(R[2] as number, R[3] as number, R[4] as number, R[5] as number)
  return (R[0] as number) + (R[1] as number)
}

/** atan2(y, x), rounded once: V8's angle plus one correction step from double-double sin/cos. */
export function atan2(yIn: number, xIn: number): number {
  const a = Math.atan2(yIn, xIn)
  if (!Number.isFinite(xIn) || !Number.isFinite(yIn) || xIn === 0 || yIn === 0 || !trigRange(a)) return a
  // Scale both by one power of two (exact) so the products below neither overflow nor underflow.
  const big = Math.max(Math.abs(xIn), Math.abs(yIn))
  const small = Math.min(Math.abs(xIn), Math.abs(yIn))
  if (small / big < 2 ** -60) return a
  const e = Math.floor(Math.log2(big))
  const half = Math.trunc(-e / 2)
  const y = yIn * 2 ** half * 2 ** (-e - half)
  const x = xIn * 2 ** half * 2 ** (-e - half)
  sinCosDD(a)
  // tan(theta - a) = (y cos a - x sin a) / (x cos a + y sin a), and theta - a is tiny.
  mul(y, 0, R[4] as number, R[5] as number)
  const n1h = R[0] as number
  const n1l = R[1] as number
  mul(x, 0, R[2] as number, R[3] as number)
  add(n1h, n1l, -(R[0] as number), -(R[1] as number))
  const nh = R[0] as number
  const nl = R[1] as number
  mul(x, 0, R[4] as number, R[5] as number)
  const d1h = R[0] as number
  const d1l = R[1] as number
  mul(y, 0, R[2] as number, R[3] as number)
  add(d1h, d1l, R[0] as number, R[1] as number)
  div(nh, nl, R[0] as number, R[1] as number)
  add(a, 0, R[0] as number, R[1] as number)
  return (R[0] as number) + (R[1] as number)
}

/** atan(x), rounded once. */
export function atan(x: number): number {
  if (!Number.isFinite(x) || Math.abs(x) < 1e-8) return Math.atan(x)
  return atan2(x, 1)
}
