/**
 * Modbus fuzz against a whole server (HTTP, system, Python workers behind the mapped
 * attributes), where test/unit/modbus/fuzz.test.ts fuzzes the listener alone. For a bounded time:
 * random and mutated PDUs in well-formed frames (every one answered, in order, well formed),
 * frames with impossible headers (never answered: the connection is closed), and random bytes;
 * meanwhile a well-behaved Modbus client and HTTP clients must be served throughout.
 * Replay a failure with MODBUS_FUZZ_SEED.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { encodeRequest } from '../../src/protocols/modbus/index.js'
import { startTestServer, type TestServer } from '../helpers/server.js'
import { FUZZ_SEED, fuzzer, generator, open, responseReader } from '../unit/modbus/fuzz-kit.js'
import { TestClient, registersOf } from '../unit/modbus/helpers.js'
import { SYS } from './helpers.js'

const DURATION_MS = Number(process.env.MIMIC_FUZZ_MS ?? 3000)
const SEED = FUZZ_SEED

const CODE = `
class Tank:
    def __init__(self):
        self.level = 40.0
        self.setpoint = 10.0
        self.writes = 0
    @property
    def target(self):
        return self.setpoint
    @target.setter
    def target(self, value):
        self.writes += 1
        self.setpoint = value
    def status(self):
        return 7
    def tick(self):
        self.level += 0.5
`

describe('Modbus fuzz against a running server', () => {
  let t: TestServer
  let port: number
  before(async () => {
    t = await startTestServer({ files: { 'tank.py': CODE }, config: { pythonWorkers: 1 } })
    const res = await t.api('PUT', SYS, {
      models: {
        Tank: {
          attributes: { level: 0.0, target: 0.0, status: 0, alarm: false, label: 'tank', count: { default: 5, type: 'int' } },
          import: {
            'tank.py': {
              class: 'Tank',
              attributes: { level: { property: 'level' }, target: { property: 'target' }, status: { getter: 'status' } },
              methods: { run: 'tick' },
            },
          },
          communication: [
            {
              modbus_slave: {
                host: '127.0.0.1',
                port: 0,
                unit_id: 1,
                mapping: {
                  level: { address: [0, 1], group: 'h_r', type: 'float' },
                  target: { address: [2, 3], group: 'h_r', type: 'float', word_order: 'little' },
                  status: { address: 4, group: 'h_r', type: 'uint_16' },
                  label: { address: [5, 8], group: 'h_r', type: 'str' },
                  count: { address: 0, group: 'i_r', type: 'int_16', scale: 0.5 },
                  alarm: { address: 0, group: 'c_o', type: 'bool' },
                },
              },
            },
          ],
        },
      },
      instances: { tank: 'Tank' },
    })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.equal((await t.call(`${SYS}/instances/tank`, 'prepare')).status, 200)
    port = (await t.api('GET', `${SYS}/instances/tank/communication/modbus_slave`)).body.port
  })
  after(async () => t.close())

  it(`random, mutated and badly framed traffic for ${DURATION_MS} ms (seed ${SEED}): no crash, no answer to garbage, others served`, async (ctx) => {
    const random = generator(SEED)
    const malformed: string[] = []
    const deadline = Date.now() + DURATION_MS

    const { validRequest, fuzzPdu } = fuzzer(random, { addresses: [0, 1, 2, 3, 4, 5, 8, 9], maxCoils: 10, maxRegisters: 6, writeAddresses: 10 })

    // Well-framed requests with fuzzed PDUs, pipelined: every one answered in order and well formed.
    const pduStream = async (): Promise<{ sent: number; answered: number }> => {
      const socket = await open(port)
      const expected: Array<[number, number]> = []
      let answered = 0
      let wake: (() => void) | null = null
      responseReader(
        socket,
        (response) => {
          const [transactionId, unitId] = expected.shift() ?? [-1, -1]
          if (response.transactionId !== transactionId || response.unitId !== unitId)
            malformed.push(`answer ${response.transactionId}/${response.unitId} where ${transactionId}/${unitId} was due`)
          answered++
          if (expected.length < 8) wake?.()
        },
        malformed,
      )
      let sent = 0
      let transactionId = 0
      while (Date.now() < deadline && !socket.destroyed) {
        const frames: Buffer[] = []
        while (expected.length < 16) {
          transactionId = (transactionId + 1) & 0xffff
          // Unit 1 is served; others answer "gateway target failed"; all must be answered.
          const unitId = random.pick([1, 1, 1, 1, 1, 0, 2, 255])
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
        await Promise.race([new Promise<void>((resolve) => (wake = resolve)), sleep(3000, undefined, { ref: false })])
      }
      assert.equal(socket.destroyed, false, 'the server closed a connection that only sent well-framed requests')
      for (let i = 0; i < 200 && expected.length > 0; i++) await sleep(10)
      assert.equal(expected.length, 0, `${expected.length} well-framed requests never answered (seed ${SEED})`)
      socket.destroy()
      return { sent, answered }
    }

    // Frames whose header cannot be valid, alone on a fresh connection: closed, never answered.
    const garbageStream = async (): Promise<{ connections: number; answeredBytes: number }> => {
      let connections = 0
      let answeredBytes = 0
      while (Date.now() < deadline) {
        const socket = await open(port)
        connections++
        socket.on('error', () => undefined)
        socket.on('data', (d: Buffer) => (answeredBytes += d.length))
        const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
        const frame = Buffer.from(encodeRequest({ transactionId: random.int(65536), unitId: 1, request: validRequest() }))
        const kind = random.int(3)
        if (kind === 0)
          frame.writeUInt16BE(1 + random.int(65535), 2) // protocol id
        else if (kind === 1)
          frame.writeUInt16BE(random.pick([0, 1, 255, 256, 0xffff]), 4) // length field
        else {
          frame.writeUInt16BE(1 + random.int(65535), 2)
          frame.set(random.bytes(frame.length - 4), 4)
        }
        socket.write(frame)
        const outcome = await Promise.race([closed.then(() => 'closed'), sleep(2000, undefined, { ref: false }).then(() => 'open')])
        if (outcome !== 'closed') malformed.push(`a frame with a bad header (${frame.subarray(0, 8).toString('hex')}) left the connection open`)
        socket.destroy()
      }
      return { connections, answeredBytes }
    }

    // A well-behaved Modbus client and HTTP clients, served throughout.
    const witness = async (): Promise<{ modbus: number; http: number }> => {
      const client = await TestClient.connect(port)
      let modbus = 0
      let http = 0
      while (Date.now() < deadline) {
        assert.deepEqual(registersOf(await client.request({ fc: 3, address: 4, quantity: 1 }, { timeoutMs: 2000 })), [7])
        assert.deepEqual(registersOf(await client.request({ fc: 4, address: 0, quantity: 1 }, { timeoutMs: 2000 })), [10])
        modbus += 2
        const [health, run] = await Promise.all([t.api('GET', '/health'), t.call(`${SYS}/instances/tank`, 'run')])
        assert.equal(health.status, 200)
        assert.equal(run.status, 200, JSON.stringify(run.body))
        http += 2
        await sleep(10)
      }
      client.close()
      return { modbus, http }
    }

    const [pdu, garbage, served] = await Promise.all([pduStream(), garbageStream(), witness()])
    const counters = (await t.api('GET', `${SYS}/instances/tank/communication/modbus_slave`)).body.counters
    ctx.diagnostic(
      `seed ${SEED}: ${pdu.sent} fuzzed requests answered in order; ${garbage.connections} bad-header connections closed unanswered; ` +
        `${served.modbus} witness reads and ${served.http} HTTP calls served; adapter counters ${JSON.stringify(counters)}`,
    )
    assert.deepEqual(malformed, [], `seed ${SEED}`)
    assert.equal(garbage.answeredBytes, 0, 'a frame with an impossible header was answered')
    assert.ok(pdu.answered > 500, `only ${pdu.answered} answers`)
    assert.ok(garbage.connections > 10, `only ${garbage.connections} bad-header connections`)

    // Still serving afterwards: a new connection, the Python-backed values, HTTP, and a clean log.
    const fresh = await TestClient.connect(port)
    assert.deepEqual(registersOf(await fresh.request({ fc: 3, address: 4, quantity: 1 })), [7])
    fresh.close()
    const tank = (await t.api('GET', `${SYS}/instances/tank`)).body
    assert.equal(tank.state, 'PREPARED', JSON.stringify(tank))
    assert.equal((await t.call(`${SYS}/instances/tank`, 'run')).status, 200)
    const errors = t.logs.filter((r) => Number(r.level) >= 50)
    assert.deepEqual(errors, [], 'error-level log records')
  })
})
