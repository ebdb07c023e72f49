import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { decodeResponse, encodeRequest } from '../../../src/protocols/modbus/index.js'
import type { ModbusRequest, ModbusResponse } from '../../../src/protocols/modbus/index.js'
import { TestClient, registersOf, startRig } from './helpers.js'

const DURATION_MS = 3000
const SEED = Number(process.env.MODBUS_FUZZ_SEED ?? Date.now() % 1_000_000)

/** A small seeded generator, so a failing run can be replayed with MODBUS_FUZZ_SEED. */
function generator(seed: number): { int: (n: number) => number; bytes: (n: number) => Buffer; pick: <T>(xs: readonly T[]) => T } {
  let state = seed >>> 0 || 1
  const next = (): number => {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    return (state >>> 0) / 0x100000000
  }
  const int = (n: number): number => Math.floor(next() * n)
  return {
    int,
    bytes: (n) => Buffer.from(Array.from({ length: n }, () => int(256))),
    pick: (xs) => xs[int(xs.length)]!,
  }
}

/** Cuts a byte stream into frames by the MBAP length field, decoding each; framing defects go to `malformed`. */
function responseReader(socket: Socket, onResponse: (r: ModbusResponse) => void, malformed: string[]): void {
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

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, noDelay: true })
    socket.once('connect', () => resolve(socket))
    socket.once('error', reject)
  })
}

