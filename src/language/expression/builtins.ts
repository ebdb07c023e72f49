/**
 * The builtins an expression may call (MODEL_LANGUAGE.md section 2 lists them) and the `math`
 * module, with CPython's results and errors. Anything else Python has is refused at compile time
 * (see {@link FORBIDDEN_BUILTINS}), so expressions cannot reach the server, files or the network.
 *
 * @example
 * BUILTINS.get('round')?.call([2.5], null) // 2n
 */
import { asBigInt, floatPow, isInt, isNumber, objectUnary, pyAdd, pyCompare, pyDivmod, pyFormat, pyMul, pyPow, toFloat, truncToInt } from './arithmetic.js'
import { atan as ddAtan, atan2 as ddAtan2, exp as ddExp, hypot, log as ddLog, log2 as ddLog2, tan as ddTan } from './double-double.js'
import { cos as fastCos, inlineTrig, sin as fastSin, type TrigNames } from './fast-trig.js'
import { codePointLength } from './code-points.js'
import { divRoundHalfEven, exactFraction } from './float-format.js'
import { checkArgs, keywords, ONE, positional, type Convention } from './call-args.js'
import { callableIterator, pyEnumerate, pyFilter, pyIter, pyMap, pyNext, pyReversed, pyZip } from './iterators.js'
import { bitLength, checkIntBits, checkStrToInt } from './limits.js'
import { spend, spendWork } from './loop-budget.js'
import { pySort } from './sort.js'
import { pyIsInstance, pyIsSubclass } from './type-checks.js'
import {
  dictEntries,
  dictSet,
  isIterable,
  iterate,
  PyBuiltinType,
  PyCallable,
  PyException,
  PyIterator,
  PyModule,
  PyRange,
  PyTuple,
  pyRepr,
  pyStr,
  truthy,
  typeName,
  type PyDict,
  type PyKwargs,
  type PyValue,
} from './values.js'

/**
 * A native function checked by the calling convention its CPython counterpart has (see
 * call-args.ts); `fn` gets the checked arguments (one per parameter for `keywords`).
 */
function native(qualname: string, convention: Convention, fn: (...args: Array<PyValue | undefined>) => PyValue): PyCallable {
  const name = qualname.slice(qualname.lastIndexOf('.') + 1)
  return new PyCallable(name, (args, kwargs) => fn(...checkArgs(convention, name, qualname, args, kwargs)))
}

/** A builtin type whose constructor takes its arguments as {@link native} does; `test` answers isinstance. */
function nativeType(
  name: string,
  convention: Convention,
  fn: (...args: Array<PyValue | undefined>) => PyValue,
  test: (v: PyValue) => boolean,
  base: PyBuiltinType | null = null,
): PyBuiltinType {
  return new PyBuiltinType(name, (args, kwargs) => fn(...checkArgs(convention, name, name, args, kwargs)), test, base)
}

/** The isinstance test of an iterator type (`zip`, `map`): CPython's type name says which it is. */
function iteratorOf(name: string): (v: PyValue) => boolean {
  return (v) => v instanceof PyIterator && v.typeName === name
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
    // 10**k with k past the bits of v is more than twice |v|: the result is 0, without computing 10**k.
    if (-n > BigInt(bitLength(v))) return 0n
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
    if (!INT_RE.test(s)) throw new PyException('ValueError', `invalid literal for int() with base 10: ${intLiteral(x)}`)
    const digits = s.replace(/_/g, '')
    checkStrToInt(digits.length - (digits[0] === '-' || digits[0] === '+' ? 1 : 0))
    return BigInt(digits)
  }
  throw new PyException('TypeError', `int() argument must be a string, a bytes-like object or a real number, not '${typeName(x)}'`)
}

/** The literal in int()'s ValueError: its repr, cut at 200 characters as CPython's `%.200R`. */
function intLiteral(s: string): string {
  return [...pyRepr(s)].slice(0, 200).join('')
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
  if (s === '') throw new PyException('ValueError', `invalid literal for int() with base ${base}: ${intLiteral(text)}`)
  // CPython's digit limit in the other bases; a power of two has none there, but its bits are Mimic's to bound.
  if ((b & (b - 1)) !== 0) checkStrToInt(s.length)
  else checkIntBits(s.length * Math.log2(b), 'int()')
  let n = 0n
  for (const ch of s.toLowerCase()) {
    const d = parseInt(ch, 36)
    if (Number.isNaN(d) || d >= b) throw new PyException('ValueError', `invalid literal for int() with base ${base}: ${intLiteral(text)}`)
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
    if (!FLOAT_RE.test(s)) throw new PyException('ValueError', `could not convert string to float: ${pyRepr(x)}`)
    return Number(s.replace(/_/g, ''))
  }
  throw new PyException('TypeError', `float() argument must be a string or a real number, not '${typeName(x)}'`)
}

