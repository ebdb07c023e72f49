/**
 * Text to attribute values and back, the way the Python reference behaves: a value written by a
 * command is converted as Python's constructor of the attribute's type would convert it
 * (`int("5")` is 5, `int("5.0")` is an error, `float("2")` is 2.0), booleans read SCPI's ON/OFF,
 * 1/0 and true/false, and a float is answered as Python's `str(float)` writes it (2.0 -> "2.0",
 * 1e-05 -> "1e-05"). Booleans are answered 1/0, as instruments answer `OUTP?`.
 *
 * @example
 * convertValue('float', ' 2 ') // { value: 2 }
 * convertValue('int', '2.5') // { problem: "invalid literal for int() with base 10: '2.5'" }
 * formatValue(2, 'float') // '2.0'
 */
import { parseJsonKeepingFloats } from '../../values/decode.js'
import { FloatMark } from '../../values/number.js'
import { isRecord } from '../../definition/is-record.js'

/** A converted value, or why the input does not fit the type. */
export type Conversion = { value: unknown; problem?: undefined } | { problem: string; value?: undefined }

const INT = /^[+-]?\d+(?:_\d+)*$/
const DIGITS = '\\d+(?:_\\d+)*'
const FLOAT = new RegExp(`^[+-]?(?:(?:${DIGITS})?\\.${DIGITS}|${DIGITS}\\.?)(?:[eE][+-]?${DIGITS})?$`)
const SPECIAL_FLOAT = /^[+-]?(?:inf|infinity|nan)$/i
const TRUE_WORDS = new Set(['on', '1', 'true'])
const FALSE_WORDS = new Set(['off', '0', 'false'])

/**
 * Converts a value taken from a command (text) or from a literal of the definition (number,
 * boolean) to an attribute type (see the module comment).
 *
 * @example
 * convertValue('bool', 'ON') // { value: true }
 * convertValue('int', 3.7) // { value: 3 }
 */
export function convertValue(type: string, input: unknown): Conversion {
  switch (type) {
    case 'int':
      return toInt(input)
    case 'float':
      return toFloat(input)
    case 'bool':
      return toBool(input)
    case 'str':
      return { value: typeof input === 'string' ? input : pyStr(input) }
    case 'list':
    case 'dict':
      return toStructure(type, input)
    default:
      return { value: input }
  }
}

function toInt(input: unknown): Conversion {
  if (typeof input === 'boolean') return { value: input ? 1 : 0 }
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) return { problem: `cannot convert float ${pyFloat(input)} to integer` }
    const value = Math.trunc(input)
    return Number.isSafeInteger(value) ? { value: value === 0 ? 0 : value } : { problem: `${input} is outside the integers Mimic holds exactly` }
  }
  if (typeof input !== 'string') return { problem: `int() cannot convert ${pyStr(input)}` }
  const text = input.trim()
  if (!INT.test(text)) return { problem: `invalid literal for int() with base 10: ${pyRepr(input)}` }
  const big = BigInt(text.replaceAll('_', ''))
  if (big > BigInt(Number.MAX_SAFE_INTEGER) || big < BigInt(Number.MIN_SAFE_INTEGER)) return { problem: `${text} is outside the integers Mimic holds exactly` }
  const value = Number(big)
  return { value: value === 0 ? 0 : value }
}

function toFloat(input: unknown): Conversion {
  if (typeof input === 'boolean') return { value: input ? 1 : 0 }
  if (typeof input === 'number') return { value: input }
  if (typeof input !== 'string') return { problem: `float() cannot convert ${pyStr(input)}` }
  const text = input.trim()
  if (SPECIAL_FLOAT.test(text)) {
    const negative = text.startsWith('-')
    return { value: /nan/i.test(text) ? NaN : negative ? -Infinity : Infinity }
  }
  if (!FLOAT.test(text)) return { problem: `could not convert string to float: ${pyRepr(input)}` }
  return { value: Number(text.replaceAll('_', '')) }
}

