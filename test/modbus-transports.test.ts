import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { peerSkipReason, run } from './unit/modbus/helpers.js'
import { freePort, startTestServer, type TestServer } from './helpers/server.js'
import { crc16 } from '../src/protocols/modbus/rtu.js'

// The modbus_slave transports other than tcp, through the running server: pymodbus' UDP client
// and its TCP client with the RTU framer are the independent peers; raw sockets send what no
// client would (a bad CRC, a broadcast whose silence is the point).

const SYS = '/api/v3/system'
const CLIENT = new URL('./modbus-transports-client.py', import.meta.url).pathname

function model(settings: Record<string, unknown>, temperature: number): Record<string, unknown> {
  return {
    attributes: { temperature, setpoint: 0.0, status: 0 },
    communication: [
      {
        modbus_slave: {
          host: '127.0.0.1',
          ...settings,
          mapping: {
            temperature: { address: [0, 1], group: 'h_r', type: 'float' },
            setpoint: { address: [2, 3], group: 'h_r', type: 'float' },
            status: { address: 4, group: 'h_r', type: 'uint_16' },
          },
        },
      },
    ],
  }
}

async function pymodbus(transport: string, port: number, operations: unknown[]): Promise<any[]> {
  const res = await run('/usr/bin/python3', [CLIENT, transport, String(port)], { input: JSON.stringify(operations) })
  assert.equal(res.code, 0, res.stderr)
  return JSON.parse(res.stdout)
}

/** An RTU frame: the hex bytes and their CRC-16/MODBUS, low byte first. */
function rtu(hex: string): Buffer {
  const body = Buffer.from(hex, 'hex')
  const crc = crc16(body, 0, body.length)
  return Buffer.concat([body, Buffer.from([crc & 0xff, crc >>> 8])])
}

/** Connects, sends `frames` (each in a write of its own) and gathers what arrives within `waitMs`. */
async function exchange(port: number, frames: Buffer[], waitMs: number): Promise<Buffer> {
  const socket: Socket = connect({ host: '127.0.0.1', port })
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  const chunks: Buffer[] = []
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  for (const frame of frames) socket.write(frame)
  await new Promise((resolve) => setTimeout(resolve, waitMs))
  socket.destroy()
  return Buffer.concat(chunks)
}

