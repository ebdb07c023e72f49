/**
 * Python's operators on the value model. The compiler inlines the float-float case of each
 * operator and calls these for everything else, so these carry the full rules: int stays exact,
 * bool acts as int, `//` and `%` floor, the errors and messages CPython raises.
 *
 * @example
 * pyBinary('//', -7n, 2n) // -4n
 * pyBinary('%', -7.5, 2.0) // 0.5
 */
import { powInt, powReal, rsqrt } from './double-double.js'
import { FormatSpecError, formatFloat, formatInt, formatStr } from './float-format.js'
import { bitLength, checkIntBits, checkLength, intFits, intMul, MAX_INT_BITS, MAX_STR_LENGTH } from './limits.js'
import { typeUnion } from './type-checks.js'
import {
  dictGet,
  iterate,
  objectOrder,
  PyException,
  pyEquals,
  PyIterator,
  pyLess,
  PyObject,
  pyRepr,
  pyStr,
  PyRange,
  PyTuple,
  truthy,
  typeName,
  type PyValue,
} from './values.js'

/** int, float or bool. */
export function isNumber(v: PyValue): v is number | bigint | boolean {
  const t = typeof v
  return t === 'number' || t === 'bigint' || t === 'boolean'
}

/** int or bool (Python's `int` including its subclass `bool`). */
export function isInt(v: PyValue): v is bigint | boolean {
  const t = typeof v
  return t === 'bigint' || t === 'boolean'
}

/** An int-like value as bigint. */
export function asBigInt(v: bigint | boolean): bigint {
  return typeof v === 'boolean' ? (v ? 1n : 0n) : v
}

const MAX_FLOAT_INT = 2n ** 1024n - 2n ** 970n

/** `float(n)` of an int: correctly rounded, OverflowError past the float range. */
export function intToFloat(n: bigint): number {
  const x = Number(n)
  if (!Number.isFinite(x) || n >= MAX_FLOAT_INT || n <= -MAX_FLOAT_INT) throw new PyException('OverflowError', 'int too large to convert to float')
  return x
}

/** A number as float (Python's implicit conversion in mixed arithmetic). */
export function toFloat(v: number | bigint | boolean): number {
  if (typeof v === 'number') return v
  if (typeof v === 'boolean') return v ? 1 : 0
  return intToFloat(v)
}

const EXACT = 2n ** 53n

/** int / int, correctly rounded as CPython does it. */
export function intTrueDiv(a: bigint, b: bigint): number {
  if (b === 0n) throw new PyException('ZeroDivisionError', 'division by zero')
  const negative = a < 0n !== b < 0n
  let n = a < 0n ? -a : a
  let d = b < 0n ? -b : b
  if (n <= EXACT && d <= EXACT) return Number(a) / Number(b)
  if (n === 0n) return negative ? -0 : 0
  // Scale to a quotient of 55+ bits, fold the remainder into its lowest bit (sticky), let
  // Number() round that once, then scale back: one rounding, as in CPython's long_true_divide.
  const shift = bitLength(n) - bitLength(d) - 55
  if (shift > 0) d <<= BigInt(shift)
  else n <<= BigInt(-shift)
  let q = n / d
  if (n % d !== 0n) q |= 1n
  const half = Math.trunc(shift / 2)
  const x = Number(q) * 2 ** half * 2 ** (shift - half)
  if (!Number.isFinite(x)) throw new PyException('OverflowError', 'integer division result too large for a float')
  return negative ? -x : x
}

function intFloorDiv(a: bigint, b: bigint): bigint {
  if (b === 0n) throw new PyException('ZeroDivisionError', 'integer division or modulo by zero')
  const q = a / b
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q
}

function intMod(a: bigint, b: bigint, message = 'integer modulo by zero'): bigint {
  if (b === 0n) throw new PyException('ZeroDivisionError', message)
  const r = a % b
  return r !== 0n && r < 0n !== b < 0n ? r + b : r
}

