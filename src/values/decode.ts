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
import { randomBytes } from 'node:crypto'
import { parse as parseLossless } from 'lossless-json'
import { ExactInt, FloatMark, type NumberMark } from './number.js'

/**
 * Whether a JSON text may hold a number that JSON.parse cannot keep: a digit, a point and zeros
 * only (`2.0`, `1.00`), a digit and an exponent (`1e3`, `2.5E2`), or sixteen digits in a row (an
 * int that may pass 2**53); `2.5` and `0.25` are floats to JSON.parse already. False means
 * JSON.parse reads the text exactly as `parseJsonKeepingFloats` would. Strings are not told
 * apart from numbers: `"v1e"` says true, and the slower parse gives the same value.
 *
 * One pass over the text. The regular expression it stands for,
 * `/\d\.0+(?![0-9])|\d[eE]|\d{16}/` (test/unit/values/codec.test.ts holds both equal), tries
 * `\d{16}` again from every digit of a run: 0.58 us for a worker's answer with a 17-digit float,
 * where this takes a fraction of that. Every answer of a worker and every request body goes
 * through it.
 *
 * @example
 * mayHoldFloats('{"value": [2, 3.5]}') // false
 * mayHoldFloats('{"value": [2.0]}') // true
 */
export function mayHoldFloats(text: string): boolean {
  // Digits in a row just before `i`.
  let digits = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 48 && c <= 57) {
      if (++digits === 16) return true
      continue
    }
    if (digits > 0) {
      // e or E after a digit.
      if (c === 101 || c === 69) return true
      if (c === 46) {
        // A point after a digit, then zeros, then anything but a digit.
        let end = i + 1
        while (text.charCodeAt(end) === 48) end++
        const next = text.charCodeAt(end)
        if (end > i + 1 && !(next >= 48 && next <= 57)) return true
      }
    }
    digits = 0
  }
  return false
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

/**
 * What `parseJsonKeepingFloats` answers (the last of duplicate keys wins), parsed by JSON.parse
 * itself: for large texts full of integral floats, a snapshot file of 10,000 instances whose
 * float attributes are written `20.0`. A scan in JavaScript finds each number JSON.parse cannot
 * keep outside strings and puts a placeholder string in its place, JSON.parse reads the text, and
 * a walk of the value puts the marks back. Hand-written because lossless-json, a parser in
 * JavaScript, takes five times as long as JSON.parse for such a text (1.5 s against 0.3 s for
 * 3 MiB on a loaded machine), and JSON.parse's reviver cannot see a number's text on Node 20.
 * A SyntaxError is JSON.parse's for `text` itself (its position in that text); the walk keeps
 * a stack of its own, so depth is JSON.parse's concern alone.
 *
 * @example
 * parseJsonTyped('{"t": 20.0, "xs": [2.0, 12345678901234567890]}') // { t: FloatMark(20), xs: [FloatMark(2), ExactInt('12345678901234567890')] }
 */
export function parseJsonTyped(text: string): unknown {
  const slotted = parseJsonSlotted(text)
  return slotted.marks.length === 0 ? slotted.value : putMarksBack(slotted.value, slotted, true)
}

/** What `parseJsonSlotted` answers: the value, the marks its placeholders stand for, and their prefix. */
export interface SlottedJson {
  value: unknown
  marks: NumberMark[]
  slot: string
}

/**
 * JSON text parsed by JSON.parse, each number it cannot keep (`2.0`, an int past 2**53) a
 * placeholder string whose mark `marks` holds: for a reader that walks the value anyway and
 * puts each mark back as its place wants it (`putMarksBack`). Without such a number, `marks` is
 * empty and the value is JSON.parse's. Throws JSON.parse's SyntaxError for `text`.
 *
 * @example
 * const slotted = parseJsonSlotted(text)
 * putMarksBack(slotted.value, slotted, true) // what parseJsonTyped(text) answers
 */
