import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { run } from './unit/modbus/helpers.js'
import { eventually, startTestServer, type TestServer } from './helpers/server.js'
import { ptyPair, requirePeer, type PtyPair } from './helpers/pty.js'
import { crc16 } from '../src/protocols/modbus/rtu.js'
import { characterTimeMs, openSerialLine, type SerialLine } from '../src/protocols/serial/port.js'
import { frameSilenceMs } from '../src/protocols/modbus/serial-listener.js'
import { modbusSlaveSchema } from '../src/definition/modbus-schema.js'

// modbus_slave with transport serial, through the running server, on pseudo-terminal pairs made
// by socat: mbpoll (libmodbus) and pymodbus' serial client are the independent masters; a raw
// line sends what no client would (a bad CRC, a broadcast whose silence is the point).

const SYS = '/api/v3/system'
const CLIENT = new URL('./modbus-transports-client.py', import.meta.url).pathname
const BAUD = 19200

function model(settings: Record<string, unknown>, temperature: number): Record<string, unknown> {
  return {
    attributes: { temperature, setpoint: 0.0, status: 0 },
    communication: [
      {
        modbus_slave: {
          transport: 'serial',
          baudrate: BAUD,
          parity: 'even',
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

/** An RTU frame: the hex bytes and their CRC-16/MODBUS, low byte first. */
function rtu(hex: string): Buffer {
  const body = Buffer.from(hex, 'hex')
  const crc = crc16(body, 0, body.length)
  return Buffer.concat([body, Buffer.from([crc & 0xff, crc >>> 8])])
}

/** The master's end of the line, raw: what it receives is gathered in `received`. */
async function rawMaster(device: string): Promise<{ line: SerialLine; received: () => Buffer }> {
  const chunks: Buffer[] = []
  const line = await openSerialLine({ device, baudrate: BAUD, parity: 'even', stopbits: 1, bytesize: 8 }, { onData: (c) => chunks.push(c) })
  return { line, received: () => Buffer.concat(chunks) }
}

describe('serial settings', () => {
  it('a frame ends after 3.5 characters of silence, 1.75 ms above 19200 baud', () => {
    // 8E1: start, 8 data, parity, stop = 11 bits; 3.5 x 11 / 9600 s.
    assert.equal(frameSilenceMs({ baudrate: 9600, bytesize: 8, parity: 'even', stopbits: 1 }), (3.5 * 11 * 1000) / 9600)
    assert.equal(frameSilenceMs({ baudrate: 19200, bytesize: 8, parity: 'none', stopbits: 1 }), (3.5 * 10 * 1000) / 19200)
    assert.equal(frameSilenceMs({ baudrate: 115200, bytesize: 8, parity: 'none', stopbits: 2 }), 1.75)
    assert.equal(characterTimeMs({ baudrate: 1200, bytesize: 7, parity: 'odd', stopbits: 2 }), (11 * 1000) / 1200)
  })

  it('the schema: defaults, a device required for serial, serial keys refused elsewhere, each by its path', () => {
    const mapping = { t: { address: 0, group: 'h_r', type: 'uint_16' } }
    const ok = modbusSlaveSchema.parse({ transport: 'serial', device: '/dev/ttyUSB0', mapping })
    assert.equal(ok.device, '/dev/ttyUSB0')
    assert.equal(ok.baudrate, undefined, 'the defaults are filled when the line opens (serialSettingsOf)')
    const problems = (value: Record<string, unknown>): string[] => {
      const result = modbusSlaveSchema.safeParse({ ...value, mapping })
      return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)
    }
    assert.deepEqual(problems({ transport: 'serial' }), ['device: transport serial needs a device, e.g. /dev/ttyUSB0'])
    assert.deepEqual(problems({ transport: 'tcp', baudrate: 9600 }), ['baudrate: baudrate applies to transport serial, not tcp'])
    assert.deepEqual(problems({ transport: 'serial', device: '/dev/ttyS0', port: 502 }), [
      'port: port applies to tcp, udp and rtu_over_tcp; a serial line has a device',
    ])
    assert.equal(problems({ transport: 'serial', device: '/dev/ttyS0', parity: 'mark', stopbits: 3, bytesize: 6 }).length, 3)
  })
})

describe('modbus_slave on a serial line (socat pty pairs)', () => {
  let t: TestServer
  let pair: PtyPair
  const node = (instance: string): string => `${SYS}/instances/${instance}/communication/modbus_slave`
  const attr = (instance: string, name: string): string => `${SYS}/instances/${instance}/attributes/${name}/attr/internal_value`

  before(async () => {
    requirePeer('mbpoll', ['-V'], 'mbpoll')
    requirePeer('/usr/bin/python3', ['-c', 'import pymodbus, serial'], 'python3-pymodbus python3-serial')
    pair = await ptyPair()
    t = await startTestServer()
    const models = {
      Meter1: model({ device: pair.a, unit_id: 1 }, 10.25),
      Meter2: model({ device: pair.a, unit_id: 2 }, 30.75),
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, models)).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { m1: 'Meter1', m2: 'Meter2' })).status, 200)
    for (const instance of ['m1', 'm2']) assert.equal((await t.call(`${SYS}/instances/${instance}`, 'prepare')).status, 200)
  })
  after(async () => {
    await t?.close()
    await pair?.close()
  })

  it('the node shows the line and its settings', async () => {
    const body = (await t.api('GET', node('m1'))).body
    assert.equal(body.transport, 'serial')
    assert.equal(body.port, null)
    assert.deepEqual(body.serial, { device: pair.a, baudrate: BAUD, parity: 'even', stopbits: 1, bytesize: 8 })
    assert.equal(body.counters.crc_errors, 0)
  })

  it('mbpoll -m rtu reads a float and writes one', async () => {
    const common = ['-m', 'rtu', '-b', String(BAUD), '-P', 'even', '-d', '8', '-s', '1', '-a', '1', '-t', '4:float', '-B', '-0', '-1', '-o', '1']
    const read = await run('mbpoll', [...common, '-r', '0', pair.b])
    assert.equal(read.code, 0, read.stdout + read.stderr)
    assert.match(read.stdout, /\[0\]:\s+10\.25\b/)
    const write = await run('mbpoll', [...common, '-r', '2', pair.b, '42.5'])
    assert.equal(write.code, 0, write.stdout + write.stderr)
    assert.match(write.stdout, /Written 1 references/)
    assert.deepEqual((await t.api('GET', attr('m1', 'setpoint'))).body, { value: 42.5 })
    const back = await run('mbpoll', [...common, '-r', '2', pair.b])
    assert.match(back.stdout, /\[2\]:\s+42\.5\b/)
  })

  it("pymodbus' serial client reads two units on one line and writes one", async () => {
    const operations = [
      { op: 'read_float', address: 0, unit: 1 },
      { op: 'read_float', address: 0, unit: 2 },
      { op: 'write', address: 2, value: -3.5, unit: 2 },
      { op: 'read_float', address: 2, unit: 2 },
      { op: 'read', address: 40, unit: 1 },
    ]
    // Parity N on the client's end: pyserial's reconfiguration with parity fails on a Linux pty
    // (EINVAL), and a pty carries bytes, not bits, so the two ends' parities never meet.
    const res = await run('/usr/bin/python3', [CLIENT, 'serial', pair.b, String(BAUD), 'N'], { input: JSON.stringify(operations) })
    assert.equal(res.code, 0, res.stderr)
    assert.deepEqual(JSON.parse(res.stdout), [{ value: 10.25 }, { value: 30.75 }, { ok: true }, { value: -3.5 }, { exception: 2 }])
    assert.deepEqual((await t.api('GET', attr('m2', 'setpoint'))).body, { value: -3.5 })
  })

  it('a frame with a bad CRC gets no answer and counts on both units; the line goes on', async () => {
    const before1 = (await t.api('GET', node('m1'))).body.counters.crc_errors
    const before2 = (await t.api('GET', node('m2'))).body.counters.crc_errors
    const master = await rawMaster(pair.b)
    try {
      master.line.write(Buffer.from('010300000002ffff', 'hex'))
      await eventually(async () => (await t.api('GET', node('m1'))).body.counters.crc_errors === before1 + 1)
      assert.equal((await t.api('GET', node('m2'))).body.counters.crc_errors, before2 + 1)
      // Requests are answered in order: once the good one's answer is in, any answer to the bad one would be too.
      master.line.write(rtu('010300000002'))
      const answer = await eventually(() => (master.received().length >= 9 ? master.received() : null))
      assert.equal(answer.toString('hex'), rtu('01030441240000').toString('hex'))
    } finally {
      await master.line.close()
    }
  })

  it('a broadcast write (unit 0) changes both units and gets no answer', async () => {
    const master = await rawMaster(pair.b)
    try {
      // FC 16 to unit 0: status (register 4) = 7.
      master.line.write(rtu('00100004000102' + '0007'))
      await eventually(async () => (await t.api('GET', attr('m1', 'status'))).body.value === 7)
      await eventually(async () => (await t.api('GET', attr('m2', 'status'))).body.value === 7)
      master.line.write(rtu('020300040001'))
      const answer = await eventually(() => (master.received().length >= 7 ? master.received() : null))
      assert.equal(answer.toString('hex'), rtu('0203020007').toString('hex'), 'the read is the only answer')
    } finally {
      await master.line.close()
    }
  })

  it('every fault of the menu works on the line', async () => {
    const master = await rawMaster(pair.b)
    const ask = async (expected: number): Promise<Buffer> => {
      const from = master.received().length
      master.line.write(rtu('010300000002'))
      return eventually(() => (master.received().length - from >= expected ? master.received().subarray(from) : null))
    }
    const faults = (value: unknown) => t.api('PUT', `${node('m1')}/attr/faults`, { value })
    try {
      assert.equal((await faults({ exception: { code: 6 } })).status, 200)
      assert.equal((await ask(5)).toString('hex'), rtu('018306').toString('hex'))
      assert.equal((await faults({ corrupt: { kind: 'junk' } })).status, 200)
      const corrupt = await ask(9)
      assert.notEqual(crc16(corrupt, 0, 7), corrupt[7]! | (corrupt[8]! << 8), 'a corrupted answer fails its CRC')
      assert.equal((await faults({ split_frames: { parts: 3, gap: 0.01 } })).status, 200)
      assert.equal((await ask(9)).toString('hex'), rtu('01030441240000').toString('hex'))
      assert.equal((await faults({ response_delay: 0.05 })).status, 200)
      assert.equal((await ask(9)).toString('hex'), rtu('01030441240000').toString('hex'))
      assert.equal((await faults({ swap_bytes: true })).status, 200)
      assert.equal((await ask(9)).toString('hex'), rtu('01030424410000').toString('hex'))
      // no_response: the next request gets nothing; the one after it (fault cleared) is the only answer.
      assert.equal((await faults({ no_response: { every: 1 } })).status, 200)
      const from = master.received().length
      master.line.write(rtu('010300000002'))
      await eventually(async () => (await t.api('GET', node('m1'))).body.counters.fault_no_responses === 1)
      assert.equal((await faults({})).status, 200)
      assert.equal((await ask(9)).toString('hex'), rtu('01030441240000').toString('hex'))
      assert.equal(master.received().length - from, 9, 'nothing answered the request under no_response')
      // disconnect: the line drops what it holds and counts it; it answers the next request as before.
      assert.equal((await faults({ disconnect: true })).status, 200)
      await eventually(async () => (await t.api('GET', node('m1'))).body.counters.fault_disconnects === 1)
      assert.equal((await ask(9)).toString('hex'), rtu('01030441240000').toString('hex'))
    } finally {
      await faults({})
      await master.line.close()
    }
  })

  it('a line whose device goes away shows line_error naming it, and the server goes on', async () => {
    const gone = await ptyPair()
    try {
      assert.equal((await t.api('PUT', `${SYS}/models`, { Gone: model({ device: gone.a, unit_id: 1 }, 1) })).status, 200)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { gone: 'Gone' })).status, 200)
      assert.equal((await t.call(`${SYS}/instances/gone`, 'prepare')).status, 200)
      assert.equal((await t.api('GET', node('gone'))).body.serial.line_error, undefined)
      await gone.close()
      const lost = await eventually(async () => (await t.api('GET', node('gone'))).body.serial.line_error as string | undefined, 10_000)
      assert.match(lost, new RegExp(`serial device ${gone.a}`))
      // The other line still answers.
      const res = await run('/usr/bin/python3', [CLIENT, 'serial', pair.b, String(BAUD), 'N'], {
        input: JSON.stringify([{ op: 'read_float', address: 0, unit: 1 }]),
      })
      assert.deepEqual(JSON.parse(res.stdout), [{ value: 10.25 }])
    } finally {
      await gone.close()
    }
  })

  it('a missing device or one another program holds is a clear error naming it; nothing crashes', async () => {
    const busy = await rawMaster(pair.b)
    try {
      const models = { Missing: model({ device: '/dev/mimic-no-such-tty', unit_id: 1 }, 1), Busy: model({ device: pair.b, unit_id: 1 }, 1) }
      assert.equal((await t.api('PUT', `${SYS}/models`, models)).status, 200)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { missing: 'Missing', busy: 'Busy' })).status, 200)
      const missing = await t.call(`${SYS}/instances/missing`, 'prepare')
      assert.equal(missing.status, 409, JSON.stringify(missing.body))
      assert.match(JSON.stringify(missing.body), /serial device \/dev\/mimic-no-such-tty: no such device/)
      const held = await t.call(`${SYS}/instances/busy`, 'prepare')
      assert.equal(held.status, 409, JSON.stringify(held.body))
      assert.match(JSON.stringify(held.body), new RegExp(`serial device ${pair.b}: busy`))
      // The line of the other units still answers.
      busy.line.write(rtu('020300000002'))
      const answer = await eventually(() => (busy.received().length >= 9 ? busy.received() : null))
      assert.equal(
        answer.toString('hex'),
        rtu(
          '020304' +
            Buffer.from(new Float32Array([30.75]).buffer)
              .reverse()
              .toString('hex'),
        ).toString('hex'),
      )
      assert.equal((await t.api('GET', '/health')).status, 200)
    } finally {
      await busy.line.close()
    }
  })
})
