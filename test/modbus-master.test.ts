import assert from 'node:assert/strict'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { createSocket } from 'node:dgram'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { loadDefinitionFile } from '../src/definition/load-file.js'
import { modelBehaviourProblems } from '../src/language/model/index.js'
import { eventually, freePort, startTestServer, type TestServer } from './helpers/server.js'
import { ptyPair } from './helpers/pty.js'

// The modbus_master adapter polls real devices: pymodbus' TCP server (Debian's python3-pymodbus,
// test/modbus-master-device.py), which the test reads and sets on its side, and a modbus_slave
// instance of the same server. The reference catalog's PLC model runs unchanged against a device
// on the ports its parameters name.

const SYS = '/api/v3/system'
const DEVICE = new URL('./modbus-master-device.py', import.meta.url).pathname
const FIXTURES = join(import.meta.dirname, 'fixtures', 'spx')
const PYTHON = '/usr/bin/python3'

/** Why pymodbus cannot run here, or null. */
function pymodbusMissing(): string | null {
  const probe = spawnSync(PYTHON, ['-c', 'import pymodbus.server.async_io'], { encoding: 'utf8' })
  if (probe.status === 0) return null
  return `pymodbus is missing (${PYTHON}: ${(probe.stderr || String(probe.error)).trim().split('\n').pop()}): install the Debian package python3-pymodbus`
}

/** How the pymodbus device serves: Modbus TCP by default, RTU frames over TCP, Modbus UDP, or RTU on a serial line. */
interface DeviceOptions {
  rtu?: boolean
  udp?: boolean
  serial?: { device: string; baudrate: number }
}

/** A UDP port of 127.0.0.1 that nothing had bound when asked. */
async function freeUdpPort(): Promise<number> {
  const socket = createSocket('udp4')
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
  const { port } = socket.address()
  await new Promise<void>((resolve) => socket.close(resolve))
  return port
}

/** A pymodbus device on `ports` of 127.0.0.1, set and read through its stdin. */
class Device {
  readonly #child: ChildProcess
  readonly #lines: AsyncIterator<string>
  readonly #exited: Promise<void>