/** CPython's float_divmod: the pair (floor quotient, modulo) with its sign rules. */
export function floatDivmod(vx: number, wx: number, message: string): [number, number] {
  if (wx === 0) throw new PyException('ZeroDivisionError', message)
  let mod = vx % wx
  let div = (vx - mod) / wx
  if (mod !== 0) {
    if (wx < 0 !== mod < 0) {
      mod += wx
      div -= 1
    }
  } else mod = wx < 0 ? -0 : 0
  let floordiv: number
  if (div !== 0) {
    floordiv = Math.floor(div)
    if (div - floordiv > 0.5) floordiv += 1
  } else floordiv = vx / wx < 0 || Object.is(vx / wx, -0) ? -0 : 0
  return [floordiv, mod]
}

/** Python's float `%`. */
export function floatMod(vx: number, wx: number): number {
  if (wx === 0) throw new PyException('ZeroDivisionError', 'float modulo')
  let mod = vx % wx
  if (mod !== 0) {
    if (wx < 0 !== mod < 0) mod += wx
  } else mod = wx < 0 ? -0 : 0
  return mod
}

/** Python's float `//`. */
export function floatFloorDiv(vx: number, wx: number): number {
  return floatDivmod(vx, wx, 'float floor division by zero')[0]
}

function isOddInteger(y: number): boolean {
  return Number.isFinite(y) && Math.abs(y % 2) === 1
}

/** CPython's float_pow, with its special cases and errors. */
export function floatPow(x: number, y: number): number {
  if (y === 0) return 1
  if (Number.isNaN(x)) return x
  if (Number.isNaN(y)) return x === 1 ? 1 : y
  if (!Number.isFinite(y)) {
    const ax = Math.abs(x)
    if (ax === 1) return 1
    return y > 0 === ax > 1 ? Infinity : 0
  }
  if (!Number.isFinite(x)) {
    const odd = isOddInteger(y)
    if (y > 0) return odd ? x : Math.abs(x)
    return odd ? (x < 0 ? -0 : 0) : 0
  }
  if (x === 0) {
    if (y < 0) throw new PyException('ZeroDivisionError', '0.0 cannot be raised to a negative power')
    return isOddInteger(y) ? x : 0
  }
  let negate = false
  let base = x
  if (x < 0) {
    if (!Number.isInteger(y)) throw new PyException('ValueError', 'complex results are not supported')
    base = -x
    negate = isOddInteger(y)
  }
  if (base === 1) return negate ? -1 : 1
  // x*x and 1/x are single, correctly rounded operations; other integer powers go through double-double.
  const r =
    y === 2
      ? base * base
      : y === -1
        ? 1 / base
        : Number.isInteger(y) && Math.abs(y) <= 2 ** 31
          ? powInt(base, y)
          : y === 0.5
            ? Math.sqrt(base)
            : y === -0.5
              ? rsqrt(base)
              : powReal(base, y)
  if (!Number.isFinite(r)) throw new PyException('OverflowError', "(34, 'Numerical result out of range')")
  return negate ? -r : r
}

function unsupported(op: string, a: PyValue, b: PyValue): never {
  throw new PyException('TypeError', `unsupported operand type(s) for ${op}: '${typeName(a)}' and '${typeName(b)}'`)
}

/** `a <op> b` when an operand may be a {@link PyObject}: its method, else Python's TypeError. */
function objectBinary(op: string, a: PyValue, b: PyValue, name = op): PyValue {
  if (a instanceof PyObject) {
    const r = a.binary(op, a, b)
    if (r !== undefined) return r
  }
  if (b instanceof PyObject && (!(a instanceof PyObject) || a.binary !== b.binary)) {
    const r = b.binary(op, a, b)
    if (r !== undefined) return r
  }
  return unsupported(name, a, b)
}

