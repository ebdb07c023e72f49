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
 * The fast evaluation is written once, as a straight-line program ({@link PROGRAM}), and put to two
 * uses: the functions `sin` and `cos` below, and the inline text ({@link inlineTrig}) that
 * codegen.ts writes where an expression calls `math.sin` or `math.cos`. As a function it is too
 * large for V8 to inline (552 bytes of bytecode against a limit of 460), and the five calls per
 * step of benchmark 7's meters cost a sixth of the fused loop's time; written inline, the loop has
 * no call to make unless the fast evaluation cannot decide.
 *
 * Written here because no library does it: JS's Math.sin/cos (fdlibm) are within 1 ulp but not
 * correctly rounded, and CPython's values (the C library's) are, in practice, the correctly
 * rounded ones. test/unit/language/fast-trig.test.ts checks that it changes nothing but speed, in
 * both forms.
 *
 * @example
 * sin(0.5) === 0.479425538604203 // as CPython's math.sin(0.5)
 */
import { InternalError } from '../../errors.js'
import { cos as ddCos, sin as ddSin, sinPiTable } from './double-double.js'

// pi/128 as three 27-bit parts (their products with an integer below 2**26 are exact) and the
// rest; their sum is pi/128 within 4e-45 (computed from pi to 400 bits; the unit test checks the
// parts' bits and their sum against double-double's pi/2).
export const PI128_PARTS = [0.024543692590668797, 1.550146209311487e-11, 8.939357358849336e-20, 2.5697276463006653e-28] as const

const SPLITTER = 134217729 // 2**27 + 1, Dekker's split: a double into two halves of 26 bits

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

/** The numbers the program names, written into its text as literals. */
const NUMBERS: Readonly<Record<string, number>> = {
  C1: PI128_PARTS[0],
  C2: PI128_PARTS[1],
  C3: PI128_PARTS[2],
  C4: PI128_PARTS[3],
  INV_PI128: 40.74366543152521, // 128/pi
  ROUNDER: 6755399441055744, // 1.5 * 2**52: a double below 2**51 added to it keeps no fraction
  SPLITTER,
  MAX: 2 ** 20,
  MIN: 1e-8,
  NEAR_ZERO: 2 ** -18,
  // The series' coefficients, each a double: multiplying by 1/5040 rather than dividing by 5040
  // keeps a division (several times a multiplication's latency) off the evaluation's longest chain;
  // either rounding is far below the error bound.
  SIN3: -1 / 6,
  SIN5: 1 / 120,
  SIN7: -1 / 5040,
  COS4: 1 / 24,
  COS6: -1 / 720,
  COS8: 1 / 40320,
  // The error of the fast result is below 2**-63 of it. Its largest part is the rounding of cos r - 1
  // (up to 2**-13.7, computed to 3 ulps) times S = sin a: where |S| = sin(pi/128) the result can be
  // half of S, and that part reaches 2**-63.7 of the result; the roundings of sin r - r and of the
  // rest of the sum add below 2**-64.9 there, the omitted series terms below 2**-69, the reduction
  // and the table below 2**-80 (noted below). The largest error seen was 2**-64.7 over 4 million
  // seeded inputs, and 2**-64.1 over 1.8 million within pi/256 of the entries where |S| is
  // sin(pi/128). The rounding test allows 2**-61, four times the bound, and sends about one input in
  // 170 to the slow path (one in 80 with 2**-60).
  BOUND: 2 ** -61,
}

/**
 * The fast evaluation of sin(x + quarter*pi/128) (sin for quarter 0, cos for 64): `name = value`
 * lines, and `require condition` lines that leave the input undecided when false; its result is
 * `hi`. Names in capitals are {@link NUMBERS}, and TABLE the table above.
 */
const PROGRAM = `
  // 1e-8 < |x| < 2**20: outside, the series decides.
  require Math.abs(x) < MAX && Math.abs(x) > MIN
  // k = x*128/pi rounded to an integer by adding and taking away 1.5 * 2**52 (exact for |k| < 2**51):
  // Math.round here cost a quarter of the fast path's time. Which way a tie goes does not matter.
  k = x * INV_PI128 + ROUNDER - ROUNDER
  // r = x - k*pi/128 as rh + rl: x - k*C1 is exact (Sterbenz), the products with C1, C2, C3 are
  // exact; the first subtraction is a two-sum, the rest add below 2**-90 absolute.
  w = x - k * C1
  p2 = k * C2
  s0 = w - p2
  v0 = s0 - w
  e0 = w - (s0 - v0) + (-p2 - v0)
  l0 = e0 - k * C3 - k * C4
  rh = s0 + l0
  rl = l0 - (rh - s0)
  // Near a zero of the result (k*pi/128 a multiple of pi), the result is about r itself: a
  // smaller r would make the reduction's absolute error a larger part of it.
  require Math.abs(rh) >= NEAR_ZERO
  j = ((k + quarter) & 255) << 2
  sh = TABLE[j]
  sl = TABLE[j + 1]
  ch = TABLE[j + 2]
  cl = TABLE[j + 3]
  // sin(a + r) = S*cos r + C*sin r = sh + ch*rh + (the rest). ch*rh exactly as p + pe: ch has 26
  // bits, rh is split into two halves of 26 (Dekker), each product exact.
  t = SPLITTER * rh
  rhh = t - (t - rh)
  rhl = rh - rhh
  p = ch * rh
  pe = ch * rhh - p + ch * rhl
  // sh + p as a two-sum: |sh| >= sin(pi/128) > |p| unless sh is 0.
  s = sh + p
  se = p - (s - sh)
  // sin r - rh and cos r - 1 with r = rh + rl, |r| <= pi/256: the omitted terms are below 2**-69
  // of the result (r**9/9! against a result of at least pi/256 or about r).
  z = rh * rh
  sb = rl + rh * z * (SIN3 + z * (SIN5 + z * SIN7))
  cb = -0.5 * z - rh * rl + z * z * (COS4 + z * (COS6 + z * COS8))
  // ... and the small terms, from the smallest, in doubles (cl is below 2**-27 of C, so cl times
  // sin r is summed in one product).
  rest = se + pe + sl + cl * (rh + sb) + ch * sb + sh * cb
  hi = s + rest
  lo = rest - (hi - s)
  // Decided when hi + lo and everything within the bound of it round to hi.
  d = Math.abs(hi) * BOUND
  require hi + (lo + d) === hi && hi + (lo - d) === hi
`

