/**
 * The builtins an expression may call (MODEL_LANGUAGE.md section 2 lists them) and the `math`
 * module, with CPython's results and errors. Anything else Python has is refused at compile time
 * (see {@link FORBIDDEN_BUILTINS}), so expressions cannot reach the server, files or the network.
 *
 * @example
 * BUILTINS.get('round')?.call([2.5], null) // 2n
 */
import { asBigInt, floatPow, isInt, isNumber, objectUnary, pyAdd, pyCompare, pyDivmod, pyMul, pyPow, toFloat, truncToInt } from './arithmetic.js'
import { atan as ddAtan, atan2 as ddAtan2, exp as ddExp, hypot, log as ddLog, log2 as ddLog2, tan as ddTan } from './double-double.js'
import { cos as fastCos, sin as fastSin } from './fast-trig.js'
import { divRoundHalfEven, exactFraction } from './float-format.js'
import {
  dictSet,
  iterate,
  PyCallable,
  PyException,
  PyIterator,
  PyModule,
  PyRange,
  PyTuple,
  pyLess,
  pyStr,
  truthy,
  typeName,
  type PyDict,
  type PyKwargs,
  type PyValue,
} from './values.js'

/** Checks the argument count of a builtin, with Python's message. */
export function arity(name: string, args: PyValue[], min: number, max: number): void {
  if (args.length < min || args.length > max) {
    const expected = min === max ? `exactly ${min}` : args.length < min ? `at least ${min}` : `at most ${max}`
    throw new PyException('TypeError', `${name}() takes ${expected} argument${(args.length < min ? min : max) === 1 ? '' : 's'} (${args.length} given)`)
  }
}

/**
 * The arguments of a builtin whose parameters may also be given by name (`round(number=2.5)`,
 * `pow(base=2, exp=3)`), in the order of `params`, undefined where not given; Python's TypeError,
 * in CPython's words, for too many, an unknown keyword, one given twice or a missing required one.
 */
function bind(name: string, args: PyValue[], kwargs: PyKwargs, params: readonly string[], required: number): Array<PyValue | undefined> {
  if (args.length > params.length)
    throw new PyException('TypeError', `${name}() takes at most ${params.length} argument${params.length === 1 ? '' : 's'} (${args.length} given)`)
  // In CPython's order: each parameter from its position or its name (a missing required one
  // first), then the keywords left over.
  const bound = params.map((param, i) => (i < args.length ? args[i] : kwargs?.get(param)))
  const missing = bound.findIndex((v, i) => i < required && v === undefined)
  if (missing >= 0) throw new PyException('TypeError', `${name}() missing required argument '${params[missing]}' (pos ${missing + 1})`)
  for (const key of kwargs?.keys() ?? []) {
    const at = params.indexOf(key)
    if (at < 0) throw new PyException('TypeError', `'${key}' is an invalid keyword argument for ${name}()`)
    if (at < args.length) throw new PyException('TypeError', `argument for ${name}() given by name ('${key}') and position (${at + 1})`)
  }
  return bound
}

function noKwargs(name: string, kwargs: PyKwargs): void {
  if (kwargs !== null && kwargs.size > 0) throw new PyException('TypeError', `${name}() takes no keyword arguments`)
}

function kwarg(kwargs: PyKwargs, name: string, allowed: readonly string[], fn: string): PyValue | undefined {
  if (kwargs === null) return undefined
  for (const k of kwargs.keys()) {
    if (!allowed.includes(k)) throw new PyException('TypeError', `'${k}' is an invalid keyword argument for ${fn}()`)
  }
  return kwargs.get(name)
}

/** An int argument (bool counts), or Python's TypeError. */
export function indexArg(v: PyValue): bigint {
  if (isInt(v)) return asBigInt(v)
  throw new PyException('TypeError', `'${typeName(v)}' object cannot be interpreted as an integer`)
}