describe('modbus_slave transports through the running server', () => {
  let t: TestServer
  let udpPort: number
  let rtuPort: number
  const skip = peerSkipReason('pymodbus', { command: '/usr/bin/python3', args: ['-c', 'import pymodbus'] }, 'apt-get install python3-pymodbus')
  const node = (instance: string): string => `${SYS}/instances/${instance}/communication/modbus_slave`
  const attr = (instance: string, name: string): string => `${SYS}/instances/${instance}/attributes/${name}/attr/internal_value`

  before(async () => {
    t = await startTestServer()
    rtuPort = await freePort()
    const models = {
      Udp: model({ transport: 'udp', port: 0, unit_id: 1 }, 21.5),
      RtuA: model({ transport: 'rtu_over_tcp', port: rtuPort, unit_id: 1 }, 10.25),
      RtuB: model({ transport: 'rtu_over_tcp', port: rtuPort, unit_id: 2 }, 30.75),
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, models)).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { udp: 'Udp', rtu1: 'RtuA', rtu2: 'RtuB' })).status, 200)
    for (const instance of ['udp', 'rtu1', 'rtu2']) assert.equal((await t.call(`${SYS}/instances/${instance}`, 'prepare')).status, 200)
    udpPort = (await t.api('GET', node('udp'))).body.port
  })
  after(async () => t.close())

  it('udp: pymodbus reads a float and writes one, one request per datagram', { skip }, async () => {
    const body = (await t.api('GET', node('udp'))).body
    assert.equal(body.transport, 'udp')
    assert.ok(udpPort > 0)
    const results = await pymodbus('udp', udpPort, [
      { op: 'read_float', address: 0 },
      { op: 'write', address: 2, value: 42.5 },
      { op: 'read_float', address: 2 },
      { op: 'read', address: 40 },
    ])
    assert.deepEqual(results, [{ value: 21.5 }, { ok: true }, { value: 42.5 }, { exception: 2 }])
    assert.deepEqual((await t.api('GET', attr('udp', 'setpoint'))).body, { value: 42.5 })
    assert.equal((await t.api('GET', node('udp'))).body.counters.requests, 4)
  })

  it('rtu_over_tcp: two unit ids on one port; pymodbus with the RTU framer reads and writes each', { skip }, async () => {
    assert.equal((await t.api('GET', node('rtu1'))).body.port, rtuPort)
    assert.equal((await t.api('GET', node('rtu2'))).body.port, rtuPort)
    const results = await pymodbus('rtu_over_tcp', rtuPort, [
      { op: 'read_float', address: 0, unit: 1 },
      { op: 'read_float', address: 0, unit: 2 },
      { op: 'write', address: 2, value: -3.5, unit: 2 },
      { op: 'read_float', address: 2, unit: 2 },
      { op: 'read_float', address: 2, unit: 1 },
      { op: 'read', address: 40, unit: 1 },
    ])
    assert.deepEqual(results, [{ value: 10.25 }, { value: 30.75 }, { ok: true }, { value: -3.5 }, { value: 0 }, { exception: 2 }])
    assert.deepEqual((await t.api('GET', attr('rtu2', 'setpoint'))).body, { value: -3.5 })
  })

  it('rtu_over_tcp: a frame with a bad CRC gets no answer and counts; the stream goes on', async () => {
    const before1 = (await t.api('GET', node('rtu1'))).body.counters.crc_errors
    const before2 = (await t.api('GET', node('rtu2'))).body.counters.crc_errors
    const bad = Buffer.from('010300040001ffff', 'hex')
    const good = Buffer.from('010300000002c40b', 'hex')
    const silent = await exchange(rtuPort, [bad], 300)
    assert.equal(silent.length, 0, 'no answer to a bad CRC')
    const answered = await exchange(rtuPort, [bad, good], 300)
    // 01 03 04 + the float 10.25 (41 24 00 00) + CRC
    assert.equal(answered.subarray(0, 7).toString('hex'), '01030441240000')
    assert.equal(answered.length, 9)
    assert.equal(crc16(answered, 0, 7), answered.readUInt16LE(7))
    assert.equal((await t.api('GET', node('rtu1'))).body.counters.crc_errors, before1 + 2)
    assert.equal((await t.api('GET', node('rtu2'))).body.counters.crc_errors, before2 + 2)
  })

  it('rtu_over_tcp: a request for an address nobody serves is not answered', async () => {
    assert.equal((await exchange(rtuPort, [rtu('070300000001')], 300)).length, 0)
  })

  it('rtu_over_tcp: a broadcast write (unit 0) is applied by every unit and not answered', async () => {
    // FC 6: status (address 4) = 0x002A
    const silent = await exchange(rtuPort, [rtu('00060004002a')], 300)
    assert.equal(silent.length, 0, 'a broadcast is not answered')
    assert.deepEqual((await t.api('GET', attr('rtu1', 'status'))).body, { value: 42 })
    assert.deepEqual((await t.api('GET', attr('rtu2', 'status'))).body, { value: 42 })
  })

  it('rtu_over_tcp: pymodbus broadcasts a write to unit 0; both units take it', { skip }, async () => {
    const results = await pymodbus('rtu_over_tcp', rtuPort, [
      { op: 'broadcast', address: 4, values: [7], unit: 0 },
      { op: 'read', address: 4, unit: 1 },
      { op: 'read', address: 4, unit: 2 },
    ])
    assert.deepEqual(results, [{ ok: true }, { registers: [7] }, { registers: [7] }])
  })
})
