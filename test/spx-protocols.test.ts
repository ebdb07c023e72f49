import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import { parse } from 'yaml'
import { startTestServer, type TestServer } from './helpers/server.js'

// Models of the reference product's public library, copied unchanged into test/fixtures/spx (see
// the README there for where each comes from). Mimic must load them as written. Nothing here
// starts an adapter: the models name fixed ports and a broker host of their own.
const SYS = '/api/v3/system'
const BIN = new URL('../bin/mimic.js', import.meta.url).pathname
const fixture = (name: string) => new URL(`fixtures/spx/${name}`, import.meta.url).pathname

const MQTT = 'utility_gateway_wago_pfc200__water_gas_pulse__mqtt.yaml'
const OPCUA = 'lighting_panel__opcua.yaml'
const MODBUS = 'io_module__modbus.yaml'

describe("the reference product's library models load unchanged", () => {
  let t: TestServer
  const adapter = async (instance: string, key: string) => (await t.api('GET', `${SYS}/instances/${instance}/communication/${key}`)).body

  before(async () => {
    t = await startTestServer()
    for (const [model, file, instance] of [
      ['UtilityGateway', MQTT, 'gateway'],
      ['LightingPanel', OPCUA, 'panel'],
      ['IoModule', MODBUS, 'io'],
    ] as const) {
      const put = await t.api('PUT', `${SYS}/models`, { [model]: parse(await readFile(fixture(file), 'utf8')) })
      assert.equal(put.status, 200, `${file}: ${JSON.stringify(put.body.error?.details ?? put.body)}`)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { [instance]: model })).status, 200)
    }
  })
  after(async () => t.close())

  it('mimic validate passes on each', () => {
    for (const file of [MQTT, OPCUA, MODBUS]) {
      const res = spawnSync(process.execPath, [BIN, 'validate', fixture(file)], { encoding: 'utf8', timeout: 30_000 })
      assert.equal(res.status, 0, `${file}:\n${res.stderr}`)
      assert.match(res.stdout, /valid model definition/)
    }
  })

  it('mqtt: default_qos and default_retain reach the bindings, publish_on_change is on_change, flat birth and will', async () => {
    const state = await adapter('gateway', 'mqtt')
    assert.deepEqual(
      [state.broker, state.port, state.client_id, state.default_qos, state.default_retain],
      ['mosquitto-server', 1883, 'spx_utility_gateway_1', 1, false],
    )
    // The library writes `topic_prefix: spx/utility` without its closing slash: the topics are
    // joined with one, where the model's own discovery payload announces them.
    assert.deepEqual(state.birth, { topic: 'spx/utility/availability', payload: 'online', qos: 0, retain: true })
    assert.deepEqual(state.will, { topic: 'spx/utility/availability', payload: 'offline', qos: 0, retain: true })
    const water = state.bindings.find((b: { name?: string }) => b.name === 'water_total_m3')
    assert.deepEqual([state.topic_prefix, water.topic, water.qos, water.retain, water.on_change], ['spx/utility', 'water_total_m3', 1, false, false])
    assert.match(readFileSync(fixture(MQTT), 'utf8'), /"state_topic": "spx\/utility\/water_total_m3",\s*"availability_topic": "spx\/utility\/availability"/)
    const availability = state.bindings.find((b: { name?: string }) => b.name === 'availability')
    assert.equal(availability.retain, true)
    // The second adapter (Home Assistant discovery) retains by default and publishes on change.
    const discovery = await adapter('gateway', 'mqtt_1')
    assert.equal(discovery.default_retain, true)
    assert.ok(discovery.bindings.length > 0)
    assert.ok(discovery.bindings.every((b: { retain: boolean; qos: number }) => b.retain && b.qos === 1))
  })

  it('opcua_server: endpoint, namespace_uri, security and sections', async () => {
    const state = await adapter('panel', 'opcua_server')
    assert.deepEqual(
      [state.host, state.port, state.endpoint_path, state.namespace, state.security, state.allow_anonymous, state.users],
      ['0.0.0.0', 4844, '/spx/lighting-panel', 'urn:spx:examples:opcua:lighting-panel', 'None', true, ['lighting']],
    )
    const zones = state.sections.find((s: { name?: string }) => s.name === 'zones')
    assert.deepEqual(zones.bindings[0], {
      attribute: 'zone1_level_percent',
      write_attribute: 'zone1_target_percent',
      name: 'Zone1Level',
      browse_name: 'Level',
      browse_path: ['LightingPanel', 'Zones', 'Zone1', 'Level'],
      data_type: 'Double',
      writable: true,
    })
  })

  it('modbus_tcp: poll_interval accepted, coils mapped as uint_16', async () => {
    const state = await adapter('io', 'modbus_slave')
    assert.equal(state.mapping.do_1.group, 'c_o')
    assert.equal(state.mapping.do_1.type, 'uint_16')
    const written = (await t.api('GET', `${SYS}/models/IoModule`)).body.definition.communication[0].modbus_tcp
    assert.equal(written.poll_interval, 0.1)
  })
})