type Line = { readonly name: string; readonly value: string } | { readonly require: string }

const LINES: readonly Line[] = PROGRAM.split('\n')
  .map((line) => line.trim())
  .filter((line) => line !== '' && !line.startsWith('//'))
  .map((line) => {
    if (line.startsWith('require ')) return { require: line.slice('require '.length) }
    const [name, value] = line.split(' = ', 2) as [string, string]
    return { name, value }
  })

const LOCALS = new Set(['x', 'quarter', ...LINES.flatMap((line) => ('name' in line ? [line.name] : []))])

/**
 * A line's text with its names replaced: locals by `local(name)`, numbers by their literals, TABLE
 * by `table`. Any other name but `Math` is a mistake in the program, refused when the module loads.
 */
function rename(text: string, local: (name: string) => string, table: string): string {
  return text.replace(/[A-Za-z_][A-Za-z0-9_]*/g, (word, at: number) => {
    if (at > 0 && text[at - 1] === '.') return word // Math.abs
    if (LOCALS.has(word)) return local(word)
    const number = NUMBERS[word]
    if (number !== undefined) return `(${String(number)})`
    if (word === 'TABLE') return table
    if (word === 'Math') return word
    throw new InternalError(`fast-trig's program names '${word}', which is neither one of its values nor a number`)
  })
}

// The program as a function: its result goes out through OUT, and `fast` answers whether it
// decided. A double returned from a function V8 does not inline (this one is too large to be) is
// boxed, a new heap number per call; an integer is not.
const OUT = new Float64Array(1)
const locals = [...LOCALS].filter((name) => name !== 'x' && name !== 'quarter')
const fast = new Function(
  'TABLE',
  'OUT',
  `return function fast(x, quarter) {
  let ${locals.join(', ')}
  ${LINES.map((line) => ('name' in line ? `${line.name} = ${rename(line.value, (n) => n, 'TABLE')}` : `if (!(${rename(line.require, (n) => n, 'TABLE')})) return 0`)).join('\n  ')}
  OUT[0] = hi
  return 1
}`,
)(TABLE, OUT) as (x: number, quarter: number) => number

/** sin(x), correctly rounded (double-double.ts's value). */
export function sin(x: number): number {
  return fast(x, 0) === 1 ? (OUT[0] as number) : ddSin(x)
}

/** cos(x), correctly rounded (double-double.ts's value). */
export function cos(x: number): number {
  return fast(x, 64) === 1 ? (OUT[0] as number) : ddCos(x)
}

/** How inline text names what it needs from the code around it. */
export interface TrigNames {
  /** A fresh local of the generated function, for one of the program's values. */
  temp(): string
  /** The text of a value the generated function is given (the table, the series' function). */
  constant(value: unknown): string
}

/**
 * The text of an expression giving sin(x) (`quarter` 0) or cos(x) (64) for `x`, the name of a local
 * holding a number: the fast evaluation inline, and a call of the series only when it cannot decide.
 *
 * @example
 * inlineTrig('a', 0, names) // '((t0 = a, ...) && ... ? t31 : C[1](a))'
 */
export function inlineTrig(x: string, quarter: 0 | 64, names: TrigNames): string {
  const temps = new Map<string, string>([
    ['x', x],
    ['quarter', String(quarter)],
  ])
  const local = (name: string): string => {
    let temp = temps.get(name)
    if (temp === undefined) temps.set(name, (temp = names.temp()))
    return temp
  }
  const table = names.constant(TABLE)
  // Each run of assignments ends in its requirement: (a = .., b = .., condition) && (...) && ...
  const groups: string[] = []
  let pending: string[] = []
  for (const line of LINES) {
    if ('name' in line) {
      pending.push(`${local(line.name)} = ${rename(line.value, local, table)}`)
    } else {
      groups.push(`(${[...pending, rename(line.require, local, table)].join(', ')})`)
      pending = []
    }
  }
  const series = names.constant(quarter === 0 ? ddSin : ddCos)
  return `(${groups.join(' && ')} ? ${local('hi')} : ${series}(${x}))`
}
