/**
 * Python's numbers where JavaScript has one kind. In JavaScript `2.0` and `2` are one number, but
 * in Python, and in the JSON a Python client reads, they are a float and an int; and an int past
 * 2**53 is exact in Python but not in a JavaScript number. Where a value carries its own type (an
 * attribute of type `float` or `int`) the type says which a number is. Inside a `list`, `dict` or
 * `any` value nothing does, so there
 *
 * - an integral float is held as a `FloatMark` (`[2.0, 3.5]` is `[FloatMark(2), 3.5]`),
 * - an int beyond the exact range of a number is held as an `ExactInt` of its digits,
 *
 * and every other number is a plain number (a non-integral one is a float in any JSON already).
 * Both marks write their number through a plain `JSON.stringify` (`toJSON`), so code that wants
 * plain JSON never sees them; the codec's encoder (encode.ts) writes `2.0` and the exact digits.
 *
 * @example
 * const value = [floatValue(2), floatValue(3.5)] // [FloatMark(2), 3.5]
 * encodeJson(value) // '[2.0,3.5]'
 * JSON.stringify(value) // '[2,3.5]'
 * plainJson(value) // [2, 3.5]
 */

/**
 * An integral float where JSON has no type for it: inside a list, dict or `any` value, or a
 * float attribute's value in a document being written. Immutable, so copies of a value share it.
 */
export class FloatMark {
  constructor(readonly value: number) {}

  /** The bare number, for plain JSON.stringify (the codec writes `2.0`). */
  toJSON(): number {
    return this.value
  }
}

/**
 * An int outside the range a JavaScript number holds exactly (beyond 2**53 - 1), as Python
 * holds it: its decimal digits. `value` is the nearest number, what code that reads a scalar gets.
 * Immutable.
 *
 * @example
 * new ExactInt('12345678901234567890').value // 12345678901234567000
 */
export class ExactInt {
  readonly value: number
  constructor(readonly digits: string) {
    this.value = Number(digits)
  }

  /** The nearest number, for plain JSON.stringify (the codec writes the digits). */
  toJSON(): number {
    return this.value
  }
}

/**
 * A Python value as the codec holds it (None, bool, int, float, str, list, dict): JSON's values,
 * with an integral float inside a list, dict or `any` value a `FloatMark` and an int past 2**53
 * an `ExactInt`. What a snapshot's attribute values are, parsed by `parseJsonTyped`.
 */
export type PythonValue = null | boolean | number | string | FloatMark | ExactInt | PythonValue[] | { [key: string]: PythonValue }

/** A number held with its Python type where the JSON around it has none. */
export type NumberMark = FloatMark | ExactInt

/** Whether a value is one of the marks. */
export function isMark(value: unknown): value is NumberMark {
  return value instanceof FloatMark || value instanceof ExactInt
}

/**
 * The JSON text of a float: `30.0`, `-2.0`, `-0.0`, `0.1`, `1e+21`; `null` for NaN and the
 * infinities, as JSON.stringify writes them.
 *
 * @example
 * floatJson(30) // '30.0'
 * floatJson(1e21) // '1e+21' (an exponent makes it a float in Python already)
 */
export function floatJson(value: number): string {
  // Number.isInteger is false for NaN and the infinities; integers from 1e21 up are written
  // with an exponent, which Python reads as a float.
  if (!Number.isInteger(value) || value >= 1e21 || value <= -1e21) return JSON.stringify(value)
  return value === 0 && 1 / value < 0 ? '-0.0' : `${value}.0`
}

/** The JSON text of a mark: `2.0` for a FloatMark, the digits of an ExactInt. */
export function markJson(mark: NumberMark): string {
  return mark instanceof FloatMark ? floatJson(mark.value) : mark.digits
}

/**
 * A float as a value inside a list, dict or `any` value holds it: marked when integral, else the
 * number itself.
 *
 * @example
 * floatValue(2) // FloatMark(2)
 * floatValue(2.5) // 2.5
 */
export function floatValue(value: number): number | FloatMark {
  return Number.isInteger(value) ? new FloatMark(value) : value
}

/**
 * The number of a mark, else the value itself: for code that reads a scalar (a protocol
 * register) where an `any` attribute may hold a marked number.
 *
 * @example
 * unmarked(new FloatMark(2)) // 2
 * unmarked([new FloatMark(2)]) // the list itself
 */
export function unmarked(value: unknown): unknown {
  return value instanceof FloatMark || value instanceof ExactInt ? value.value : value
}

/**
 * The value with each mark replaced by its number: what code that wants plain JSON (a schema, a
 * protocol register) reads. The value itself when it holds no mark; else a copy of the parts
 * that hold one.
 *
 * @example
 * plainJson({ a: [new FloatMark(2)], b: 'x' }) // { a: [2], b: 'x' }
 */
export function plainJson(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value
  if (value instanceof FloatMark || value instanceof ExactInt) return value.value
  if (Array.isArray(value)) {
    let out: unknown[] | undefined
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      const plain = plainJson(item)
      if (plain !== item) (out ??= value.slice())[i] = plain
    }
    return out ?? value
  }
  const proto: unknown = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return value
  let out: Record<string, unknown> | undefined
  for (const key of Object.keys(value)) {
    const item = (value as Record<string, unknown>)[key]
    const plain = plainJson(item)
    if (plain === item) continue
    // Defined, not assigned: a key named __proto__ stays a key, as in the value copied.
    out ??= copyRecord(value as Record<string, unknown>)
    Object.defineProperty(out, key, { value: plain, enumerable: true, writable: true, configurable: true })
  }
  return out ?? value
}

function copyRecord(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value)) Object.defineProperty(out, key, { value: value[key], enumerable: true, writable: true, configurable: true })
  return out
}

/**
 * A copy of a JSON value (lists and plain objects copied, marks shared): what `structuredClone`
 * would give, which turns a mark into a plain object. Objects of other classes are shared.
 *
 * @example
 * cloneJson([new FloatMark(2), { a: 1 }]) // a new list with the same mark and a new object
 */
export function cloneJson<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map(cloneJson) as T
  const proto: unknown = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return value
  const out: Record<string, unknown> = {}
  // Defined, not assigned: a key named __proto__ stays a key, as in the value copied.
  for (const [key, item] of Object.entries(value))
    Object.defineProperty(out, key, { value: cloneJson(item), enumerable: true, writable: true, configurable: true })
  return out as T
}
