/**
 * KNX datapoint types as bytes on the bus: what a group telegram carries for a value, and back.
 * A `small` encoding (DPT 1, 1 bit) travels in the low 6 bits of the APCI byte; the others
 * follow it.
 *
 * @example
 * const codec = knxCodec({ dpt: 9.001 })!
 * codec.encode(21.5) // { small: false, data: <Buffer 0c 33> }
 * codec.decode(Buffer.from([0x0c, 0x33])) // 21.5
 */
import { parseDpt, type KnxValueCodec } from '../../definition/knx-schema.js'
import { ValidationError } from '../../errors.js'

export interface KnxCodec {
  /** e.g. `9.001`, `uint8`. */
  readonly label: string
  encode(value: unknown): { small: boolean; data: Buffer }
  decode(data: Buffer): unknown
}

/** The codec of a binding: its `value_codec` when given, else its `dpt`; null for neither. */
export function knxCodec(binding: {
  dpt?: string | number | undefined
  value_codec?: KnxValueCodec | undefined
  payload_length?: number | undefined
}): KnxCodec | null {
  if (binding.value_codec !== undefined) return valueCodec(binding.value_codec, binding.payload_length)
  if (binding.dpt === undefined) return null
  const dpt = parseDpt(binding.dpt)
  if (dpt === null) return null
  const label = `${dpt.main}.${String(dpt.sub).padStart(3, '0')}`
  switch (dpt.main) {
    case 1:
      return { ...bool(), label }
    case 5:
      if (dpt.sub === 1) return { label, encode: (v) => bytes([clampInt((num(v) * 255) / 100, 0, 255)]), decode: (d) => Math.round(((d[0] ?? 0) * 100) / 255) }
      if (dpt.sub === 3) return { label, encode: (v) => bytes([clampInt((num(v) * 255) / 360, 0, 255)]), decode: (d) => Math.round(((d[0] ?? 0) * 360) / 255) }
      return { ...integer(1, false), label }
    case 6:
      return { ...integer(1, true), label }
    case 7:
      return { ...integer(2, false), label }
    case 8:
      return { ...integer(2, true), label }
    case 9:
      return { ...float16(), label }
    case 12:
      return { ...integer(4, false), label }
    case 13:
      return { ...integer(4, true), label }
    case 14:
      return { ...float32(), label }
    case 16:
      return { ...text(14), label }
    case 17:
      return { label, encode: (v) => bytes([clampInt(num(v), 0, 63)]), decode: (d) => (d[0] ?? 0) & 0x3f }
    case 20:
      return { ...integer(1, false), label }
    default:
      return null
  }
}

function valueCodec(codec: KnxValueCodec, payloadLength: number | undefined): KnxCodec {
  switch (codec) {
    case 'bool':
      return { ...bool(), label: codec }
    case 'uint8':
      return { ...integer(1, false), label: codec }
    case 'int8':
      return { ...integer(1, true), label: codec }
    case 'uint16':
      return { ...integer(2, false), label: codec }
    case 'int16':
      return { ...integer(2, true), label: codec }
    case 'uint32':
      return { ...integer(4, false), label: codec }
    case 'int32':
      return { ...integer(4, true), label: codec }
    case 'float16':
      return { ...float16(), label: codec }
    case 'float32':
      return { ...float32(), label: codec }
    case 'string':
      return { ...text(payloadLength ?? 14), label: codec }
  }
}

function bytes(list: number[]): { small: boolean; data: Buffer } {
  return { small: false, data: Buffer.from(list) }
}

function num(value: unknown): number {
  if (typeof value === 'boolean') return value ? 1 : 0
  const n = typeof value === 'number' ? value : Number(value)
  if (!Number.isFinite(n)) throw new ValidationError(`${JSON.stringify(value)} is not a number`)
  return n
}

function clampInt(value: number, min: number, max: number): number {
  return Math.max(min, Math.min(max, Math.round(value)))
}

function bool(): Omit<KnxCodec, 'label'> {
  return {
    encode: (v) => ({ small: true, data: Buffer.from([num(v) !== 0 ? 1 : 0]) }),
    decode: (d) => ((d[0] ?? 0) & 1) === 1,
  }
}

function integer(size: 1 | 2 | 4, signed: boolean): Omit<KnxCodec, 'label'> {
  const bits = size * 8
  const min = signed ? -(2 ** (bits - 1)) : 0
  const max = signed ? 2 ** (bits - 1) - 1 : 2 ** bits - 1
  return {
    encode(v) {
      const n = clampInt(num(v), min, max)
      const data = Buffer.alloc(size)
      if (signed) data.writeIntBE(n, 0, size)
      else data.writeUIntBE(n, 0, size)
      return { small: false, data }
    },
    decode: (d) => (d.length < size ? 0 : signed ? d.readIntBE(0, size) : d.readUIntBE(0, size)),
  }
}

/** DPT 9: a 2-byte float, 0.01 * mantissa (11 bits, two's complement with sign) * 2^exponent (4 bits). */
function float16(): Omit<KnxCodec, 'label'> {
  return {
    encode(v) {
      let mantissa = Math.round(num(v) * 100)
      let exponent = 0
      while ((mantissa < -2048 || mantissa > 2047) && exponent < 15) {
        mantissa = Math.round(mantissa / 2)
        exponent++
      }
      mantissa = Math.max(-2048, Math.min(2047, mantissa))
      const sign = mantissa < 0 ? 1 : 0
      const m = mantissa & 0x7ff
      return { small: false, data: Buffer.from([(sign << 7) | (exponent << 3) | (m >> 8), m & 0xff]) }
    },
    decode(d) {
      if (d.length < 2) return 0
      const raw = (d[0]! << 8) | d[1]!
      const exponent = (raw >> 11) & 0x0f
      let mantissa = raw & 0x7ff
      if (raw & 0x8000) mantissa -= 2048
      return Math.round(mantissa * 2 ** exponent) / 100
    },
  }
}

function float32(): Omit<KnxCodec, 'label'> {
  return {
    encode(v) {
      const data = Buffer.alloc(4)
      data.writeFloatBE(num(v))
      return { small: false, data }
    },
    decode: (d) => (d.length < 4 ? 0 : Number(d.readFloatBE(0).toPrecision(7))),
  }
}

/** Text of a fixed length (DPT 16: 14 bytes), Latin-1, padded with zero bytes. */
function text(length: number): Omit<KnxCodec, 'label'> {
  return {
    encode(v) {
      const data = Buffer.alloc(length)
      data.write(String(v ?? ''), 0, length, 'latin1')
      return { small: false, data }
    },
    decode: (d) => {
      const end = d.indexOf(0)
      return d.subarray(0, end === -1 ? d.length : end).toString('latin1')
    },
  }
}
