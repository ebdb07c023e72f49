import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { OpcuaClientProcess, socketsOn } from './helpers/opcua-client.js'
import { eventually, freePort, startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

// The test server has a product key: anonymous sessions only read, so clients that write log in with it.
const KEY_USER = { username: 'tester', password: TEST_KEY }

// Every OPC UA request here comes from test/helpers/opcua-client.mjs, a node-opcua client in a
// process of its own, as the software under test would connect.
const SYS = '/api/v3/system'

const BOILER_PY = `
class Boiler:
    def __init__(self):
        self.temp = 20.0

    def heat(self, delta):
        self.temp = self.temp + delta
        return self.temp

    def show(self, value):
        return repr(value)
`

function boilerModel(port: number, extra: Record<string, unknown> = {}) {
  return {
    attributes: {
      temp: { default: 20.0, type: 'float', unit: 'degC' },
      setpoint: { default: 60.0, type: 'float' },
      mode: { default: 'off', type: 'str' },
      count: { default: 3, type: 'int' },
    },
    import: { 'boiler.py': { class: 'Boiler', attributes: { temp: { property: 'temp' } }, methods: { heat: 'heat', show: 'show' } } },
    communication: {
      opcua_server: {
        port,
        bindings: [
          { attribute: '#attr(temp)' },
          { attribute: '$ext(setpoint)', node_id: 's={instance}.sp', browse_name: 'Setpoint' },
          { attribute: 'mode' },
          { attribute: '#out(count)', data_type: 'UInt16', writable: false },
        ],
        methods: [
          { method: 'heat', inputs: [{ name: 'delta', data_type: 'Double' }], output: 'Double' },
          // `{{instance}}`, as MQTT spells it, works as `{instance}` does.
          { method: 'show', node_id: 's={{instance}}.show', inputs: [{ name: 'value', data_type: 'Double' }], output: 'String' },
        ],
        ...extra,
      },
    },
  }
}

describe('opcua_server adapter with a client in another process: browse, read, write, subscribe, call, detach, snapshot load, delete', () => {
  let t: TestServer
  let port: number
  let url: string
  let client: OpcuaClientProcess
  const node = (instance: string) => `${SYS}/instances/${instance}/communication/opcua_server`
  const attribute = async (instance: string, name: string) => (await t.api('GET', `${SYS}/instances/${instance}/attributes/${name}`)).body
  const read = (nodeId: string) => client.ok({ op: 'read', nodeId })
  const prepare = async (...instances: string[]) => {
    for (const instance of instances) {
      const res = await t.call(`${SYS}/instances/${instance}`, 'prepare')
      assert.equal(res.status, 200, JSON.stringify(res.body))
    }
  }

  before(async () => {
    t = await startTestServer({ files: { 'boiler.py': BOILER_PY } })
    port = await freePort()
    assert.equal((await t.api('PUT', `${SYS}/models`, { Boiler: boilerModel(port) })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { boiler_1: 'Boiler', boiler_2: 'Boiler' })).status, 200)
    await prepare('boiler_1', 'boiler_2')
    const doc = (await t.api('GET', node('boiler_1'))).body
    assert.equal(doc.type, 'OpcuaServer')
    assert.equal(doc.state, 'RUNNING')
    url = doc.endpoint
    assert.equal(url, `opc.tcp://127.0.0.1:${port}/mimic`)
    // Kept across runs like the server's certificate (the default pki_dir): making a key pair takes seconds.
    client = OpcuaClientProcess.start({ pki: join(tmpdir(), 'mimic-opcua-test-client-adapter') })
    await client.ok({ op: 'connect', url, user: KEY_USER })
  })

  after(async () => {
    await client?.close()
    await t?.close()
  })

  it('browses a folder per instance under Objects, with its variables and its method', async () => {
    const objects = (await client.ok({ op: 'browse', nodeId: 'i=85' })).references
    const folders = objects.filter((r: { browseName: string }) => r.browseName.startsWith('boiler_'))
    assert.deepEqual(folders, [
      { browseName: 'boiler_1', nodeId: 'ns=1;s=boiler_1', nodeClass: 'Object' },
      { browseName: 'boiler_2', nodeId: 'ns=1;s=boiler_2', nodeClass: 'Object' },
    ])
    const children = (await client.ok({ op: 'browse', nodeId: 'ns=1;s=boiler_1' })).references
    assert.deepEqual(children, [
      { browseName: 'temp', nodeId: 'ns=1;s=boiler_1.temp', nodeClass: 'Variable' },
      { browseName: 'Setpoint', nodeId: 'ns=1;s=boiler_1.sp', nodeClass: 'Variable' },
      { browseName: 'mode', nodeId: 'ns=1;s=boiler_1.mode', nodeClass: 'Variable' },
      { browseName: 'count', nodeId: 'ns=1;s=boiler_1.count', nodeClass: 'Variable' },
      { browseName: 'heat', nodeId: 'ns=1;s=boiler_1.heat', nodeClass: 'Method' },
      { browseName: 'show', nodeId: 'ns=1;s=boiler_1.show', nodeClass: 'Method' },
    ])
  })

  it('reads attribute values with the data types they are bound as, and the unit', async () => {
    const temp = await read('ns=1;s=boiler_1.temp')
    assert.equal(temp.status, 'Good')
    assert.equal(temp.dataType, 'Double')
    assert.equal(temp.value, 20)
    const count = await read('ns=1;s=boiler_2.count')
    assert.equal(count.dataType, 'UInt16')
    assert.equal(count.value, 3)
    const mode = await read('ns=1;s=boiler_1.mode')
    assert.equal(mode.dataType, 'String')
    assert.equal(mode.value, 'off')
    const properties = (await client.ok({ op: 'browse', nodeId: 'ns=1;s=boiler_1.temp' })).references
    const eu = properties.find((r: { browseName: string }) => r.browseName === 'EngineeringUnits')
    assert.ok(eu, 'temp has an EngineeringUnits property')
    const unit = await read(eu.nodeId)
    assert.equal(unit.value.displayName.text, 'degC')
  })

  it('a write sets the internal value (read back over HTTP); a wrong type is BadTypeMismatch, changes nothing and is counted', async () => {
    const counters = async (): Promise<Record<string, number>> => (await t.api('GET', `${SYS}/instances/boiler_1/communication/opcua_server`)).body.counters
    const before = await counters()
    const good = await client.ok({ op: 'write', nodeId: 'ns=1;s=boiler_1.sp', dataType: 'Double', value: 65.5 })
    assert.equal(good.status, 'Good')
    assert.equal((await attribute('boiler_1', 'setpoint')).internal_value, 65.5)
    const wrong = await client.ok({ op: 'write', nodeId: 'ns=1;s=boiler_1.sp', dataType: 'String', value: 'hot' })
    assert.equal(wrong.status, 'BadTypeMismatch')
    const int32 = await client.ok({ op: 'write', nodeId: 'ns=1;s=boiler_1.sp', dataType: 'Int32', value: 70 })
    assert.equal(int32.status, 'BadTypeMismatch')
    assert.equal((await attribute('boiler_1', 'setpoint')).internal_value, 65.5)
    // The adapter's traffic trace (docs/traces.md): the write with its node, status and what it set.
    const traced = (await t.call(`${SYS}/instances/boiler_1/communication/opcua_server`, 'tail', { operation: 'write', limit: 3 })).body.result as Array<
      Record<string, any>
    >
    assert.deepEqual(
      traced.map((e) => [String(e.node).endsWith('boiler_1.sp'), e.status, e.attributes]),
      // The writes of a wrong type node-opcua refuses itself, before they reach the adapter.
      [[true, 'Good', { setpoint: 65.5 }]],
    )
    const after = await counters()
    assert.deepEqual(
      [after.writes! - before.writes!, after.refused! - before.refused!, after.errors! - before.errors!],
      [3, 2, 2],
      'three writes, the two of another type refused (by node-opcua, before the setter) and counted',
    )
    // A variable bound with writable: false is not writable for clients.
    assert.equal((await client.ok({ op: 'write', nodeId: 'ns=1;s=boiler_1.count', dataType: 'UInt16', value: 9 })).status, 'BadNotWritable')
    assert.equal((await attribute('boiler_1', 'count')).internal_value, 3)
    // The other instance on the endpoint is untouched.
    assert.equal((await read('ns=1;s=boiler_2.sp')).value, 60)
    // An HTTP write that the UInt16 binding cannot carry is a 422 and leaves the value as it was.
    assert.equal((await t.api('PUT', `${SYS}/instances/boiler_2/attributes/count/attr/internal_value`, { value: 70000 })).status, 422)
    assert.equal((await read('ns=1;s=boiler_2.count')).value, 3)
  })

  it('a subscription hears values changed over HTTP: an attribute written, a model method run', async () => {
    const subscribed = await client.ok({
      op: 'subscribe',
      nodeIds: ['ns=1;s=boiler_2.mode', 'ns=1;s=boiler_2.temp'],
      samplingInterval: 50,
      publishingInterval: 50,
    })
    assert.deepEqual(subscribed.statuses, { Good: 2 })
    await client.event((e) => e.nodeId === 'ns=1;s=boiler_2.mode' && e.value === 'off')
    await client.event((e) => e.nodeId === 'ns=1;s=boiler_2.temp' && e.value === 20)
    assert.equal((await t.api('PUT', `${SYS}/instances/boiler_2/attributes/mode/attr/internal_value`, { value: 'auto' })).status, 200)
    await client.event((e) => e.nodeId === 'ns=1;s=boiler_2.mode' && e.value === 'auto' && e.status === 'Good')
    const heated = await t.call(`${SYS}/instances/boiler_2`, 'heat', { delta: 1.5 })
    assert.equal(heated.status, 200, JSON.stringify(heated.body))
    await client.event((e) => e.nodeId === 'ns=1;s=boiler_2.temp' && e.value === 21.5)
  })

  it('a client monitoring by exception (sampling interval 0) hears each change, and the status of a detached instance', async () => {
    const from = client.events.length
    const subscribed = await client.ok({
      op: 'subscribe',
      nodeIds: ['ns=1;s=boiler_2.temp', 'ns=1;s=boiler_2.count'],
      samplingInterval: 0,
      publishingInterval: 50,
    })
    assert.deepEqual(subscribed.statuses, { Good: 2 })
    await client.event((e) => e.nodeId === 'ns=1;s=boiler_2.temp' && e.value === 21.5)
    // One change at a time: changes closer together than sampling_interval are folded into the last.
    for (const [delta, temp] of [
      [0.5, 22],
      [0.25, 22.25],
    ]) {
      assert.equal((await t.call(`${SYS}/instances/boiler_2`, 'heat', { delta })).status, 200)
      await client.event((e) => e.nodeId === 'ns=1;s=boiler_2.temp' && e.value === temp)
    }
    const temps = client.events.slice(from).filter((e) => e.nodeId === 'ns=1;s=boiler_2.temp')
    assert.deepEqual(
      temps.map((e) => e.value),
      [21.5, 22, 22.25],
    )
    assert.equal((await t.api('PUT', `${SYS}/instances/boiler_2/attributes/count/attr/internal_value`, { value: 4 })).status, 200)
    await client.event((e) => e.nodeId === 'ns=1;s=boiler_2.count' && e.value === 4)
    assert.equal((await t.call(node('boiler_2'), 'detach')).status, 200)
    await client.event((e) => e.nodeId === 'ns=1;s=boiler_2.count' && e.status === 'BadNoCommunication')
    assert.equal((await t.call(node('boiler_2'), 'attach')).status, 200)
    const detachedAt = client.events.findIndex((e) => e.nodeId === 'ns=1;s=boiler_2.count' && e.status === 'BadNoCommunication')
    await eventually(() => client.events.slice(detachedAt).some((e) => e.nodeId === 'ns=1;s=boiler_2.count' && e.status === 'Good' && e.value === 4))
    assert.equal((await t.api('PUT', `${SYS}/instances/boiler_2/attributes/count/attr/internal_value`, { value: 3 })).status, 200)
    await client.ok({ op: 'unsubscribe' })
  })

  it('monitored by exception, every step of a run of several steps reaches the client, not only the last', async () => {
    const counter = {
      attributes: { n: { default: 0, type: 'int' } },
      actions: [{ function: '$out(n)', call: 'n + 1' }],
      communication: { opcua_server: { port, bindings: [{ attribute: 'n' }] } },
    }
    const put = await t.api('PUT', `${SYS}/models`, { Counter: counter })
    assert.equal(put.status, 200, JSON.stringify(put.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { counter: 'Counter' })).status, 200)
    await prepare('counter')
    const from = client.events.length
    const subscribed = await client.ok({ op: 'subscribe', nodeIds: ['ns=1;s=counter.n'], samplingInterval: 0, publishingInterval: 200, queueSize: 50 })
    assert.deepEqual(subscribed.statuses, { Good: 1 })
    await client.event((e) => e.nodeId === 'ns=1;s=counter.n' && e.value === 0)
    // Five steps in one request: without a push after each step the client could see only 5.
    const ran = await t.call(SYS, 'run', { steps: 5 })
    assert.equal(ran.status, 200, JSON.stringify(ran.body))
    await client.event((e) => e.nodeId === 'ns=1;s=counter.n' && e.value === 5)
    const values = client.events
      .slice(from)
      .filter((e) => e.nodeId === 'ns=1;s=counter.n')
      .map((e) => e.value)
    assert.deepEqual(values, [0, 1, 2, 3, 4, 5])
    await client.ok({ op: 'unsubscribe' })
    assert.equal((await t.api('DELETE', `${SYS}/instances/counter`)).status, 200)
  })

  it('calls a model method with its input argument and returns its result; a wrong argument type runs nothing', async () => {
    const result = await client.ok({ op: 'call', objectId: 'ns=1;s=boiler_1', methodId: 'ns=1;s=boiler_1.heat', inputs: [{ dataType: 'Double', value: 2.5 }] })
    assert.equal(result.status, 'Good')
    assert.deepEqual(result.outputs, [22.5])
    assert.equal((await attribute('boiler_1', 'temp')).internal_value, 22.5)
    // A Double argument reaches Python as a float, a whole one included.
    const show = async (value: number): Promise<unknown> =>
      (await client.ok({ op: 'call', objectId: 'ns=1;s=boiler_1', methodId: 'ns=1;s=boiler_1.show', inputs: [{ dataType: 'Double', value }] })).outputs
    assert.deepEqual(await show(2), ['2.0'])
    assert.deepEqual(await show(2.5), ['2.5'])
    const wrong = await client.ok({ op: 'call', objectId: 'ns=1;s=boiler_1', methodId: 'ns=1;s=boiler_1.heat', inputs: [{ dataType: 'String', value: 'x' }] })
    assert.equal(wrong.status, 'BadTypeMismatch')
    assert.equal((await attribute('boiler_1', 'temp')).internal_value, 22.5)
  })

  it('an instance with other endpoint settings on the same port is refused with the setting named', async () => {
    assert.equal((await t.api('PUT', `${SYS}/models`, { Signed: boilerModel(port, { security: 'Sign' }) })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { signed: 'Signed' })).status, 200)
    const refused = await t.call(`${SYS}/instances/signed`, 'prepare')
    assert.equal(refused.status, 422)
    assert.ok(refused.body.error.details.some((d: { path: string }) => d.path === 'security'))
    assert.equal((await read('ns=1;s=boiler_2.temp')).status, 'Good')
    assert.equal((await t.api('DELETE', `${SYS}/instances/signed`)).status, 200)
    assert.equal((await t.api('DELETE', `${SYS}/models/Signed`)).status, 200)
  })

  it('detach answers BadNoCommunication for one instance, to reads and to its monitored items, while the other serves; attach restores it', async () => {
    await client.ok({ op: 'subscribe', nodeIds: ['ns=1;s=boiler_1.mode', 'ns=1;s=boiler_2.mode'], samplingInterval: 50, publishingInterval: 50 })
    await client.event((e) => e.nodeId === 'ns=1;s=boiler_1.mode' && e.status === 'Good')
    assert.equal((await t.call(node('boiler_1'), 'detach')).status, 200)
    assert.equal((await t.api('GET', node('boiler_1'))).body.state, 'DETACHED')
    assert.equal((await read('ns=1;s=boiler_1.temp')).status, 'BadNoCommunication')
    assert.equal((await read('ns=1;s=boiler_2.temp')).status, 'Good')
    assert.equal((await client.ok({ op: 'write', nodeId: 'ns=1;s=boiler_1.sp', dataType: 'Double', value: 1 })).status, 'BadNoCommunication')
    await client.event((e) => e.nodeId === 'ns=1;s=boiler_1.mode' && e.status === 'BadNoCommunication')
    assert.equal((await t.call(node('boiler_1'), 'attach')).status, 200)
    assert.equal((await read('ns=1;s=boiler_1.temp')).status, 'Good')
    assert.equal((await attribute('boiler_1', 'setpoint')).internal_value, 65.5)
    const detachedAt = client.events.findIndex((e) => e.nodeId === 'ns=1;s=boiler_1.mode' && e.status === 'BadNoCommunication')
    await eventually(() => client.events.slice(detachedAt).some((e) => e.nodeId === 'ns=1;s=boiler_1.mode' && e.status === 'Good' && e.value === 'off'))
    await client.ok({ op: 'unsubscribe' })
  })

  it('a snapshot load closes the server and its connections, leaving no socket on the port; prepared again, it serves the loaded system', async () => {
    const saved = await t.call(`${SYS}/snapshots`, 'save', { label: 'two boilers' })
    assert.equal(saved.status, 200, JSON.stringify(saved.body))
    assert.ok(socketsOn(port).some((s) => s.local === port && s.state === 'LISTEN'))
    const sessionsBefore = (await t.api('GET', node('boiler_1'))).body.sessions
    assert.equal(sessionsBefore, 1)
    const loaded = await t.call(`${SYS}/snapshots`, 'load', { id: saved.body.result.id })
    assert.equal(loaded.status, 200, JSON.stringify(loaded.body))
    await client.event((e) => e.event === 'connection_lost')
    await eventually(() => socketsOn(port).length === 0)
    assert.equal((await t.api('GET', node('boiler_1'))).body.state, 'STOPPED')
    await prepare('boiler_1', 'boiler_2')
    await client.ok({ op: 'connect', url, user: KEY_USER })
    // Every instance starts fresh after a load: the setpoint written before is the default again.
    assert.equal((await read('ns=1;s=boiler_1.sp')).value, 60)
    assert.equal((await read('ns=1;s=boiler_2.mode')).value, 'off')
  })

  it('deleting an instance while a client watches it: its items turn BadNodeIdInvalid, its folder goes, the other instance serves on', async () => {
    await client.ok({ op: 'subscribe', nodeIds: ['ns=1;s=boiler_1.temp', 'ns=1;s=boiler_2.mode'], samplingInterval: 50, publishingInterval: 50 })
    await client.event((e) => e.nodeId === 'ns=1;s=boiler_1.temp' && e.status === 'Good')
    assert.equal((await t.api('DELETE', `${SYS}/instances/boiler_1`)).status, 200)
    await client.event((e) => e.nodeId === 'ns=1;s=boiler_1.temp' && e.status === 'BadNodeIdInvalid')
    const names = (await client.ok({ op: 'browse', nodeId: 'i=85' })).references.map((r: { browseName: string }) => r.browseName)
    assert.ok(!names.includes('boiler_1') && names.includes('boiler_2'), names.join(', '))
    assert.equal((await read('ns=1;s=boiler_1.temp')).status, 'BadNodeIdUnknown')
    assert.equal((await t.api('PUT', `${SYS}/instances/boiler_2/attributes/mode/attr/internal_value`, { value: 'eco' })).status, 200)
    await client.event((e) => e.nodeId === 'ns=1;s=boiler_2.mode' && e.value === 'eco')
    assert.equal((await t.api('GET', node('boiler_2'))).body.sessions, 1)
  })

  it('deleting the last instance closes the server: the client loses its connection and no socket is left on the port', async () => {
    assert.equal((await t.api('DELETE', `${SYS}/instances/boiler_2`)).status, 200)
    await client.event((e) => e.event === 'connection_lost')
    await eventually(() => socketsOn(port).length === 0)
    assert.equal((await client.request({ op: 'read', nodeId: 'ns=1;s=boiler_2.temp' })).ok, false)
  })
})