  private constructor(child: ChildProcess) {
    this.#child = child
    this.#lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]()
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()))
  }

  static async start(ports: number[], options: DeviceOptions = {}): Promise<Device> {
    const args = options.serial
      ? ['--serial', options.serial.device, String(options.serial.baudrate)]
      : [...(options.rtu ? ['--rtu'] : []), ...(options.udp ? ['--udp'] : []), ...ports.map(String)]
    const child = spawn(PYTHON, [DEVICE, ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
    let errors = ''
    child.stderr!.on('data', (chunk: Buffer) => (errors += chunk))
    const device = new Device(child)
    const first = await device.#lines.next()
    assert.equal(first.value, 'ready', `the pymodbus device did not start: ${errors}`)
    return device
  }

  async #ask(command: Record<string, unknown>): Promise<any> {
    this.#child.stdin!.write(JSON.stringify(command) + '\n')
    const line = await this.#lines.next()
    return JSON.parse(line.value as string)
  }

  async set(area: string, address: number, values: number[]): Promise<void> {
    assert.deepEqual(await this.#ask({ op: 'set', area, address, values }), { ok: true })
  }

  async get(area: string, address: number, count: number): Promise<number[]> {
    return (await this.#ask({ op: 'get', area, address, count })).values
  }

  async stop(): Promise<void> {
    this.#child.stdin!.end()
    this.#child.kill('SIGTERM')
    await this.#exited
  }
}

/** A 32-bit float as two registers, high word first (as pymodbus and most devices carry it). */
function floatWords(value: number): number[] {
  const b = Buffer.alloc(4)
  b.writeFloatBE(value)
  return [b.readUInt16BE(0), b.readUInt16BE(2)]
}

function wordsFloat(words: number[]): number {
  const b = Buffer.alloc(4)
  b.writeUInt16BE(words[0]!, 0)
  b.writeUInt16BE(words[1]!, 2)
  return b.readFloatBE(0)
}

function plcModel(settings: Record<string, unknown>): Record<string, unknown> {
  return {
    attributes: { temperature: 0.0, count: 0, alarm: false, setpoint: 0.0, mode: 0 },
    communication: [
      {
        modbus_master: {
          host: '127.0.0.1',
          poll_interval: 0.2,
          timeout: 0.5,
          max_retries: 1,
          retry_delay: 0.05,
          max_failures: 3,
          ...settings,
          bindings: [
            { name: 'temperature', area: 'h_r', address: [0, 1], codec: 'float', direction: 'inbound', attribute: 'temperature' },
            { name: 'count', area: 'i_r', address: 10, length: 1, codec: 'uint_16', attribute: 'count' },
            { name: 'alarm', area: 'd_i', address: 5, codec: 'bool', attribute: 'alarm' },
            { name: 'setpoint', area: 'h_r', address: 20, length: 2, codec: 'float', direction: 'outbound', attribute: 'setpoint' },
            { name: 'mode', area: 'h_r', address: 30, codec: 'uint_16', direction: 'bidirectional', attribute: 'mode' },
          ],
        },
      },
    ],
  }
}

describe('modbus_master polls Modbus devices', () => {
  let t: TestServer
  const missing = pymodbusMissing()
  const devices: Device[] = []
  const node = (instance: string): string => `${SYS}/instances/${instance}/communication/modbus_master`
  const value = async (instance: string, attr: string): Promise<unknown> =>
    (await t.api('GET', `${SYS}/instances/${instance}/attributes/${attr}/attr/internal_value`)).body.value
  const adapter = async (instance: string): Promise<any> => (await t.api('GET', node(instance))).body

  before(async () => {
    assert.equal(missing, null, missing ?? '')
    t = await startTestServer()
  })
  after(async () => {
    for (const device of devices) await device.stop()
    await t?.close()
  })

  async function device(ports: number[], options: DeviceOptions = {}): Promise<Device> {
    const d = await Device.start(ports, options)
    devices.push(d)
    return d
  }

  it("mirrors a pymodbus server's registers, writes attributes back, goes FAILED when it stops and recovers when it returns", async () => {
    const port = await freePort()
    let server = await device([port])
    await server.set('h_r', 0, floatWords(21.5))
    await server.set('i_r', 10, [7])
    await server.set('d_i', 5, [1])
    await server.set('h_r', 30, [4])
    assert.equal((await t.api('PUT', `${SYS}/models`, { Plc: plcModel({ port }) })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { plc: 'Plc' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/plc`, 'prepare')).status, 200)

    // Inbound bindings mirror the device; the bidirectional one takes the device's value first.
    await eventually(async () => (await value('plc', 'temperature')) === 21.5 && (await value('plc', 'count')) === 7)
    assert.equal(await value('plc', 'alarm'), true)
    assert.equal(await value('plc', 'mode'), 4)
    let body = await adapter('plc')
    assert.equal(body.type, 'ModbusMaster')
    assert.equal(body.state, 'CONNECTED')
    assert.equal(body.attr.connected.value, true)
    assert.equal(body.attr.last_error.value, null)

    // The device changes: the attribute follows.
    await server.set('h_r', 0, floatWords(-3.25))
    await server.set('i_r', 10, [65535])
    await eventually(async () => (await value('plc', 'temperature')) === -3.25 && (await value('plc', 'count')) === 65535)

    // Attributes written through the API reach the device's registers.
    assert.equal((await t.api('PUT', `${SYS}/instances/plc/attributes/setpoint/attr/internal_value`, { value: 42.5 })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances/plc/attributes/mode/attr/internal_value`, { value: 9 })).status, 200)
    await eventually(async () => wordsFloat(await server.get('h_r', 20, 2)) === 42.5 && (await server.get('h_r', 30, 1))[0] === 9)
    body = await adapter('plc')
    assert.ok(body.attr.writes.value >= 2, JSON.stringify(body.attr))
    assert.ok(body.attr.polls.value >= 2)
    // ... and the device's later change of the bidirectional register comes back.
    await server.set('h_r', 30, [11])
    await eventually(async () => (await value('plc', 'mode')) === 11)

    // A value the register cannot carry is refused before it is set.
    const refused = await t.api('PUT', `${SYS}/instances/plc/attributes/mode/attr/internal_value`, { value: 70000 })
    assert.equal(refused.status, 422, JSON.stringify(refused.body))
    assert.match(JSON.stringify(refused.body), /out of range for uint_16/)

    // The device stops. With max_failures raised the master stays RETRYING ...
    assert.equal((await t.api('PUT', `${node('plc')}/attr/max_failures`, { value: 1000 })).status, 200)
    await server.stop()
    devices.splice(devices.indexOf(server), 1)
    body = await eventually(async () => {
      const b = await adapter('plc')
      return b.state === 'RETRYING' && b.attr.consecutive_failures.value >= 3 && b
    })
    assert.match(body.attr.last_error.value, new RegExp(`127\\.0\\.0\\.1:${port}`))
    assert.equal(body.attr.connected.value, false)
    // ... and FAILED once the failures reach max_failures.
    assert.equal((await t.api('PUT', `${node('plc')}/attr/max_failures`, { value: 3 })).status, 200)
    await eventually(async () => (await adapter('plc')).state === 'FAILED')
    const errors = (await adapter('plc')).attr.errors.value
    await eventually(async () => (await adapter('plc')).attr.errors.value > errors, 10_000)

    // The device returns (empty, as after a restart): CONNECTED, mirroring again, outbound values written again.
    server = await device([port])
    await server.set('h_r', 0, floatWords(99.5))
    await eventually(async () => (await adapter('plc')).state === 'CONNECTED', 15_000)
    await eventually(async () => (await value('plc', 'temperature')) === 99.5)
    await eventually(async () => wordsFloat(await server.get('h_r', 20, 2)) === 42.5)
  })

  it('detach stops polling and closes the connection; attach resumes', async () => {
    const port = await freePort()
    const server = await device([port])
    await server.set('h_r', 0, floatWords(1.5))
    assert.equal((await t.api('PUT', `${SYS}/models`, { Plc2: plcModel({ port }) })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { plc2: 'Plc2' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/plc2`, 'prepare')).status, 200)
    await eventually(async () => (await value('plc2', 'temperature')) === 1.5)
    assert.equal((await t.call(node('plc2'), 'detach')).status, 200)
    assert.equal((await adapter('plc2')).state, 'DETACHED')
    const polls = (await adapter('plc2')).attr.polls.value
    await server.set('h_r', 0, floatWords(2.5))
    assert.equal((await t.call(node('plc2'), 'attach')).status, 200)
    await eventually(async () => (await value('plc2', 'temperature')) === 2.5)
    await eventually(async () => (await adapter('plc2')).attr.polls.value > polls)
    assert.equal((await adapter('plc2')).state, 'CONNECTED')
    assert.equal((await t.call(`${SYS}/instances/plc2`, 'stop')).status, 200)
  })

  it('snapshot round trip: the instance and its master come back from a snapshot, STOPPED, and poll once prepared; a bad binding is a 422 with its path', async () => {
    const port = await freePort()
    const server = await device([port])
    await server.set('h_r', 0, floatWords(6.5))
    assert.equal((await t.api('PUT', `${SYS}/models`, { PlcSnap: plcModel({ port }) })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { plc_snap: 'PlcSnap' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/plc_snap`, 'prepare')).status, 200)
    await eventually(async () => (await value('plc_snap', 'temperature')) === 6.5)
    const before = await adapter('plc_snap')
    const saved = await t.call(`${SYS}/snapshots`, 'save', { label: 'modbus-master' })
    assert.equal(saved.status, 200, JSON.stringify(saved.body))
    assert.equal((await t.api('DELETE', `${SYS}/instances/plc_snap`)).status, 200)
    const load = await t.call(`${SYS}/snapshots`, 'load', { id: saved.body.result.id })
    assert.equal(load.status, 200, JSON.stringify(load.body))
    const loaded = await adapter('plc_snap')
    assert.equal(loaded.state, 'STOPPED')
    assert.equal(loaded.type, before.type)
    assert.deepEqual(Object.keys(loaded.attr).sort(), Object.keys(before.attr).sort())
    await server.set('h_r', 0, floatWords(7.5))
    assert.equal((await t.call(`${SYS}/instances/plc_snap`, 'prepare')).status, 200)
    await eventually(async () => (await value('plc_snap', 'temperature')) === 7.5)
    assert.equal((await adapter('plc_snap')).state, 'CONNECTED')
    assert.equal((await t.call(`${SYS}/instances/plc_snap`, 'stop')).status, 200)

    const bad = plcModel({ port: 'eighty', bogus_key: 1 })
    ;(bad.communication as Array<{ modbus_master: { bindings: Array<Record<string, unknown>> } }>)[0]!.modbus_master.bindings[1]!.direction = 'outbound'
    const res = await t.api('PUT', `${SYS}/models`, { Bad: bad })
    assert.equal(res.status, 422, JSON.stringify(res.body))
    const paths = (res.body.error.details as Array<{ path: string }>).map((d) => d.path)
    for (const end of ['bogus_key', 'port', 'bindings[1].direction']) {
      assert.ok(
        paths.some((p) => p.startsWith('communication') && p.endsWith(end)),
        `${end} not in ${paths.join(', ')}`,
      )
    }
  })

  it('rtu_over_tcp: polls pymodbus serving RTU frames over TCP', async () => {
    const port = await freePort()
    const server = await device([port], { rtu: true })
    await server.set('h_r', 0, floatWords(12.75))
    await server.set('i_r', 10, [3])
    assert.equal((await t.api('PUT', `${SYS}/models`, { PlcRtu: plcModel({ port, transport: 'rtu_over_tcp', slave_id: 7 }) })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { plc_rtu: 'PlcRtu' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/plc_rtu`, 'prepare')).status, 200)
    await eventually(async () => (await value('plc_rtu', 'temperature')) === 12.75 && (await value('plc_rtu', 'count')) === 3)
    assert.equal((await t.api('PUT', `${SYS}/instances/plc_rtu/attributes/setpoint/attr/internal_value`, { value: -7.5 })).status, 200)
    await eventually(async () => wordsFloat(await server.get('h_r', 20, 2)) === -7.5)
    assert.equal((await adapter('plc_rtu')).attr.transport.value, 'rtu_over_tcp')
    // Its trace holds each request and answer, as its devices saw them.
    const tail = (await t.call(node('plc_rtu'), 'tail', { limit: 200 })).body.result as Array<Record<string, unknown>>
    const read = tail.find((e) => e.operation === 'read' && e.function === 3 && e.address === 0)
    assert.deepEqual(
      { ...read, seq: 0, time: '', latency: 0 },
      {
        seq: 0,
        time: '',
        latency: 0,
        operation: 'read',
        direction: 'out',
        device: `127.0.0.1:${port}`,
        unit: 7,
        function: 3,
        address: 0,
        count: 2,
        values: floatWords(12.75),
        ...(read?.attributes !== undefined && { attributes: read.attributes }),
      },
    )
    const write = [...tail].reverse().find((e) => e.operation === 'write' && e.function === 16 && e.address === 20)
    assert.deepEqual(write?.values, floatWords(-7.5))
    assert.equal((await t.call(`${SYS}/instances/plc_rtu`, 'stop')).status, 200)
  })

  it('udp: polls pymodbus serving Modbus UDP, writes back, and goes FAILED naming the device once nothing answers there', async () => {
    const port = await freeUdpPort()
    const server = await device([port], { udp: true })
    await server.set('h_r', 0, floatWords(21.5))
    await server.set('i_r', 10, [77])
    assert.equal((await t.api('PUT', `${SYS}/models`, { PlcUdp: plcModel({ port, transport: 'udp', slave_id: 2 }) })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { plc_udp: 'PlcUdp' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/plc_udp`, 'prepare')).status, 200)
    await eventually(async () => (await value('plc_udp', 'temperature')) === 21.5 && (await value('plc_udp', 'count')) === 77)
    assert.equal((await t.api('PUT', `${SYS}/instances/plc_udp/attributes/setpoint/attr/internal_value`, { value: 6.25 })).status, 200)
    await eventually(async () => wordsFloat(await server.get('h_r', 20, 2)) === 6.25)
    let body = await adapter('plc_udp')
    assert.equal(body.state, 'CONNECTED')
    assert.equal(body.attr.transport.value, 'udp')
    const tail = (await t.call(node('plc_udp'), 'tail', { limit: 200, function: 3 })).body.result as Array<Record<string, unknown>>
    assert.ok(
      tail.some((e) => e.device === `127.0.0.1:${port}` && e.unit === 2 && e.address === 0 && JSON.stringify(e.values) === JSON.stringify(floatWords(21.5))),
      JSON.stringify(tail.slice(-3)),
    )
    // Nothing answers on the port any more: the polls fail, naming the device, until FAILED.
    await server.stop()
    devices.splice(devices.indexOf(server), 1)
    body = await eventually(async () => {
      const b = await adapter('plc_udp')
      return b.state === 'FAILED' && b
    }, 15_000)
    assert.match(body.attr.last_error.value, new RegExp(`127\\.0\\.0\\.1:${port}`))
    assert.equal((await t.call(`${SYS}/instances/plc_udp`, 'stop')).status, 200)
  })

  it('serial: polls pymodbus serving Modbus RTU on a serial line (a socat pty pair)', async () => {
    const pair = await ptyPair()
    try {
      const server = await device([], { serial: { device: pair.a, baudrate: 19200 } })
      await server.set('h_r', 0, floatWords(-40.125))
      await server.set('i_r', 10, [1234])
      const model = plcModel({ transport: 'serial', device: pair.b, baudrate: 19200, slave_id: 5 })
      delete (model.communication as Array<{ modbus_master: Record<string, unknown> }>)[0]!.modbus_master.host
      assert.equal((await t.api('PUT', `${SYS}/models`, { PlcSerial: model })).status, 200)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { plc_serial: 'PlcSerial' })).status, 200)
      assert.equal((await t.call(`${SYS}/instances/plc_serial`, 'prepare')).status, 200)
      await eventually(async () => (await value('plc_serial', 'temperature')) === -40.125 && (await value('plc_serial', 'count')) === 1234)
      assert.equal((await t.api('PUT', `${SYS}/instances/plc_serial/attributes/setpoint/attr/internal_value`, { value: 3.5 })).status, 200)
      await eventually(async () => wordsFloat(await server.get('h_r', 20, 2)) === 3.5)
      const body = await adapter('plc_serial')
      assert.equal(body.state, 'CONNECTED')
      assert.equal(body.attr.device.value, pair.b)
      assert.deepEqual(
        body.attr.devices.value.map((d: { address: string }) => d.address),
        [pair.b],
      )
      assert.equal((await t.call(`${SYS}/instances/plc_serial`, 'stop')).status, 200)
    } finally {
      await pair.close()
    }
  })

  it('Mimic to Mimic: a modbus_master instance polls a modbus_slave instance of the same server', async () => {
    const meter = {
      attributes: { power: 0.0, limit: 0.0 },
      communication: [
        {
          modbus_slave: {
            host: '127.0.0.1',
            port: 0,
            unit_id: 3,
            mapping: { power: { address: [0, 1], group: 'i_r', type: 'float' }, limit: { address: [10, 11], group: 'h_r', type: 'float' } },
          },
        },
      ],
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Meter: meter })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { meter: 'Meter' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/meter`, 'prepare')).status, 200)
    const port = (await t.api('GET', `${SYS}/instances/meter/communication/modbus_slave`)).body.attr.port.value as number
    const controller = {
      attributes: { measured: 0.0, limit: 5.0, link_ok: false, answered: 0 },
      // The reference product's runtime properties of the adapter, read by the model's actions.
      actions: [
        { function: '$out(link_ok)', call: '$attr(communication.modbus_master.connected)' },
        { function: '$out(answered)', call: '$attr(communication.modbus_master.request_count)' },
      ],
      communication: [
        {
          modbus_master: {
            port,
            slave_id: 3,
            poll_interval: 0.2,
            bindings: [
              { area: 'i_r', address: [0, 1], codec: 'float', attribute: 'measured' },
              { area: 'h_r', address: [10, 11], codec: 'float', direction: 'outbound', attribute: 'limit' },
            ],
          },
        },
      ],
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Controller: controller })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { controller: 'Controller' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/controller`, 'prepare')).status, 200)
    // The controller writes its limit at once; the meter's power reaches the controller.
    await eventually(async () => (await value('meter', 'limit')) === 5)
    assert.equal((await t.api('PUT', `${SYS}/instances/meter/attributes/power/attr/internal_value`, { value: 17.25 })).status, 200)
    await eventually(async () => (await value('controller', 'measured')) === 17.25)
    assert.equal((await t.api('PUT', `${SYS}/instances/controller/attributes/limit/attr/internal_value`, { value: 8.5 })).status, 200)
    await eventually(async () => (await value('meter', 'limit')) === 8.5)
    assert.equal((await adapter('controller')).state, 'CONNECTED')
    assert.equal((await t.call(`${SYS}/instances/controller`, 'run')).status, 200)
    assert.equal(await value('controller', 'link_ok'), true)
    assert.ok(((await value('controller', 'answered')) as number) > 0)
    for (const i of ['controller', 'meter']) assert.equal((await t.call(`${SYS}/instances/${i}`, 'stop')).status, 200)
  })

  it("the catalog's PLC model runs unchanged and polls a drive and a meter on the ports its parameters name", async () => {
    const loaded = await loadDefinitionFile(join(FIXTURES, 'plc_controller__modbus_master.yaml'), modelBehaviourProblems)
    assert.deepEqual(loaded.details, [])
    // Its defaults are 5030 (drive) and 5023 (meter), where other programs and tests may listen: a
    // user points the instance elsewhere with the model's own parameters, and so does this test.
    const drivePort = await freePort()
    const meterPort = await freePort()
    const server = await device([drivePort, meterPort])
    await server.set('h_r', 12741, [9]) // status word: the fault bit (8) of the low nibble
    await server.set('h_r', 12742, [25]) // speed feedback, 1 Hz per unit
    await server.set('i_r', 3060, floatWords(12.5)) // active power, kW
    await server.set('i_r', 3110, floatWords(50)) // frequency, Hz
    await server.set('h_r', 45100, floatWords(1234.5)) // energy import, kWh
    assert.equal((await t.api('PUT', `${SYS}/models`, { plc_controller__modbus_master: loaded.data })).status, 200)
    const put = await t.api('PUT', `${SYS}/instances`, {
      cell: { type: 'plc_controller__modbus_master', parameters: { drive_port: drivePort, meter_port: meterPort } },
    })
    assert.equal(put.status, 200, JSON.stringify(put.body))
    assert.equal((await t.call(`${SYS}/instances/cell`, 'prepare')).status, 200)
    await eventually(async () => (await value('cell', 'meter_energy_import_total_kwh')) === 1234.5)
    assert.equal(await value('cell', 'drive_status_word_raw'), 9)
    assert.equal(await value('cell', 'drive_speed_actual_raw'), 25)
    assert.equal(await value('cell', 'meter_active_power_total_kw'), 12.5)
    assert.equal(await value('cell', 'meter_frequency_hz'), 50)
    const body = await adapter('cell')
    assert.equal(body.state, 'CONNECTED')
    assert.deepEqual(
      body.attr.devices.value.map((d: { address: string }) => d.address),
      [`127.0.0.1:${drivePort}`, `127.0.0.1:${meterPort}`],
    )

    // Its actions run on the mirrored values, and the commands they compute reach the drive.
    for (const [attr, v] of [
      ['k__drive_run_enable', 1],
      ['k__drive_speed_setpoint_hz', 30.0],
    ] as const) {
      assert.equal((await t.api('PUT', `${SYS}/instances/cell/attributes/${attr}/attr/internal_value`, { value: v })).status, 200)
    }
    assert.equal((await t.call(`${SYS}/instances/cell`, 'run')).status, 200)
    assert.equal(await value('cell', 'drive_fault_active'), 1)
    assert.equal(await value('cell', 'drive_speed_actual_hz'), 25)
    assert.equal(await value('cell', 'drive_run_effective'), 1)
    await eventually(async () => (await server.get('h_r', 12761, 2)).join() === '1,30')

    // The power limit trips: the drive's commands go back to 0.
    assert.equal((await t.api('PUT', `${SYS}/instances/cell/attributes/k__power_limit_kw/attr/internal_value`, { value: 3.0 })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/cell`, 'run')).status, 200)
    assert.equal(await value('cell', 'power_limit_active'), 1)
    await eventually(async () => (await server.get('h_r', 12761, 2)).join() === '0,0')
    assert.equal((await t.call(`${SYS}/instances/cell`, 'stop')).status, 200)
  })
})
