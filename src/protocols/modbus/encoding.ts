import { ValidationError } from '../../errors.js'
import { TYPE_WIDTH, addressRange } from './schema.js'
import type { ModbusMappingEntry, ModbusOrder, ModbusType } from './schema.js'

/**
 * Attribute values <-> register words. The canonical layout is big-endian bytes with the high word
 * first; `word_order: little` reverses the words and `byte_order: little` swaps the two bytes of
 * each word. Strings carry two latin-1 characters per register (first character in the high byte)
 * and are padded with NUL. With `scale`, the engineering value is raw * scale.
 *
 * 64-bit integers travel as JavaScript numbers (attribute values are JSON), so values beyond 2^53
 * lose precision; a bigint is accepted when encoding.
 *
 * @example
 * const spec = encodingSpec({ address: [0, 1], type: 'float' })
 * encodeWords(25.0, spec) // [0x41c8, 0x0000]
 * decodeWords([0x41c8, 0], spec) // 25
 */

/** Everything the codec needs to turn one value into words. */
export interface EncodingSpec {
  readonly type: ModbusType
  /** Registers the value occupies. */
  readonly width: number
  readonly byteOrder: ModbusOrder
  readonly wordOrder: ModbusOrder
  /** Engineering value = raw * scale; 1 when not given. */
  readonly scale: number
  /** 1 / scale when that is an integer: dividing by it avoids 215 * 0.1 = 21.500000000000004. */
  readonly inverseScale: number | null
}

/** The fields of a mapping entry that encoding looks at; orders and scale are optional. */
export type EncodableEntry = Pick<ModbusMappingEntry, 'address' | 'type'> & Partial<Pick<ModbusMappingEntry, 'byte_order' | 'word_order' | 'scale'>>

/**
 * Compiles a mapping entry into an encoding spec.
 *
 * @example
 * encodingSpec({ address: 10, type: 'uint_16', scale: 0.1 }).inverseScale // 10
 */
export function encodingSpec(entry: EncodableEntry): EncodingSpec {
  const [first, last] = addressRange(entry.address)
  const scale = entry.scale ?? 1
  const inverse = 1 / scale
  return {
    type: entry.type,
    width: TYPE_WIDTH[entry.type] ?? Math.max(1, last - first + 1),
    byteOrder: entry.byte_order ?? 'big',
    wordOrder: entry.word_order ?? 'big',
    scale,
    inverseScale: Number.isInteger(inverse) ? inverse : null,
  }
}

const INT_RANGES: Partial<Record<ModbusType, readonly [number, number]>> = {
  int_16: [-0x8000, 0x7fff],
  uint_16: [0, 0xffff],
  int_32: [-0x80000000, 0x7fffffff],
  uint_32: [0, 0xffffffff],
  // 2^63 and 2^64 are exact doubles; the bounds are exclusive at the top (checked below).
  int_64: [-(2 ** 63), 2 ** 63],
  uint_64: [0, 2 ** 64],
}
const FLOAT32_MAX = 3.4028234663852886e38

/**
 * Why `value` cannot be carried by `entry`, or null when it can: wrong JavaScript type, NaN or
 * out of range for an integer type (after scale), a float beyond 32-bit range, a string that is too
 * long or has characters outside latin-1.
 *
 * @example
 * checkValue(70000, { address: 0, type: 'uint_16' }) // "70000 is out of range for uint_16 (0..65535)"
 * checkValue(1.5, { address: [0, 1], type: 'float' }) // null
 */
export function checkValue(value: unknown, entry: EncodableEntry | EncodingSpec): string | null {
  const spec = 'width' in entry ? entry : encodingSpec(entry)
  return problemOf(value, spec)
}

