import assert from 'node:assert/strict'
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { Aedes } from 'aedes'
import { connectAsync, type MqttClient } from 'mqtt'
import { TEST_KEY, eventually, freePort, startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
/** The test server has a product key, so its embedded broker wants it as a password. */
const KEYED = { username: 'tester', password: TEST_KEY }

/** A client of the broker that records every message it hears. */
async function listener(port: number, filter: string): Promise<{ client: MqttClient; heard: Array<{ topic: string; payload: string; retain: boolean }> }> {
  const client = await connectAsync({ host: '127.0.0.1', port, ...KEYED, clientId: `test-${Math.random().toString(16).slice(2)}`, reconnectPeriod: 0 })
  const heard: Array<{ topic: string; payload: string; retain: boolean }> = []
  client.on('message', (topic, payload, packet) => heard.push({ topic, payload: payload.toString(), retain: packet.retain }))
  await client.subscribeAsync(filter, { qos: 1 })
  return { client, heard }
}

/** An independent broker the test starts and stops (the "broker down and back" case). */
class TestBroker {
  #server: Server | null = null
  #aedes: Aedes | null = null
  #sockets = new Set<Socket>()
  /** The port given, or once up on port 0, the one the system chose (kept for the next up). */
  constructor(public port = 0) {}
  async up(): Promise<void> {
    const aedes = await Aedes.createBroker()
    const server = createServer((socket) => {
      this.#sockets.add(socket)
      socket.on('close', () => this.#sockets.delete(socket))
      aedes.handle(socket)
    })
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve))
    this.port = (server.address() as { port: number }).port
    this.#aedes = aedes
    this.#server = server
  }
  async down(): Promise<void> {
    const server = this.#server
    if (!server) return
    const closed = new Promise<void>((resolve) => server.close(() => resolve()))
    for (const socket of this.#sockets) socket.destroy()
    await closed
    await new Promise<void>((resolve) => this.#aedes!.close(() => resolve()))
    this.#server = null
  }
}

const BOILER = {
  attributes: {
    temp: { default: 21.5, type: 'float', unit: 'degC' },
    setpoint: { default: 60.0, type: 'float' },
    mode: { default: 'off', type: 'str' },
    count: { default: 0, type: 'int' },
  },
  communication: [
    {
      mqtt: {
        broker: 'embedded',
        port: 0,
        topic_prefix: 'plant/boiler/',
        reconnect_period: 0.05,
        reconnect_max: 0.2,
        will: { topic: 'plant/boiler/status', payload: 'offline', retain: true },
        birth: { topic: 'plant/boiler/status', payload: 'online', retain: true },
        bindings: [
          { attribute: '#attr(temp)', topic: 'temp', on_change: true, qos: 1, retain: true },
          { attribute: '$ext(setpoint)', topic: 'setpoint', direction: 'both', format: 'json', qos: 1 },
          { attribute: 'mode', topic: 'mode/set', direction: 'subscribe' },
          { name: 'counter', attribute: '$in(count)', topic: 'count', direction: 'subscribe', format: 'json', template: '{"data": {"n": {{value}}}}' },
          {
            attribute: '#out(temp)',
            name: 'temp_json',
            topic: 'temp/json',
            format: 'json',
            template: '{"t": {{value}}, "from": "{{instance}}"}',
            interval: 0,
            on_change: true,
          },
        ],
      },
    },
  ],
}

describe('mqtt adapter against the embedded broker, with MQTT.js clients', () => {
  let t: TestServer
  let port: number
  const node = `${SYS}/instances/boiler/communication/mqtt`
  const attr = (name: string) => `${SYS}/instances/boiler/attributes/${name}`
  const value = async (name: string) => (await t.api('GET', attr(name))).body.internal_value
  before(async () => {
    t = await startTestServer()
    assert.equal((await t.api('PUT', `${SYS}/models`, { Boiler: BOILER })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { boiler: 'Boiler' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/boiler`, 'prepare')).status, 200)
    const doc = (await t.api('GET', node)).body
    assert.equal(doc.type, 'MqttClient')
    assert.equal(doc.state, 'RUNNING')
    port = doc.port
  })
  after(async () => t.close())

  it('publishes retained values and the birth message; a new subscriber gets them at once', async () => {
    await eventually(async () => (await t.api('GET', node)).body.connection === 'connected')
    const { client, heard } = await listener(port, 'plant/boiler/#')
    try {
      await eventually(() => heard.some((m) => m.topic === 'plant/boiler/temp' && m.payload === '21.5' && m.retain))
      await eventually(() => heard.some((m) => m.topic === 'plant/boiler/status' && m.payload === 'online' && m.retain))
    } finally {
      await client.endAsync()
    }
  })

  it('publishes on change, raw and through a JSON template', async () => {
    const { client, heard } = await listener(port, 'plant/boiler/temp/#')
    try {
      assert.equal((await t.api('PUT', `${attr('temp')}/attr/internal_value`, { value: 30.25 })).status, 200)
      await eventually(() => heard.some((m) => m.topic === 'plant/boiler/temp' && m.payload === '30.25'))
      const json = await eventually(() => heard.find((m) => m.topic === 'plant/boiler/temp/json' && JSON.parse(m.payload).t === 30.25))
      assert.deepEqual(JSON.parse(json!.payload), { t: 30.25, from: 'boiler' })
    } finally {
      await client.endAsync()
    }
  })

  it('scan_interval set while running takes effect: a change between steps goes out at the new interval', async () => {
    const { client, heard } = await listener(port, 'plant/boiler/temp')
    try {
      assert.equal((await t.api('PUT', `${node}/attr/scan_interval`, { value: 60 })).status, 200)
      assert.equal((await t.api('PUT', `${attr('temp')}/attr/internal_value`, { value: 41.5 })).status, 200)
      assert.equal((await t.api('PUT', `${node}/attr/scan_interval`, { value: 0.05 })).status, 200)
      assert.equal((await t.api('GET', node)).body.scan_interval, 0.05)
      // At a scan 60 s away, this would time out.
      await eventually(() => heard.some((m) => m.payload === '41.5'))
    } finally {
      await client.endAsync()
    }
  })

  it('subscribe bindings write the internal value (raw text, JSON, a JSON template, QoS 1)', async () => {
    const client = await connectAsync({ host: '127.0.0.1', port, ...KEYED, reconnectPeriod: 0 })
    try {
      await client.publishAsync('plant/boiler/mode/set', 'auto')
      await eventually(async () => (await value('mode')) === 'auto')
      await client.publishAsync('plant/boiler/setpoint', '72.5', { qos: 1 })
      await eventually(async () => (await value('setpoint')) === 72.5)
      await client.publishAsync('plant/boiler/count', '{"data": {"n": 7}}', { qos: 1 })
      await eventually(async () => (await value('count')) === 7)
    } finally {
      await client.endAsync()
    }
  })

  it('refuses payloads that do not fit the attribute type: counted, logged, nothing applied', async () => {
    const before = (await t.api('GET', node)).body.counters.refused as number
    const client = await connectAsync({ host: '127.0.0.1', port, ...KEYED, reconnectPeriod: 0 })
    try {
      await client.publishAsync('plant/boiler/setpoint', 'not json', { qos: 1 })
      await client.publishAsync('plant/boiler/setpoint', '"hot"', { qos: 1 })
      await client.publishAsync('plant/boiler/count', '{"data": {"n": 1.5}}', { qos: 1 })
      await client.publishAsync('plant/boiler/count', '{"other": 3}', { qos: 1 })
      await eventually(async () => (await t.api('GET', node)).body.counters.refused === before + 4)
    } finally {
      await client.endAsync()
    }
    assert.equal(await value('setpoint'), 72.5)
    assert.equal(await value('count'), 7)
    const stats = (await t.api('GET', node)).body
    assert.ok(stats.counters.errors >= 4)
    // Logged at warn level at most once a second per adapter (a chatty topic would flood the log).
    assert.ok(t.logs.some((l) => l.msg === 'mqtt payload refused' && l.attribute === 'setpoint' && /JSON/.test(String(l.reason))))
  })

  it('detach drops the link so the broker publishes the last will; attach comes back with the birth message', async () => {
    const { client, heard } = await listener(port, 'plant/boiler/status')
    try {
      await eventually(() => heard.some((m) => m.payload === 'online'))
      heard.length = 0
      assert.equal((await t.call(node, 'detach')).status, 200)
      await eventually(() => heard.some((m) => m.payload === 'offline'))
      const detached = (await t.api('GET', node)).body
      assert.equal(detached.state, 'DETACHED')
      assert.equal(detached.connection, 'detached')
      assert.equal((await t.call(node, 'attach')).status, 200)
      await eventually(() => heard.some((m) => m.payload === 'online'))
      await eventually(async () => (await t.api('GET', node)).body.connection === 'connected')
    } finally {
      await client.endAsync()
    }
  })

  it('publish_interval is settable while running and checked', async () => {
    assert.equal((await t.api('PUT', node, { publish_interval: 0.2 })).status, 200)
    assert.equal((await t.api('GET', node)).body.publish_interval, 0.2)
    assert.equal((await t.api('PUT', node, { publish_interval: -1 })).status, 422)
    assert.equal((await t.api('PUT', node, { topic_prefix: 'x/' })).status, 422)
  })

  it('bindings must name declared attributes, with the path of each problem', async () => {
    const bad = await t.api('PUT', `${SYS}/models`, {
      Bad: {
        attributes: { a: 1.0 },
        communication: [
          {
            mqtt: {
              bindings: [
                { attribute: '#attr(nope)', topic: 'x' },
                { attribute: '#attr(other.a)', topic: 'y' },
                { attribute: 'a', topic: 'a/#' },
              ],
            },
          },
        ],
      },
    })
    assert.equal(bad.status, 422)
    const paths = (bad.body.error.details as Array<{ path: string }>).map((d) => d.path)
    assert.ok(paths.includes('communication[0].mqtt.bindings[0].attribute'), paths.join(', '))
    assert.ok(paths.includes('communication[0].mqtt.bindings[1].attribute'), paths.join(', '))
    assert.ok(paths.includes('communication[0].mqtt.bindings[2].topic'), paths.join(', '))
  })

  it('a broker that is down is a state: the adapter retries with backoff and catches up when it is back', async () => {
    // A port chosen ahead: the adapter is pointed at it before the broker opens it.
    const broker = new TestBroker(await freePort())
    const model = {
      attributes: { level: 3.5 },
      communication: {
        mqtt: {
          broker: '127.0.0.1',
          port: broker.port,
          reconnect_period: 0.05,
          reconnect_max: 0.2,
          bindings: [{ attribute: 'level', topic: 'tank/level', retain: true }],
        },
      },
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Tank: model })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { tank: 'Tank' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/tank`, 'prepare')).status, 200)
    const tankNode = `${SYS}/instances/tank/communication/mqtt`
    const down = (await t.api('GET', tankNode)).body
    assert.equal(down.state, 'RUNNING')
    assert.equal(down.connection, 'reconnecting')
    await broker.up()
    try {
      await eventually(async () => (await t.api('GET', tankNode)).body.connection === 'connected')
      await broker.down()
      await eventually(async () => (await t.api('GET', tankNode)).body.connection === 'reconnecting')
      assert.equal((await t.api('PUT', `${SYS}/instances/tank/attributes/level/attr/internal_value`, { value: 9.0 })).status, 200)
      await broker.up()
      // The value set while the broker was down is published on reconnection (retained, so a late subscriber sees it).
      const { client, heard } = await listener(broker.port, 'tank/#')
      try {
        await eventually(() => heard.some((m) => m.topic === 'tank/level' && m.payload === '9'))
      } finally {
        await client.endAsync()
      }
      const up = (await t.api('GET', tankNode)).body
      assert.equal(up.connection, 'connected')
      assert.ok(up.counters.reconnects >= 1)
      assert.equal((await t.api('DELETE', `${SYS}/instances/tank`)).status, 200)
    } finally {
      await broker.down()
    }
  })

  it('one model serves many instances: {{instance}} in topics, client id, will and birth gives each its own', async () => {
    const broker = new TestBroker()
    await broker.up()
    const model = {
      attributes: { temp: { default: 20.5, type: 'float' } },
      communication: {
        mqtt: {
          broker: '127.0.0.1',
          port: broker.port,
          client_id: 'site-{{instance}}',
          topic_prefix: 'site/{{instance}}/',
          birth: { topic: 'site/{{instance}}/status', payload: '{{instance}} online', retain: true },
          bindings: [
            { attribute: 'temp', topic: 'temp', retain: true, on_change: true },
            { name: 'temp_set', attribute: 'temp', topic: 'temp/set', direction: 'subscribe' },
          ],
        },
      },
    }
    try {
      assert.equal((await t.api('PUT', `${SYS}/models`, { Sensor: model })).status, 200)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { s1: { type: 'Sensor', init_parameters: { temp: 11.5 } }, s2: 'Sensor' })).status, 200)
      for (const i of ['s1', 's2']) assert.equal((await t.call(`${SYS}/instances/${i}`, 'prepare')).status, 200)
      const nodeOf = (i: string) => `${SYS}/instances/${i}/communication/mqtt`
      await eventually(async () => (await t.api('GET', nodeOf('s1'))).body.connection === 'connected')
      await eventually(async () => (await t.api('GET', nodeOf('s2'))).body.connection === 'connected')
      const s1 = (await t.api('GET', nodeOf('s1'))).body
      assert.equal(s1.client_id, 'site-s1')
      assert.equal(s1.topic_prefix, 'site/s1/')
      // The model keeps its placeholders.
      assert.equal((await t.api('GET', `${SYS}/models/Sensor`)).body.definition.communication.mqtt.topic_prefix, 'site/{{instance}}/')

      const { client, heard } = await listener(broker.port, 'site/#')
      try {
        await eventually(() => heard.some((m) => m.topic === 'site/s1/temp' && m.payload === '11.5'))
        await eventually(() => heard.some((m) => m.topic === 'site/s2/temp' && m.payload === '20.5'))
        await eventually(() => heard.some((m) => m.topic === 'site/s1/status' && m.payload === 's1 online'))
        await eventually(() => heard.some((m) => m.topic === 'site/s2/status' && m.payload === 's2 online'))
        // A write to one instance's topic sets that instance only.
        await client.publishAsync('site/s2/temp/set', '42.25', { qos: 1 })
        await eventually(async () => (await t.api('GET', `${SYS}/instances/s2/attributes/temp`)).body.internal_value === 42.25)
        assert.equal((await t.api('GET', `${SYS}/instances/s1/attributes/temp`)).body.internal_value, 11.5)
      } finally {
        await client.endAsync()
      }
      for (const i of ['s1', 's2']) assert.equal((await t.api('DELETE', `${SYS}/instances/${i}`)).status, 200)
    } finally {
      await broker.down()
    }
  })

  it('deleting the instance closes its link and the embedded broker with it: no socket left', async () => {
    const { client } = await listener(port, 'plant/#')
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()))
    assert.equal((await t.api('DELETE', `${SYS}/instances/boiler`)).status, 200)
    await closed
    client.end(true)
    const refused = await new Promise<string>((resolve) => {
      const socket = tcpConnect(port, '127.0.0.1')
      socket.on('connect', () => (socket.destroy(), resolve('connected')))
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
    })
    assert.equal(refused, 'ECONNREFUSED')
  })
})

