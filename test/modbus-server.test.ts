import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { peerSkipReason, run, TestClient, registersOf, exceptionOf } from './unit/modbus/helpers.js'
import { freePort, startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const PYMODBUS = new URL('./unit/modbus/pymodbus-client.py', import.meta.url).pathname

const SENSOR_PY = `
class Sensor:
    def __init__(self, start=25.0):
        self.temperature = start
        self._setpoint = 20.0
        self.setter_calls = 0
    @property
    def setpoint(self):
        return self._setpoint
    @setpoint.setter
    def setpoint(self, value):
        self.setter_calls += 1
        self._setpoint = value
    def status(self):
        return 7
    def tick(self):
        self.temperature += 1.0
    def calls(self):
        return self.setter_calls
`

function model(port: number, unitId: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    attributes: { temperature: 0.0, setpoint: 0.0, status: 0, alarm: false, counter: { default: 3, type: 'int' }, name: 'tank-A' },
    import: {
      'sensor.py': {
        class: 'Sensor',
        attributes: { temperature: { property: 'temperature' }, setpoint: { property: 'setpoint' }, status: { getter: 'status' } },
        methods: { run: 'tick', calls: 'calls' },
      },
    },
    communication: [
      {
        modbus_slave: {
          host: '127.0.0.1',
          port,
          unit_id: unitId,
          ...extra,
          mapping: {
            temperature: { address: [0, 1], group: 'h_r', type: 'float' },
            setpoint: { address: [2, 3], group: 'h_r', type: 'float', word_order: 'little' },
            status: { address: 4, group: 'h_r', type: 'uint_16' },
            counter: { address: 0, group: 'i_r', type: 'int_16', scale: 0.5 },
            alarm: { address: 0, group: 'c_o', type: 'bool' },
            name: { address: [10, 13], group: 'h_r', type: 'str' },
          },
        },
      },
    ],
  }
}

async function pymodbus(port: number, operations: unknown[]): Promise<any[]> {
  const res = await run('/usr/bin/python3', [PYMODBUS, String(port)], { input: JSON.stringify(operations) })
  assert.equal(res.code, 0, res.stderr)
  return JSON.parse(res.stdout)
}

