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

const LN2_HI = 0.6931471805599453
const LN2_LO = 2.3190468138462996e-17
const LOG2E_HI = 1.4426950408889634
const LOG2E_LO = 2.0355273740931033e-17

/** e**(h + l) as a double-double, for |h| well inside the float range (the caller checks). */
function expDD(h: number, l: number): [number, number] {
  const k = Math.round(h / LN2_HI)
  // r = (h + l) - k*ln2, carried in double-double so the reduction loses nothing.
  const [p1, e1] = twoProd(k, LN2_HI)
  const [p2, e2] = twoProd(k, LN2_LO)
  let [rh, rl] = add(h, l, -p1, -e1)
  ;[rh, rl] = add(rh, rl, -p2, -e2)
  // Shrink r by 2**-10 and sum the series of e**s - 1, then square back: (1 + m)**2 = 1 + (2m + m*m).
  const s = 2 ** -10
  rh *= s
  rl *= s
  let th = rh
  let tl = rl
  let mh = rh
  let ml = rl
  for (let n = 2; n <= 9; n++) {
    ;[th, tl] = mul(th, tl, rh, rl)
    ;[th, tl] = div(th, tl, n, 0)
    ;[mh, ml] = add(mh, ml, th, tl)
  }
  for (let i = 0; i < 10; i++) {
    const [qh, ql] = mul(mh, ml, mh, ml)
    ;[mh, ml] = add(2 * mh, 2 * ml, qh, ql)
  }
  const [oh, ol] = add(1, 0, mh, ml)
  // Scaling by 2**k is exact away from the subnormal range, which the caller avoids.
  const half = Math.trunc(k / 2)
  const f1 = 2 ** half
  const f2 = 2 ** (k - half)
  return [oh * f1 * f2, ol * f1 * f2]
}

/** Math.exp rounded once (as the C library, nearly always correctly rounded). */
export function exp(x: number): number {
  if (!(x > -700 && x < 709)) return Math.exp(x)
  const [h, l] = expDD(x, 0)
  return h + l
}

/** ln(x) as a double-double: the library's value plus one Newton step in double-double. */
function logDD(x: number): [number, number] {
  const y = Math.log(x)
  const [eh, el] = expDD(-y, 0)
  // x * e**-y - 1 is the relative error of y; y + that is ln(x) to about 2**-100.
  const [ph, pl] = mul(x, 0, eh, el)
  const [dh, dl] = add(ph, pl, -1, 0)
  return add(y, 0, dh, dl)
}

function normalLog(x: number): boolean {
  return x > 1e-300 && x < 1e300 && Math.abs(x - 1) > 1e-12
}

/** ln(x), rounded once. */
export function log(x: number): number {
  if (!normalLog(x)) return Math.log(x)
  const [h, l] = logDD(x)
  return h + l
}

/** log2(x), rounded once. */
export function log2(x: number): number {
  if (!normalLog(x)) return Math.log2(x)
  const [h, l] = logDD(x)
  const [rh, rl] = mul(h, l, LOG2E_HI, LOG2E_LO)
  return rh + rl
}

/** x ** y for a positive finite x and a finite y, rounded once: e**(y * ln x) in double-double. */
export function powReal(x: number, y: number): number {
  if (!normalLog(x)) return Math.pow(x, y)
  const [lh, ll] = logDD(x)
  const [th, tl] = mul(lh, ll, y, 0)
  if (!(th > -700 && th < 709)) return Math.pow(x, y)
  const [h, l] = expDD(th, tl)
  return h + l
}

const PIO2_1 = 1.5707963267948966
const PIO2_2 = 6.123233995736766e-17
const PIO2_3 = -1.4973849048591698e-33

/** sin and cos of a double-double r with |r| <= pi/4, by their series. */
function sinCosSmall(rh: number, rl: number): { s: [number, number]; c: [number, number] } {
  const [r2h, r2l] = mul(rh, rl, rh, rl)
  let sh = rh
  let sl = rl
  let th = rh
  let tl = rl
  let ch = 1
  let cl = 0
  let uh = 1
  let ul = 0
  for (let n = 1; n <= 14; n++) {
    ;[th, tl] = mul(th, tl, -r2h, -r2l)
    ;[th, tl] = div(th, tl, 2 * n * (2 * n + 1), 0)
    ;[sh, sl] = add(sh, sl, th, tl)
    ;[uh, ul] = mul(uh, ul, -r2h, -r2l)
    ;[uh, ul] = div(uh, ul, (2 * n - 1) * (2 * n), 0)
    ;[ch, cl] = add(ch, cl, uh, ul)
  }
  return { s: [sh, sl], c: [ch, cl] }
}

/** sin(x) and cos(x) in double-double for |x| < 2**20 (Cody-Waite reduction by pi/2 in three parts). */
function sinCosDD(x: number): { s: [number, number]; c: [number, number] } {
  const k = Math.round(x / PIO2_1)
  const [p1, e1] = twoProd(k, PIO2_1)
  const [p2, e2] = twoProd(k, PIO2_2)
  let [rh, rl] = add(x, 0, -p1, -e1)
  ;[rh, rl] = add(rh, rl, -p2, -e2)
  ;[rh, rl] = add(rh, rl, -k * PIO2_3, 0)
  const { s, c } = sinCosSmall(rh, rl)
  const neg = (v: [number, number]): [number, number] => [-v[0], -v[1]]
  switch (((k % 4) + 4) % 4) {
    case 0:
      return { s, c }
    case 1:
      return { s: c, c: neg(s) }
    case 2:
      return { s: neg(s), c: neg(c) }
    default:
      return { s: neg(c), c: s }
  }
}

function trigRange(x: number): boolean {
  return Math.abs(x) < 2 ** 20 && Math.abs(x) > 1e-8
}

/** sin(x), rounded once. */
export function sin(x: number): number {
  if (!trigRange(x)) return Math.sin(x)
  const [h, l] = sinCosDD(x).s
  return h + l
}

/** cos(x), rounded once. */
export function cos(x: number): number {
  if (!trigRange(x)) return Math.cos(x)
  const [h, l] = sinCosDD(x).c
  return h + l
}

/** tan(x), rounded once. */
export function tan(x: number): number {
  if (!trigRange(x)) return Math.tan(x)
  const { s, c } = sinCosDD(x)
  const [h, l] = div(s[0], s[1], c[0], c[1])
  return h + l
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
  const { s, c } = sinCosDD(a)
  // tan(theta - a) = (y cos a - x sin a) / (x cos a + y sin a), and theta - a is tiny.
  const [n1h, n1l] = mul(y, 0, c[0], c[1])
  const [n2h, n2l] = mul(x, 0, s[0], s[1])
  const [nh, nl] = add(n1h, n1l, -n2h, -n2l)
  const [d1h, d1l] = mul(x, 0, c[0], c[1])
  const [d2h, d2l] = mul(y, 0, s[0], s[1])
  const [dh, dl] = add(d1h, d1l, d2h, d2l)
  const [qh, ql] = div(nh, nl, dh, dl)
  const [rh, rl] = add(a, 0, qh, ql)
  return rh + rl
}

/** atan(x), rounded once. */
export function atan(x: number): number {
  if (!Number.isFinite(x) || Math.abs(x) < 1e-8) return Math.atan(x)
  return atan2(x, 1)
}