/** `round(x)` and `round(x, n)` with banker's rounding on the exact binary value, as CPython. */
export function pyRound(x: PyValue, ndigits: PyValue = null): PyValue {
  if (typeof x === 'number') {
    if (ndigits === null) {
      if (Number.isNaN(x)) throw new PyException('ValueError', 'cannot convert float NaN to integer')
      if (!Number.isFinite(x)) throw new PyException('OverflowError', 'cannot convert float infinity to integer')
      const f = Math.floor(x)
      const diff = x - f
      const r = diff > 0.5 || (diff === 0.5 && f % 2 !== 0) ? f + 1 : f
      return BigInt(r)
    }
    const n = Number(indexArg(ndigits))
    if (!Number.isFinite(x) || x === 0) return x
    if (n >= 0 && n <= 22) {
      // Fast path: when x * 10**n is clearly away from a tie, rounding it in floats decides the
      // same as the exact value does, and q / 10**n (both exact) is the correctly rounded
      // decimal CPython reads back. Near a tie, the exact path below decides.
      const p = POW10[n] as number
      const y = x * p
      const ay = Math.abs(y)
      if (ay < 2 ** 52) {
        const fl = Math.floor(ay)
        const frac = ay - fl
        if (Math.abs(frac - 0.5) > ay * 2 ** -48 + 2 ** -60) {
          const q = frac > 0.5 ? fl + 1 : fl
          const r = q / p
          return x < 0 ? -r : r
        }
      }
    }
    if (n > 323) return x
    if (n < -308) return x < 0 ? -0 : 0
    const { num, den } = exactFraction(x)
    // Like CPython: round the exact value half-even, then read the decimal back, correctly rounded.
    const q = n >= 0 ? divRoundHalfEven(num * 10n ** BigInt(n), den) : divRoundHalfEven(num, den * 10n ** BigInt(-n))
    const r = Number(`${q}e${-n}`)
    if (!Number.isFinite(r)) throw new PyException('OverflowError', 'rounded value too large to represent')
    return x < 0 ? -r : r
  }
  if (isInt(x)) {
    const v = asBigInt(x)
    if (ndigits === null) return v
    const n = indexArg(ndigits)
    if (n >= 0n) return v
    const p = 10n ** -n
    const q = divRoundHalfEven(v < 0n ? -v : v, p) * p
    return v < 0n ? -q : q
  }
  throw new PyException('TypeError', `type ${typeName(x)} doesn't define __round__ method`)
}

const SIGN_VIEW = new DataView(new ArrayBuffer(8))

/** The sign bit, also of -0.0 and of a negated NaN (which CPython's copysign honours). */
function signBit(y: number): boolean {
  SIGN_VIEW.setFloat64(0, y)
  return (SIGN_VIEW.getUint8(0) & 0x80) !== 0
}

const POW10 = Array.from({ length: 23 }, (_x, i) => 10 ** i)

const INT_RE = /^[+-]?(\d(?:_?\d)*)$/
const FLOAT_RE = /^[+-]?(?:(?:\d(?:_?\d)*)?\.?\d(?:_?\d)*|\d(?:_?\d)*\.)(?:[eE][+-]?\d(?:_?\d)*)?$/
const SPECIAL_RE = /^([+-]?)(inf|infinity|nan)$/i

/** `int(x)`. */
export function pyInt(x: PyValue, base: PyValue = null): bigint {
  if (base !== null) {
    if (typeof x !== 'string') throw new PyException('TypeError', "int() can't convert non-string with explicit base")
    return parseIntBase(x, Number(indexArg(base)))
  }
  if (typeof x === 'number') return truncToInt(x)
  if (isInt(x)) return asBigInt(x)
  if (typeof x === 'string') {
    const s = x.trim()
    if (!INT_RE.test(s)) throw new PyException('ValueError', `invalid literal for int() with base 10: ${pyReprStr(x)}`)
    return BigInt(s.replace(/_/g, ''))
  }
  throw new PyException('TypeError', `int() argument must be a string, a bytes-like object or a real number, not '${typeName(x)}'`)
}

function pyReprStr(s: string): string {
  return s.includes("'") && !s.includes('"') ? `"${s}"` : `'${s.replace(/'/g, "\\'")}'`
}