describe("mqtt adapter: the reference product's spellings (default_qos, default_retain, flat will and birth, publish_on_change, $attr)", () => {
  let t: TestServer
  let port: number
  const node = `${SYS}/instances/gw/communication/mqtt`
  const GATEWAY = {
    attributes: { flow: 1.5, total: 10.0, setpoint: 20.0 },
    communication: [
      {
        mqtt: {
          broker: 'embedded',
          port: 0,
          topic_prefix: 'spx/gw/',
          publish_interval: 0.05,
          scan_interval: 0.02,
          default_qos: 1,
          default_retain: true,
          birth_topic: 'availability',
          birth_payload: 'online',
          birth_retain: true,
          will_topic: 'availability',
          will_payload: 'offline',
          will_retain: true,
          bindings: [
            { name: 'flow', attribute: '$ext(flow)', topic: 'flow', direction: 'publish', publish_on_change: true },
            { name: 'total', attribute: '$ext(total)', topic: 'total', direction: 'publish', publish_on_change: false, qos: 0, retain: false },
            { name: 'setpoint', attribute: '$attr(setpoint)', topic: 'command/setpoint', direction: 'subscribe' },
          ],
        },
      },
    ],
  }
  before(async () => {
    t = await startTestServer()
    assert.equal((await t.api('PUT', `${SYS}/models`, { Gateway: GATEWAY })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { gw: 'Gateway' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/gw`, 'prepare')).status, 200)
    port = (await t.api('GET', node)).body.port
    await eventually(async () => (await t.api('GET', node)).body.connection === 'connected')
  })
  after(async () => t.close())

  it('the node shows the settings under Mimic names; the model keeps them as written', async () => {
    const doc = (await t.api('GET', node)).body
    assert.equal(doc.default_qos, 1)
    assert.equal(doc.default_retain, true)
    assert.deepEqual(doc.birth, { topic: 'spx/gw/availability', payload: 'online', qos: 0, retain: true })
    assert.deepEqual(doc.will, { topic: 'spx/gw/availability', payload: 'offline', qos: 0, retain: true })
    const [flow, total, setpoint] = doc.bindings
    assert.deepEqual([flow.qos, flow.retain, flow.on_change, 'publish_on_change' in flow], [1, true, true, false])
    assert.deepEqual([total.qos, total.retain, total.on_change], [0, false, false])
    assert.equal(setpoint.attribute, 'setpoint')
    const written = (await t.api('GET', `${SYS}/models/Gateway`)).body.definition.communication[0].mqtt
    assert.equal(written.bindings[0].publish_on_change, true)
    assert.equal(written.will_topic, 'availability')
  })

  it('default_qos and default_retain reach the bindings that give none; the birth message goes under topic_prefix', async () => {
    const client = await connectAsync({ host: '127.0.0.1', port, ...KEYED, reconnectPeriod: 0 })
    const heard: Array<{ topic: string; payload: string; retain: boolean; qos: number }> = []
    client.on('message', (topic, payload, packet) => heard.push({ topic, payload: payload.toString(), retain: packet.retain, qos: packet.qos }))
    try {
      // Subscribing later than the publications: what arrives at once is what the broker retained.
      await client.subscribeAsync('spx/gw/#', { qos: 2 })
      await eventually(() => heard.some((m) => m.topic === 'spx/gw/flow' && m.payload === '1.5' && m.retain && m.qos === 1))
      await eventually(() => heard.some((m) => m.topic === 'spx/gw/availability' && m.payload === 'online' && m.retain))
      await eventually(() => heard.some((m) => m.topic === 'spx/gw/total' && !m.retain && m.qos === 0))
    } finally {
      await client.endAsync()
    }
  })

  it('publish_on_change: true publishes on change only; publish_on_change: false every publish_interval', async () => {
    const client = await connectAsync({ host: '127.0.0.1', port, ...KEYED, reconnectPeriod: 0 })
    const heard: Array<{ topic: string; payload: string }> = []
    client.on('message', (topic, payload) => heard.push({ topic, payload: payload.toString() }))
    try {
      await client.subscribeAsync(['spx/gw/flow', 'spx/gw/total'], { qos: 1 })
      await eventually(() => heard.filter((m) => m.topic === 'spx/gw/total').length >= 5)
      // flow was heard once (its retained value) while total went out again and again.
      assert.deepEqual(
        heard.filter((m) => m.topic === 'spx/gw/flow').map((m) => m.payload),
        ['1.5'],
      )
      assert.equal((await t.api('PUT', `${SYS}/instances/gw/attributes/flow/attr/internal_value`, { value: 2.25 })).status, 200)
      await eventually(() => heard.some((m) => m.topic === 'spx/gw/flow' && m.payload === '2.25'))
      const seen = heard.filter((m) => m.topic === 'spx/gw/total').length
      await eventually(() => heard.filter((m) => m.topic === 'spx/gw/total').length >= seen + 3)
      assert.deepEqual(
        heard.filter((m) => m.topic === 'spx/gw/flow').map((m) => m.payload),
        ['1.5', '2.25'],
      )
    } finally {
      await client.endAsync()
    }
  })

  it('a $attr(name) binding writes the attribute; detach makes the broker publish the flat will', async () => {
    const client = await connectAsync({ host: '127.0.0.1', port, ...KEYED, reconnectPeriod: 0 })
    const heard: string[] = []
    client.on('message', (topic, payload) => topic === 'spx/gw/availability' && heard.push(payload.toString()))
    try {
      await client.publishAsync('spx/gw/command/setpoint', '22.5', { qos: 1 })
      await eventually(async () => (await t.api('GET', `${SYS}/instances/gw/attributes/setpoint`)).body.internal_value === 22.5)
      await client.subscribeAsync('spx/gw/availability', { qos: 1 })
      await eventually(() => heard.includes('online'))
      assert.equal((await t.call(node, 'detach')).status, 200)
      await eventually(() => heard.includes('offline'))
      assert.equal((await t.call(node, 'attach')).status, 200)
      await eventually(() => heard.lastIndexOf('online') > heard.indexOf('offline'))
    } finally {
      await client.endAsync()
    }
  })

  it('an alias that disagrees with the Mimic key is a 422 naming both', async () => {
    /** The problems of a model whose adapter has the disagreeing aliases, and `extra` settings, by path. */
    const refused = async (extra: Record<string, unknown>): Promise<(path: string) => string> => {
      const mqtt = {
        will: { topic: 'site/status', payload: 'gone' },
        will_payload: 'offline',
        ...extra,
        bindings: [{ attribute: '$attr(a)', topic: 'a', on_change: false, publish_on_change: true }],
      }
      const bad = await t.api('PUT', `${SYS}/models`, { Bad: { attributes: { a: 1.0 }, communication: [{ mqtt }] } })
      assert.equal(bad.status, 422)
      const details = bad.body.error.details as Array<{ path: string; message: string }>
      return (path) => details.find((d) => d.path === path)?.message ?? `nothing at ${path} in ${JSON.stringify(details)}`
    }
    // A setting that is wrong on its own is reported first ...
    assert.match((await refused({ default_qos: 3 }))('communication[0].mqtt.default_qos'), /0, 1, 2/)
    // ... and without it, each alias that disagrees with its Mimic key.
    const at = await refused({})
    assert.match(at('communication[0].mqtt.will_payload'), /will\.payload/)
    assert.match(at('communication[0].mqtt.bindings[0].publish_on_change'), /bindings\[0\]\.on_change/)
  })
})