function problemOf(value: unknown, spec: EncodingSpec): string | null {
  const { type } = spec
  if (type === 'bool') {
    if (typeof value === 'boolean' || value === 0 || value === 1) return null
    return `type bool takes true or false (or 0/1), got ${describe(value)}`
  }
  if (type === 'str') {
    if (typeof value !== 'string') return `type str takes a string, got ${describe(value)}`
    if (value.length > spec.width * 2) {
      return `the string has ${value.length} characters, more than the ${spec.width * 2} that ${spec.width} register(s) hold`
    }
    if (/[^\u0000-\u00ff]/.test(value)) return 'the string has characters outside latin-1 (U+0000..U+00FF)'
    return null
  }
  if (type === 'float' || type === 'float_64') {
    if (typeof value !== 'number') return `type ${type} takes a number, got ${describe(value)}`
    if (type === 'float') {
      const raw = value / spec.scale
      if (Number.isFinite(raw) && Math.abs(raw) > FLOAT32_MAX) return `${value} is out of range for float (32-bit)`
    }
    return null
  }
  const range = INT_RANGES[type]!
  if (typeof value === 'bigint') {
    if (spec.scale !== 1) return `type ${type} with scale takes a number, got a bigint`
    const [low, high] = type === 'int_64' ? [-(2n ** 63n), 2n ** 63n] : type === 'uint_64' ? [0n, 2n ** 64n] : [BigInt(range[0]), BigInt(range[1]) + 1n]
    if (value < low || value >= high) return `${value} is out of range for ${type}`
    return null
  }
  if (typeof value !== 'number') return `type ${type} takes a number, got ${describe(value)}`
  if (Number.isNaN(value)) return `NaN cannot be represented as ${type}`
  const raw = Math.round(value / spec.scale)
  const outside = type === 'int_64' || type === 'uint_64' ? raw < range[0] || raw >= range[1] : raw < range[0] || raw > range[1]
  if (!Number.isFinite(raw) || outside) {
    const scaled = spec.scale === 1 ? '' : ` after scale ${spec.scale} (raw ${raw})`
    const shown = type === 'int_64' || type === 'uint_64' ? `${range[0]}..2^${type === 'int_64' ? 63 : 64}-1` : `${range[0]}..${range[1]}`
    return `${value} is out of range for ${type} (${shown})${scaled}`
  }
  return null
}

/**
 * Writes `value` as `spec.width` registers (2 bytes each, wire order) into `target` at `offset`.
 * Returns the reason when the value cannot be carried; nothing is written then. Used on the hot
 * path, so it allocates nothing for numeric types.
 *
 * @example
 * const out = Buffer.alloc(4)
 * encodeInto(25, encodingSpec({ address: [0, 1], type: 'float' }), out, 0) // null; out = 41 c8 00 00
 */
export function encodeInto(value: unknown, spec: EncodingSpec, target: Buffer, offset: number): string | null {
  const problem = problemOf(value, spec)
  if (problem !== null) return problem
  switch (spec.type) {
    case 'bool':
      target.writeUInt16BE(value === true || value === 1 ? 1 : 0, offset)
      return null
    case 'str': {
      const text = value as string
      const bytes = spec.width * 2
      target.fill(0, offset, offset + bytes)
      target.write(text, offset, bytes, 'latin1')
      break
    }
    case 'float':
      target.writeFloatBE((value as number) / spec.scale, offset)
      break
    case 'float_64':
      target.writeDoubleBE((value as number) / spec.scale, offset)
      break
    case 'int_16':
      target.writeInt16BE(rawInteger(value, spec), offset)
      break
    case 'uint_16':
      target.writeUInt16BE(rawInteger(value, spec), offset)
      break
    case 'int_32':
      target.writeInt32BE(rawInteger(value, spec), offset)
      break
    case 'uint_32':
      target.writeUInt32BE(rawInteger(value, spec), offset)
      break
    case 'int_64':
      target.writeBigInt64BE(typeof value === 'bigint' ? value : BigInt(rawInteger(value, spec)), offset)
      break
    case 'uint_64':
      target.writeBigUInt64BE(typeof value === 'bigint' ? value : BigInt(rawInteger(value, spec)), offset)
      break
  }
  reorder(spec, target, offset)
  return null
}

/**
 * Reads a value of `spec` from `spec.width` registers (wire order) in `source` at `offset`.
 * Returns undefined for a bool register that holds anything but 0 or 1 (not a valid bool).
 *
 * @example
 * decodeFrom(encodingSpec({ address: 0, type: 'int_16' }), Buffer.from([0xff, 0xfe]), 0) // -2
 */