const MIN_MAX_KEYWORDS = keywords(['key', 'default'], 0, { maxpos: 0 })

function minMax(name: 'min' | 'max', args: PyValue[], kwargs: PyKwargs): PyValue {
  if (args.length === 0) throw new PyException('TypeError', `${name} expected at least 1 argument, got 0`)
  const [key, dflt] = checkArgs(MIN_MAX_KEYWORDS, name, name, [], kwargs)
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

/** The keyword-only parameters of `list.sort`, which `sorted` passes on. */
export const SORT_KEYWORDS = keywords(['key', 'reverse'], 0, { maxpos: 0 })

/** `sorted(...)` / `list.sort(...)`: stable, with key and reverse. */
export function sortValues(items: PyValue[], key: PyValue = null, reverse: PyValue = false): PyValue[] {
  return pySort(items, key === null ? null : callable(key), truthy(reverse))
}

function sum(iterable: PyValue = null, start: PyValue = 0n): PyValue {
  let total = start
  if (typeof total === 'string') throw new PyException('TypeError', "sum() can't sum strings [use ''.join(seq) instead]")
  // Plain left-to-right addition: CPython 3.11's sum (3.12 compensates float sums).
  for (const item of iterate(iterable)) {
    // Timed as a loop: a sum of ten million ints in a loop must not hold the thread.
    spend()
    total = typeof total === 'number' && typeof item === 'number' ? total + item : pyAdd(total, item)
  }
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

/** `len(x)`. */
export function pyLen(x: PyValue): bigint {
  if (typeof x === 'string') return BigInt(codePointLength(x))
  if (Array.isArray(x)) return BigInt(x.length)
  if (x instanceof PyTuple) return BigInt(x.items.length)
  if (x instanceof Map) return BigInt(x.size)
  if (x instanceof PyRange) return x.length
  throw new PyException('TypeError', `object of type '${typeName(x)}' has no len()`)
}

function pyRange(args: readonly PyValue[]): PyRange {
  const [a = null, b = null, c = null] = args
  if (args.length === 1) return new PyRange(0n, indexArg(a), 1n)
  const step = args.length === 3 ? indexArg(c) : 1n
  if (step === 0n) throw new PyException('ValueError', 'range() arg 3 must not be zero')
  return new PyRange(indexArg(a), indexArg(b), step)
}

/** `d.update(src, **kwargs)`, as `dict(src, **kwargs)` fills a new dict: a dict's items, or pairs from an iterable of 2-item iterables. */
export function dictUpdate(d: PyDict, src: PyValue | undefined, kwargs: PyKwargs): void {
  if (src instanceof Map) for (const [k, v] of dictEntries(src)) dictSet(d, k, v)
  else if (src !== undefined) {
    iterate(src).forEach((element, i) => {
      if (!isIterable(element)) throw new PyException('TypeError', `cannot convert dictionary update sequence element #${i} to a sequence`)
      const kv = iterate(element)
      if (kv.length !== 2) throw new PyException('ValueError', `dictionary update sequence element #${i} has length ${kv.length}; 2 is required`)
      dictSet(d, kv[0] ?? null, kv[1] ?? null)
    })
  }
  if (kwargs !== null) for (const [k, v] of kwargs) dictSet(d, k, v)
}

function pyDict(args: PyValue[], kwargs: PyKwargs): PyDict {
  checkArgs(positional(0, 1), 'dict', 'dict', args, null)
  const d: PyDict = new Map()
  dictUpdate(d, args[0], kwargs)
  return d
}

function pow3(a: PyValue = null, b: PyValue = null, m: PyValue = null): PyValue {
  if (m === null) return pyPow(a, b)
  if (![a, b, m].every(isNumber)) {
    throw new PyException('TypeError', `unsupported operand type(s) for ** or pow(): '${typeName(a)}', '${typeName(b)}', '${typeName(m)}'`)
  }
  if (!isInt(a) || !isInt(b) || !isInt(m)) throw new PyException('TypeError', 'pow() 3rd argument not allowed unless all arguments are integers')
  let base = asBigInt(a)
  let exp = asBigInt(b)
  const mod = asBigInt(m)
  if (mod === 0n) throw new PyException('ValueError', 'pow() 3rd argument cannot be 0')
  if (exp < 0n) throw new PyException('ValueError', 'base is not invertible for the given modulus')
  // A square and a multiplication modulo `mod` per bit of the exponent, each about words(mod)**2.
  const words = bitLength(mod) / 32 + 1
  spendWork((bitLength(exp) * words * words) / 64, 'pow() with a modulus')
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

const ENUMERATE_KEYWORDS = keywords(['iterable', 'start'], 1)
const ZIP_KEYWORDS = keywords(['strict'], 0, { maxpos: 0 })

/** `enumerate(...)`, whose vectorcall and keyword paths word their refusals differently. */
function enumerate(args: PyValue[], kwargs: PyKwargs): PyIterator {
  if (kwargs === null || kwargs.size === 0) {
    if (args.length === 0) throw new PyException('TypeError', "enumerate() missing required argument 'iterable'")
    if (args.length > 2) throw new PyException('TypeError', `enumerate() takes at most 2 arguments (${args.length} given)`)
  } else if (args.length === 0 && !kwargs.has('iterable') && kwargs.size <= 2) {
    throw new PyException('TypeError', `'${[...kwargs.keys()][0]}' is an invalid keyword argument for enumerate()`)
  }
  const [iterable = null, start = 0n] = checkArgs(ENUMERATE_KEYWORDS, 'enumerate', 'enumerate', args, kwargs)
  const first = indexArg(start)
  return pyEnumerate(iterable, first)
}

/** `str(object='', encoding=..., errors=...)`: there are no bytes here, so only `object` can be decoded from nothing. */
function str(object: PyValue | undefined, encoding: PyValue | undefined, errors: PyValue | undefined): string {
  for (const [name, v] of [
    ['encoding', encoding],
    ['errors', errors],
  ] as const) {
    if (v !== undefined && typeof v !== 'string')
      throw new PyException('TypeError', `str() argument '${name}' must be str, not ${v === null ? 'None' : typeName(v)}`)
  }
  if (object === undefined) return ''
  if (encoding === undefined && errors === undefined) return pyStr(object)
  if (typeof object === 'string') throw new PyException('TypeError', 'decoding str is not supported')
  throw new PyException('TypeError', `decoding to str: need a bytes-like object, ${typeName(object)} found`)
}

/** `any`/`all` of an iterator: pulled only until the answer is known, as Python pulls it. */
function anyItem(it: PyIterator, wanted: boolean): boolean {
  for (let v = it.nextValue(); v !== undefined; v = it.nextValue()) if (truthy(v) === wanted) return true
  return false
}

/** `hex`, `oct` and `bin`: an int (or bool) in that base, with its prefix after any sign. */
function inBase(prefix: string, radix: number): (x?: PyValue) => string {
  return (x = null) => {
    const n = indexArg(x)
    return n < 0n ? `-${prefix}${(-n).toString(radix)}` : `${prefix}${n.toString(radix)}`
  }
}

/** `chr(i)`: the character of code point `i`; CPython reads `i` as a C int first. */
function pyChr(x: PyValue): string {
  const n = indexArg(x)
  if (n < -(2n ** 31n) || n >= 2n ** 31n) throw new PyException('OverflowError', 'Python int too large to convert to C int')
  if (n < 0n || n > 0x10ffffn) throw new PyException('ValueError', 'chr() arg not in range(0x110000)')
  return String.fromCodePoint(Number(n))
}

/** `ord(c)`: the code point of a one-character str. */
function pyOrd(x: PyValue): bigint {
  if (typeof x !== 'string') throw new PyException('TypeError', `ord() expected string of length 1, but ${typeName(x)} found`)
  const chars = [...x]
  if (chars.length !== 1) throw new PyException('TypeError', `ord() expected a character, but string of length ${chars.length} found`)
  return BigInt(x.codePointAt(0) ?? 0)
}

/** `format(value, format_spec='')`. */
function formatBuiltin(value: PyValue = null, spec: PyValue = ''): string {
  if (typeof spec !== 'string') throw new PyException('TypeError', `format() argument 2 must be str, not ${spec === null ? 'None' : typeName(spec)}`)
  return pyFormat(value, spec)
}

const INT = nativeType(
  'int',
  keywords(['x', 'base'], 0, { posonly: 1 }),
  (x, base) => {
    if (x === undefined) {
      if (base !== undefined) throw new PyException('TypeError', 'int() missing string argument')
      return 0n
    }
    return pyInt(x, base ?? null)
  },
  isInt,
)

/** The builtins of the contract, by name. */
export const BUILTINS: ReadonlyMap<string, PyCallable> = new Map<string, PyCallable>([
  ['abs', native('abs', ONE, (x = null) => pyAbs(x))],
  ['min', new PyCallable('min', (args, kwargs) => minMax('min', args, kwargs))],
  ['max', new PyCallable('max', (args, kwargs) => minMax('max', args, kwargs))],
  ['round', native('round', keywords(['number', 'ndigits'], 1), (x = null, ndigits = null) => pyRound(x, ndigits))],
  ['int', INT],
  [
    'float',
    nativeType(
      'float',
      positional(0, 1),
      (x = 0) => pyFloat(x),
      (v) => typeof v === 'number',
    ),
  ],
  [
    'bool',
    nativeType(
      'bool',
      positional(0, 1),
      (x = false) => truthy(x),
      (v) => typeof v === 'boolean',
      INT,
    ),
  ],
  ['str', nativeType('str', keywords(['object', 'encoding', 'errors'], 0), str, (v) => typeof v === 'string')],
  ['len', native('len', ONE, (x = null) => pyLen(x))],
  ['sum', native('sum', keywords(['iterable', 'start'], 1, { posonly: 1 }), sum)],
  ['pow', native('pow', keywords(['base', 'exp', 'mod'], 2), pow3)],
  ['divmod', native('divmod', positional(2), (a = null, b = null) => pyDivmod(a, b))],
  ['any', native('any', ONE, (x = null) => (x instanceof PyIterator ? anyItem(x, true) : iterate(x).some(truthy)))],
  ['all', native('all', ONE, (x = null) => (x instanceof PyIterator ? !anyItem(x, false) : iterate(x).every(truthy)))],
  [
    'sorted',
    new PyCallable('sorted', (args, kwargs) => {
      const [iterable = null] = checkArgs(positional(1), 'sorted', 'sorted', args, null)
      return sortValues(iterate(iterable), ...checkArgs(SORT_KEYWORDS, 'sort', 'list.sort', [], kwargs))
    }),
  ],
  ['enumerate', new PyBuiltinType('enumerate', enumerate, iteratorOf('enumerate'))],
  [
    'zip',
    new PyBuiltinType(
      'zip',
      (args, kwargs) => {
        const [strict = false] = checkArgs(ZIP_KEYWORDS, 'zip', 'zip', [], kwargs)
        return pyZip(args, truthy(strict))
      },
      iteratorOf('zip'),
    ),
  ],
  [
    'range',
    new PyBuiltinType(
      'range',
      (args, kwargs) => pyRange(checkArgs(positional(1, 3), 'range', 'range', args, kwargs) as PyValue[]),
      (v) => v instanceof PyRange,
    ),
  ],
  [
    'list',
    nativeType(
      'list',
      positional(0, 1),
      (...a) => (a.length === 0 ? [] : iterate(a[0] ?? null)),
      (v) => Array.isArray(v),
    ),
  ],
  [
    'tuple',
    nativeType(
      'tuple',
      positional(0, 1),
      (x = new PyTuple([])) => (x instanceof PyTuple ? x : new PyTuple(iterate(x))),
      (v) => v instanceof PyTuple,
    ),
  ],
  ['dict', new PyBuiltinType('dict', pyDict, (v) => v instanceof Map)],
  ['isinstance', native('isinstance', positional(2), (x = null, classinfo = null) => pyIsInstance(x, classinfo))],
  ['issubclass', native('issubclass', positional(2), (x = null, classinfo = null) => pyIsSubclass(x, classinfo))],
  ['iter', native('iter', positional(1, 2), (...a) => (a.length === 1 ? pyIter(a[0] ?? null) : callableIterator(a[0] ?? null, a[1] ?? null)))],
  ['next', native('next', positional(1, 2), (it = null, dflt) => pyNext(it, dflt))],
  ['reversed', nativeType('reversed', positional(1), (x = null) => pyReversed(x), iteratorOf('reversed'))],
  ['map', new PyBuiltinType('map', pyMap, iteratorOf('map'))],
  ['filter', nativeType('filter', positional(2), (f = null, iterable = null) => pyFilter(f, iterable), iteratorOf('filter'))],
  ['repr', native('repr', ONE, (x = null) => pyRepr(x))],
  ['chr', native('chr', ONE, (x = null) => pyChr(x))],
  ['ord', native('ord', ONE, (x = null) => pyOrd(x))],
  ['hex', native('hex', ONE, inBase('0x', 16))],
  ['oct', native('oct', ONE, inBase('0o', 8))],
  ['bin', native('bin', ONE, inBase('0b', 2))],
  ['format', native('format', positional(1, 2), formatBuiltin)],
])

/**
 * Every other name Python's builtins module has: refused at compile time rather than read as an
 * attribute name, so `open(...)` is a clear 422 and never a lookup.
 */
export const FORBIDDEN_BUILTINS: ReadonlySet<string> = new Set(
  (
    'aiter anext ascii breakpoint bytearray bytes callable classmethod compile complex copyright credits delattr dir eval exec ' +
    'exit frozenset getattr globals hasattr hash help id input license locals memoryview object open print property quit set ' +
    'setattr slice staticmethod super type vars Ellipsis NotImplemented'
  ).split(' '),
)

function realArg(fn: string, v: PyValue): number {
  if (isNumber(v)) return toFloat(v)
  throw new PyException('TypeError', `must be real number, not ${typeName(v)}`)
}

/**
 * The float function behind a one-argument `math` function, and for sin and cos the text that
 * computes it inline (fast-trig.ts): `inline(x, names)` is an expression giving f(x) for the number in
 * local `x`.
 */
export interface MathFloat {
  readonly name: string
  readonly f: (x: number) => number
  readonly inline?: (x: string, names: TrigNames) => string
}

/** The float functions behind the one-argument `math` functions, by their callable (see {@link mathFloatFunction}). */
const MATH_FLOAT = new Map<PyCallable, MathFloat>()

/**
 * The float function behind a one-argument `math` function (`math.sin`), for generated code:
 * for a float argument whose result is finite it gives Python's result, with no check left to
 * make; any other case goes to the callable.
 *
 * @example
 * mathFloatFunction(MATH_MODULE.attributes.get('sin'))?.f(0.5) // 0.479425538604203
 */
export function mathFloatFunction(fn: PyCallable): MathFloat | undefined {
  return MATH_FLOAT.get(fn)
}

/** A one-argument math function with CPython's domain (ValueError) and range (OverflowError) checks. */
function math1(name: string, f: (x: number) => number, canOverflow = false, inline?: MathFloat['inline']): [string, PyCallable] {
  const callable = native(`math.${name}`, ONE, (v = null) => {
    const x = realArg(name, v)
    const r = f(x)
    if (Number.isNaN(r) && !Number.isNaN(x)) throw new PyException('ValueError', 'math domain error')
    if (!Number.isFinite(r) && Number.isFinite(x)) {
      if (canOverflow) throw new PyException('OverflowError', 'math range error')
      throw new PyException('ValueError', 'math domain error')
    }
    return r
  })
  MATH_FLOAT.set(callable, inline === undefined ? { name, f } : { name, f, inline })
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

function isclose(x: PyValue = null, y: PyValue = null, relTol: PyValue = 1e-9, absTol: PyValue = 0): boolean {
  const a = realArg('isclose', x)
  const b = realArg('isclose', y)
  const rel = realArg('isclose', relTol)
  const abs = realArg('isclose', absTol)
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
  // log2(n!) by Stirling's formula, before any multiplication: `factorial(10**6)` is refused at once.
  if (n > 20n) {
    const x = Number(n)
    checkIntBits(x * Math.log2(x / Math.E) + 0.5 * Math.log2(2 * Math.PI * x), 'math.factorial()')
  }
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
  return native(`math.${name}`, ONE, (v = null) => {
    if (isInt(v)) return asBigInt(v)
    // floor and ceil fall back to float(); trunc only asks for __trunc__.
    if (name === 'trunc' && typeof v !== 'number') throw new PyException('TypeError', `type ${typeName(v)} doesn't define __trunc__ method`)
    return floatToIntChecked(f(realArg(name, v)))
  })
}

/** Any number of positional arguments and no keywords (`math.gcd`). */
const VARARGS = positional(0, Infinity)

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
    math1('sin', fastSin, false, (x, names) => inlineTrig(x, 0, names)),
    math1('cos', fastCos, false, (x, names) => inlineTrig(x, 64, names)),
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
      new PyCallable('log', (args, kwargs) => {
        if (kwargs !== null && kwargs.size > 0) throw new PyException('TypeError', 'log() takes no keyword arguments')
        if (args.length < 1 || args.length > 2) throw new PyException('TypeError', 'math.log requires 1 to 2 arguments')
        const [x = null, base = null] = args
        const n = logOf(x, ddLog)
        if (base === null) return n
        const d = logOf(base, ddLog)
        if (d === 0) throw new PyException('ZeroDivisionError', 'float division by zero')
        return n / d
      }),
    ],
    ['log10', native('math.log10', ONE, (x = null) => logOf(x, Math.log10))],
    ['log2', native('math.log2', ONE, (x = null) => logOf(x, ddLog2))],
    ['floor', toIntFloor('floor', Math.floor)],
    ['ceil', toIntFloor('ceil', Math.ceil)],
    ['trunc', toIntFloor('trunc', Math.trunc)],
    ['atan2', native('math.atan2', positional(2), (y = null, x = null) => ddAtan2(realArg('atan2', y), realArg('atan2', x)))],
    [
      'hypot',
      new PyCallable('hypot', (args, kwargs) => hypot(checkArgs(VARARGS, 'hypot', 'math.hypot', args, kwargs).map((a) => realArg('hypot', a ?? null)))),
    ],
    [
      'pow',
      native('math.pow', positional(2), (a = null, b = null) => {
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
      native('math.fmod', positional(2), (a = null, b = null) => {
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
      native('math.copysign', positional(2), (a = null, b = null) => {
        const x = Math.abs(realArg('copysign', a))
        const y = realArg('copysign', b)
        return signBit(y) ? -x : x
      }),
    ],
    ['isclose', native('math.isclose', keywords(['a', 'b', 'rel_tol', 'abs_tol'], 2, { maxpos: 2 }), isclose)],
    ['isnan', native('math.isnan', ONE, (x = null) => Number.isNaN(realArg('isnan', x)))],
    [
      'isinf',
      native('math.isinf', ONE, (x = null) => {
        const v = realArg('isinf', x)
        return !Number.isFinite(v) && !Number.isNaN(v)
      }),
    ],
    ['isfinite', native('math.isfinite', ONE, (x = null) => Number.isFinite(realArg('isfinite', x)))],
    ['factorial', native('math.factorial', ONE, (x = null) => factorial(x))],
    [
      'gcd',
      new PyCallable('gcd', (args, kwargs) =>
        checkArgs(VARARGS, 'gcd', 'math.gcd', args, kwargs).reduce<bigint>((acc, a) => gcd2(acc, indexArg(a ?? null)), 0n),
      ),
    ],
    ['fsum', native('math.fsum', ONE, (x = null) => fsum(x))],
    [
      'prod',
      native('math.prod', keywords(['iterable', 'start'], 1, { posonly: 1, maxpos: 1 }), (iterable = null, start = 1n) => {
        let acc = start
        for (const v of iterate(iterable)) {
          spend()
          acc = pyMul(acc, v)
        }
        return acc
      }),
    ],
    [
      'modf',
      native('math.modf', ONE, (x = null) => {
        const v = realArg('modf', x)
        if (!Number.isFinite(v)) return new PyTuple([Number.isNaN(v) ? v : v < 0 ? -0 : 0, v])
        const i = Math.trunc(v)
        const frac = v - i
        return new PyTuple([frac === 0 && (v < 0 || Object.is(v, -0)) ? -0 : frac, i])
      }),
    ],
  ]),
)