export function parseJsonSlotted(text: string): SlottedJson {
  const marks: NumberMark[] = []
  if (!mayHoldFloats(text)) return { value: JSON.parse(text), marks, slot: SLOT }
  // A string of the text that starts like a placeholder would be taken for one: the prefix is
  // random per process, and made anew for a text that holds it anyway.
  let slot = SLOT
  while (text.includes(slot)) slot = newSlot()
  let out = ''
  let from = 0
  const n = text.length
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c === 34) {
      // A string: on to its closing quote, one not escaped by an odd run of backslashes.
      let end = text.indexOf('"', i + 1)
      while (end > 0 && escaped(text, end)) end = text.indexOf('"', end + 1)
      if (end < 0) break
      i = end
      continue
    }
    if (c !== 45 && (c < 48 || c > 57)) continue
    const start = i
    let written = false
    while (i + 1 < n) {
      const d = text.charCodeAt(i + 1)
      if (d === 46 || d === 101 || d === 69) written = true
      else if (d !== 43 && d !== 45 && (d < 48 || d > 57)) break
      i++
    }
    if (!written && i + 1 - start < 16) continue
    const token = text.slice(start, i + 1)
    // Only a number JSON reads as one, and never a key (`{1.0: 2}` stays the error it is).
    if (!JSON_NUMBER.test(token) || nextIsColon(text, i + 1)) continue
    const mark = parseNumber(token)
    if (typeof mark === 'number') continue
    out += `${text.slice(from, start)}"${slot}${marks.push(mark as NumberMark) - 1}"`
    from = i + 1
  }
  if (marks.length === 0) return { value: JSON.parse(text), marks, slot }
  try {
    return { value: JSON.parse(out + text.slice(from)), marks, slot }
  } catch (err) {
    // The error of the text as given, its positions not moved by the placeholders.
    JSON.parse(text)
    throw err
  }
}

/** The placeholder of a mark in the text given to JSON.parse: this prefix and the mark's index. */
const SLOT = newSlot()

function newSlot(): string {
  return `~number~${randomBytes(9).toString('base64url')}~`
}

/** A JSON number, whole: what the scan may replace. */
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/

/** Whether the quote at `at` is escaped (an odd number of backslashes before it). */
function escaped(text: string, at: number): boolean {
  let k = at - 1
  while (text.charCodeAt(k) === 92) k--
  return (at - 1 - k) % 2 === 1
}

/** Whether the next character after `at` that is not JSON whitespace is a colon. */
function nextIsColon(text: string, at: number): boolean {
  for (let i = at; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c !== 32 && c !== 9 && c !== 10 && c !== 13) return c === 58
  }
  return false
}

/**
 * `value`, a part of what `parseJsonSlotted` answered, with each placeholder replaced by its mark
 * (`asMarks`) or by the mark's number, in place; walked without recursion, in the order of the
 * text, and only until every mark not yet put back (`left.count`, shared by the walks of one
 * value's parts) is back. Answers the value (a placeholder alone is answered as its mark or number).
 *
 * @example
 * putMarksBack(slotted.value.state, slotted, false, left) // the state's numbers plain
 */
export function putMarksBack(value: unknown, slotted: SlottedJson, asMarks: boolean, left = { count: slotted.marks.length }): unknown {
  // Called for each value of a snapshot's state: a number or a bool costs one test.
  if (typeof value === 'string') return markBack(value, slotted, asMarks, left) ?? value
  if (value === null || typeof value !== 'object' || left.count === 0) return value
  const back = (item: string): unknown => markBack(item, slotted, asMarks, left)
  const stack: object[] = [value]
  while (stack.length > 0 && left.count > 0) {
    const node = stack.pop()!
    const from = stack.length
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const item: unknown = node[i]
        if (typeof item === 'string') {
          const put = back(item)
          if (put !== undefined) node[i] = put
        } else if (item !== null && typeof item === 'object') stack.push(item)
      }
    } else {
      const record = node as Record<string, unknown>
      // for-in: a parsed object's own keys, without the array Object.keys would make for each.
      for (const key in record) {
        const item = record[key]
        if (typeof item === 'string') {
          const put = back(item)
          // A key named __proto__ is defined, not assigned, so it stays a key.
          if (put === undefined) continue
          if (key === '__proto__') Object.defineProperty(record, key, { value: put, enumerable: true, writable: true, configurable: true })
          else record[key] = put
        } else if (item !== null && typeof item === 'object') stack.push(item)
      }
    }
    // The children in the order of the text: the first is walked first.
    for (let i = from, j = stack.length - 1; i < j; i++, j--) {
      const swap = stack[i]!
      stack[i] = stack[j]!
      stack[j] = swap
    }
  }
  return value
}

/** The mark (or its number) a placeholder stands for, counted off `left`; undefined for any other string. */
function markBack(item: string, { marks, slot }: SlottedJson, asMarks: boolean, left: { count: number }): unknown {
  if (item.charCodeAt(0) !== 126 || !item.startsWith(slot)) return undefined
  const mark = marks[Number(item.slice(slot.length))]
  if (mark === undefined) return undefined
  left.count--
  return asMarks ? mark : mark.value
}