function parseIntBase(text: string, base: number): bigint {
  let s = text.trim().replace(/_/g, '')
  let negative = false
  if (s.startsWith('-') || s.startsWith('+')) {
    negative = s.startsWith('-')
    s = s.slice(1)
  }
  let b = base
  const prefix = s.slice(0, 2).toLowerCase()
  const prefixes: Record<string, number> = { '0x': 16, '0o': 8, '0b': 2 }
  const fromPrefix = prefixes[prefix]
  if (fromPrefix !== undefined && (b === 0 || b === fromPrefix)) {
    b = fromPrefix
    s = s.slice(2)
  } else if (b === 0) b = 10
  if (b < 2 || b > 36) throw new PyException('ValueError', 'int() base must be >= 2 and <= 36, or 0')
  if (s === '') throw new PyException('ValueError', `invalid literal for int() with base ${base}: ${pyReprStr(text)}`)
  let n = 0n
  for (const ch of s.toLowerCase()) {
    const d = parseInt(ch, 36)
    if (Number.isNaN(d) || d >= b) throw new PyException('ValueError', `invalid literal for int() with base ${base}: ${pyReprStr(text)}`)
    n = n * BigInt(b) + BigInt(d)
  }
  return negative ? -n : n
}

/** `float(x)`. */
export function pyFloat(x: PyValue): number {
  if (typeof x === 'number') return x
  if (isInt(x)) return toFloat(x)
  if (typeof x === 'string') {
    const s = x.trim()
    const special = SPECIAL_RE.exec(s)
    if (special !== null) {
      const v = (special[2] ?? '').toLowerCase() === 'nan' ? NaN : Infinity
      return special[1] === '-' ? -v : v
    }
    if (!FLOAT_RE.test(s)) throw new PyException('ValueError', `could not convert string to float: ${pyReprStr(x)}`)
    return Number(s.replace(/_/g, ''))
  }
  throw new PyException('TypeError', `float() argument must be a string or a real number, not '${typeName(x)}'`)
}

function minMax(name: 'min' | 'max', args: PyValue[], kwargs: PyKwargs): PyValue {
  const key = kwarg(kwargs, 'key', ['key', 'default'], name)
  const dflt = kwargs?.get('default')
  if (args.length === 0) throw new PyException('TypeError', `${name} expected at least 1 argument, got 0`)
  let items: PyValue[]
  if (args.length === 1) items = iterate(args[0] ?? null)
  else {
    if (dflt !== undefined) throw new PyException('TypeError', `Cannot specify a default for ${name}() with multiple positional arguments`)
    items = args
  }
  if (items.length === 0) {
    if (dflt !== undefined) return dflt
    throw new PyException('ValueError', `${name}() arg is an empty sequence`)
  }
  const keyFn = key === undefined || key === null ? null : callable(key)
  let best = items[0] ?? null
  let bestKey = keyFn === null ? best : keyFn.call([best], null)
  for (let i = 1; i < items.length; i++) {
    const item = items[i] ?? null
    const k = keyFn === null ? item : keyFn.call([item], null)
    if (name === 'max' ? pyCompare('>', k, bestKey) : pyCompare('<', k, bestKey)) {
      best = item
      bestKey = k
    }
  }
  return best
}

/** A value that can be called, or Python's TypeError. */
export function callable(v: PyValue): PyCallable {
  if (v instanceof PyCallable) return v
  throw new PyException('TypeError', `'${typeName(v)}' object is not callable`)
}

/** `sorted(...)` / `list.sort(...)`: stable, with key and reverse. */
export function sortValues(items: PyValue[], kwargs: PyKwargs, fn: string): PyValue[] {
  const key = kwarg(kwargs, 'key', ['key', 'reverse'], fn)
  const reverse = truthy(kwargs?.get('reverse') ?? false)
  const keyFn = key === undefined || key === null ? null : callable(key)
  const keyed = items.map((v, i) => ({ v, k: keyFn === null ? v : keyFn.call([v], null), i }))
  keyed.sort((a, b) => {
    if (reverse) return pyLess(b.k, a.k) ? -1 : pyLess(a.k, b.k) ? 1 : a.i - b.i
    return pyLess(a.k, b.k) ? -1 : pyLess(b.k, a.k) ? 1 : a.i - b.i
  })
  return keyed.map((e) => e.v)
}

