/*
 * The register words a Modbus adapter presents for an attribute value, computed in the browser
 * from the adapter's `mapping` (GET .../communication/modbus_slave) and the attribute's presented
 * (external) value. The API has no register read of its own; this follows the layout
 * docs/modbus.md gives (big-endian bytes, high word first, `byte_order`/`word_order`, `scale`,
 * two latin-1 characters per register for `str`), and the dashboard test compares it with what
 * mbpoll reads from the adapter itself.
 */

/** One entry of an adapter's `mapping`. */
export interface MappingEntry {
  address: number | [number, number]
  group: 'h_r' | 'i_r' | 'c_o' | 'd_i'
  type: string
  byte_order?: 'big' | 'little'
  word_order?: 'big' | 'little'
  scale?: number
}

const WIDTH: Record<string, number> = { bool: 1, int_16: 1, uint_16: 1, int_32: 2, uint_32: 2, float: 2, int_64: 4, uint_64: 4, float_64: 4 }

/** First address and number of registers (or bits) of an entry. */
export function span(entry: MappingEntry): { first: number; width: number } {
  const [first, last] = Array.isArray(entry.address) ? entry.address : [entry.address, entry.address]
  if (entry.group === 'c_o' || entry.group === 'd_i') return { first, width: 1 }
  return { first, width: WIDTH[entry.type] ?? Math.max(1, last - first + 1) }
}

/**
 * The 1-based form PLC and HMI tools show: `4xxxx` holding registers, `3xxxx` input registers,
 * `1xxxx` discrete inputs, `0xxxx` coils; six digits past 9999.
 *
 * @example
 * plcNumber('h_r', 0) // '40001'
 */
export function plcNumber(group: MappingEntry['group'], address: number): string {
  const prefix = { c_o: '0', d_i: '1', i_r: '3', h_r: '4' }[group]
  const n = address + 1
  return `${prefix}${String(n).padStart(n > 9999 ? 5 : 4, '0')}`
}

/**
 * The words (or the bit, as one 0/1 word) that carry `value`, or the reason it cannot be carried.
 *
 * @example
 * encodeWords(25, { address: [0, 1], group: 'h_r', type: 'float' }) // { words: [0x41c8, 0] }
 */
export function encodeWords(value: unknown, entry: MappingEntry): { words: number[] } | { problem: string } {
  const { width } = span(entry)
  const scale = entry.scale ?? 1
  const bytes = new DataView(new ArrayBuffer(width * 2))
  const type = entry.group === 'c_o' || entry.group === 'd_i' ? 'bool' : entry.type
  const inverse = 1 / scale
  const raw = (v: number): number => (Number.isInteger(inverse) ? v * inverse : v / scale)
  const number = typeof value === 'number' ? value : typeof value === 'boolean' ? Number(value) : NaN
  switch (type) {
    case 'bool':
      if (typeof value !== 'boolean' && value !== 0 && value !== 1) return { problem: `not a bool: ${JSON.stringify(value)}` }
      return { words: [value === true || value === 1 ? 1 : 0] }
    case 'str': {
      if (typeof value !== 'string') return { problem: `not a string: ${JSON.stringify(value)}` }
      if (value.length > width * 2) return { problem: `longer than ${width * 2} characters` }
      for (let i = 0; i < value.length; i++) bytes.setUint8(i, value.charCodeAt(i) & 0xff)
      break
    }
    case 'float':
      bytes.setFloat32(0, number / scale)
      break
    case 'float_64':
      bytes.setFloat64(0, number / scale)
      break
    default: {
      const r = Math.round(raw(number))
      if (!Number.isFinite(r)) return { problem: `not a number: ${JSON.stringify(value)}` }
      if (type === 'int_16') bytes.setInt16(0, r)
      else if (type === 'uint_16') bytes.setUint16(0, r)
      else if (type === 'int_32') bytes.setInt32(0, r)
      else if (type === 'uint_32') bytes.setUint32(0, r)
      else if (type === 'int_64') bytes.setBigInt64(0, BigInt(r))
      else if (type === 'uint_64') bytes.setBigUint64(0, BigInt(r))
      else return { problem: `unknown type ${type}` }
    }
  }
  let words: number[] = []
  for (let i = 0; i < width; i++) words.push(bytes.getUint16(i * 2))
  if (entry.word_order === 'little') words = words.reverse()
  if (entry.byte_order === 'little') words = words.map((w) => ((w & 0xff) << 8) | (w >> 8))
  return { words }
}

/**
 * The value the words stand for (what a client decoding them with the same settings reads).
 *
 * @example
 * decodeWords([0x41c8, 0], { address: [0, 1], group: 'h_r', type: 'float' }) // 25
 */
export function decodeWords(words: number[], entry: MappingEntry): number | boolean | string {
  const type = entry.group === 'c_o' || entry.group === 'd_i' ? 'bool' : entry.type
  if (type === 'bool') return words[0] === 1
  let ordered = words
  if (entry.byte_order === 'little') ordered = ordered.map((w) => ((w & 0xff) << 8) | (w >> 8))
  if (entry.word_order === 'little') ordered = [...ordered].reverse()
  const bytes = new DataView(new ArrayBuffer(ordered.length * 2))
  ordered.forEach((w, i) => bytes.setUint16(i * 2, w))
  const scale = entry.scale ?? 1
  const inverse = 1 / scale
  const eng = (r: number): number => (scale === 1 ? r : Number.isInteger(inverse) ? r / inverse : r * scale)
  switch (type) {
    case 'str': {
      let text = ''
      for (let i = 0; i < ordered.length * 2; i++) {
        const c = bytes.getUint8(i)
        if (c === 0) break
        text += String.fromCharCode(c)
      }
      return text
    }
    case 'float':
      return eng(bytes.getFloat32(0))
    case 'float_64':
      return eng(bytes.getFloat64(0))
    case 'int_16':
      return eng(bytes.getInt16(0))
    case 'uint_16':
      return eng(bytes.getUint16(0))
    case 'int_32':
      return eng(bytes.getInt32(0))
    case 'uint_32':
      return eng(bytes.getUint32(0))
    case 'int_64':
      return eng(Number(bytes.getBigInt64(0)))
    case 'uint_64':
      return eng(Number(bytes.getBigUint64(0)))
    default:
      return NaN
  }
}
