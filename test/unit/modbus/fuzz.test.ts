import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { encodeRequest } from '../../../src/protocols/modbus/index.js'
import { FUZZ_SEED, fuzzer, generator, open, responseReader } from './fuzz-kit.js'
import { TestClient, registersOf, startRig } from './helpers.js'

const DURATION_MS = 3000
const SEED = FUZZ_SEED

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

    const { validRequest, fuzzPdu } = fuzzer(random, { addresses: [0, 1, 2, 6, 10, 11, 12], maxCoils: 20, maxRegisters: 8, writeAddresses: 12 })

    // Stream 1: well-framed requests with fuzzed PDUs, pipelined. Every one must be answered, in order.
    const pduStream = async (): Promise<{ sent: number; answered: number }> => {
      const socket = await open(rig.port)
      const expected: Array<[number, number]> = []
      let answered = 0
      let wake: (() => void) | null = null
      responseReader(
        socket,
        (response) => {
          const [transactionId, unitId] = expected.shift() ?? [-1, -1]
          if (response.transactionId !== transactionId || response.unitId !== unitId) {
            malformed.push(`answer ${response.transactionId}/${response.unitId} where ${transactionId}/${unitId} was due`)
          }
          answered++
          if (expected.length < 16) wake?.()
        },
        malformed,
      )
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
        for (let at = 0; at < bytes.length;) {
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
            kind === 0
              ? random.bytes(1 + random.int(30))
              : kind === 1
                ? (frame.writeUInt16BE(random.pick([0, 1, 255, 256, 0xffff, random.int(65536)]), 4), frame)
                : kind === 2
                  ? ((frame[random.int(7)] = random.int(256)), frame)
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
      t.diagnostic(
        `${pdu.sent} fuzzed requests answered in order; ${framing.connections} connections with broken framing; ` +
          `${checks} witness checks; unit saw ${requests} requests, ${errors} exception answers`,
      )
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