function sum(args: PyValue[], kwargs: PyKwargs): PyValue {
  arity('sum', args, 1, 2)
  const startKw = kwarg(kwargs, 'start', ['start'], 'sum')
  let total: PyValue = args[1] ?? startKw ?? 0n
  if (typeof total === 'string') throw new PyException('TypeError', "sum() can't sum strings [use ''.join(seq) instead]")
  // Plain left-to-right addition: CPython 3.11's sum (3.12 compensates float sums).
  for (const item of iterate(args[0] ?? null)) total = typeof total === 'number' && typeof item === 'number' ? total + item : pyAdd(total, item)
  return total
}

function pyAbs(x: PyValue): PyValue {
  if (typeof x === 'number') return Math.abs(x)
  if (isInt(x)) {
    const v = asBigInt(x)
    return v < 0n ? -v : v
  }
  return objectUnary('abs', x, 'abs()')
}

function pyLen(x: PyValue): bigint {
  if (typeof x === 'string') return BigInt([...x].length)
  if (Array.isArray(x)) return BigInt(x.length)
  if (x instanceof PyTuple) return BigInt(x.items.length)
  if (x instanceof Map) return BigInt(x.size)
  if (x instanceof PyRange) return x.length
  throw new PyException('TypeError', `object of type '${typeName(x)}' has no len()`)
}

function pyRange(args: PyValue[]): PyRange {
  arity('range', args, 1, 3)
  const [a = null, b = null, c = null] = args
  if (args.length === 1) return new PyRange(0n, indexArg(a), 1n)
  const step = args.length === 3 ? indexArg(c) : 1n
  if (step === 0n) throw new PyException('ValueError', 'range() arg 3 must not be zero')
  return new PyRange(indexArg(a), indexArg(b), step)
}

function pyDict(args: PyValue[], kwargs: PyKwargs): PyDict {
  arity('dict', args, 0, 1)
  const d: PyDict = new Map()
  const src = args[0]
  if (src instanceof Map) for (const [k, v] of src) d.set(k, v)
  else if (src !== undefined) {
    for (const pair of iterate(src)) {
      const kv = pair instanceof PyTuple ? pair.items : Array.isArray(pair) ? pair : null
      if (kv === null || kv.length !== 2) throw new PyException('TypeError', 'cannot convert dictionary update sequence element #0 to a sequence')
      dictSet(d, kv[0] ?? null, kv[1] ?? null)
    }
  }
  if (kwargs !== null) for (const [k, v] of kwargs) dictSet(d, k, v)
  return d
}

function pow3(args: PyValue[]): PyValue {
  const [a = null, b = null, m = null] = args
  if (m === null) return pyPow(a, b)
  if (!isInt(a) || !isInt(b) || !isInt(m)) throw new PyException('TypeError', 'pow() 3rd argument not allowed unless all arguments are integers')
  let base = asBigInt(a)
  let exp = asBigInt(b)
  const mod = asBigInt(m)
  if (mod === 0n) throw new PyException('ValueError', 'pow() 3rd argument cannot be 0')
  if (exp < 0n) throw new PyException('ValueError', 'base is not invertible for the given modulus')
  let result = 1n
  base = ((base % mod) + mod) % mod
  while (exp > 0n) {
    if (exp & 1n) result = (result * base) % mod
    base = (base * base) % mod
    exp >>= 1n
  }
  result %= mod
  return result !== 0n && result < 0n !== mod < 0n ? result + mod : result
}

