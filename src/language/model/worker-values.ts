/**
 * Values between the server and the Python worker for expressions evaluated there: Python-typed
 * JSON text, the JSON that Python's `json` module writes and reads. A float is written with its
 * point (`2.0`), an int without (`2`), so each side keeps Python's type; `NaN`, `Infinity` and
 * `-Infinity` stand for the non-finite floats; tuples and sets travel as lists, dicts need str keys.
 *
 * @example
 * toWorkerText([2n, 2.0, 'a'])   // '[2,2.0,"a"]'
 * fromWorkerText('[2,2.0]')      // [2n, 2]
 */
import { dictEntries, dictSet, PyException, PyTuple, typeName, type PyDict, type PyValue } from '../expression/index.js'

/** A value as Python-typed JSON text; a value JSON cannot hold (a function, a module) is a TypeError. */
export function toWorkerText(value: PyValue): string {
  switch (typeof value) {
    case 'bigint':
      return value.toString()
    case 'number': {
      if (Number.isNaN(value)) return 'NaN'
      if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity'
      if (Object.is(value, -0)) return '-0.0'
      const text = String(value)
      return /[.eE]/.test(text) ? text : `${text}.0`
    }
    case 'string':
      return JSON.stringify(value)
    case 'boolean':
      return value ? 'true' : 'false'
    default:
      if (value === null) return 'null'
      if (Array.isArray(value)) return `[${value.map(toWorkerText).join(',')}]`
      if (value instanceof PyTuple) return `[${value.items.map(toWorkerText).join(',')}]`
      if (value instanceof Map) {
        const parts: string[] = []
        for (const [k, v] of dictEntries(value)) {
          if (typeof k !== 'string') throw new PyException('TypeError', `a dict sent to the Python worker needs str keys, not '${typeName(k)}'`)
          parts.push(`${JSON.stringify(k)}:${toWorkerText(v)}`)
        }
        return `{${parts.join(',')}}`
      }
      throw new PyException('TypeError', `a value of type '${typeName(value)}' cannot be sent to the Python worker`)
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y
const STRING = /"(?:[^"\\]|\\.)*"/y
const WORDS: ReadonlyArray<readonly [string, PyValue]> = [
  ['null', null],
  ['true', true],
  ['false', false],
  ['NaN', NaN],
  ['Infinity', Infinity],
  ['-Infinity', -Infinity],
]

/**
 * Reads Python-typed JSON text: an integer is an int (bigint), a number with a point or an
 * exponent a float, an object a dict.
 */
export function fromWorkerText(text: string): PyValue {
  let at = 0
  const fail = (): never => {
    throw new PyException('ValueError', `the Python worker answered a value that is not JSON (at ${at}): ${text.slice(0, 80)}`)
  }
  const space = (): void => {
    while (at < text.length && ' \t\n\r'.includes(text[at] as string)) at++
  }
  const value = (): PyValue => {
    space()
    const ch = text[at]
    if (ch === '[') {
      at++
      const list: PyValue[] = []
      space()
      if (text[at] === ']') return (at++, list)
      for (;;) {
        list.push(value())
        space()
        if (text[at] === ',') at++
        else if (text[at] === ']') return (at++, list)
        else fail()
      }
    }
    if (ch === '{') {
      at++
      const dict: PyDict = new Map()
      space()
      if (text[at] === '}') return (at++, dict)
      for (;;) {
        space()
        const key = value()
        if (typeof key !== 'string') fail()
        space()
        if (text[at] !== ':') fail()
        at++
        dictSet(dict, key, value())
        space()
        if (text[at] === ',') at++
        else if (text[at] === '}') return (at++, dict)
        else fail()
      }
    }
    if (ch === '"') {
      STRING.lastIndex = at
      const m = STRING.exec(text) ?? fail()
      at += m[0].length
      return JSON.parse(m[0]) as string
    }
    for (const [word, v] of WORDS) if (text.startsWith(word, at)) return ((at += word.length), v)
    NUMBER.lastIndex = at
    const m = NUMBER.exec(text) ?? fail()
    at += m[0].length
    return m[1] === undefined && m[2] === undefined ? BigInt(m[0]) : Number(m[0])
  }
  const out = value()
  space()
  if (at !== text.length) fail()
  return out
}