function repeat(seq: PyValue, n: bigint | boolean): PyValue {
  const big = asBigInt(n)
  if (big > 2n ** 63n - 1n || big < -(2n ** 63n)) throw new PyException('OverflowError', "cannot fit 'int' into an index-sized integer")
  const times = big > 0n ? Number(big) : 0
  if (typeof seq === 'string') {
    // Sized before it is built: `'a' * 10**9` must not take the heap.
    if (seq.length > 0) checkLength(seq.length * times, 'str', 'str repetition')
    return seq.repeat(times)
  }
  const items = Array.isArray(seq) ? seq : (seq as PyTuple).items
  const length = items.length * times
  checkLength(length, Array.isArray(seq) ? 'list' : 'tuple', `${Array.isArray(seq) ? 'list' : 'tuple'} repetition`)
  const out: PyValue[] = new Array<PyValue>(length)
  if (items.length === 1) out.fill(items[0] ?? null)
  else for (let i = 0, k = 0; i < times; i++) for (let j = 0; j < items.length; j++) out[k++] = items[j] ?? null
  return Array.isArray(seq) ? out : new PyTuple(out)
}

function isSequence(v: PyValue): boolean {
  return typeof v === 'string' || Array.isArray(v) || v instanceof PyTuple
}

/** `a + b`. */
export function pyAdd(a: PyValue, b: PyValue): PyValue {
  if (typeof a === 'number' && typeof b === 'number') return a + b
  if (isNumber(a) && isNumber(b)) {
    if (isInt(a) && isInt(b)) return asBigInt(a) + asBigInt(b)
    return toFloat(a) + toFloat(b)
  }
  if (typeof a === 'string') {
    if (typeof b === 'string') {
      // V8 joins the two without copying them: only the length is checked, nothing counted.
      if (a.length + b.length > MAX_STR_LENGTH) checkLength(a.length + b.length, 'str', 'str concatenation')
      return a + b
    }
    throw new PyException('TypeError', `can only concatenate str (not "${typeName(b)}") to str`)
  }
  if (Array.isArray(a)) {
    if (Array.isArray(b)) {
      checkLength(a.length + b.length, 'list', 'list concatenation')
      return a.concat(b)
    }
    throw new PyException('TypeError', `can only concatenate list (not "${typeName(b)}") to list`)
  }
  if (a instanceof PyTuple) {
    if (b instanceof PyTuple) {
      checkLength(a.items.length + b.items.length, 'tuple', 'tuple concatenation')
      return new PyTuple([...a.items, ...b.items])
    }
    throw new PyException('TypeError', `can only concatenate tuple (not "${typeName(b)}") to tuple`)
  }
  return objectBinary('+', a, b)
}

/** `a - b`. */
export function pySub(a: PyValue, b: PyValue): PyValue {
  if (typeof a === 'number' && typeof b === 'number') return a - b
  if (isNumber(a) && isNumber(b)) {
    if (isInt(a) && isInt(b)) return asBigInt(a) - asBigInt(b)
    return toFloat(a) - toFloat(b)
  }
  return objectBinary('-', a, b)
}

/** `a * b`. */
export function pyMul(a: PyValue, b: PyValue): PyValue {
  if (typeof a === 'number' && typeof b === 'number') return a * b
  if (isNumber(a) && isNumber(b)) {
    if (isInt(a) && isInt(b)) return intMul(asBigInt(a), asBigInt(b))
    return toFloat(a) * toFloat(b)
  }
  if (isSequence(a)) {
    if (isInt(b)) return repeat(a, b)
    // CPython tries `a`'s repetition first, so the error names `b` ('ab' * [1] names list).
    if (!(b instanceof PyObject)) throw new PyException('TypeError', `can't multiply sequence by non-int of type '${typeName(b)}'`)
  }
  if (isSequence(b)) {
    if (isInt(a)) return repeat(b, a)
    throw new PyException('TypeError', `can't multiply sequence by non-int of type '${typeName(a)}'`)
  }
  return objectBinary('*', a, b)
}