/** `zip(..., strict=True)`'s ValueError, in CPython's words, when the lengths differ. */
function zipMismatch(lengths: number[]): void {
  const n = Math.min(...lengths)
  const first = lengths[0] ?? 0
  const before = (i: number): string => (i === 1 ? 'argument 1' : `arguments 1-${i}`)
  if (first > n) {
    const i = lengths.findIndex((l) => l === n)
    throw new PyException('ValueError', `zip() argument ${i + 1} is shorter than ${before(i)}`)
  }
  const i = lengths.findIndex((l) => l > n)
  if (i > 0) throw new PyException('ValueError', `zip() argument ${i + 1} is longer than ${before(i)}`)
}

function fixed(name: string, min: number, max: number, fn: (...args: PyValue[]) => PyValue): PyCallable {
  return new PyCallable(name, (args, kwargs) => {
    noKwargs(name, kwargs)
    arity(name, args, min, max)
    return fn(...args)
  })
}

/** The builtins of the contract, by name. */
export const BUILTINS: ReadonlyMap<string, PyCallable> = new Map<string, PyCallable>([
  ['abs', fixed('abs', 1, 1, pyAbs)],
  ['min', new PyCallable('min', (args, kwargs) => minMax('min', args, kwargs))],
  ['max', new PyCallable('max', (args, kwargs) => minMax('max', args, kwargs))],
  [
    'round',
    new PyCallable('round', (args, kwargs) => {
      const [x = null, ndigits = null] = bind('round', args, kwargs, ['number', 'ndigits'], 1)
      return pyRound(x, ndigits)
    }),
  ],
  [
    'int',
    new PyCallable('int', (args, kwargs) => {
      arity('int', args, 0, 2)
      const base = kwarg(kwargs, 'base', ['base'], 'int')
      if (args.length === 0) {
        if (base !== undefined) throw new PyException('TypeError', 'int() missing string argument')
        return 0n
      }
      return pyInt(args[0] ?? null, args[1] ?? base ?? null)
    }),
  ],
  ['float', fixed('float', 0, 1, (x = 0) => pyFloat(x))],
  ['bool', fixed('bool', 0, 1, (x = false) => truthy(x))],
  ['str', new PyCallable('str', (args, kwargs) => pyStr(bind('str', args, kwargs, ['object'], 0)[0] ?? ''))],
  ['len', fixed('len', 1, 1, pyLen)],
  ['sum', new PyCallable('sum', sum)],
  ['pow', new PyCallable('pow', (args, kwargs) => pow3(bind('pow', args, kwargs, ['base', 'exp', 'mod'], 2).map((v) => v ?? null)))],
  ['divmod', fixed('divmod', 2, 2, (a = null, b = null) => pyDivmod(a, b))],
  ['any', fixed('any', 1, 1, (x = null) => iterate(x).some(truthy))],
  ['all', fixed('all', 1, 1, (x = null) => iterate(x).every(truthy))],
  ['sorted', new PyCallable('sorted', (args, kwargs) => (arity('sorted', args, 1, 1), sortValues(iterate(args[0] ?? null), kwargs, 'sorted')))],
  [
    'enumerate',
    new PyCallable('enumerate', (args, kwargs) => {
      arity('enumerate', args, 1, 2)
      const start = indexArg(args[1] ?? kwarg(kwargs, 'start', ['start'], 'enumerate') ?? 0n)
      return new PyIterator(iterate(args[0] ?? null).map((v, i) => new PyTuple([start + BigInt(i), v])))
    }),
  ],
  [
    'zip',
    new PyCallable('zip', (args, kwargs) => {
      const strict = kwarg(kwargs, 'strict', ['strict'], 'zip')
      const lists = args.map(iterate)
      const n = lists.length === 0 ? 0 : Math.min(...lists.map((l) => l.length))
      // Iterators are whole lists here, so a strict zip's mismatch is found at once, not when
      // the shorter one runs out.
      if (strict !== undefined && truthy(strict)) zipMismatch(lists.map((l) => l.length))
      const out: PyValue[] = []
      for (let i = 0; i < n; i++) out.push(new PyTuple(lists.map((l) => l[i] ?? null)))
      return new PyIterator(out)
    }),
  ],
  ['range', new PyCallable('range', (args, kwargs) => (noKwargs('range', kwargs), pyRange(args)))],
  ['list', fixed('list', 0, 1, (...a) => (a.length === 0 ? [] : iterate(a[0] ?? null)))],
  ['tuple', fixed('tuple', 0, 1, (x = new PyTuple([])) => (x instanceof PyTuple ? x : new PyTuple(iterate(x))))],
  ['dict', new PyCallable('dict', pyDict)],
])