export function decodeFrom(spec: EncodingSpec, source: Buffer, offset: number): number | boolean | string | undefined {
  const bytes = spec.width * 2
  let data = source
  let at = offset
  if (spec.byteOrder === 'little' || (spec.wordOrder === 'little' && spec.width > 1)) {
    data = bytes <= SCRATCH.length ? SCRATCH : Buffer.allocUnsafe(bytes)
    source.copy(data, 0, offset, offset + bytes)
    at = 0
    reorder(spec, data, 0)
  }
  switch (spec.type) {
    case 'bool': {
      const word = data.readUInt16BE(at)
      return word === 0 ? false : word === 1 ? true : undefined
    }
    case 'str': {
      const text = data.toString('latin1', at, at + bytes)
      const end = text.indexOf('\0')
      return end < 0 ? text : text.slice(0, end)
    }
    case 'float':
      return engineering(data.readFloatBE(at), spec)
    case 'float_64':
      return engineering(data.readDoubleBE(at), spec)
    case 'int_16':
      return engineering(data.readInt16BE(at), spec)
    case 'uint_16':
      return engineering(data.readUInt16BE(at), spec)
    case 'int_32':
      return engineering(data.readInt32BE(at), spec)
    case 'uint_32':
      return engineering(data.readUInt32BE(at), spec)
    case 'int_64':
      return engineering(Number(data.readBigInt64BE(at)), spec)
    case 'uint_64':
      return engineering(Number(data.readBigUInt64BE(at)), spec)
  }
}

/**
 * Encodes a value as an array of register words; throws a ValidationError when it cannot be
 * carried. Convenient for tests and tools; the server uses encodeInto.
 *
 * @example
 * encodeWords(-2, encodingSpec({ address: [0, 1], type: 'int_32', word_order: 'little' })) // [0xfffe, 0xffff]
 */
export function encodeWords(value: unknown, spec: EncodingSpec): number[] {
  const buffer = Buffer.alloc(spec.width * 2)
  const problem = encodeInto(value, spec, buffer, 0)
  if (problem !== null) throw new ValidationError(problem, [{ path: 'value', message: problem }])
  const words: number[] = []
  for (let i = 0; i < spec.width; i++) words.push(buffer.readUInt16BE(i * 2))
  return words
}

/**
 * Decodes register words (wire order) into a value.
 *
 * @example
 * decodeWords([0x4142, 0x4300], encodingSpec({ address: [0, 1], type: 'str' })) // 'ABC'
 */
export function decodeWords(words: readonly number[], spec: EncodingSpec): number | boolean | string | undefined {
  if (words.length !== spec.width) {
    throw new ValidationError(`type ${spec.type} takes ${spec.width} word(s), got ${words.length}`)
  }
  const buffer = Buffer.allocUnsafe(words.length * 2)
  words.forEach((word, i) => buffer.writeUInt16BE(word & 0xffff, i * 2))
  return decodeFrom(spec, buffer, 0)
}

const SCRATCH = Buffer.alloc(8)

function rawInteger(value: unknown, spec: EncodingSpec): number {
  if (typeof value === 'bigint') return Number(value)
  const number = value as number
  return spec.scale === 1 ? Math.round(number) : Math.round(number / spec.scale)
}

function engineering(raw: number, spec: EncodingSpec): number {
  if (spec.scale === 1) return raw
  return spec.inverseScale !== null ? raw / spec.inverseScale : raw * spec.scale
}

/** Turns canonical layout into the spec's order and back (both steps are their own inverse). */
function reorder(spec: EncodingSpec, buffer: Buffer, offset: number): void {
  const { width } = spec
  if (spec.wordOrder === 'little' && width > 1) {
    for (let i = 0, j = width - 1; i < j; i++, j--) {
      const a = offset + i * 2
      const b = offset + j * 2
      const h = buffer[a]!
      const l = buffer[a + 1]!
      buffer[a] = buffer[b]!
      buffer[a + 1] = buffer[b + 1]!
      buffer[b] = h
      buffer[b + 1] = l
    }
  }
  if (spec.byteOrder === 'little') {
    for (let i = 0; i < width; i++) {
      const a = offset + i * 2
      const h = buffer[a]!
      buffer[a] = buffer[a + 1]!
      buffer[a + 1] = h
    }
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '...' : value)}`
  if (typeof value === 'object') return 'an object'
  return `${typeof value} ${String(value)}`
}
