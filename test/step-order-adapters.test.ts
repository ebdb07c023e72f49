import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { connectAsync, type MqttClient } from 'mqtt'
import { OpcuaClientProcess } from './helpers/opcua-client.js'
import { TEST_KEY, eventually, freePort, startTestServer, type TestServer } from './helpers/server.js'
import { registersOf, TestClient } from './unit/modbus/helpers.js'

// MODEL_LANGUAGE.md section 4: in a system step the instances step, then the system applies the
// connections, and then the adapters publish. An attribute a connection writes is published by
// the step that wrote it: by an MQTT `on_change` binding and an OPC UA item monitored by
// exception (both pushed after the step), and read from Modbus right after it. The adapters'
// own scans between steps are set far apart here, so only the step itself can publish.

const SYS = '/api/v3/system'
const KEYED = { username: 'tester', password: TEST_KEY }

describe('a step publishes the values its connections wrote, in that same step', () => {
  let t: TestServer
  let modbus: TestClient
  let opcua: OpcuaClientProcess
  let mqtt: MqttClient
  const heard: string[] = []
  const shown = async (): Promise<unknown> => (await t.api('GET', `${SYS}/instances/panel/attributes/shown`)).body.internal_value
  const run = async (steps: number): Promise<void> => {
    const res = await t.call(SYS, 'run', { steps })
    assert.equal(res.status, 200, JSON.stringify(res.body))
  }

  const opcuaValues = (): unknown[] => opcua.changes('ns=1;s=panel.shown').map((e) => e.value)
  /** Waits until MQTT and OPC UA both handed on `value`; their scans are far apart, so only a step can have. */
  const publishedBoth = async (value: number): Promise<void> => {
    const [byMqtt, byOpcua] = await Promise.allSettled([
      eventually(() => heard.includes(String(value)), 5000),
      opcua.event((e) => e.nodeId === 'ns=1;s=panel.shown' && e.value === value, 5000),
    ])
    assert.deepEqual(
      { mqtt: byMqtt.status, opcua: byOpcua.status },
      { mqtt: 'fulfilled', opcua: 'fulfilled' },
      `${value} was not handed on by the step that left it: MQTT heard ${JSON.stringify(heard)}, OPC UA ${JSON.stringify(opcuaValues())}`,
    )
  }

  before(async () => {
    const modbusPort = await freePort()
    const opcuaPort = await freePort()
    t = await startTestServer()
    const models = {
      Source: {
        attributes: { level: { default: 0, type: 'int' } },
        actions: [{ function: '$out(level)', call: 'level + 1' }],
      },
      Panel: {
        attributes: { shown: { default: 0, type: 'int' } },
        communication: [
          {
            mqtt: {
              broker: 'embedded',
              port: 0,
              topic_prefix: 'panel/',
              publish_interval: 0,
              scan_interval: 60,
              bindings: [{ attribute: 'shown', topic: 'shown', on_change: true, qos: 1 }],
            },
          },
          { modbus_slave: { host: '127.0.0.1', port: modbusPort, unit_id: 1, mapping: { shown: { address: 0, group: 'h_r', type: 'uint_16' } } } },
          { opcua_server: { port: opcuaPort, sampling_interval: 3600, bindings: [{ attribute: 'shown' }] } },
        ],
      },
    }
    const put = await t.api('PUT', `${SYS}/models`, models)
    assert.equal(put.status, 200, JSON.stringify(put.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { source: 'Source', panel: 'Panel' })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/connections`, { wire: { from: 'source.attributes.level', to: 'panel.attributes.shown' } })).status, 200)
    const prepared = await t.call(SYS, 'prepare')
    assert.equal(prepared.status, 200, JSON.stringify(prepared.body))

    const node = `${SYS}/instances/panel/communication/mqtt`
    await eventually(async () => (await t.api('GET', node)).body.connection === 'connected')
    mqtt = await connectAsync({ host: '127.0.0.1', port: (await t.api('GET', node)).body.port, ...KEYED, clientId: 'step-order', reconnectPeriod: 0 })
    mqtt.on('message', (topic, payload) => {
      if (topic === 'panel/shown') heard.push(payload.toString())
    })
    await mqtt.subscribeAsync('panel/shown', { qos: 1 })

    modbus = await TestClient.connect(modbusPort)

    opcua = OpcuaClientProcess.start({ pki: join(tmpdir(), 'mimic-opcua-test-client-step-order') })
    await opcua.ok({ op: 'connect', url: (await t.api('GET', `${SYS}/instances/panel/communication/opcua_server`)).body.endpoint, user: KEYED })
    const subscribed = await opcua.ok({ op: 'subscribe', nodeIds: ['ns=1;s=panel.shown'], samplingInterval: 0, publishingInterval: 50, queueSize: 50 })
    assert.deepEqual(subscribed.statuses, { Good: 1 })
    await opcua.event((e) => e.nodeId === 'ns=1;s=panel.shown' && e.value === 0)
  })
  after(async () => {
    await mqtt?.endAsync()
    modbus?.close()
    await opcua?.close()
    await t?.close()
  })

  it('one step: the value the connection wrote is published by that step, not the next', async () => {
    await run(1)
    assert.equal(await shown(), 1, 'the connection copied the source value of this step')
    assert.deepEqual(registersOf(await modbus.request({ fc: 3, address: 0, quantity: 1 }, { unitId: 1 })), [1])
    await publishedBoth(1)
  })

  it('a run of several steps publishes the value each step left, the last one included', async () => {
    await run(3)
    assert.equal(await shown(), 4)
    await publishedBoth(4)
    assert.deepEqual(heard, ['1', '2', '3', '4'])
    assert.deepEqual(opcuaValues(), [0, 1, 2, 3, 4])
    assert.deepEqual(registersOf(await modbus.request({ fc: 3, address: 0, quantity: 1 }, { unitId: 1 })), [4])
  })
})