/**
 * Every other name Python's builtins module has: refused at compile time rather than read as an
 * attribute name, so `open(...)` is a clear 422 and never a lookup.
 */
export const FORBIDDEN_BUILTINS: ReadonlySet<string> = new Set(
  (
    'aiter anext ascii bin breakpoint bytearray bytes callable chr classmethod compile complex copyright credits delattr dir ' +
    'eval exec exit filter format frozenset getattr globals hasattr hash help hex id input isinstance issubclass iter license ' +
    'locals map memoryview next object oct open ord print property quit repr reversed set setattr slice staticmethod super type vars ' +
    'Ellipsis NotImplemented'
  ).split(' '),
)

function realArg(fn: string, v: PyValue): number {
  if (isNumber(v)) return toFloat(v)
  throw new PyException('TypeError', `must be real number, not ${typeName(v)}`)
}

/** The float functions behind the one-argument `math` functions, by their callable (see {@link mathFloatFunction}). */
const MATH_FLOAT = new Map<PyCallable, { name: string; f: (x: number) => number }>()

/**
 * The float function behind a one-argument `math` function (`math.sin`), for generated code:
 * for a float argument whose result is finite it gives Python's result, with no check left to
 * make; any other case goes to the callable.
 *
 * @example
 * mathFloatFunction(MATH_MODULE.attributes.get('sin'))?.f(0.5) // 0.479425538604203
 */
export function mathFloatFunction(fn: PyCallable): { name: string; f: (x: number) => number } | undefined {
  return MATH_FLOAT.get(fn)
}

/** A one-argument math function with CPython's domain (ValueError) and range (OverflowError) checks. */
function math1(name: string, f: (x: number) => number, canOverflow = false): [string, PyCallable] {
  const callable = fixed(name, 1, 1, (v = null) => {
    const x = realArg(name, v)
    const r = f(x)
    if (Number.isNaN(r) && !Number.isNaN(x)) throw new PyException('ValueError', 'math domain error')
    if (!Number.isFinite(r) && Number.isFinite(x)) {
      if (canOverflow) throw new PyException('OverflowError', 'math range error')
      throw new PyException('ValueError', 'math domain error')
    }
    return r
  })
  MATH_FLOAT.set(callable, { name, f })
  return [name, callable]
}

function floatToIntChecked(x: number): bigint {
  return truncToInt(x)
}

/** Natural log of a (possibly huge) positive int, as CPython's loghelper does. */
function logOf(v: PyValue, fn: (x: number) => number): number {
  if (typeof v === 'bigint' || typeof v === 'boolean') {
    const n = asBigInt(v)
    if (n <= 0n) throw new PyException('ValueError', 'math domain error')
    const x = Number(n)
    if (Number.isFinite(x)) return fn(x)
    // Past the float range, as CPython's loghelper: n = m * 2**bits with m in [0.5, 1).
    const bits = n.toString(2).length
    return fn(Number(n >> BigInt(bits - 64)) / 2 ** 64) + fn(2) * bits
  }
  const x = realArg('log', v)
  if (x <= 0 || Number.isNaN(x)) {
    if (Number.isNaN(x)) return x
    throw new PyException('ValueError', 'math domain error')
  }
  return fn(x)
}

