import { DataType } from 'node-opcua-variant'
import type { OpcuaDataType } from '../../definition/opcua-schema.js'
import { parseJsonKeepingFloats } from '../../values/decode.js'
import { valueJson } from '../../values/encode.js'

/**
 * Values between attributes and OPC UA variants: which built-in type an attribute is shown as,
 * whether a value fits it, and what a client's value means for the attribute.
 *
 * @example
 * defaultDataType('float')           // 'Double'
 * toVariantValue(70000, 'UInt16')    // { problem: '70000 is out of range for UInt16 (0..65535)' }
 * fromVariantValue(21.5, 'Double', 'float') // { value: 21.5 }
 */

/** node-opcua's DataType for each type a binding may name. @example DATA_TYPE_IDS.Double === DataType.Double */
export const DATA_TYPE_IDS: Readonly<Record<OpcuaDataType, DataType>> = {
  Boolean: DataType.Boolean,
  SByte: DataType.SByte,
  Byte: DataType.Byte,
  Int16: DataType.Int16,
  UInt16: DataType.UInt16,
  Int32: DataType.Int32,
  UInt32: DataType.UInt32,
  Int64: DataType.Int64,
  UInt64: DataType.UInt64,
  Float: DataType.Float,
  Double: DataType.Double,
  String: DataType.String,
}

const INTEGER_RANGES: Partial<Record<OpcuaDataType, [number, number]>> = {
  SByte: [-128, 127],
  Byte: [0, 255],
  Int16: [-32768, 32767],
  UInt16: [0, 65535],
  Int32: [-2147483648, 2147483647],
  UInt32: [0, 4294967295],
  Int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  UInt64: [0, Number.MAX_SAFE_INTEGER],
}

const FLOAT_MAX = 3.4028234663852886e38

/** The type an attribute is shown as when its binding names none. @example defaultDataType('int') // 'Int32' */
export function defaultDataType(attributeType: string | undefined): OpcuaDataType {
  switch (attributeType) {
    case 'float':
      return 'Double'
    case 'int':
      return 'Int32'
    case 'bool':
      return 'Boolean'
    default:
      return 'String'
  }
}

/** A value ready for a variant, or why there is none. */
export type Conversion = { value: unknown } | { problem: string }

/**
 * `value` as the variant value of `dataType`: numbers in range, booleans, and for String any
 * value (text as is, anything else as JSON).
 *
 * @example
 * toVariantValue(true, 'Boolean') // { value: true }
 */
export function toVariantValue(value: unknown, dataType: OpcuaDataType): Conversion {
  if (dataType === 'String') {
    if (typeof value === 'string') return { value }
    const text = value === undefined ? undefined : valueJson(value, 'any')
    return text === undefined ? { problem: 'no value' } : { value: text }
  }
  if (dataType === 'Boolean') {
    if (typeof value === 'boolean') return { value }
    if (value === 0 || value === 1) return { value: value === 1 }
    return { problem: `${describe(value)} is not a Boolean` }
  }
  if (typeof value === 'boolean') value = value ? 1 : 0
  if (typeof value !== 'number' || !Number.isFinite(value)) return { problem: `${describe(value)} is not a finite number (${dataType})` }
  if (dataType === 'Double') return { value }
  if (dataType === 'Float') return Math.abs(value) <= FLOAT_MAX ? { value } : { problem: `${value} is out of range for Float` }
  const [min, max] = INTEGER_RANGES[dataType]!
  if (!Number.isInteger(value)) return { problem: `${value} is not an integer (${dataType})` }
  if (value < min || value > max) return { problem: `${value} is out of range for ${dataType} (${min}..${max})` }
  return { value }
}

/**
 * A client's variant value as a value for an attribute of `attributeType`: 64-bit integers come
 * as [high, low] words, Strings of list, dict and any attributes are JSON.
 *
 * @example
 * fromVariantValue([0, 5], 'Int64', 'int') // { value: 5 }
 */
export function fromVariantValue(raw: unknown, dataType: OpcuaDataType, attributeType: string | undefined): Conversion {
  let value = raw
  if ((dataType === 'Int64' || dataType === 'UInt64') && Array.isArray(raw)) {
    const [high, low] = raw as [number, number]
    value = (dataType === 'Int64' ? high | 0 : high >>> 0) * 2 ** 32 + (low >>> 0)
    if (!Number.isSafeInteger(value)) return { problem: `${dataType} value beyond ±2^53 cannot be held exactly` }
  }
  // A Boolean variable of a number attribute reads 0 and 1 as false and true (toVariantValue), so
  // a client's write sets the number: the reference product's library binds 0/1 attributes so.
  if (dataType === 'Boolean' && typeof value === 'boolean' && (attributeType === 'float' || attributeType === 'int')) value = value ? 1 : 0
  switch (attributeType) {
    case 'float':
      return typeof value === 'number' && Number.isFinite(value) ? { value } : { problem: `expected a number, got ${describe(value)}` }
    case 'int':
      return Number.isSafeInteger(value) ? { value } : { problem: `expected an integer, got ${describe(value)}` }
    case 'bool':
      return typeof value === 'boolean' ? { value } : { problem: `expected a Boolean, got ${describe(value)}` }
    case 'str':
      return typeof value === 'string' ? { value } : { problem: `expected a String, got ${describe(value)}` }
    case 'list':
    case 'dict':
    case 'any': {
      if (typeof value !== 'string' || dataType !== 'String') return { value }
      try {
        const parsed: unknown = parseJsonKeepingFloats(value)
        if (attributeType === 'list' && !Array.isArray(parsed)) return { problem: 'expected JSON of a list' }
        if (attributeType === 'dict' && (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)))
          return { problem: 'expected JSON of an object' }
        return { value: parsed }
      } catch {
        return attributeType === 'any' ? { value } : { problem: 'expected JSON text' }
      }
    }
    default:
      return { value }
  }
}

function describe(value: unknown): string {
  if (typeof value === 'number') return String(value)
  if (typeof value === 'string') return 'a string'
  if (value === undefined) return 'no value'
  return value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value
}
