/**
 * Integral floats inside JSON values. In JavaScript `2.0` and `2` are one number, but in Python,
 * and in the JSON a Python client reads, they are a float and an int. The type of an attribute
 * says which a number of a `float` or `int` attribute is; a number inside a `list`, `dict` or
 * `any` value has no type of its own, so there an integral float is held as a `FloatMark`: a
 * computed `[2.0, 3.5]` is `[FloatMark(2), 3.5]`, and it answers `[2.0, 3.5]`. Non-integral
 * numbers are floats in any JSON already and stay plain numbers.
 *
 * Marks enter a value where the difference is known: a result of an expression (`pyToJson`), the
 * JSON text of a write (`parseJsonKeepingFloats`). They leave it as `2.0` in every document
 * `typedJson` writes, and as the bare number through plain `JSON.stringify` (`toJSON`).
 *
 * @example
 * const value = [floatValue(2), floatValue(3.5)] // [FloatMark(2), 3.5]
 * typedJson(value) // '[2.0,3.5]'
 * JSON.stringify(value) // '[2,3.5]'
 * plainJson(value) // [2, 3.5]
 */
import { parse as parseLossless } from 'lossless-json'

/** The float texts `typedJson` collects while it writes a document (see `collectFloats`). */
let collector: ((value: number) => string) | undefined

/**
 * An integral float where JSON has no type for it: inside a list, dict or `any` value, or a
 * float attribute's value in a document being written. Immutable, so copies of a value share it.
 */
export class FloatMark {
  constructor(readonly value: number) {}

  toJSON(): number | string {
    return collector === undefined ? this.value : collector(this.value)
  }
}

/**
 * Runs `write` with each mark's `toJSON` answering what `collect` makes of its number (typedJson
 * answers a placeholder string and remembers the float text); marks answer their bare number
 * again afterwards.
 */
export function collectFloats<T>(collect: (value: number) => string, write: () => T): T {
  const outer = collector
  collector = collect
  try {
    return write()
  } finally {
    collector = outer
  }
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
 * register) where an `any` attribute may hold an integral float marked.
 *
 * @example
 * unmarked(new FloatMark(2)) // 2
 * unmarked([new FloatMark(2)]) // the list itself
 */
export function unmarked(value: unknown): unknown {
  return value instanceof FloatMark ? value.value : value
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
  if (value instanceof FloatMark) return value.value
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) {
    let out: unknown[] | undefined
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      const plain = plainJson(item)
      if (plain !== item) (out ??= value.slice())[i] = plain
    }
    return out ?? value
  }
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return value
  let out: Record<string, unknown> | undefined
  for (const [key, item] of Object.entries(value)) {
    const plain = plainJson(item)
    if (plain !== item) (out ??= { ...value })[key] = plain
  }
  return out ?? value
}

/**
 * A copy of a JSON value (lists and plain objects copied, marks shared): what `structuredClone`
 * would give, which turns a mark into a plain object. Objects of other classes are shared.
 *
 * @example
 * cloneJson([new FloatMark(2), { a: 1 }]) // a new list with the same mark and a new object
 */
export function cloneJson<T>(value: T): T {
  if (value === null || typeof value !== 'object' || value instanceof FloatMark) return value
  if (Array.isArray(value)) return value.map(cloneJson) as T
  const proto: unknown = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return value
  const out: Record<string, unknown> = {}
  // Defined, not assigned: a key named __proto__ stays a key, as in the value copied.
  for (const [key, item] of Object.entries(value))
    Object.defineProperty(out, key, { value: cloneJson(item), enumerable: true, writable: true, configurable: true })
  return out as T
}

/**
 * Where a JSON text may hold an integral float: a point followed by zeros only (`2.0`, `1.00`),
 * or an exponent (`1e3`, `2.5E2`). `2.5` and `0.25` are floats to JSON.parse already.
 */
const INTEGRAL_FLOAT = /\d\.0+(?![0-9])|\d[eE]/

/**
 * Whether a JSON text may hold an integral float written as one (`2.0`, `1e3`); false means
 * JSON.parse reads it exactly as `parseJsonKeepingFloats` would.
 *
 * @example
 * mayHoldFloats('{"value": [2, 3.5]}') // false
 * mayHoldFloats('{"value": [2.0]}') // true
 */
export function mayHoldFloats(text: string): boolean {
  return INTEGRAL_FLOAT.test(text)
}

/**
 * Parses JSON text as `JSON.parse` does (the last of duplicate keys wins), with each integral
 * float written with a point or an exponent (`2.0`, `1e3`) a `FloatMark`: the value of a write to
 * a list, dict or `any` attribute keeps the floats its writer sent. Text without such a number
 * (`mayHoldFloats`) is parsed by JSON.parse itself. lossless-json does the rest, since
 * JSON.parse's reviver cannot see the text of a number on Node 20.
 *
 * @example
 * parseJsonKeepingFloats('[2.0, 2, 2.5]') // [FloatMark(2), 2, 2.5]
 */
export function parseJsonKeepingFloats(text: string): unknown {
  if (!mayHoldFloats(text)) return JSON.parse(text)
  return parseLossless(text, null, {
    parseNumber: (token) => {
      const n = Number(token)
      return /[.eE]/.test(token) && Number.isInteger(n) ? new FloatMark(n) : n
    },
    onDuplicateKey: ({ newValue }) => newValue,
  })
}