function isclose(args: PyValue[], kwargs: PyKwargs): boolean {
  arity('isclose', args, 2, 2)
  const a = realArg('isclose', args[0] ?? null)
  const b = realArg('isclose', args[1] ?? null)
  const rel = realArg('isclose', kwarg(kwargs, 'rel_tol', ['rel_tol', 'abs_tol'], 'isclose') ?? 1e-9)
  const abs = realArg('isclose', kwargs?.get('abs_tol') ?? 0)
  if (rel < 0 || abs < 0) throw new PyException('ValueError', 'tolerances must be non-negative')
  if (a === b) return true
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false
  const diff = Math.abs(b - a)
  return diff <= Math.abs(rel * b) || diff <= Math.abs(rel * a) || diff <= abs
}

function factorial(v: PyValue): bigint {
  if (!isInt(v)) throw new PyException('TypeError', `'${typeName(v)}' object cannot be interpreted as an integer`)
  const n = asBigInt(v)
  if (n < 0n) throw new PyException('ValueError', 'factorial() not defined for negative values')
  let r = 1n
  for (let i = 2n; i <= n; i++) r *= i
  return r
}

function gcd2(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a
  let y = b < 0n ? -b : b
  while (y !== 0n) [x, y] = [y, x % y]
  return x
}

/** `math.fsum`: Shewchuk's exact partials, then CPython's final half-even correction. */
function fsum(iterable: PyValue): number {
  const partials: number[] = []
  let special = 0
  let infSum = 0
  for (const item of iterate(iterable)) {
    let x = realArg('fsum', item)
    if (!Number.isFinite(x)) {
      if (Number.isNaN(x)) special = NaN
      else infSum += x
      special = Number.isNaN(special) ? special : 1
      continue
    }
    let i = 0
    for (let y of partials) {
      if (Math.abs(x) < Math.abs(y)) [x, y] = [y, x]
      const hi = x + y
      const lo = y - (hi - x)
      if (lo !== 0) partials[i++] = lo
      x = hi
    }
    partials.length = i
    partials.push(x)
  }
  if (special !== 0) {
    if (Number.isNaN(special) || Number.isNaN(infSum)) throw new PyException('ValueError', '-inf + inf in fsum')
    return infSum
  }
  let n = partials.length
  let hi = 0
  if (n > 0) {
    hi = partials[--n] ?? 0
    let lo = 0
    while (n > 0) {
      const x = hi
      const y = partials[--n] ?? 0
      hi = x + y
      const yr = hi - x
      lo = y - yr
      if (lo !== 0) break
    }
    const next = partials[n - 1] ?? 0
    if (n > 0 && ((lo < 0 && next < 0) || (lo > 0 && next > 0))) {
      const y = lo * 2
      const x = hi + y
      const yr = x - hi
      if (y === yr) hi = x
    }
  }
  if (!Number.isFinite(hi)) throw new PyException('OverflowError', 'intermediate overflow in fsum')
  return hi
}

function toIntFloor(name: string, f: (x: number) => number): PyCallable {
  return fixed(name, 1, 1, (v = null) => {
    if (isInt(v)) return asBigInt(v)
    return floatToIntChecked(f(realArg(name, v)))
  })
}

