// A protocol's code is loaded only when a definition names its kind (src/protocols/lazy-kind.ts):
// a server running the Modbus example never loads node-opcua, the MQTT broker, the OCPP or BACnet
// libraries, and each way a definition arrives (a model PUT, a root PUT of the system, a snapshot
// load, the --system file at start) loads the kinds it names before their adapters are made.
// @own-process: it asserts which kinds this process has loaded, so no other file may load one first.
import assert from 'node:assert/strict'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { protocolKinds } from '../../src/protocols/index.js'
import { EXAMPLE_EXTENSIONS, EXAMPLE_SYSTEM, startTestServer, type TestServer } from '../helpers/server.js'
import { FIXTURES } from './fixtures.js'

const SYS = '/api/v3/system'

/** The kinds whose code this test process has loaded, by name. */
const loadedKinds = (): string[] =>
  protocolKinds()
    .filter((kind) => kind.loaded)
    .map((kind) => kind.name)
    .sort()

/** A model serving the int attribute `level` over the conformance fixture of `kind` on any free port. */
function modelOf(kind: string): Record<string, unknown> {
  const fixture = FIXTURES[kind]?.[0]
  assert.ok(fixture, `test/protocols/fixtures.ts has a fixture of ${kind}`)
  return { attributes: { level: 3 }, communication: [{ [kind]: fixture.settings(0) }] }
}

describe('protocol code loads when a definition names its kind', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ config: { system: EXAMPLE_SYSTEM, extensions: [EXAMPLE_EXTENSIONS] } })
  })
  after(async () => {
    await t?.close()
  })

  it('a server started on the Modbus example has loaded the Modbus code only', async () => {
    assert.deepEqual(loadedKinds(), ['modbus_slave'])
    const adapter = (await t.api('GET', `${SYS}/instances`)).body
    assert.ok(Object.keys(adapter.attr ?? adapter).length > 0, 'the example has instances')
  })

  it('a model PUT loads its kind, and its instance serves', async () => {
    const put = await t.api('PUT', `${SYS}/models`, { Served: modelOf('opcua_server') })
    assert.ok(put.status < 300, JSON.stringify(put.body))
    assert.ok(loadedKinds().includes('opcua_server'))
    assert.ok((await t.api('PUT', `${SYS}/instances`, { ua: 'Served' })).status < 300)
    assert.ok((await t.call(`${SYS}/instances/ua`, 'prepare')).status < 300)
    const node = (await t.api('GET', `${SYS}/instances/ua/communication/opcua_server`)).body
    assert.equal(node.attr.state.value, 'RUNNING')
  })

  it('a bad model still gets its checks with the paths of its problems, after its kind is loaded', async () => {
    // 70000 cannot be carried as a 16-bit register: the Modbus code's own check says so.
    const bad = {
      attributes: { level: 70000 },
      communication: [{ ascii: FIXTURES.ascii![0]!.settings(0) }, { modbus_tcp: { port: 0, mapping: { level: { address: 0, type: 'uint_16' } } } }],
    }
    const put = await t.api('PUT', `${SYS}/models`, { Bad: bad })
    assert.equal(put.status, 422, JSON.stringify(put.body))
    assert.ok(loadedKinds().includes('ascii'), 'the kinds of a refused model are loaded too')
    assert.equal((await t.api('GET', `${SYS}/models/Bad`)).status, 404)
  })

  it('a root PUT of the system loads the kinds it names', async () => {
    const put = await t.api('PUT', SYS, { models: { Endpoint: modelOf('http_endpoint') }, instances: { web: 'Endpoint' } })
    assert.ok(put.status < 300, JSON.stringify(put.body))
    assert.ok(loadedKinds().includes('http_endpoint'))
  })

  it('a snapshot load loads the kinds of its definition', async () => {
    assert.ok(!loadedKinds().includes('bacnet'))
    const file = join(t.snapshots, 'bacnet.json')
    const snapshot = {
      schema_version: 1,
      id: 'bacnet-snapshot',
      created_at: new Date().toISOString(),
      label: '',
      notes: '',
      server_version: '0.1.0',
      definition: { models: { Panel: modelOf('bacnet') }, instances: [{ panel: 'Panel' }], connections: {} },
    }
    await mkdir(t.snapshots, { recursive: true })
    await writeFile(file, JSON.stringify(snapshot))
    const load = await t.call(`${SYS}/snapshots`, 'load', { path: 'bacnet.json' })
    assert.equal(load.status, 200, JSON.stringify(load.body))
    assert.ok(loadedKinds().includes('bacnet'))
    assert.equal((await t.api('GET', `${SYS}/instances/panel/communication/bacnet`)).status, 200)
  })

  it('kinds no definition named are still not loaded', () => {
    for (const kind of ['mqtt', 'ocpp', 'knx_ip', 'modbus_master']) assert.ok(!loadedKinds().includes(kind), `${kind} is not loaded`)
  })
})
