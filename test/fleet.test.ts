import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { createServer } from 'node:net'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { freePort, startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'
import { TestClient, registersOf } from './unit/modbus/helpers.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { runCli } from '../src/cli.js'
import { shardOf } from '../src/system/shard.js'

const SYS = '/api/v3/system'

/** A meter: its Modbus port and serial come from parameters and start values. */
const METER = {
  meta_parameters: { port: { type: 'int', required: true }, site: { type: 'string', default: 'north' } },
  attributes: { serial: { default: 0, type: 'int' }, power: 0.0 },
  communication: [
    { modbus_slave: { host: '127.0.0.1', port: '$param(port)', unit_id: 1, mapping: { serial: { address: 0, group: 'h_r', type: 'uint_16' } } } },
  ],
}

/** A device without a protocol: its parameters show in its attributes through actions. */
const DEVICE = {
  meta_parameters: { site: { type: 'string', default: '' }, gain: { type: 'float', default: 1.0 }, client_id: { type: 'string', default: '' } },
  attributes: { level: 0.0, site: '', gain: 0.0, client_id: '' },
  actions: [
    { function: '$out(site)', call: '$param(site)' },
    { function: '$out(gain)', call: '$param(gain)' },
    { function: '$out(client_id)', call: '$param(client_id)' },
  ],
}

/** Three ports in a row that can be listened on now. */
async function threeFreePorts(): Promise<number> {
  const canListen = (port: number): Promise<boolean> =>
    new Promise((resolve) => {
      const s = createServer()
      s.once('error', () => resolve(false))
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
    })
  for (let tries = 0; tries < 50; tries++) {
    const base = await freePort()
    if ((await canListen(base + 1)) && (await canListen(base + 2))) return base
  }
  throw new Error('no three free ports in a row')
}

async function names(t: TestServer): Promise<string[]> {
  const doc = (await t.api('GET', `${SYS}/instances`)).body
  return doc.children.map((c: { name: string }) => c.name)
}

/** Runs the CLI in this process and answers what it printed. */
async function cli(args: string[]): Promise<string> {
  const printed: string[] = []
  const log = console.log
  console.log = (...parts: unknown[]) => void printed.push(parts.join(' '))
  try {
    await runCli(['node', 'mimic', ...args])
  } finally {
    console.log = log
  }
  return printed.join('\n')
}

describe('fleets from a template: instances/method/generate', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
    assert.equal((await t.api('PUT', `${SYS}/models`, { meter: METER, device: DEVICE })).status, 200)
  })
  after(async () => t.close())

  it('1,000 Modbus meters with ports from a range; a few of them answer over Modbus TCP', async () => {
    const base = await threeFreePorts()
    const started = performance.now()
    const res = await t.call(`${SYS}/instances`, 'generate', {
      template: 'meter',
      count: 1000,
      name: 'meter_{i:04}',
      parameters: { port: { range: [base, 1] } },
      init_parameters: { serial: { range: [5000, 3] } },
    })
    const ms = performance.now() - started
    assert.equal(res.status, 200, JSON.stringify(res.body))
    const result = res.body.result
    assert.equal(result.created, 1000)
    assert.equal(result.first, 'meter_0000')
    assert.equal(result.last, 'meter_0999')
    assert.equal(result.names.length, 100)
    assert.equal(result.truncated, true)
    t.logs.push({ msg: `generate 1000: ${ms.toFixed(0)} ms` })
    assert.equal((await names(t)).filter((n) => n.startsWith('meter_')).length, 1000)
    // The parameters are each instance's own, as given, in the definition too.
    const definition = (await t.api('GET', `${SYS}/attr/definition`)).body.value
    const entry = definition.instances.find((i: Record<string, unknown>) => 'meter_0999' in i)
    assert.deepEqual(entry, { meter_0999: { type: 'meter', parameters: { port: base + 999 }, init_parameters: { serial: 5000 + 3 * 999 } } })
    for (const k of [0, 1, 2]) {
      const name = `meter_000${k}`
      assert.equal((await t.call(`${SYS}/instances/${name}`, 'prepare')).status, 200)
      const adapter = (await t.api('GET', `${SYS}/instances/${name}/communication/modbus_slave`)).body
      assert.equal(adapter.port, base + k)
      const client = await TestClient.connect(base + k)
      try {
        assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 1 })), [5000 + 3 * k])
      } finally {
        client.socket.destroy()
      }
      assert.equal((await t.call(`${SYS}/instances/${name}`, 'stop')).status, 200)
    }
  })

  it('cycle, range of floats, format, a prefix without a pattern, and start', async () => {
    const res = await t.call(`${SYS}/instances`, 'generate', {
      template: 'device',
      count: 5,
      name: 'dev',
      start: 1,
      parameters: { site: { cycle: ['north', 'south'] }, gain: { range: [0.5, 0.1] }, client_id: { format: 'mqtt-dev-{i:03}' } },
    })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.deepEqual(res.body.result, { created: 5, first: 'dev_1', last: 'dev_5', names: ['dev_1', 'dev_2', 'dev_3', 'dev_4', 'dev_5'] })
    assert.equal((await t.call(`${SYS}/instances/dev_3`, 'run')).status, 200)
    const attrs = (await t.api('GET', `${SYS}/instances/dev_3/attributes`)).body
    const value = async (name: string, attr: string): Promise<unknown> =>
      (await t.api('GET', `${SYS}/instances/${name}/attributes/${attr}/attr/internal_value`)).body.value
    assert.ok(attrs)
    assert.equal(await value('dev_3', 'site'), 'north')
    assert.equal(await value('dev_3', 'gain'), 0.7)
    assert.equal(await value('dev_3', 'client_id'), 'mqtt-dev-003')
    const definition = (await t.api('GET', `${SYS}/attr/definition`)).body.value
    assert.deepEqual(
      definition.instances.find((i: Record<string, unknown>) => 'dev_2' in i),
      { dev_2: { type: 'device', parameters: { site: 'south', gain: 0.6, client_id: 'mqtt-dev-002' } } },
    )
    // The TypeScript client and the CLI call the same method.
    const { connect } = await import('mimic-sim-client')
    const sim = connect({ address: t.url, productKey: TEST_KEY })
    const viaClient = await sim.instances.generate({ template: 'device', count: 2, name: 'ts_{i}' })
    assert.deepEqual(viaClient, { created: 2, first: 'ts_0', last: 'ts_1', names: ['ts_0', 'ts_1'] })
    const printed = await cli([
      'instances',
      'generate',
      'device',
      '--count',
      '3',
      '--name',
      'cli_{i:02}',
      '--parameters',
      '{"site": {"cycle": ["a"]}}',
      '--url',
      t.url,
      '--product-key',
      TEST_KEY,
    ])
    assert.equal(printed, 'created 3 instances of device: cli_00 .. cli_02')
  })

  it('the Python client generates too, and sees a 422 with its paths', async () => {
    const script = String.raw`
import json, os
from mimic_sdk import client as mimic
sim = mimic.init(address=os.environ["MIMIC_URL"], product_key=os.environ["MIMIC_PRODUCT_KEY"])
made = sim.instances.generate("device", 3, name="py_{i}", parameters={"site": {"cycle": ["n", "s"]}}, start=7)
try:
    sim["instances"].generate("device", 0)
    paths = None
except mimic.MimicApiError as err:
    paths = [d["path"] for d in err.details]
print(json.dumps({"made": made, "paths": paths}))
`
    // Not spawnSync: the server answering the script runs in this process.
    const res = await promisify(execFile)('python3', ['-c', script], {
      encoding: 'utf8',
      env: { ...process.env, PYTHONPATH: new URL('../python', import.meta.url).pathname, MIMIC_URL: t.url, MIMIC_PRODUCT_KEY: TEST_KEY },
      timeout: 30_000,
    })
    assert.deepEqual(JSON.parse(res.stdout), {
      made: { created: 3, first: 'py_7', last: 'py_9', names: ['py_7', 'py_8', 'py_9'] },
      paths: ['kwargs.count'],
    })
  })

  it('bad input is a 422 naming each problem, and creates nothing', async () => {
    const before = (await names(t)).length
    const bad = async (kwargs: Record<string, unknown>): Promise<string[]> => {
      const res = await t.call(`${SYS}/instances`, 'generate', kwargs)
      assert.equal(res.status, 422, JSON.stringify(res.body))
      assert.match(res.body.error.message, /nothing was created/)
      return res.body.error.details.map((d: { path: string }) => d.path).sort()
    }
    assert.deepEqual(await bad({ template: 'device', count: 0 }), ['kwargs.count'])
    assert.deepEqual(await bad({ template: 'device', count: 100_001 }), ['kwargs.count'])
    assert.deepEqual(await bad({ template: 'device', count: 2, name: 'x_{n}' }), ['kwargs.name'])
    assert.deepEqual(await bad({ template: 'device', count: 2, name: 'x_{i:04' }), ['kwargs.name'])
    assert.deepEqual(await bad({ template: 'device', count: 2, name: '9x_{i}' }), ['kwargs.name'])
    assert.deepEqual(await bad({ template: 'nope', count: 2 }), ['kwargs.template'])
    assert.deepEqual(await bad({ template: 'device', count: 2, colour: 1, start: -1 }), ['kwargs.colour', 'kwargs.start'])
    assert.deepEqual(await bad({ template: 'device', count: 2, parameters: { gain: { range: ['a'] }, site: { cycle: [] } } }), [
      'kwargs.parameters.gain.range',
      'kwargs.parameters.site.cycle',
    ])
    // A parameter of the wrong type for some instances, an unknown one, and names that exist already.
    const res = await t.call(`${SYS}/instances`, 'generate', {
      template: 'device',
      count: 6,
      name: 'dev_{i}',
      parameters: { gain: { cycle: [1.5, 'high', 2.5] }, colour: 'red' },
    })
    assert.equal(res.status, 422)
    const details = res.body.error.details as Array<{ path: string; message: string }>
    assert.deepEqual(details.map((d) => d.path).sort(), ['kwargs.name', 'kwargs.parameters.colour', 'kwargs.parameters.gain'])
    assert.match(details.find((d) => d.path === 'kwargs.name')!.message, /exists already \(dev_1 and 4 more\)/)
    assert.match(details.find((d) => d.path === 'kwargs.parameters.gain')!.message, /\(dev_1 and 1 more\)/)
    assert.equal((await names(t)).length, before)
    assert.equal((await t.api('GET', `${SYS}/instances/dev_0`)).status, 404)
  })

  // Last of this server's tests: the 20,000 devices it leaves would slow the listings of the others.
  it('a large generate lets other requests through: a read meanwhile sees the fleet half made', async () => {
    const count = 20_000
    let answered = false
    const generating = t.call(`${SYS}/instances`, 'generate', { template: 'device', count, name: 'bulk_{i:05}' }).finally(() => (answered = true))
    // Each round reads the first and the last instance of the fleet. The first made and the last
    // not yet, with the generate still unanswered: the server answered in the middle of it.
    let midway = 0
    let rounds = 0
    while (!answered) {
      rounds++
      const first = (await t.api('GET', `${SYS}/instances/bulk_00000`)).status
      const last = (await t.api('GET', `${SYS}/instances/bulk_${count - 1}`)).status
      if (first === 200 && last === 404 && !answered) midway++
    }
    const res = await generating
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.equal(res.body.result.created, count)
    assert.ok(midway > 0, `no read in ${rounds} rounds was answered while the fleet was being made`)
    assert.equal((await t.api('GET', `${SYS}/instances/bulk_${count - 1}`)).status, 200)
  })
})

