import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { serveProcess } from './helpers/process.js'
import { eventually } from './helpers/wait.js'

// `mimic serve --system FILE` prepares and starts what it loaded, as the README's first steps
// expect (protocol ports open, connections carry values); --no-start and MIMIC_START=0 keep it
// stopped; an instance that cannot start leaves the server serving the others.
const ROOT = new URL('..', import.meta.url).pathname
const PT100 = ['--system', join(ROOT, 'examples/pt100/system.yaml'), '--extensions', join(ROOT, 'examples/pt100/extensions'), '--snapshots-mode', 'memory']
const SYS = '/api/v3/system'

describe('serve starts the system it loads', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-serve-start-'))
  })
  after(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('by default: the system and its instances run, the Modbus port is open and the connection carries values', async () => {
    const server = await serveProcess(PT100, { MIMIC_START: '' })
    try {
      assert.equal((await server.api('GET', SYS)).body.state, 'RUNNING')
      for (const name of ['tank_sensor', 'panel']) assert.equal((await server.api('GET', `${SYS}/instances/${name}`)).body.state, 'RUNNING', name)
      const adapter = (await server.api('GET', `${SYS}/instances/tank_sensor/communication/modbus_slave`)).body
      assert.equal(adapter.state, 'RUNNING')
      assert.ok(adapter.port > 0, JSON.stringify(adapter))
      // The port an omitted setting chose is logged once, and /health lists every listener.
      const logged = server.output().match(new RegExp(`listening on tcp 127\\.0\\.0\\.1:${adapter.port}: the Modbus server of unit 1`, 'g'))
      assert.equal(logged?.length, 1, server.output())
      const health = (await server.api('GET', '/health')).body
      assert.deepEqual(
        health.listeners.filter((l: { kind: string }) => l.kind === 'modbus_slave'),
        [{ kind: 'modbus_slave', transport: 'tcp', host: '127.0.0.1', port: adapter.port, holder: 'the Modbus server of unit 1' }],
      )
      // The connection copies the sensor's temperature to the panel without any call.
      const panel = `${SYS}/instances/panel/attributes/value/attr/internal_value`
      await eventually(async () => (await server.api('GET', panel)).body.value !== 0, 15_000)
      await server.call(SYS, 'stop')
      const temperature = (await server.api('GET', `${SYS}/instances/tank_sensor/attributes/temperature/attr/internal_value`)).body.value
      const shown = (await server.api('GET', `${SYS}/instances/panel/attributes/value/attr/internal_value`)).body.value
      assert.equal(shown, temperature)
      assert.match(server.output(), /system started/)
    } finally {
      await server.stop('SIGTERM')
    }
  })

  for (const [how, args, env] of [
    ['--no-start', ['--no-start'], { MIMIC_START: '' }],
    ['MIMIC_START=0', [], { MIMIC_START: '0' }],
  ] as const) {
    it(`${how} keeps it stopped`, async () => {
      const server = await serveProcess([...PT100, ...args], env)
      try {
        assert.equal((await server.api('GET', SYS)).body.state, 'INITIALIZED')
        assert.equal((await server.api('GET', `${SYS}/instances/tank_sensor`)).body.state, 'INITIALIZED')
      } finally {
        await server.stop('SIGTERM')
      }
    })
  }

  it('an instance that cannot start is logged with its problem, and the server serves the others', async () => {
    // A port held by another program: the first meter's Modbus listener cannot open it.
    const holder: Server = createServer()
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    const port = (holder.address() as { port: number }).port
    const file = join(dir, 'clash.yaml')
    await writeFile(
      file,
      [
        'models:',
        '  Meter:',
        '    meta_parameters: { port: { type: int, default: 0 } }',
        '    attributes: { power: { default: 1.5, type: float } }',
        '    communication:',
        '      - modbus_slave: { host: 127.0.0.1, port: $param(port), mapping: { power: { address: [0, 1], group: h_r, type: float } } }',
        'instances:',
        `  - blocked: { type: Meter, parameters: { port: ${port} } }`,
        '  - free: { type: Meter, parameters: { port: 0 } }',
        '',
      ].join('\n'),
    )
    const server = await serveProcess(['--system', file, '--snapshots-mode', 'memory'], { MIMIC_START: '' })
    try {
      assert.equal((await server.api('GET', `${SYS}/instances/free`)).body.state, 'RUNNING')
      assert.notEqual((await server.api('GET', `${SYS}/instances/blocked`)).body.state, 'RUNNING')
      assert.match(server.output(), /did not start completely/)
      assert.match(server.output(), new RegExp(`instances\\.blocked`))
    } finally {
      await server.stop('SIGTERM')
      holder.close()
    }
  })
})