/** `a / b`. */
export function pyTrueDiv(a: PyValue, b: PyValue): PyValue {
  if (isNumber(a) && isNumber(b)) {
    if (isInt(a) && isInt(b)) return intTrueDiv(asBigInt(a), asBigInt(b))
    const y = toFloat(b)
    if (y === 0) throw new PyException('ZeroDivisionError', 'float division by zero')
    return toFloat(a) / y
  }
  return objectBinary('/', a, b)
}

/** `a // b`. */
export function pyFloorDiv(a: PyValue, b: PyValue): PyValue {
  if (isNumber(a) && isNumber(b)) {
    if (isInt(a) && isInt(b)) return intFloorDiv(asBigInt(a), asBigInt(b))
    return floatFloorDiv(toFloat(a), toFloat(b))
  }
  return objectBinary('//', a, b)
}

/** `a % b`, including str % args. */
export function pyMod(a: PyValue, b: PyValue): PyValue {
  if (isNumber(a) && isNumber(b)) {
    if (isInt(a) && isInt(b)) return intMod(asBigInt(a), asBigInt(b))
    return floatMod(toFloat(a), toFloat(b))
  }
  if (typeof a === 'string') return percentFormat(a, b)
  return objectBinary('%', a, b)
}

/** `divmod(a, b)`. */
export function pyDivmod(a: PyValue, b: PyValue): PyValue {
  if (isNumber(a) && isNumber(b)) {
    if (isInt(a) && isInt(b)) {
      const x = asBigInt(a)
      const y = asBigInt(b)
      return new PyTuple([intFloorDiv(x, y), intMod(x, y, 'integer division or modulo by zero')])
    }
    return new PyTuple(floatDivmod(toFloat(a), toFloat(b), 'float divmod()'))
  }
  return objectBinary('divmod', a, b, 'divmod()')
}

/** `a ** b`. */
export function pyPow(a: PyValue, b: PyValue): PyValue {
  if (typeof a === 'number' && typeof b === 'number') return floatPow(a, b)
  if (isNumber(a) && isNumber(b)) {
    if (isInt(a) && isInt(b)) {
      const x = asBigInt(a)
      const y = asBigInt(b)
      if (y < 0n) {
        if (x === 0n) throw new PyException('ZeroDivisionError', '0.0 cannot be raised to a negative power')
        return floatPow(toFloat(x), toFloat(y))
      }
      return intPow(x, y)
    }
    return floatPow(toFloat(a), toFloat(b))
  }
  return unsupported('** or pow()', a, b)
}

const MAX_SHIFT = BigInt(MAX_INT_BITS)

/**
 * `x ** y` of ints with y >= 0, refused before it is computed when the result would pass
 * {@link MAX_INT_BITS} (|x| >= 2 has at least (bits(x) - 1) * y + 1 bits, at most bits(x) * y).
 */
function intPow(x: bigint, y: bigint): bigint {
  if (x === 0n || x === 1n || x === -1n || y < 2n) return x ** y
  if (y > MAX_SHIFT) checkIntBits(Number(y), 'int **')
  const bits = bitLength(x)
  const n = Number(y)
  if ((bits - 1) * n + 1 > MAX_INT_BITS) checkIntBits((bits - 1) * n + 1, 'int **')
  const r = x ** y
  if (bits * n > MAX_INT_BITS && !intFits(r)) checkIntBits(bitLength(r), 'int **')
  return r
}

