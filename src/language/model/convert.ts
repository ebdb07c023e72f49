/**
 * Between attribute values (JSON: numbers, strings, booleans, lists, objects) and expression
 * values (Python's: `int` a bigint, `float` a number, dict a Map, see ../expression/values.ts).
 * An attribute's type says which Python type a JSON number stands for; a result written to an
 * attribute is converted as Python's constructor of that type would (MODEL_LANGUAGE.md section 3).
 *
 * @example
 * toPy(3, 'int')           // 3n
 * fromPy(3.7, 'int')       // 3
 * fromPy(2n, 'float')      // 2
 * fromPy([2.0], 'list')    // [FloatMark(2)]: written [2.0]
 */
import { ExactInt, FloatMark, floatValue } from '../../values/number.js'
import type { AttributeType } from '../../definition/model-schema.js'
import { pyFloat, pyInt } from '../expression/builtins.js'
import { dictEntries, dictSet, PyException, PyTuple, pyStr, truthy, typeName, type PyDict, type PyValue } from '../expression/values.js'

/**
 * An attribute value as an expression sees it. Numbers of a `float` attribute are floats, of an
 * `int` attribute ints; elsewhere (lists, dicts, `any`) an integral number is an int and a
 * `FloatMark` a float, as the JSON they are written as would be to Python's `json.loads`.
 */
export function toPy(value: unknown, type: AttributeType): PyValue {
  switch (typeof value) {
    case 'number':
      return type === 'float' ? value : jsonNumber(value)
    case 'string':
    case 'boolean':
      return value
    case 'bigint':
      return value
    case 'undefined':
      return null
    default:
      return value === null ? null : jsonToPy(value)
  }
}

function jsonNumber(n: number): PyValue {
  return Number.isSafeInteger(n) ? BigInt(n) : n
}

function jsonToPy(value: unknown): PyValue {
  if (value === null || value === undefined) return null
  if (typeof value === 'number') return jsonNumber(value)
  if (typeof value !== 'object') return value as PyValue
  if (value instanceof FloatMark) return value.value
  if (value instanceof ExactInt) return BigInt(value.digits)
  if (Array.isArray(value)) return value.map(jsonToPy)
  const dict: PyDict = new Map()
  for (const [k, v] of Object.entries(value)) dictSet(dict, k, jsonToPy(v))
  return dict
}

/**
 * A computed value as the attribute of type `type` holds it (JSON), converted as Python's
 * `float()`, `int()`, `bool()`, `str()`, `list()` or `dict()` would; Python's error when that fails.
 */
export function fromPy(value: PyValue, type: AttributeType): unknown {
  switch (type) {
    case 'float': {
      const f = typeof value === 'number' ? value : pyFloat(value)
      if (!Number.isFinite(f)) throw new PyException('ValueError', `cannot store ${pyStr(f)} in a float attribute (not a finite number)`)
      return f
    }
    case 'int': {
      const n = typeof value === 'bigint' ? value : pyInt(value)
      const out = Number(n)
      if (!Number.isSafeInteger(out)) throw new PyException('OverflowError', `int ${n} is too large for an int attribute (at most 2**53 - 1)`)
      return out
    }
    case 'bool':
      return truthy(value)
    case 'str':
      return typeof value === 'string' ? value : pyStr(value)
    case 'list':
      if (Array.isArray(value) || value instanceof PyTuple) return pyToJson(value)
      throw new PyException('TypeError', `a list attribute takes a list, not '${typeName(value)}'`)
    case 'dict':
      if (value instanceof Map) return pyToJson(value)
      throw new PyException('TypeError', `a dict attribute takes a dict, not '${typeName(value)}'`)
    case 'any':
      return pyToJson(value)
  }
}

/**
 * A Python value as JSON: ints as numbers, floats as numbers or, when integral, as a `FloatMark`
 * (written `2.0`), tuples as lists, dicts as objects (keys as `str()` of them); a value JSON
 * cannot hold (a function, a module, a float NaN) is a TypeError.
 */
export function pyToJson(value: PyValue): unknown {
  switch (typeof value) {
    case 'bigint': {
      const n = Number(value)
      if (!Number.isSafeInteger(n)) throw new PyException('OverflowError', `int ${value} is too large for a stored value (at most 2**53 - 1)`)
      return n
    }
    case 'number':
      if (!Number.isFinite(value)) throw new PyException('ValueError', `cannot store ${pyStr(value)} (not a finite number)`)
      return floatValue(value)
    case 'string':
    case 'boolean':
      return value
    default:
      if (value === null) return null
      if (Array.isArray(value)) return value.map(pyToJson)
      if (value instanceof PyTuple) return value.items.map(pyToJson)
      if (value instanceof Map) {
        // Keys as written (a dict keeps 1.0, (1, 2) or a date under a canonical key of its own).
        const out: Record<string, unknown> = {}
        for (const [k, v] of dictEntries(value)) out[typeof k === 'string' ? k : pyStr(k)] = pyToJson(v)
        return out
      }
      throw new PyException('TypeError', `a value of type '${typeName(value)}' cannot be stored in an attribute`)
  }
}