function toBool(input: unknown): Conversion {
  if (typeof input === 'boolean') return { value: input }
  if (typeof input === 'number') return Number.isNaN(input) ? { value: true } : { value: input !== 0 }
  if (typeof input !== 'string') return { problem: `cannot convert ${pyStr(input)} to a bool` }
  const word = input.trim().toLowerCase()
  if (TRUE_WORDS.has(word)) return { value: true }
  if (FALSE_WORDS.has(word)) return { value: false }
  return { problem: `${pyRepr(input)} is not a bool (ON, OFF, 1, 0, true or false)` }
}

function toStructure(type: 'list' | 'dict', input: unknown): Conversion {
  let value = input
  if (typeof input === 'string') {
    try {
      value = parseJsonKeepingFloats(input)
    } catch {
      return { problem: `${pyRepr(input)} is not a JSON ${type === 'list' ? 'array' : 'object'}` }
    }
  }
  const fits = type === 'list' ? Array.isArray(value) : isRecord(value)
  return fits ? { value } : { problem: `expected a ${type === 'list' ? 'JSON array' : 'JSON object'}, got ${pyStr(input)}` }
}

/**
 * A value as a reply shows it: a float attribute's number as Python's `str(float)`, other numbers
 * as integers where they are whole, booleans as 1/0, text as it is, lists and dicts as Python
 * prints them.
 *
 * @example
 * formatValue(0.1, 'float') // '0.1'
 * formatValue(3, 'int') // '3'
 * formatValue(true, 'bool') // '1'
 */
export function formatValue(value: unknown, type: string | undefined): string {
  if (typeof value === 'number') return type === 'float' || !Number.isInteger(value) ? pyFloat(value) : String(value)
  if (typeof value === 'boolean') return value ? '1' : '0'
  if (typeof value === 'string') return value
  return pyStr(value)
}

/**
 * A number as Python's `repr(float)` / `str(float)`: the shortest text that reads back to the same
 * number, fixed-point for exponents from -4 to 15 (always with a fraction), else `1e+16`, `1.5e-05`.
 *
 * @example
 * pyFloat(2) // '2.0'
 * pyFloat(1e16) // '1e+16'
 * pyFloat(0.00001) // '1e-05'
 */
export function pyFloat(n: number): string {
  if (Number.isNaN(n)) return 'nan'
  if (n === Infinity) return 'inf'
  if (n === -Infinity) return '-inf'
  if (n === 0) return Object.is(n, -0) ? '-0.0' : '0.0'
  const [mantissa, exponentText] = n.toExponential().split('e') as [string, string]
  const exponent = Number(exponentText)
  const sign = mantissa.startsWith('-') ? '-' : ''
  const digits = mantissa.replace('-', '').replace('.', '')
  if (exponent >= -4 && exponent < 16) {
    if (exponent >= 0) {
      const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0')
      return `${sign}${whole}.${digits.slice(exponent + 1) || '0'}`
    }
    return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`
  }
  const shown = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits
  return `${sign}${shown}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`
}

/** Python's str() of a JSON value (lists and dicts as Python prints them). */
function pyStr(value: unknown): string {
  if (typeof value === 'string') return value
  return pyRepr(value)
}

/** Python's repr() of a JSON value. */
function pyRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None'
  if (typeof value === 'boolean') return value ? 'True' : 'False'
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : pyFloat(value)
  if (value instanceof FloatMark) return pyFloat(value.value)
  if (typeof value === 'string') {
    const quote = value.includes("'") && !value.includes('"') ? '"' : "'"
    const body = value.replaceAll('\\', '\\\\').replaceAll('\n', '\\n').replaceAll('\r', '\\r').replaceAll('\t', '\\t')
    return `${quote}${quote === "'" ? body.replaceAll("'", "\\'") : body}${quote}`
  }
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(', ')}]`
  if (typeof value === 'object') {
    return `{${Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => `${pyRepr(k)}: ${pyRepr(v)}`)
      .join(', ')}}`
  }
  return String(value)
}