function bitwise(op: string, a: PyValue, b: PyValue): PyValue {
  if (typeof a === 'boolean' && typeof b === 'boolean' && (op === '&' || op === '|' || op === '^')) {
    return op === '&' ? a && b : op === '|' ? a || b : a !== b
  }
  if (!isInt(a) || !isInt(b)) {
    // `int | None`: a union of classes (for isinstance), as type.__or__ makes it.
    const union = op === '|' ? typeUnion(a, b) : undefined
    return union !== undefined ? union : unsupported(op, a, b)
  }
  const x = asBigInt(a)
  const y = asBigInt(b)
  switch (op) {
    case '&':
      return x & y
    case '|':
      return x | y
    case '^':
      return x ^ y
    case '<<':
      if (y < 0n) throw new PyException('ValueError', 'negative shift count')
      // The result has bits(x) + y bits: sized before it is built.
      if (x !== 0n && (y > MAX_SHIFT || bitLength(x) + Number(y) > MAX_INT_BITS)) checkIntBits(bitLength(x) + Number(y), 'int <<')
      return x << y
    default:
      if (y < 0n) throw new PyException('ValueError', 'negative shift count')
      return x >> y
  }
}

/** Any binary arithmetic operator by its Python spelling. */
export function pyBinary(op: string, a: PyValue, b: PyValue): PyValue {
  switch (op) {
    case '+':
      return pyAdd(a, b)
    case '-':
      return pySub(a, b)
    case '*':
      return pyMul(a, b)
    case '/':
      return pyTrueDiv(a, b)
    case '//':
      return pyFloorDiv(a, b)
    case '%':
      return pyMod(a, b)
    case '**':
      return pyPow(a, b)
    case '@':
      return unsupported('@', a, b)
    default:
      return bitwise(op, a, b)
  }
}

/** A unary operator on a {@link PyObject}, else Python's TypeError (`what`: `unary -`, `abs()`). */
export function objectUnary(op: '-' | '+' | 'abs', a: PyValue, what: string): PyValue {
  const r = a instanceof PyObject ? a.unary(op) : undefined
  if (r !== undefined) return r
  throw new PyException('TypeError', `bad operand type for ${what}: '${typeName(a)}'`)
}

/** `-a`. */
export function pyNeg(a: PyValue): PyValue {
  if (typeof a === 'number') return -a
  if (isInt(a)) return -asBigInt(a)
  return objectUnary('-', a, 'unary -')
}

/** `+a`. */
export function pyPos(a: PyValue): PyValue {
  if (typeof a === 'number') return a
  if (isInt(a)) return asBigInt(a)
  return objectUnary('+', a, 'unary +')
}

/** `~a`. */
export function pyInvert(a: PyValue): PyValue {
  if (isInt(a)) return ~asBigInt(a)
  throw new PyException('TypeError', `bad operand type for unary ~: '${typeName(a)}'`)
}

/** `a in b`. */
export function pyContains(container: PyValue, item: PyValue): boolean {
  if (typeof container === 'string') {
    if (typeof item !== 'string') throw new PyException('TypeError', `'in <string>' requires string as left operand, not ${typeName(item)}`)
    return container.includes(item)
  }
  if (container instanceof Map) return dictGet(container, item) !== undefined
  if (container instanceof PyRange) {
    if (!isNumber(item)) return false
    if (typeof item === 'number' && !Number.isInteger(item)) return false
    const n = typeof item === 'number' ? BigInt(item) : asBigInt(item)
    const { start, stop, step } = container
    const inside = step > 0n ? n >= start && n < stop : n <= start && n > stop
    return inside && (n - start) % step === 0n
  }
  if (container instanceof PyObject || isNumber(container) || container === null) {
    throw new PyException('TypeError', `argument of type '${typeName(container)}' is not iterable`)
  }
  if (container instanceof PyIterator) {
    // Consumed only up to the item found, as Python's `in` consumes an iterator.
    for (let x = container.nextValue(); x !== undefined; x = container.nextValue()) if (x === item || pyEquals(x, item)) return true
    return false
  }
  const items = Array.isArray(container) ? container : container instanceof PyTuple ? container.items : iterate(container)
  for (const x of items) if (x === item || pyEquals(x, item)) return true
  return false
}