/** The `math` module served natively. */
export const MATH_MODULE = new PyModule(
  'math',
  new Map<string, PyValue>([
    ['pi', Math.PI],
    ['e', Math.E],
    ['tau', 2 * Math.PI],
    ['inf', Infinity],
    ['nan', NaN],
    math1('sqrt', Math.sqrt),
    math1('exp', ddExp, true),
    math1('expm1', Math.expm1, true),
    math1('log1p', (x) => (x <= -1 ? NaN : Math.log1p(x))),
    math1('sin', fastSin),
    math1('cos', fastCos),
    math1('tan', ddTan),
    math1('asin', Math.asin),
    math1('acos', Math.acos),
    math1('atan', ddAtan),
    math1('sinh', Math.sinh, true),
    math1('cosh', Math.cosh, true),
    math1('tanh', Math.tanh),
    math1('asinh', Math.asinh),
    math1('acosh', Math.acosh),
    math1('atanh', (x) => (Math.abs(x) >= 1 ? NaN : Math.atanh(x))),
    math1('fabs', Math.abs),
    math1('degrees', (x) => x * (180 / Math.PI), true),
    math1('radians', (x) => x * (Math.PI / 180)),
    [
      'log',
      fixed('log', 1, 2, (x = null, base = null) => {
        const n = logOf(x, ddLog)
        if (base === null) return n
        const d = logOf(base, ddLog)
        if (d === 0) throw new PyException('ZeroDivisionError', 'float division by zero')
        return n / d
      }),
    ],
    ['log10', fixed('log10', 1, 1, (x = null) => logOf(x, Math.log10))],
    ['log2', fixed('log2', 1, 1, (x = null) => logOf(x, ddLog2))],
    ['floor', toIntFloor('floor', Math.floor)],
    ['ceil', toIntFloor('ceil', Math.ceil)],
    ['trunc', toIntFloor('trunc', Math.trunc)],
    ['atan2', fixed('atan2', 2, 2, (y = null, x = null) => ddAtan2(realArg('atan2', y), realArg('atan2', x)))],
    [
      'hypot',
      new PyCallable('hypot', (args, kwargs) => {
        noKwargs('hypot', kwargs)
        return hypot(args.map((a) => realArg('hypot', a)))
      }),
    ],
    [
      'pow',
      fixed('pow', 2, 2, (a = null, b = null) => {
        const x = realArg('pow', a)
        const y = realArg('pow', b)
        try {
          return floatPow(x, y)
        } catch (err) {
          if (err instanceof PyException && err.type !== 'OverflowError') throw new PyException('ValueError', 'math domain error')
          if (err instanceof PyException) throw new PyException('OverflowError', 'math range error')
          throw err
        }
      }),
    ],
    [
      'fmod',
      fixed('fmod', 2, 2, (a = null, b = null) => {
        const x = realArg('fmod', a)
        const y = realArg('fmod', b)
        if (Number.isNaN(x) || Number.isNaN(y)) return NaN
        if (!Number.isFinite(y) && Number.isFinite(x)) return x
        const r = x % y
        if (Number.isNaN(r) && !Number.isNaN(x) && !Number.isNaN(y)) throw new PyException('ValueError', 'math domain error')
        return r
      }),
    ],
    [
      'copysign',
      fixed('copysign', 2, 2, (a = null, b = null) => {
        const x = Math.abs(realArg('copysign', a))
        const y = realArg('copysign', b)
        return signBit(y) ? -x : x
      }),
    ],
    ['isclose', new PyCallable('isclose', isclose)],
    ['isnan', fixed('isnan', 1, 1, (x = null) => Number.isNaN(realArg('isnan', x)))],
    [
      'isinf',
      fixed('isinf', 1, 1, (x = null) => {
        const v = realArg('isinf', x)
        return !Number.isFinite(v) && !Number.isNaN(v)
      }),
    ],
    ['isfinite', fixed('isfinite', 1, 1, (x = null) => Number.isFinite(realArg('isfinite', x)))],
    ['factorial', fixed('factorial', 1, 1, (x = null) => factorial(x))],
    ['gcd', new PyCallable('gcd', (args, kwargs) => (noKwargs('math.gcd', kwargs), args.reduce<bigint>((acc, a) => gcd2(acc, indexArg(a)), 0n)))],
    ['fsum', fixed('fsum', 1, 1, (x = null) => fsum(x))],
    [
      'prod',
      new PyCallable('prod', (args, kwargs) => {
        arity('prod', args, 1, 1)
        let acc: PyValue = kwarg(kwargs, 'start', ['start'], 'prod') ?? 1n
        for (const v of iterate(args[0] ?? null)) acc = pyMul(acc, v)
        return acc
      }),
    ],
    [
      'modf',
      fixed('modf', 1, 1, (x = null) => {
        const v = realArg('modf', x)
        if (!Number.isFinite(v)) return new PyTuple([Number.isNaN(v) ? v : v < 0 ? -0 : 0, v])
        const i = Math.trunc(v)
        const frac = v - i
        return new PyTuple([frac === 0 && (v < 0 || Object.is(v, -0)) ? -0 : frac, i])
      }),
    ],
  ]),
)