describe('generate_instances over MCP', () => {
  it('is a write tool: refused read-only, creates the fleet with --mcp-allow-write', async () => {
    for (const write of [false, true]) {
      const t = await startTestServer({ config: { mcpAllowWrite: write } })
      const mcp = new Client({ name: 'fleet-test', version: '1.0.0' })
      try {
        assert.equal((await t.api('PUT', `${SYS}/models`, { device: DEVICE })).status, 200)
        await mcp.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${TEST_KEY}` } } }))
        const answer = (await mcp.callTool({
          name: 'generate_instances',
          arguments: { template: 'device', count: 4, name: 'mcp_{i:02}', parameters: { site: { cycle: ['x', 'y'] } } },
        })) as { isError?: boolean; content: Array<{ text: string }> }
        assert.equal(answer.isError ?? false, !write, answer.content[0]!.text)
        if (write)
          assert.deepEqual(JSON.parse(answer.content[0]!.text), {
            created: 4,
            first: 'mcp_00',
            last: 'mcp_03',
            names: ['mcp_00', 'mcp_01', 'mcp_02', 'mcp_03'],
          })
        else assert.match(answer.content[0]!.text, /--mcp-allow-write/)
        assert.equal((await names(t)).length, write ? 4 : 0)
      } finally {
        await mcp.close()
        await t.close()
      }
    }
  })
})

describe('a system file with a generate section', () => {
  let t: TestServer
  let file: string
  before(async () => {
    t = await startTestServer()
    file = join(t.dir, 'fleet.yaml')
    await writeFile(
      file,
      [
        'models:',
        '  device:',
        '    meta_parameters: { site: { type: string, default: "" } }',
        '    attributes: { level: 0.0, site: "" }',
        '    actions: [{ function: "$out(site)", call: "$param(site)" }]',
        'instances:',
        '  - hub: device',
        'generate:',
        '  - { template: device, count: 50, name: "pump_{i:02}", parameters: { site: { cycle: [a, b] } } }',
        '  - { template: device, count: 3, name: valve }',
        'connections:',
        '  c1: { from: pump_07.attributes.level, to: hub.attributes.level }',
      ].join('\n'),
    )
  })
  after(async () => t.close())

  it('loads as the instances it stands for; the definition lists them, and PUT back or a snapshot round-trips', async () => {
    const loaded = await startTestServer({ config: { system: file } })
    try {
      const all = await names(loaded)
      assert.equal(all.length, 54)
      assert.deepEqual(all.slice(0, 3), ['hub', 'pump_00', 'pump_01'])
      assert.deepEqual(all.slice(-3), ['valve_0', 'valve_1', 'valve_2'])
      const definition = (await loaded.api('GET', `${SYS}/attr/definition`)).body.value
      assert.equal(definition.generate, undefined)
      assert.equal(definition.instances.length, 54)
      assert.deepEqual(definition.instances[2], { pump_01: { type: 'device', parameters: { site: 'b' } } })
      // The definition is a system file of its own: PUT into another server, it makes the same system.
      const put = await t.api('PUT', SYS, definition)
      assert.equal(put.status, 200, JSON.stringify(put.body))
      assert.deepEqual(await names(t), all)
      const saved = await loaded.call(`${SYS}/snapshots`, 'save', {})
      assert.equal(saved.status, 200)
      assert.equal((await loaded.call(`${SYS}/snapshots`, 'load', { id: saved.body.result.id })).body.result.instances, 54)
    } finally {
      await loaded.close()
    }
  })

  it('a bad generate entry is reported with its path', async () => {
    const { loadDefinitionFile } = await import('../src/definition/load-file.js')
    const badFile = join(t.dir, 'bad.yaml')
    await writeFile(
      badFile,
      [
        'models:',
        '  device: { attributes: { level: 0.0 } }',
        'instances:',
        '  - pump_01: device',
        'generate:',
        '  - { template: device, count: 3, name: "pump_{i:02}" }',
        '  - { template: nothing, count: 0 }',
      ].join('\n'),
    )
    const result = await loadDefinitionFile(badFile)
    const found = result.details.map((d) => [d.path, d.line])
    assert.deepEqual(found.map(([p]) => p).sort(), ['generate[0].name', 'generate[1].count'])
    assert.match(result.details.find((d) => d.path === 'generate[0].name')!.message, /duplicate instance name \(pump_01\)/)
    assert.equal(result.details[0]!.line, 6)
  })
})

describe('shards: three servers with the same system file', () => {
  const servers: TestServer[] = []
  let dir: string
  let file: string
  const FLEET = 300
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-fleet-'))
    file = join(dir, 'fleet.yaml')
    await writeFile(
      file,
      [
        'models:',
        '  device: { attributes: { level: 0.0, mirror: 0.0 } }',
        'instances:',
        '  - hub: device',
        '  - spare: device',
        'generate:',
        `  - { template: device, count: ${FLEET}, name: "unit_{i:03}" }`,
        'connections:',
        '  hub_to_spare: { from: hub.attributes.level, to: spare.attributes.mirror }',
      ].join('\n'),
    )
    for (const shard of ['1/3', '2/3', '3/3']) servers.push(await startTestServer({ config: { system: file, shard } }))
  })
  after(async () => {
    for (const s of servers) await s.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('hold disjoint sets of instances whose union is the whole fleet, as `mimic shard which` says', async () => {
    const held = await Promise.all(servers.map((s) => names(s)))
    const union = new Set(held.flat())
    assert.equal(held.flat().length, union.size, 'no instance is on two shards')
    const fleet = ['hub', 'spare', ...Array.from({ length: FLEET }, (_, i) => `unit_${String(i).padStart(3, '0')}`)]
    assert.deepEqual([...union].sort(), fleet.sort())
    for (const [k, list] of held.entries()) {
      assert.ok(list.length > FLEET / 3 - 40 && list.length < FLEET / 3 + 40, `shard ${k + 1} holds ${list.length}`)
      for (const name of list) assert.equal(shardOf(name, 3), k + 1)
      // Every shard holds every model.
      assert.deepEqual((await servers[k]!.api('GET', `${SYS}/models`)).body.children, [{ name: 'device' }])
      assert.equal((await servers[k]!.api('GET', `${SYS}/attr/shard`)).body.value, `${k + 1}/3`)
      const health = await fetch(`${servers[k]!.url}/health`).then((r) => r.json())
      assert.equal(health.shard, `${k + 1}/3`)
      assert.equal(health.instances, list.length)
    }
    for (const name of ['hub', 'unit_042', 'unit_299']) {
      const owner = Number(await cli(['shard', 'which', name, '--shards', '3']))
      assert.ok(held[owner - 1]!.includes(name), `${name} is on shard ${owner}`)
    }
    assert.equal(
      await cli(['shard', 'which', 'hub', 'spare', '--shards', '3', '--json']),
      JSON.stringify({ hub: shardOf('hub', 3), spare: shardOf('spare', 3) }),
    )
  })

  it('a connection whose ends are on two shards is skipped and logged; a generate call makes only the own instances', async () => {
    const [hubShard, spareShard] = [shardOf('hub', 3), shardOf('spare', 3)]
    for (const [k, s] of servers.entries()) {
      const connections = (await s.api('GET', `${SYS}/connections`)).body.children.map((c: { name: string }) => c.name)
      const local = hubShard === k + 1 && spareShard === k + 1
      assert.deepEqual(connections, local ? ['hub_to_spare'] : [])
      const onShard = hubShard === k + 1 || spareShard === k + 1
      if (onShard && !local) assert.ok(s.logs.some((l) => l.connection === 'hub_to_spare' && /skipped/.test(String(l.msg))))
    }
    let created = 0
    for (const [k, s] of servers.entries()) {
      const res = await s.call(`${SYS}/instances`, 'generate', { template: 'device', count: 90, name: 'extra_{i}' })
      assert.equal(res.status, 200, JSON.stringify(res.body))
      assert.equal(res.body.result.created + res.body.result.skipped, 90)
      assert.equal(res.body.result.shard, `${k + 1}/3`)
      created += res.body.result.created
    }
    assert.equal(created, 90)
  })
})