describe('Modbus TCP through the running server', () => {
  let t: TestServer
  let port: number
  const skip = peerSkipReason('pymodbus', { command: '/usr/bin/python3', args: ['-c', 'import pymodbus'] }, 'apt-get install python3-pymodbus')
  before(async () => {
    t = await startTestServer({ files: { 'sensor.py': SENSOR_PY } })
    port = await freePort()
    assert.equal((await t.api('PUT', `${SYS}/models`, { Tank: model(port, 1), Tank2: model(port, 2) })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { tank1: 'Tank', tank2: 'Tank2' })).status, 200)
  })
  after(async () => t.close())

  it('prepare starts the adapter; two instances share one port by unit id; pymodbus reads the Python values', { skip }, async () => {
    for (const i of ['tank1', 'tank2']) assert.equal((await t.call(`${SYS}/instances/${i}`, 'prepare')).status, 200)
    await t.call(`${SYS}/instances/tank2`, 'run')
    const node = (await t.api('GET', `${SYS}/instances/tank1/communication/modbus_slave`)).body
    assert.equal(node.state, 'RUNNING')
    assert.equal(node.port, port)
    assert.equal(node.unit_id, 1)
    assert.equal(node.host, '127.0.0.1')
    assert.ok(node.mapping.temperature)
    const results = await pymodbus(port, [
      { op: 'read', group: 'h_r', address: 0, count: 2, type: 'float', unit: 1 },
      { op: 'read', group: 'h_r', address: 0, count: 2, type: 'float', unit: 2 },
      { op: 'read', group: 'h_r', address: 2, count: 2, type: 'float', word_order: 'little', unit: 1 },
      { op: 'read', group: 'h_r', address: 4, count: 1, type: 'uint_16', unit: 1 },
      { op: 'read', group: 'i_r', address: 0, count: 1, type: 'int_16', unit: 1 },
      { op: 'read', group: 'h_r', address: 10, count: 4, type: 'str', unit: 1 },
      { op: 'read', group: 'c_o', address: 0, count: 1, unit: 1 },
    ])
    assert.deepEqual(
      results.map((r) => r.value ?? r.bits),
      [25, 26, 20, 7, 6, 'tank-A', [false]],
    )
    const counters = (await t.api('GET', `${SYS}/instances/tank1/communication/modbus_slave`)).body.counters
    assert.ok(counters.requests >= 6)
  })

  it('registers carry the external value; client writes set the internal value through the Python setter', { skip }, async () => {
    const attrs = `${SYS}/instances/tank1/attributes`
    await t.api('PUT', `${attrs}/temperature/attr/external_value`, { value: 99.5 })
    const [presented] = await pymodbus(port, [{ op: 'read', group: 'h_r', address: 0, count: 2, type: 'float', unit: 1 }])
    assert.equal(presented.value, 99.5)

    const writes = await pymodbus(port, [
      { op: 'write', address: 2, type: 'float', word_order: 'little', value: 42.25, unit: 1 },
      { op: 'write_coil', address: 0, value: true, unit: 1 },
      { op: 'write', address: 10, type: 'str', width: 4, value: 'tankB', unit: 1 },
    ])
    for (const w of writes) assert.equal(w.ok, true, JSON.stringify(w))
    assert.deepEqual((await t.api('GET', `${attrs}/setpoint/attr/internal_value`)).body, { value: 42.25 })
    assert.deepEqual((await t.api('GET', `${attrs}/alarm/attr/internal_value`)).body, { value: true })
    assert.deepEqual((await t.api('GET', `${attrs}/name/attr/internal_value`)).body, { value: 'tankB' })
    assert.deepEqual((await t.call(`${SYS}/instances/tank1`, 'calls')).body.result, 1, 'the Python setter ran once')
  })

  it('writes to a read-only group or a getter-only attribute are refused with an exception and change nothing', { skip }, async () => {
    const results = await pymodbus(port, [
      { op: 'write_register', address: 4, value: 99, unit: 1 },
      { op: 'read', group: 'h_r', address: 4, count: 1, type: 'uint_16', unit: 1 },
      { op: 'read', group: 'h_r', address: 5, count: 3, unit: 1 },
    ])
    assert.equal(results[0].exception, 2, JSON.stringify(results[0]))
    assert.equal(results[1].value, 7)
    assert.equal(results[2].exception, 2, 'an unmapped range is an illegal data address')
  })

  it('mbpoll (an independent client) reads the float', async (ctx) => {
    const reason = peerSkipReason('mbpoll', { command: 'sh', args: ['-c', 'command -v mbpoll'] }, 'apt-get install mbpoll')
    if (reason) return ctx.skip(reason)
    await t.api('PUT', `${SYS}/instances/tank2/attributes/temperature/attr/internal_value`, { value: 12.5 })
    const res = await run('mbpoll', ['-m', 'tcp', '-a', '2', '-r', '1', '-c', '2', '-t', '4:float', '-B', '-1', '-p', String(port), '127.0.0.1'])
    assert.equal(res.code, 0, res.stderr)
    assert.match(res.stdout, /\[1\]:\s+12\.5/)
  })

  it('HTTP writes a mapped value cannot carry are a 422 naming the adapter', async () => {
    const res = await t.api('PUT', `${SYS}/instances/tank1/attributes/counter/attr/internal_value`, { value: 1_000_000 })
    assert.equal(res.status, 422)
    assert.match(res.body.error.message, /modbus_slave/)
    assert.deepEqual((await t.api('GET', `${SYS}/instances/tank1/attributes/counter/attr/internal_value`)).body, { value: 3 })
  })

  it('detach keeps the listener open but silent; attach restores answers', async () => {
    const adapter = `${SYS}/instances/tank1/communication/modbus_slave`
    const client = await TestClient.connect(port)
    try {
      assert.equal((await t.call(adapter, 'detach')).status, 200)
      assert.equal((await t.api('GET', adapter)).body.state, 'DETACHED')
      await assert.rejects(client.request({ fc: 3, address: 0, quantity: 2 }, { unitId: 1, timeoutMs: 300 }), /time-out/)
      const other = await client.request({ fc: 3, address: 0, quantity: 2 }, { unitId: 2 })
      assert.equal(exceptionOf(other), null, 'the other unit on the port still answers')
      assert.equal((await t.call(adapter, 'attach')).status, 200)
      const back = await client.request({ fc: 3, address: 0, quantity: 2 }, { unitId: 1 })
      assert.equal(registersOf(back).length, 2)
    } finally {
      client.close()
    }
  })

  it('a duplicate unit id on a port is a 422; a port held by another program is a 409', async () => {
    await t.api('PUT', `${SYS}/instances`, { clash: 'Tank' })
    const dup = await t.call(`${SYS}/instances/clash`, 'prepare')
    assert.equal(dup.status, 422, JSON.stringify(dup.body))
    assert.match(dup.body.error.message, /unit/i)
    assert.equal((await t.api('GET', `${SYS}/instances/clash`)).body.state, 'ERROR')
    await t.api('DELETE', `${SYS}/instances/clash`)

    // Mimic's own listener on 127.0.0.1 holds the port for 0.0.0.0 too: the fault says so, not "another program".
    await t.api('PUT', `${SYS}/models`, { Everywhere: model(port, 3, { host: '0.0.0.0' }) })
    await t.api('PUT', `${SYS}/instances`, { everywhere: 'Everywhere' })
    const wide = await t.call(`${SYS}/instances/everywhere`, 'prepare')
    assert.equal(wide.status, 409, JSON.stringify(wide.body))
    assert.deepEqual(
      wide.body.error.details.map((d: { path: string }) => d.path),
      ['host'],
    )
    assert.match(
      wide.body.error.message,
      new RegExp(`port ${port} is already served by Mimic on 127\\.0\\.0\\.1: a listener on 0\\.0\\.0\\.0 cannot share it.*same host, or another port`),
    )
    await t.api('DELETE', `${SYS}/instances/everywhere`)
    await t.api('DELETE', `${SYS}/models/Everywhere`)

    // A text instrument asked for the Modbus port: the fault names the Modbus server that has it.
    const ascii = { attributes: { level: 1.0 }, communication: { ascii: { host: '127.0.0.1', port, mappings: { 'LEVEL?': 'level' } } } }
    await t.api('PUT', `${SYS}/models`, { Scpi: ascii })
    await t.api('PUT', `${SYS}/instances`, { scpi: 'Scpi' })
    const other = await t.call(`${SYS}/instances/scpi`, 'prepare')
    assert.equal(other.status, 409, JSON.stringify(other.body))
    assert.equal(
      other.body.error.message,
      `Cannot open an ascii endpoint: tcp port ${port} is already used by Mimic: the Modbus server of units 1, 2 listens on it (tcp on 127.0.0.1); give this one another port`,
    )
    await t.api('DELETE', `${SYS}/instances/scpi`)
    await t.api('DELETE', `${SYS}/models/Scpi`)
    // So does an embedded MQTT broker asked for it.
    await t.api('PUT', `${SYS}/models`, { Broker: { attributes: { up: true }, communication: { mqtt: { broker: 'embedded', port, bindings: [] } } } })
    await t.api('PUT', `${SYS}/instances`, { broker: 'Broker' })
    const broker = await t.call(`${SYS}/instances/broker`, 'prepare')
    assert.equal(broker.status, 409, JSON.stringify(broker.body))
    assert.match(broker.body.error.message, new RegExp(`port ${port} is already used by Mimic: the Modbus server of units 1, 2 listens on it`))
    await t.api('DELETE', `${SYS}/instances/broker`)
    await t.api('DELETE', `${SYS}/models/Broker`)
    // And an OPC UA server, whose library reports the port in use in its own words.
    await t.api('PUT', `${SYS}/models`, {
      Ua: { attributes: { n: 1.0 }, communication: { opcua_server: { host: '127.0.0.1', port, bindings: [{ attribute: 'n' }] } } },
    })
    await t.api('PUT', `${SYS}/instances`, { ua: 'Ua' })
    const ua = await t.call(`${SYS}/instances/ua`, 'prepare')
    assert.equal(ua.status, 409, JSON.stringify(ua.body))
    assert.match(ua.body.error.message, new RegExp(`^Cannot start the OPC UA server: port ${port} is already used by Mimic: the Modbus server of units 1, 2`))
    await t.api('DELETE', `${SYS}/instances/ua`)
    await t.api('DELETE', `${SYS}/models/Ua`)

    const blocker: Server = createServer()
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r))
    const taken = (blocker.address() as { port: number }).port
    try {
      await t.api('PUT', `${SYS}/models`, { Blocked: model(taken, 1) })
      await t.api('PUT', `${SYS}/instances`, { blocked: 'Blocked' })
      const res = await t.call(`${SYS}/instances/blocked`, 'prepare')
      assert.equal(res.status, 409, JSON.stringify(res.body))
      assert.match(res.body.error.message, new RegExp(String(taken)))
      assert.equal((await t.api('GET', '/health')).status, 200)
    } finally {
      blocker.close()
    }
  })

  it('response_delay holds answers back so clients can test their time-outs', async () => {
    const slowPort = await freePort()
    await t.api('PUT', `${SYS}/models`, {
      Slow: {
        attributes: { v: 1.0 },
        communication: [{ modbus_slave: { port: slowPort, response_delay: 0.4, mapping: { v: { address: [0, 1], group: 'h_r', type: 'float' } } } }],
      },
    })
    await t.api('PUT', `${SYS}/instances`, { slow: 'Slow' })
    assert.equal((await t.call(`${SYS}/instances/slow`, 'prepare')).status, 200)
    const client = await TestClient.connect(slowPort)
    try {
      await assert.rejects(client.request({ fc: 3, address: 0, quantity: 2 }, { timeoutMs: 100 }), /time-out/)
      const answer = await client.request({ fc: 3, address: 0, quantity: 2 }, { timeoutMs: 3000 })
      assert.equal(registersOf(answer).length, 2)
    } finally {
      client.close()
    }
  })

  it('stop, delete and a snapshot load close the listener', async () => {
    const slowPort = (await t.api('GET', `${SYS}/instances/slow/communication/modbus_slave`)).body.port
    await t.call(`${SYS}/instances/slow`, 'stop')
    assert.equal((await t.api('GET', `${SYS}/instances/slow/communication/modbus_slave`)).body.state, 'STOPPED')
    await assert.rejects(TestClient.connect(slowPort))
    await t.call(`${SYS}/instances/slow`, 'start')
    const client = await TestClient.connect(slowPort)
    client.close()
    await t.api('DELETE', `${SYS}/instances/slow`)
    await assert.rejects(TestClient.connect(slowPort))

    const saved = (await t.call(`${SYS}/snapshots`, 'save')).body.result
    const c2 = await TestClient.connect(port)
    assert.equal((await t.call(`${SYS}/snapshots`, 'load', { id: saved.id })).status, 200)
    await c2.closed
    await assert.rejects(TestClient.connect(port))
  })
})