/** A comparison operator by its Python spelling (`<`, `<=`, `==`, `!=`, `>`, `>=`, `in`, `not in`, `is`, `is not`). */
export function pyCompare(op: string, a: PyValue, b: PyValue): boolean {
  if (typeof a === 'number' && typeof b === 'number') {
    switch (op) {
      case '<':
        return a < b
      case '<=':
        return a <= b
      case '>':
        return a > b
      case '>=':
        return a >= b
      case '==':
        return a === b
      case '!=':
        return a !== b
    }
  }
  switch (op) {
    case '==':
      return pyEquals(a, b)
    case '!=':
      return !pyEquals(a, b)
    case '<':
      return pyLess(a, b, '<')
    case '>':
      return pyLess(b, a, '>')
    case '<=':
      return lessOrEqual(a, b, '<=')
    case '>=':
      return lessOrEqual(b, a, '>=')
    case 'in':
      return pyContains(b, a)
    case 'not in':
      return !pyContains(b, a)
    case 'is':
      return a === b
    default:
      return a !== b
  }
}

function lessOrEqual(a: PyValue, b: PyValue, op: string): boolean {
  if (isNumber(a) && isNumber(b)) {
    const x = typeof a === 'boolean' ? (a ? 1n : 0n) : a
    const y = typeof b === 'boolean' ? (b ? 1n : 0n) : b
    return (x as number) <= (y as number)
  }
  if (typeof a === 'string' && typeof b === 'string') return a <= b
  const xs = Array.isArray(a) && Array.isArray(b) ? [a, b] : a instanceof PyTuple && b instanceof PyTuple ? [a.items, b.items] : null
  if (xs === null && (a instanceof PyObject || b instanceof PyObject)) {
    // `x >= y` arrives here as `y <= x`.
    const ordered = op === '>=' ? objectOrder(b, a, '>=', '<=') : objectOrder(a, b, '<=', '>=')
    if (ordered !== undefined) return ordered
  }
  if (xs === null)
    throw new PyException('TypeError', `'${op}' not supported between instances of '${typeName(op === '>=' ? b : a)}' and '${typeName(op === '>=' ? a : b)}'`)
  const [p = [], q = []] = xs
  const n = Math.min(p.length, q.length)
  for (let i = 0; i < n; i++) {
    const x = p[i] ?? null
    const y = q[i] ?? null
    if (!pyEquals(x, y)) return pyLess(x, y, op)
  }
  return p.length <= q.length
}

/** `format(value, spec)` for any value. */
export function pyFormat(value: PyValue, spec: string): string {
  try {
    if (typeof value === 'number') return formatFloat(value, spec)
    if (typeof value === 'bigint') return formatInt(value, spec, intToFloat)
    if (typeof value === 'boolean') return spec === '' ? pyStr(value) : formatInt(value ? 1n : 0n, spec, intToFloat, 'bool')
    if (typeof value === 'string') return formatStr(value, spec)
    if (value instanceof PyObject) return value.format(spec)
    if (spec === '') return pyStr(value)
  } catch (err) {
    if (err instanceof FormatSpecError) throw new PyException('ValueError', err.message)
    throw err
  }
  throw new PyException('TypeError', `unsupported format string passed to ${typeName(value)}.__format__`)
}