describe("opcua_server adapter: the reference product's spellings (endpoint, namespace_uri, security, sections)", () => {
  let t: TestServer
  let port: number
  let client: OpcuaClientProcess
  const node = `${SYS}/instances/panel/communication/opcua_server`
  const attribute = async (name: string) => (await t.api('GET', `${SYS}/instances/panel/attributes/${name}`)).body.internal_value
  const children = async (nodeId: string) =>
    ((await client.ok({ op: 'browse', nodeId })).references as Array<{ browseName: string; nodeId: string }>).map((r) => `${r.browseName} ${r.nodeId}`)
  const panel = (opcuaPort: number) => ({
    attributes: { panel_state: 'automatic', zone1_level: 65.0, zone1_target: 70.0, daylight_lux: 320.0, emergency_test: 0 },
    communication: [
      {
        opcua_server: {
          endpoint: `opc.tcp://127.0.0.1:${opcuaPort}/spx/panel`,
          namespace_uri: 'urn:spx:test:panel',
          security: { policy: 'NoSecurity', user_tokens: [{ type: 'anonymous' }, { type: 'username', username: 'lighting', password: 'comfort' }] },
          sections: [
            {
              name: 'panel',
              browse_path: ['LightingPanel'],
              bindings: [
                { name: 'PanelState', direction: 'bidirectional', attributes: '#attr(panel_state)', node: { browse_path: ['State'], data_type: 'String' } },
              ],
            },
            {
              name: 'zones',
              browse_path: ['LightingPanel', 'Zones'],
              bindings: [
                {
                  name: 'Zone1Level',
                  direction: 'bidirectional',
                  attributes: ['#attr(zone1_level)', '#attr(zone1_target)'],
                  read_attribute: '#attr(zone1_level)',
                  write_attribute: '#attr(zone1_target)',
                  node: { browse_path: ['Zone1', 'Level'], data_type: 'Double' },
                },
              ],
            },
            {
              name: 'sensors',
              browse_path: ['LightingPanel', 'Sensors'],
              bindings: [
                { name: 'Daylight', direction: 'outbound', attributes: '#attr(daylight_lux)', node: { browse_path: ['DaylightLux'], data_type: 'Double' } },
                {
                  name: 'EmergencyTest',
                  direction: 'bidirectional',
                  attributes: '#attr(emergency_test)',
                  node: { browse_path: ['EmergencyTest'], data_type: 'Boolean' },
                },
              ],
            },
          ],
        },
      },
    ],
  })

  before(async () => {
    t = await startTestServer()
    port = await freePort()
    assert.equal((await t.api('PUT', `${SYS}/models`, { Panel: panel(port) })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { panel: 'Panel' })).status, 200)
    const prepared = await t.call(`${SYS}/instances/panel`, 'prepare')
    assert.equal(prepared.status, 200, JSON.stringify(prepared.body))
    client = OpcuaClientProcess.start({ pki: join(tmpdir(), 'mimic-opcua-test-client-adapter') })
    await client.ok({ op: 'connect', url: `opc.tcp://127.0.0.1:${port}/spx/panel`, user: KEY_USER })
  })

  after(async () => {
    await client?.close()
    await t?.close()
  })

  it('serves at the endpoint URL, in the namespace named, with the sections as folders under Objects', async () => {
    const doc = (await t.api('GET', node)).body
    assert.deepEqual(
      [doc.endpoint, doc.endpoint_path, doc.namespace, doc.security, doc.allow_anonymous, doc.users],
      [`opc.tcp://127.0.0.1:${port}/spx/panel`, '/spx/panel', 'urn:spx:test:panel', 'None', true, ['lighting']],
    )
    assert.equal(doc.sections[1].bindings[0].node_id, 'ns=1;s=panel.LightingPanel.Zones.Zone1.Level')
    // The model keeps what was written.
    const written = (await t.api('GET', `${SYS}/models/Panel`)).body.definition.communication[0].opcua_server
    assert.equal(written.endpoint, `opc.tcp://127.0.0.1:${port}/spx/panel`)
    assert.equal(written.sections[1].bindings[0].write_attribute, '#attr(zone1_target)')

    const objects = await children('i=85')
    assert.ok(objects.includes('LightingPanel ns=1;s=panel.LightingPanel'), objects.join(', '))
    assert.ok(!objects.some((o) => o.startsWith('panel ')), 'no instance folder: the model has no methods or plain bindings')
    assert.deepEqual(await children('ns=1;s=panel.LightingPanel'), [
      'State ns=1;s=panel.LightingPanel.State',
      'Zones ns=1;s=panel.LightingPanel.Zones',
      'Sensors ns=1;s=panel.LightingPanel.Sensors',
    ])
    assert.deepEqual(await children('ns=1;s=panel.LightingPanel.Zones.Zone1'), ['Level ns=1;s=panel.LightingPanel.Zones.Zone1.Level'])
  })

  it('a split binding reads one attribute and writes the other; outbound is read-only', async () => {
    const level = 'ns=1;s=panel.LightingPanel.Zones.Zone1.Level'
    assert.equal((await client.ok({ op: 'read', nodeId: level })).value, 65)
    assert.equal((await client.ok({ op: 'write', nodeId: level, dataType: 'Double', value: 30 })).status, 'Good')
    assert.equal(await attribute('zone1_target'), 30)
    assert.equal(await attribute('zone1_level'), 65)
    const daylight = 'ns=1;s=panel.LightingPanel.Sensors.DaylightLux'
    assert.equal((await client.ok({ op: 'read', nodeId: daylight })).value, 320)
    assert.equal((await client.ok({ op: 'write', nodeId: daylight, dataType: 'Double', value: 1 })).status, 'BadNotWritable')
  })

  it('a Boolean variable of a number attribute reads 0/1 as false/true and a write sets 1 or 0', async () => {
    const test = 'ns=1;s=panel.LightingPanel.Sensors.EmergencyTest'
    const before = await client.ok({ op: 'read', nodeId: test })
    assert.deepEqual([before.dataType, before.value], ['Boolean', false])
    assert.equal((await client.ok({ op: 'write', nodeId: test, dataType: 'Boolean', value: true })).status, 'Good')
    assert.equal(await attribute('emergency_test'), 1)
    assert.equal((await client.ok({ op: 'read', nodeId: test })).value, true)
  })

  it('the username token of security.user_tokens logs in; a wrong password does not', async () => {
    const url = `opc.tcp://127.0.0.1:${port}/spx/panel`
    await client.ok({ op: 'close' })
    try {
      const refused = await client.request({ op: 'connect', url, user: { username: 'lighting', password: 'wrong' } })
      assert.equal(refused.status, 'BadUserAccessDenied')
      await client.ok({ op: 'connect', url, user: { username: 'lighting', password: 'comfort' } })
      assert.equal((await client.ok({ op: 'read', nodeId: 'ns=1;s=panel.LightingPanel.State' })).value, 'automatic')
    } finally {
      await client.request({ op: 'close' })
      await client.ok({ op: 'connect', url, user: KEY_USER })
    }
  })

  it('a second instance whose sections would go under Objects beside the first is refused; with a folder of its own it serves', async () => {
    assert.equal((await t.api('PUT', `${SYS}/instances`, { panel_2: 'Panel' })).status, 200)
    const refused = await t.call(`${SYS}/instances/panel_2`, 'prepare')
    assert.equal(refused.status, 422)
    assert.ok(
      refused.body.error.details.some(
        (d: { path: string; message: string }) => d.path === 'sections[0].bindings[0].node.browse_path' && /Objects\/LightingPanel/.test(d.message),
      ),
      JSON.stringify(refused.body.error.details),
    )
    assert.equal((await t.api('DELETE', `${SYS}/instances/panel_2`)).status, 200)
    const own = panel(port)
    ;(own.communication[0]!.opcua_server as Record<string, unknown>).folder = 'Panel2'
    assert.equal((await t.api('PUT', `${SYS}/models`, { Panel2: own })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { panel_2: 'Panel2' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/panel_2`, 'prepare')).status, 200)
    assert.deepEqual(await children('ns=1;s=panel_2'), ['LightingPanel ns=1;s=panel_2.LightingPanel'])
    assert.equal((await client.ok({ op: 'read', nodeId: 'ns=1;s=panel_2.LightingPanel.Zones.Zone1.Level' })).value, 65)
    assert.equal((await t.api('DELETE', `${SYS}/instances/panel_2`)).status, 200)
  })

  it('an endpoint that disagrees with port is a 422 naming both', async () => {
    const bad = panel(port)
    ;(bad.communication[0]!.opcua_server as Record<string, unknown>).port = port + 1
    const res = await t.api('PUT', `${SYS}/models`, { Bad: bad })
    assert.equal(res.status, 422)
    const detail = (res.body.error.details as Array<{ path: string; message: string }>).find((d) => d.path === 'communication[0].opcua_server.endpoint')
    assert.match(detail?.message ?? JSON.stringify(res.body.error.details), /port of endpoint .*port/)
  })
})
