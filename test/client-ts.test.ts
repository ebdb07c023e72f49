import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { createServer as createNetServer, connect as netConnect, type Server, type Socket } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { connect, MimicApiError, MimicConnectionError, type MimicClient, type ModelDefinition } from '../src/client/index.js'
import { EXAMPLE_EXTENSIONS, startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

const PT100_PY = readFileSync(join(EXAMPLE_EXTENSIONS, 'pt100.py'), 'utf8')

// The seed's sensor: behaviour in a Python class, structure in YAML, temperature on Modbus.
// Port 0 lets the OS choose, so parallel test files never compete for 5020.
const PT100_YAML = `
description: PT100 in a heated tank
attributes:
  temperature: { default: 20.0, type: float, unit: degC }
  setpoint: { default: 60.0, type: float }
  heater_on: { default: true, type: bool }
  alarm: { default: false, type: bool }
import:
  pt100.py:
    class: Pt100Sensor
    init: { kwargs: { ambient: 20.0, tau: 30.0 } }
    attributes:
      temperature: { property: temperature }
    methods: { run: tick, calibrate: calibrate }
communication:
  - modbus_slave:
      host: 127.0.0.1
      port: 0
      unit_id: 1
      mapping:
        temperature: { address: [0, 1], group: h_r, type: float }
`

const DISPLAY: ModelDefinition = { attributes: { value: { default: 0.0, type: 'float' }, label: 'Tank' } }

/** Reads `count` holding registers with function code 3 and returns the raw register bytes. */
async function readHoldingRegisters(opts: { port: number; unitId: number; address: number; count: number }): Promise<Buffer> {
  const request = Buffer.alloc(12)
  request.writeUInt16BE(7, 0) // transaction id
  request.writeUInt16BE(0, 2) // protocol id
  request.writeUInt16BE(6, 4) // bytes that follow
  request.writeUInt8(opts.unitId, 6)
  request.writeUInt8(3, 7)
  request.writeUInt16BE(opts.address, 8)
  request.writeUInt16BE(opts.count, 10)
  const socket: Socket = netConnect({ host: '127.0.0.1', port: opts.port })
  try {
    return await new Promise<Buffer>((resolve, reject) => {
      let received = Buffer.alloc(0)
      const timer = setTimeout(() => reject(new Error('no Modbus answer within 3 s')), 3000)
      socket.on('error', (err) => (clearTimeout(timer), reject(err)))
      socket.on('connect', () => socket.write(request))
      socket.on('data', (chunk) => {
        received = Buffer.concat([received, chunk])
        if (received.length < 9) return
        clearTimeout(timer)
        if (received.readUInt16BE(0) !== 7 || received.readUInt8(7) !== 3) return reject(new Error(`unexpected Modbus answer ${received.toString('hex')}`))
        resolve(received.subarray(9, 9 + received.readUInt8(8)))
      })
    })
  } finally {
    socket.destroy()
  }
}

async function modbusTemperature(sim: MimicClient, instance: string): Promise<number> {
  const port = await sim.instances.at(instance).communication.node('modbus_slave').read<number>('port')
  return (await readHoldingRegisters({ port, unitId: 1, address: 0, count: 2 })).readFloatBE(0)
}

/** What the PT100 class computes after `steps` ticks of dt = 1 s from 20 °C towards 60 °C. */
function expectedTemperature(steps: number): number {
  return 60 - 40 * (29 / 30) ** steps
}

async function rejection(promise: Promise<unknown>): Promise<MimicApiError> {
  try {
    await promise
  } catch (err) {
    assert.ok(err instanceof MimicApiError, `expected a MimicApiError, got ${String(err)}`)
    return err
  }
  assert.fail('expected the call to fail')
}

async function listen(server: Server | ReturnType<typeof createHttpServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  assert.ok(address && typeof address === 'object')
  return address.port
}

describe('TypeScript client against a live server: the seed flow', () => {
  let t: TestServer
  let sim: MimicClient
  before(async () => {
    t = await startTestServer({ files: { 'pt100.py': PT100_PY } })
    sim = connect({ address: t.url, productKey: TEST_KEY })
  })
  after(async () => t.close())

  it('defines, prepares, runs, reads and writes, serves Modbus, snapshots and loads back', async () => {
    assert.equal((await sim.health()).api_version, 'v3')

    await sim.models.set('pt100', PT100_YAML)
    await sim.models.set('Display', DISPLAY)
    assert.deepEqual(await sim.models.keys(), ['pt100', 'Display'])
    const stored = await sim.models.get('pt100')
    assert.equal(stored.description, 'PT100 in a heated tank')
    assert.deepEqual(await sim.models.get('Display'), DISPLAY)

    const s1 = await sim.instances.set('s1', 'pt100')
    assert.deepEqual(await sim.instances.keys(), ['s1'])
    assert.equal(await s1.state(), 'INITIALIZED')

    assert.equal(await s1.polling.disable(), true)
    assert.equal(await s1.polling.enabled(), false)
    assert.equal(await s1.prepare(), true)
    assert.equal(await s1.state(), 'PREPARED')

    const steps = 5
    for (let i = 0; i < steps; i++) assert.equal(await s1.run(), true)
    const temperature = s1.attributes.at<number>('temperature')
    assert.ok(Math.abs((await temperature.internalValue()) - expectedTemperature(steps)) < 1e-9)

    assert.equal(await temperature.setInternalValue(50), 50)
    assert.equal(await temperature.internalValue(), 50)
    assert.equal(await modbusTemperature(sim, 's1'), 50)

    assert.deepEqual(await s1.call('calibrate', { offset: 0.5 }), { offset: 0.5, temperature: 50.5 })
    assert.equal(await temperature.internalValue(), 50.5)

    await sim.node('instances/s1/timer').set('time', 1.5)
    assert.equal(await s1.timer.read('time'), 1.5)

    const saved = await sim.snapshots.save({ label: 'before', notes: 'one sensor' })
    assert.match(saved.id, /\S/)
    assert.equal(saved.in_memory, true)
    assert.equal(saved.label, 'before')
    assert.equal(saved.notes, 'one sensor')
    assert.ok(saved.persisted_path.startsWith(t.snapshots), saved.persisted_path)
    assert.ok(!Number.isNaN(Date.parse(saved.created_at)))

    // Change the structure: the sensor and its model go, a display comes.
    assert.equal((await sim.instances.delete('s1')).destroyed, true)
    await sim.models.delete('pt100')
    await sim.instances.set('panel', 'Display')
    assert.deepEqual(await sim.instances.keys(), ['panel'])
    assert.equal(await sim.models.has('pt100'), false)

    const loaded = await sim.snapshots.load({ id: saved.id })
    assert.deepEqual(loaded, { id: saved.id, loaded: true, models: 2, instances: 1, connections: 0 })
    assert.deepEqual(await sim.instances.keys(), ['s1'])
    assert.equal(await sim.models.has('pt100'), true)
    // Structure only: the instance starts fresh, with its default value.
    assert.equal(await s1.state(), 'INITIALIZED')
    await s1.prepare()
    assert.equal(await temperature.internalValue(), 20)
    assert.equal(await modbusTemperature(sim, 's1'), 20)

    const list = await sim.snapshots.list()
    const entry = list.in_memory.find((s) => s.id === saved.id)
    assert.equal(entry?.label, 'before')
    assert.equal(list.files.find((f) => f.id === saved.id)?.path, saved.persisted_path)
  })

  it('runs the system root and reads any node by path', async () => {
    await sim.instances.set('panel2', 'Display')
    assert.equal(await sim.prepare(), true)
    assert.equal(await sim.run({ steps: 3, dt: 0.5 }), true)
    assert.equal(await sim.timer.read('time'), 1.5)
    const doc = await sim.node('instances/panel2/attributes/label').get()
    assert.equal(doc.attr.internal_value?.value, 'Tank')
    assert.equal(await sim.instances.at('panel2').attributes.at('label').setExternalValue('Boiler'), 'Boiler')
    assert.deepEqual((await sim.node(['instances', 'panel2']).delete()).removed_from_parent, true)
  })

  it('turns faults into MimicApiError with the fault message, status and correlation id', async () => {
    const invalid = await rejection(sim.models.set('bad', 'attributes: 5\nimport:\n  x.py: {}\n'))
    assert.equal(invalid.status, 422)
    assert.equal(invalid.fault?.error.type, 'ValidationError')
    assert.equal(invalid.message, invalid.fault?.error.message)
    assert.deepEqual(invalid.details.map((d) => d.path).sort(), ['attributes', 'import.x.py.class'])
    assert.match(invalid.correlationId ?? '', /^[0-9a-f-]{36}$/)
    assert.equal(invalid.correlationId, invalid.fault?.correlation_id)
    assert.ok(!(invalid instanceof MimicConnectionError))

    const unknownModel = await rejection(sim.instances.set('x', 'no_such_model'))
    assert.equal(unknownModel.status, 404)
    assert.match(unknownModel.message, /no_such_model/)

    const userCode = await rejection(sim.instances.at('s1').call('calibrate', { offset: 'abc' }))
    assert.equal(userCode.status, 500)
    assert.match(userCode.message, /ValueError: could not convert string to float/)
    assert.equal(await sim.instances.at('s1').state(), 'PREPARED', 'the instance keeps working')

    const missing = await rejection(sim.snapshots.load({ id: 'no-such-snapshot' }))
    assert.equal(missing.status, 404)
    assert.match(missing.message, /File not found/)

    const wrongKey = await rejection(connect({ address: t.url, productKey: 'wrong' }).instances.keys())
    assert.equal(wrongKey.status, 401)
    assert.equal(wrongKey.fault?.event, 'unauthorized')

    await assert.rejects(sim.models.set('bad', 'attributes: [unclosed'), TypeError)
  })
})

describe('TypeScript client: connections', () => {
  it('a server that is down gives a MimicConnectionError at once', async () => {
    const probe = createNetServer()
    const port = await listen(probe)
    await new Promise((resolve) => probe.close(resolve))
    const started = Date.now()
    const err = await rejection(connect({ address: `http://127.0.0.1:${port}`, productKey: 'k' }).instances.keys())
    assert.ok(Date.now() - started < 2000)
    assert.ok(err instanceof MimicConnectionError)
    assert.equal(err.status, 0)
    assert.equal(err.code, 'MIMIC_CONNECTION_ERROR')
    assert.equal(err.timedOut, false)
    assert.match(err.message, new RegExp(`Cannot reach the Mimic server at http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`))
  })

  it('a server that never answers gives a MimicConnectionError after the timeout, not a hang', async () => {
    const sockets = new Set<Socket>()
    const silent = createNetServer((socket) => void sockets.add(socket))
    const port = await listen(silent)
    try {
      const started = Date.now()
      const err = await rejection(connect({ address: `127.0.0.1:${port}`, productKey: 'k', timeoutMs: 300 }).health())
      assert.ok(Date.now() - started < 2000)
      assert.ok(err instanceof MimicConnectionError)
      assert.equal(err.timedOut, true)
      assert.match(err.message, /No answer from the Mimic server at http:\/\/127\.0\.0\.1:\d+ within 300 ms/)
    } finally {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    }
  })

  it('reuses keep-alive connections across calls', async () => {
    let connections = 0
    const server = createHttpServer((_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ status: 'ok', server_version: '0.0.0', api_version: 'v3' }))
    })
    server.on('connection', () => connections++)
    const port = await listen(server)
    try {
      const client = connect({ address: `http://127.0.0.1:${port}` })
      for (let i = 0; i < 10; i++) assert.equal((await client.health()).status, 'ok')
      // undici may open a spare socket next to the first one; without keep-alive this would be 10.
      assert.ok(connections <= 2, `${connections} connections for 10 requests`)
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('rejects an unusable address before sending anything', () => {
    assert.throws(() => connect({ address: 'ftp://127.0.0.1:21' }), TypeError)
    assert.throws(() => connect({ address: 'http://127.0.0.1:8000', timeoutMs: 0 }), RangeError)
  })
})
