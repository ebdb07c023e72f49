import { Socket } from 'node:net'
import { ConflictError } from '../errors.js'

/** Register groups of a Modbus mapping: holding and input registers, coils, discrete inputs. */
export type RegisterGroup = 'h_r' | 'i_r' | 'c_o' | 'd_i'

const FUNCTION_CODES: Record<RegisterGroup, number> = { c_o: 1, d_i: 2, h_r: 3, i_r: 4 }

/** What one read asks for. */
export interface ModbusRead {
  host: string
  port: number
  unitId: number
  group: RegisterGroup
  address: number
  count: number
  timeoutMs?: number
}

/**
 * Reads registers (16-bit words) or bits from a Modbus TCP server the way any client on the
 * network would: one connection, one request (function 1, 2, 3 or 4), the answer checked.
 * Rejects (a ConflictError: the device is not in a state to answer) with the exception code's
 * meaning when the server answers an exception, or when it does not answer in time.
 *
 * @example
 * const words = await readModbus({ host: '127.0.0.1', port: 5020, unitId: 1, group: 'h_r', address: 0, count: 2 })
 */
export async function readModbus(read: ModbusRead): Promise<number[]> {
  const fc = FUNCTION_CODES[read.group]
  const request = Buffer.alloc(12)
  const transaction = Math.floor(Math.random() * 0xffff)
  request.writeUInt16BE(transaction, 0)
  request.writeUInt16BE(0, 2)
  request.writeUInt16BE(6, 4)
  request.writeUInt8(read.unitId, 6)
  request.writeUInt8(fc, 7)
  request.writeUInt16BE(read.address, 8)
  request.writeUInt16BE(read.count, 10)
  const answer = await exchange(read.host, read.port, request, read.timeoutMs ?? 3000)
  if (answer.readUInt16BE(0) !== transaction) throw new ConflictError('Modbus answer to another request (transaction id differs)')
  const code = answer.readUInt8(7)
  if (code === (fc | 0x80)) throw new ConflictError(`Modbus exception ${answer.readUInt8(8)}: ${EXCEPTIONS[answer.readUInt8(8)] ?? 'unknown exception'}`)
  if (code !== fc) throw new ConflictError(`Modbus answer with function ${code}, asked ${fc}`)
  const bytes = answer.subarray(9, 9 + answer.readUInt8(8))
  const values: number[] = []
  if (fc <= 2) for (let i = 0; i < read.count; i++) values.push((bytes[i >> 3]! >> (i & 7)) & 1)
  else for (let i = 0; i < read.count; i++) values.push(bytes.readUInt16BE(i * 2))
  return values
}

const EXCEPTIONS: Record<number, string> = {
  1: 'illegal function',
  2: 'illegal data address',
  3: 'illegal data value',
  4: 'server device failure',
  6: 'server device busy',
  11: 'gateway target device failed to respond',
}

function exchange(host: string, port: number, request: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = new Socket()
    let received = Buffer.alloc(0)
    const fail = (err: Error): void => {
      socket.destroy()
      reject(err)
    }
    socket.setTimeout(timeoutMs, () =>
      fail(new ConflictError(`No Modbus answer from ${host}:${port} within ${timeoutMs} ms (detached, delayed or not listening)`)),
    )
    socket.once('error', (err) => fail(new ConflictError(`Cannot read Modbus at ${host}:${port}: ${err.message}`)))
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      if (received.length >= 6 && received.length >= 6 + received.readUInt16BE(4)) {
        socket.destroy()
        resolve(received)
      }
    })
    socket.once('close', () => fail(new ConflictError(`Modbus connection to ${host}:${port} closed before an answer`)))
    socket.connect(port, host, () => socket.write(request))
  })
}

/** How a mapped attribute is encoded (the `mapping` entry of a Modbus adapter). */
export interface MappingEntry {
  address: number | [number, number]
  group: RegisterGroup
  type: string
  byte_order?: 'big' | 'little'
  word_order?: 'big' | 'little'
  scale?: number
}

/** First address and number of registers (or bits) of a mapping entry. */
export function mappedRange(entry: MappingEntry): { address: number; count: number } {
  return Array.isArray(entry.address) ? { address: entry.address[0], count: entry.address[1] - entry.address[0] + 1 } : { address: entry.address, count: 1 }
}

/**
 * The value a client decodes from the words (or bits) of a mapped attribute: the mapping's type,
 * byte and word order, and scale (the engineering value is the raw number times `scale`).
 *
 * @example
 * decodeMapped([0x41c8, 0x0000], { address: [0, 1], group: 'h_r', type: 'float' }) // 25
 */
export function decodeMapped(words: number[], entry: MappingEntry): unknown {
  if (entry.group === 'c_o' || entry.group === 'd_i' || entry.type === 'bool') return words.length === 1 ? Boolean(words[0]) : words.map(Boolean)
  const ordered = entry.word_order === 'little' ? [...words].reverse() : words
  const bytes = Buffer.alloc(ordered.length * 2)
  ordered.forEach((word, i) => {
    if (entry.byte_order === 'little') bytes.writeUInt16LE(word, i * 2)
    else bytes.writeUInt16BE(word, i * 2)
  })
  let raw: number | bigint | string
  switch (entry.type) {
    case 'int_16':
      raw = bytes.readInt16BE(0)
      break
    case 'uint_16':
      raw = bytes.readUInt16BE(0)
      break
    case 'int_32':
      raw = bytes.readInt32BE(0)
      break
    case 'uint_32':
      raw = bytes.readUInt32BE(0)
      break
    case 'float':
      raw = bytes.readFloatBE(0)
      break
    case 'float_64':
      raw = bytes.readDoubleBE(0)
      break
    case 'int_64':
      raw = bytes.readBigInt64BE(0)
      break
    case 'uint_64':
      raw = bytes.readBigUInt64BE(0)
      break
    case 'str':
      return bytes.toString('latin1').replace(/\0+$/, '')
    default:
      return undefined
  }
  const number = typeof raw === 'bigint' ? Number(raw) : raw
  if (!entry.scale || entry.scale === 1) return number
  // Dividing by an integer inverse avoids 215 * 0.1 = 21.500000000000004, as the server does.
  const inverse = 1 / entry.scale
  return Number.isInteger(inverse) ? number / inverse : number * entry.scale
}