const PERCENT_RE = /%(?:\(([^)]*)\))?([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?([\s\S]?)/g

/** printf-style `str % args`. */
function percentFormat(fmt: string, args: PyValue): string {
  const positional = args instanceof PyTuple ? args.items : [args]
  // CPython takes any argument with items by key other than a tuple or str (a dict, also a list
  // or a range) as the mapping of `%(key)s`, and then does not count unused arguments.
  const mapping = args instanceof Map || Array.isArray(args) || args instanceof PyRange
  let next = 0
  const take = (): PyValue => {
    if (next >= positional.length) throw new PyException('TypeError', 'not enough arguments for format string')
    return positional[next++] ?? null
  }
  let produced = fmt.length
  const convert = (
    m: string,
    key: string | undefined,
    flags: string,
    width: string | undefined,
    prec: string | undefined,
    conv: string,
    at: number,
  ): string => {
    if (conv === '%') return '%'
    if (conv === '') throw new PyException('ValueError', 'incomplete format')
    if (!'diouxXeEfFgGcrsa'.includes(conv)) {
      // CPython gives the index (in characters) of the conversion character itself.
      const index = [...fmt.slice(0, at + m.length - conv.length)].length
      throw new PyException('ValueError', `unsupported format character '${conv}' (0x${(conv.codePointAt(0) ?? 0).toString(16)}) at index ${index}`)
    }
    let value: PyValue
    if (key !== undefined) {
      if (!mapping) throw new PyException('TypeError', 'format requires a mapping')
      if (!(args instanceof Map)) throw new PyException('TypeError', `${typeName(args)} indices must be integers or slices, not str`)
      const v = dictGet(args, key)
      if (v === undefined) throw new PyException('KeyError', pyRepr(key))
      value = v
    } else {
      if (width === '*') width = String(take())
      if (prec === '*') prec = String(take())
      value = take()
    }
    const left = flags.includes('-')
    const sign = flags.includes('+') ? '+' : flags.includes(' ') ? ' ' : ''
    const zero = flags.includes('0') && !left
    const alt = flags.includes('#') ? '#' : ''
    const w = width ?? ''
    const p = prec === undefined ? '' : `.${prec}`
    const align = left ? '<' : zero ? '=' : '>'
    const fill = zero ? '0' : ' '
    switch (conv) {
      case 's':
      case 'r':
      case 'a': {
        const s = conv === 's' ? pyStr(value) : pyRepr(value)
        return pyFormat(prec === undefined ? s : s.slice(0, Number(prec)), `${left ? '<' : '>'}${w}`)
      }
      case 'c':
        return pyFormat(typeof value === 'string' ? value : String.fromCodePoint(Number(value)), `${left ? '<' : '>'}${w}`)
      default: {
        if (!isNumber(value)) {
          const kind = 'diouxX'.includes(conv) ? 'a real number' : 'a real number'
          throw new PyException('TypeError', `%${conv} format: ${kind} is required, not ${typeName(value)}`)
        }
        if ('diu'.includes(conv)) {
          const n = typeof value === 'number' ? truncToInt(value) : asBigInt(value)
          return pyFormat(n, `${fill}${align}${sign}${w}d`)
        }
        if ('oxX'.includes(conv)) {
          if (typeof value === 'number') throw new PyException('TypeError', `%${conv} format: an integer is required, not float`)
          return pyFormat(asBigInt(value), `${fill}${align}${sign}${alt}${w}${conv}`)
        }
        const x = toFloat(value)
        return pyFormat(x, `${fill}${align}${sign}${alt}${w}${p === '' ? '.6' : p}${conv}`)
      }
    }
  }
  const out = fmt.replace(
    PERCENT_RE,
    (m: string, key: string | undefined, flags: string, width: string | undefined, prec: string | undefined, conv: string, at: number) => {
      const piece = convert(m, key, flags, width, prec, conv, at)
      // Each piece is within the limit; many of them together must be too.
      produced += piece.length
      if (produced > MAX_STR_LENGTH) checkLength(produced, 'str', 'printf-style formatting')
      return piece
    },
  )
  if (next < positional.length && !mapping) throw new PyException('TypeError', 'not all arguments converted during string formatting')
  return out
}

/** `int(x)` of a float: truncation, with Python's errors for inf and nan. */
export function truncToInt(x: number): bigint {
  if (Number.isNaN(x)) throw new PyException('ValueError', 'cannot convert float NaN to integer')
  if (!Number.isFinite(x)) throw new PyException('OverflowError', 'cannot convert float infinity to integer')
  return BigInt(Math.trunc(x))
}

/** `not a`. */
export function pyNot(a: PyValue): boolean {
  return !truthy(a)
}
