import { connect, type Socket } from 'node:net'
import { decodeResponse, encodeRequest, type ModbusRequest, type ModbusResponse } from '../../../src/protocols/modbus/index.js'
import type { Random } from '../../helpers/seeded-random.js'

export { generator, type Random } from '../../helpers/seeded-random.js'

/** The seed of this run: MODBUS_FUZZ_SEED when given, else one derived from the clock. */
export const FUZZ_SEED = Number(process.env.MODBUS_FUZZ_SEED ?? Date.now() % 1_000_000)

/** What a fuzzer aims at: addresses near the mapped ones, and how many items a write carries. */
export interface FuzzTargets {
  addresses: number[]
  maxCoils: number
  maxRegisters: number
  writeAddresses: number
}

/**
 * Requests and PDUs for a fuzz run: `validRequest` picks any function code with plausible and
 * implausible addresses and counts; `fuzzPdu` returns such a request's PDU, a mutated one, or
 * random bytes (sometimes with a known function code in front).
 */
export function fuzzer(random: Random, targets: FuzzTargets): { validRequest: () => ModbusRequest; fuzzPdu: () => Buffer } {
  const validRequest = (): ModbusRequest => {
    const address = random.pick([...targets.addresses, random.int(65536)])
    const quantity = random.pick([1, 2, 4, 0, 125, 126, 2001, random.int(300)])
    switch (random.pick([1, 2, 3, 4, 5, 6, 15, 16, 23] as const)) {
      case 1:
        return { fc: 1, address, quantity }
      case 2:
        return { fc: 2, address, quantity }
      case 3:
        return { fc: 3, address, quantity }
      case 4:
        return { fc: 4, address, quantity }
      case 5:
        return { fc: 5, address, value: random.int(2) === 1 }
      case 6:
        return { fc: 6, address, value: random.int(65536) }
      case 15: {
        const n = 1 + random.int(targets.maxCoils)
        return { fc: 15, address, quantity: n, values: Array.from({ length: n }, () => random.int(2) === 1) }
      }
      case 16: {
        const n = 1 + random.int(targets.maxRegisters)
        return { fc: 16, address, quantity: n, data: random.bytes(n * 2) }
      }
      default: {
        const n = 1 + random.int(4)
        return {
          fc: 23,
          readAddress: address,
          readQuantity: quantity,
          writeAddress: random.int(targets.writeAddresses),
          writeQuantity: n,
          data: random.bytes(n * 2),
        }
      }
    }
  }
  const fuzzPdu = (): Buffer => {
    const pdu = Buffer.from(encodeRequest({ transactionId: 0, unitId: 0, request: validRequest() }).subarray(7))
    const kind = random.int(3)
    if (kind === 1) for (let k = 1 + random.int(3); k > 0; k--) pdu[random.int(pdu.length)] = random.int(256)
    if (kind === 2) {
      const junk = random.bytes(1 + random.int(random.pick([8, 40, 250])))
      if (random.int(2)) junk[0] = random.pick([1, 2, 3, 4, 5, 6, 15, 16, 23, 0x83, 0, 127])
      return junk
    }
    return pdu
  }
  return { validRequest, fuzzPdu }
}

/** Cuts a byte stream into frames by the MBAP length field, decoding each; framing defects go to `malformed`. */
export function responseReader(socket: Socket, onResponse: (r: ModbusResponse) => void, malformed: string[]): void {
  let buffer = Buffer.alloc(0)
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk])
    while (buffer.length >= 6) {
      const total = 6 + buffer.readUInt16BE(4)
      if (total < 8 || total > 260) {
        malformed.push(`length field ${total - 6}`)
        buffer = Buffer.alloc(0)
        return
      }
      if (buffer.length < total) return
      try {
        onResponse(decodeResponse(buffer.subarray(0, total)))
      } catch (error) {
        malformed.push((error as Error).message)
      }
      buffer = buffer.subarray(total)
    }
  })
  socket.on('error', () => undefined)
}

/** A plain TCP connection with Nagle off. */
export function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, noDelay: true })
    socket.once('connect', () => resolve(socket))
    socket.once('error', reject)
  })
}