describe('codec fuzz', () => {
  it(`random and mutated frames for ${DURATION_MS} ms (seed ${SEED})`, async (t) => {
    const rig = await startRig(
      {
        mapping: {
          f: { address: [0, 1], group: 'h_r', type: 'float' },
          i: { address: [2, 5], group: 'h_r', type: 'int_64', word_order: 'little' },
          s: { address: [6, 9], group: 'h_r', type: 'str' },
          b: { address: 10, group: 'h_r', type: 'bool' },
          slow: { address: 11, group: 'h_r', type: 'uint_16' },
          r: { address: 0, group: 'i_r', type: 'uint_16', scale: 0.5 },
          c0: { address: 0, group: 'c_o', type: 'bool' },
          c1: { address: 1, group: 'c_o', type: 'bool' },
          d: { address: 0, group: 'd_i', type: 'bool' },
        },
      },
      { f: 1.5, i: -5, s: 'abc', b: true, slow: 3, r: 10, c0: true, c1: false, d: true },
    )
    rig.accessor.slow.set('slow', 1)
    const random = generator(SEED)
    const malformed: string[] = []
    const deadline = Date.now() + DURATION_MS

    const validRequest = (): ModbusRequest => {
      const address = random.pick([0, 1, 2, 6, 10, 11, 12, random.int(65536)])
      const quantity = random.pick([1, 2, 4, 0, 126, 2001, random.int(300)])
      switch (random.pick([1, 2, 3, 4, 5, 6, 15, 16, 23] as const)) {
        case 1: return { fc: 1, address, quantity }
        case 2: return { fc: 2, address, quantity }
        case 3: return { fc: 3, address, quantity }
        case 4: return { fc: 4, address, quantity }
        case 5: return { fc: 5, address, value: random.int(2) === 1 }
        case 6: return { fc: 6, address, value: random.int(65536) }
        case 15: {
          const n = 1 + random.int(20)
          return { fc: 15, address, quantity: n, values: Array.from({ length: n }, () => random.int(2) === 1) }
        }
        case 16: {
          const n = 1 + random.int(8)
          return { fc: 16, address, quantity: n, data: random.bytes(n * 2) }
        }
        default: {
          const n = 1 + random.int(4)
          return { fc: 23, readAddress: address, readQuantity: quantity, writeAddress: random.int(12), writeQuantity: n, data: random.bytes(n * 2) }
        }
      }
    }

    /** A PDU that is valid, mutated, or random; the frame around it is always well formed. */
    const fuzzPdu = (): Buffer => {
      const kind = random.int(3)
      if (kind === 0) return encodeRequest({ transactionId: 0, unitId: 0, request: validRequest() }).subarray(7)
      if (kind === 1) {
        const pdu = Buffer.from(encodeRequest({ transactionId: 0, unitId: 0, request: validRequest() }).subarray(7))
        for (let k = 1 + random.int(3); k > 0; k--) pdu[random.int(pdu.length)] = random.int(256)
        return pdu
      }
      const pdu = random.bytes(1 + random.int(random.pick([8, 40, 253])))
      if (random.int(2)) pdu[0] = random.pick([1, 2, 3, 4, 5, 6, 15, 16, 23, 0x80, 0])
      return pdu
    }

    // Stream 1: well-framed requests with fuzzed PDUs, pipelined. Every one must be answered, in order.
    const pduStream = async (): Promise<{ sent: number; answered: number }> => {
      const socket = await open(rig.port)
      const expected: Array<[number, number]> = []
      let answered = 0
      let wake: (() => void) | null = null
      responseReader(socket, (response) => {
        const [transactionId, unitId] = expected.shift() ?? [-1, -1]
        if (response.transactionId !== transactionId || response.unitId !== unitId) {
          malformed.push(`answer ${response.transactionId}/${response.unitId} where ${transactionId}/${unitId} was due`)
        }
        answered++
        if (expected.length < 16) wake?.()
      }, malformed)
      let sent = 0
      let transactionId = 0
      while (Date.now() < deadline && !socket.destroyed) {
        const frames: Buffer[] = []
        while (expected.length < 32) {
          transactionId = (transactionId + 1) & 0xffff
          const unitId = random.pick([1, 1, 1, 1, 0, 255, 2, random.int(256)])
          frames.push(encodeRequest({ transactionId, unitId, request: { pdu: fuzzPdu() } }))
          expected.push([transactionId, unitId])
          sent++
        }
        const bytes = Buffer.concat(frames)
        for (let at = 0; at < bytes.length; ) {
          const piece = 1 + random.int(bytes.length - at)
          socket.write(bytes.subarray(at, at + piece))
          at += piece
        }
        await Promise.race([new Promise<void>((resolve) => (wake = resolve)), sleep(1000)])
      }
      assert.equal(socket.destroyed, false, 'the server closed a connection that only sent well-framed requests')
      for (let i = 0; i < 100 && expected.length > 0; i++) await sleep(10)
      assert.equal(expected.length, 0, `${expected.length} requests never answered`)
      socket.destroy()
      return { sent, answered }
    }

    // Stream 2: broken framing (garbage, flipped header bytes, lying lengths), reconnecting whenever closed.
    const framingStream = async (): Promise<{ connections: number }> => {
      let connections = 0
      while (Date.now() < deadline) {
        const socket = await open(rig.port)
        connections++
        responseReader(socket, () => undefined, malformed)
        while (!socket.destroyed && Date.now() < deadline) {
          const frame = encodeRequest({ transactionId: random.int(65536), unitId: 1, request: validRequest() })
          const kind = random.int(4)
          const bytes =
            kind === 0 ? random.bytes(1 + random.int(30))
            : kind === 1 ? (frame.writeUInt16BE(random.pick([0, 1, 255, 256, 0xffff, random.int(65536)]), 4), frame)
            : kind === 2 ? ((frame[random.int(7)] = random.int(256)), frame)
            : frame
          socket.write(bytes)
          await sleep(random.int(2))
        }
        socket.destroy()
      }
      return { connections }
    }

    // Stream 3: a well-behaved client that must be served throughout.
    const witnessStream = async (): Promise<number> => {
      const witness = await TestClient.connect(rig.port)
      let checks = 0
      while (Date.now() < deadline) {
        assert.deepEqual(registersOf(await witness.request({ fc: 4, address: 0, quantity: 1 }, { timeoutMs: 2000 })), [20])
        checks++
        await sleep(20)
      }
      witness.close()
      return checks
    }

    try {
      const [pdu, framing, checks] = await Promise.all([pduStream(), framingStream(), witnessStream()])
      const { requests, errors } = rig.adapter.info().counters
      t.diagnostic(`${pdu.sent} fuzzed requests answered in order; ${framing.connections} connections with broken framing; ` +
        `${checks} witness checks; unit saw ${requests} requests, ${errors} exception answers`)
      assert.deepEqual(malformed, [], `malformed answers (seed ${SEED})`)
      assert.ok(pdu.answered > 2000, `only ${pdu.answered} answers (seed ${SEED})`)
      assert.ok(framing.connections > 20, `only ${framing.connections} connections: the framing fuzz did not close many`)
      // Still serving after everything, on a new connection.
      const fresh = await TestClient.connect(rig.port)
      assert.deepEqual(registersOf(await fresh.request({ fc: 4, address: 0, quantity: 1 })), [20])
      fresh.close()
    } finally {
      await rig.close()
    }
  })
})
