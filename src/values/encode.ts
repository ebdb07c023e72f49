/**
 * The one JSON writer of Python values: a value of a `float` attribute is written as a JSON float
 * (`30.0`, `-0.0`; `0.1` and `1e+21` are floats already), a `FloatMark` as `2.0`, an `ExactInt`
 * as its digits, everything else as JSON.stringify writes it. Two ways in: `valueJson` writes
 * one value of an attribute type, and `typed` marks a value inside a larger document (a node
 * document, an event frame, a snapshot file, a worker frame) that `typedJson` then writes.
 */
import { randomBytes } from 'node:crypto'
import { ExactInt, FloatMark, floatJson, markJson, type NumberMark } from './number.js'

/** The types of attribute values (as model-schema.ts `AttributeType`, repeated to keep this folder at the bottom). */
export type ValueType = 'float' | 'int' | 'bool' | 'str' | 'list' | 'dict' | 'any'

/**
 * The JSON text of a value of an attribute of `type` (undefined for undefined, as
 * JSON.stringify).
 *
 * @example
 * valueJson(30, 'float') // '30.0'
 * valueJson(30, 'int') // '30'
 * valueJson([floatValue(30)], 'list') // '[30.0]'
 */
export function valueJson(value: unknown, type: ValueType): string | undefined {
  if (typeof value === 'number') return type === 'float' ? floatJson(value) : JSON.stringify(value)
  return value !== null && typeof value === 'object' ? typedJson(value) : JSON.stringify(value)
}

/**
 * `value` ready to go into a document that `typedJson` writes: marked with its type when the type
 * changes how it is written (an integral float), else the value itself, so documents carry as few
 * markers as they need.
 *
 * @example
 * typedJson({ value: typed(30, 'float') }) // '{"value":30.0}'
 */
export function typed(value: unknown, type: ValueType): unknown {
  return type === 'float' && typeof value === 'number' && Number.isInteger(value) ? new FloatMark(value) : value
}

/**
 * The marks a document holds are found by JSON.stringify itself, through a replacer that looks
 * at each value before its `toJSON` (`this[key]`): a mark is written as a placeholder string with
 * its index, replaced by its text afterwards, so JSON.stringify does all the work at native speed
 * (a JavaScript writer took ten times as long for a 10,000-instance snapshot) and no state
 * outside the call changes while it runs. The placeholder's prefix is random per process; a string
 * of the document that looks like one anyway is caught by counting the replacements, and the
 * document is then written by `walkTypedJson` instead.
 */
const PLACEHOLDER = `~float~${randomBytes(9).toString('base64url')}~`

/**
 * `JSON.stringify(value, null, indent)` writing each mark (`typed`, `FloatMark`, `ExactInt`) with
 * its Python type: the same text as JSON.stringify for a document without marks.
 *
 * @example
 * typedJson({ t: typed(25, 'float'), n: 3 }, 1) // '{\n "t": 25.0,\n "n": 3\n}'
 */
export function typedJson(value: unknown, indent = 0): string {
  // A scalar, or a mark alone, needs no replacer (a method's result mostly is one).
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (value instanceof FloatMark || value instanceof ExactInt) return markJson(value)
  // A small document without a mark (the fields of most worker requests) is JSON.stringify's
  // alone: a replacer makes it call back into JavaScript for every key, several times the work.
  if (surelyUnmarked(value)) return JSON.stringify(value, null, indent)
  const marks: NumberMark[] = []
  const text = JSON.stringify(
    value,
    function (this: Record<string, unknown>, key: string, item: unknown): unknown {
      const raw = this[key]
      if (raw instanceof FloatMark || raw instanceof ExactInt) return `${PLACEHOLDER}${marks.push(raw) - 1}`
      return item
    },
    indent,
  ) as string | undefined
  if (marks.length === 0 || text === undefined) return text as string
  // Placeholders come in the order JSON.stringify met the marks: `"<prefix>0"`, `"<prefix>1"`,
  // ... Anything else that carries the prefix is a string of the document.
  let out = ''
  let from = 0
  let replaced = 0
  for (let at = text.indexOf(PLACEHOLDER); at >= 0; at = text.indexOf(PLACEHOLDER, from)) {
    const start = at + PLACEHOLDER.length
    const end = text.indexOf('"', start)
    if (replaced >= marks.length || text[at - 1] !== '"' || text.slice(start, end) !== String(replaced)) return walkTypedJson(value, indent)
    out += text.slice(from, at - 1) + markJson(marks[replaced++]!)
    from = end + 1
  }
  return replaced === marks.length ? out + text.slice(from) : walkTypedJson(value, indent)
}

/** How many values `surelyUnmarked` looks at before it leaves a document to the replacer. */
const SCAN_LIMIT = 64

/**
 * Whether a document certainly holds no mark, so that JSON.stringify writes it as `typedJson`
 * would: true only when no object in it has a `toJSON` (the marks have one, and a date's or any
 * other's could return a mark) and it holds SCAN_LIMIT values at most. A larger document, or a
 * cycle, answers false, and the replacer finds the marks. The keys looked at are those of
 * `for...in`, which include every key JSON.stringify writes.
 */
function surelyUnmarked(root: object): boolean {
  const pending: object[] = [root]
  let seen = 0
  while (pending.length > 0) {
    const value = pending.pop() as Record<string, unknown>
    if (typeof value.toJSON === 'function') return false
    for (const key in value) {
      if (++seen > SCAN_LIMIT) return false
      const item = value[key]
      if (item !== null && typeof item === 'object') pending.push(item)
    }
  }
  return true
}

/**
 * What `typedJson` writes, written by walking the document in JavaScript: its reference, and its
 * way out when a string of the document looks like one of its placeholders. Plain JSON data
 * (objects, arrays, strings, numbers, booleans, null, objects with `toJSON` such as dates) is
 * written as JSON.stringify writes it: undefined, functions and symbols are left out of objects
 * and are `null` in arrays, and a cycle throws a TypeError.
 *
 * @example
 * walkTypedJson([typed(-0, 'float')]) // '[-0.0]'
 */
export function walkTypedJson(value: unknown, indent = 0): string {
  const gap = ' '.repeat(Math.max(0, Math.min(10, Math.floor(indent))))
  return write('', value, '', gap, []) as string
}

function write(key: string, value: unknown, indent: string, gap: string, stack: object[]): string | undefined {
  if (value instanceof FloatMark || value instanceof ExactInt) return markJson(value)
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON: (key: string) => unknown }).toJSON(key)
  }
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  // Boxed primitives (new Number(1)) are written as their value, as JSON.stringify does.
  if (value instanceof Number || value instanceof String || value instanceof Boolean) return JSON.stringify(value)
  if (stack.includes(value)) throw new TypeError('Converting circular structure to JSON')
  stack.push(value)
  const inner = indent + gap
  const parts: string[] = []
  const list = Array.isArray(value)
  if (list) {
    const items = value as unknown[]
    for (let i = 0; i < items.length; i++) parts.push(write(String(i), items[i], inner, gap, stack) ?? 'null')
  } else {
    const record = value as Record<string, unknown>
    for (const name of Object.keys(record)) {
      const text = write(name, record[name], inner, gap, stack)
      if (text !== undefined) parts.push(`${JSON.stringify(name)}${gap ? ': ' : ':'}${text}`)
    }
  }
  stack.pop()
  const [open, close] = list ? ['[', ']'] : ['{', '}']
  if (parts.length === 0) return open + close
  if (!gap) return `${open}${parts.join(',')}${close}`
  return `${open}\n${inner}${parts.join(`,\n${inner}`)}\n${indent}${close}`
}
