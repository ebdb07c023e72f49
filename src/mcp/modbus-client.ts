import { Socket } from 'node:net'
import { ConflictError } from '../errors.js'
import { MBAP_LENGTH, decodeResponse, encodeRequest } from '../protocols/modbus/codec.js'
import { decodeFrom, encodingSpec } from '../protocols/modbus/encoding.js'
import type { ModbusType } from '../protocols/modbus/schema.js'

/** Register groups of a Modbus mapping: holding and input registers, coils, discrete inputs. */
export type RegisterGroup = 'h_r' | 'i_r' | 'c_o' | 'd_i'

const FUNCTION_CODES: Record<RegisterGroup, 1 | 2 | 3 | 4> = { c_o: 1, d_i: 2, h_r: 3, i_r: 4 }

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
  const transactionId = Math.floor(Math.random() * 0xffff)
  const request = encodeRequest({ transactionId, unitId: read.unitId, request: { fc, address: read.address, quantity: read.count } })
  const answer = await exchange(read.host, read.port, request, read.timeoutMs ?? 3000)
  if (answer.readUInt16BE(0) !== transactionId) throw new ConflictError('Modbus answer to another request (transaction id differs)')
  const code = answer[MBAP_LENGTH]!
  // Any exception code is reported (a device, or Mimic's own faults, may answer 6, busy), where
  // the codec's decoder takes only those Mimic answers by itself.
  if (code === (fc | 0x80))
    throw new ConflictError(`Modbus exception ${answer[MBAP_LENGTH + 1]}: ${EXCEPTIONS[answer[MBAP_LENGTH + 1]!] ?? 'unknown exception'}`)
  let response: ReturnType<typeof decodeResponse>
  try {
    response = decodeResponse(answer)
  } catch (error) {
    throw new ConflictError(`Malformed Modbus answer from ${read.host}:${read.port}: ${(error as Error).message}`)
  }
  if (response.fc !== fc) throw new ConflictError(`Modbus answer with function ${response.fc}, asked ${fc}`)
  if ('bits' in response) return response.bits.slice(0, read.count).map(Number)
  if ('registers' in response) return response.registers.slice(0, read.count)
  throw new ConflictError(`Modbus answer to function ${fc} without data`)
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
  if (entry.group === 'c_o' || entry.group === 'd_i') return words.length === 1 ? Boolean(words[0]) : words.map(Boolean)
  // The server's own decoding (src/protocols/modbus/encoding.ts), so the two never disagree.
  const spec = encodingSpec({ ...entry, type: entry.type as ModbusType })
  const bytes = Buffer.alloc(Math.max(words.length, spec.width) * 2)
  words.forEach((word, i) => bytes.writeUInt16BE(word & 0xffff, i * 2))
  return decodeFrom(spec, bytes, 0)
}
