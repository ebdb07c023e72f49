/**
 * JSON text -> a value with Python's number types kept (number.ts): each integral float written
 * with a point or an exponent (`2.0`, `1e3`) a `FloatMark`, each int beyond the exact range of a
 * number an `ExactInt` of its digits, everything else as JSON.parse reads it. Every entry of a
 * value parses its text once with it (an HTTP body, a worker frame, a snapshot, a JSON definition
 * file); what is not a Python value there (an envelope, a schema-checked section) is read through
 * `plainJson`, which copies only the parts that hold a mark.
 *
 * Hand-written around lossless-json because JSON.parse's reviver cannot see the text of a number
 * on Node 20 (its `context.source` came in Node 21).
 */
import { parse as parseLossless } from 'lossless-json'
import { ExactInt, FloatMark } from './number.js'

/**
 * Where a JSON text may hold a number JSON.parse cannot keep: a point followed by zeros only
 * (`2.0`, `1.00`), an exponent (`1e3`, `2.5E2`), or sixteen digits in a row (an int that may
 * pass 2**53). `2.5` and `0.25` are floats to JSON.parse already.
 */
const INEXACT = /\d\.0+(?![0-9])|\d[eE]|\d{16}/

/**
 * Whether a JSON text may hold a number that JSON.parse cannot keep (`2.0`, `1e3`, a big int);
 * false means JSON.parse reads it exactly as `parseJsonKeepingFloats` would.
 *
 * @example
 * mayHoldFloats('{"value": [2, 3.5]}') // false
 * mayHoldFloats('{"value": [2.0]}') // true
 */
export function mayHoldFloats(text: string): boolean {
  return INEXACT.test(text)
}

/** What a duplicate key does: the last one wins (JSON.parse), or a SyntaxError when the values differ. */
export type DuplicateKeys = 'last' | 'refuse'

/**
 * Parses JSON text as `JSON.parse` does (by default the last of duplicate keys wins), with the
 * numbers Python tells apart kept: `2.0` a `FloatMark`, `12345678901234567890` an `ExactInt`.
 * Text without such a number (`mayHoldFloats`) is parsed by JSON.parse itself. Throws a
 * SyntaxError for text that is not JSON.
 *
 * @example
 * parseJsonKeepingFloats('[2.0, 2, 2.5]') // [FloatMark(2), 2, 2.5]
 */
export function parseJsonKeepingFloats(text: string, duplicates: DuplicateKeys = 'last'): unknown {
  if (duplicates === 'last' && !mayHoldFloats(text)) return JSON.parse(text)
  return parseLossless(text, null, duplicates === 'last' ? LAST_WINS : REFUSE)
}

/** The number of a token, marked where a JavaScript number would lose its Python type. */
function parseNumber(token: string): unknown {
  const n = Number(token)
  if (!Number.isInteger(n)) return n
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i)
    // '.', 'e', 'E': written as a float.
    if (c === 46 || c === 101 || c === 69) return new FloatMark(n)
  }
  return Number.isSafeInteger(n) ? n : new ExactInt(token)
}

const LAST_WINS = { parseNumber, onDuplicateKey: ({ newValue }: { newValue: unknown }) => newValue }
const REFUSE = { parseNumber }
