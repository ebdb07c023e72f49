import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { connectAsync } from 'mqtt'
import { mosquittoMissing, MosquittoSub, mosquittoPub, mosquittoPubRaw, type MosquittoLogin } from './helpers/mosquitto.js'
import { TEST_KEY, eventually, startTestServer, type TestServer } from './helpers/server.js'

// The embedded MQTT broker honours the server's product key (docs/mqtt.md, "Access to the
// embedded broker"), shown with Debian's mosquitto_pub and mosquitto_sub as the clients: no
// anonymous client with a key, the key or a users-file user as credentials, a device's own topics
// and client id kept to its adapter, and retained messages of clients capped.

const SYS = '/api/v3/system'
const missing = mosquittoMissing()
const KEY: MosquittoLogin = { username: 'anyone', password: TEST_KEY }
const PLC: MosquittoLogin = { username: 'plc', password: 'plc:secret with blanks' }
const MIB = 1024 * 1024

const DEVICE = {
  attributes: { temp: { default: 21.5, type: 'float' }, setpoint: { default: 50.0, type: 'float' } },
  communication: [
    {
      mqtt: {
        broker: 'embedded',
        port: 0,
        topic_prefix: 'dev/{{instance}}',
        birth: { topic: 'dev/{{instance}}/status', payload: 'online', retain: true },
        will: { topic: 'dev/{{instance}}/status', payload: 'offline', retain: true },
        bindings: [
          { attribute: 'temp', topic: 'temp', on_change: true, retain: true },
          { attribute: 'setpoint', topic: 'setpoint/set', direction: 'subscribe' },
        ],
      },
    },
  ],
}

describe('the embedded MQTT broker of a server with a product key', { skip: missing && 'mosquitto-clients are not installed' }, () => {
  let t: TestServer
  let port: number
  const node = `${SYS}/instances/d1/communication/mqtt`
  const adapter = async () => (await t.api('GET', node)).body
  const setpoint = async () => (await t.api('GET', `${SYS}/instances/d1/attributes/setpoint`)).body.internal_value
  const subs: MosquittoSub[] = []
  const subscribe = async (filters: string[], login: MosquittoLogin) => {
    const sub = await MosquittoSub.start(port, filters, login)
    subs.push(sub)
    return sub
  }

  let usersDir: string

  before(async () => {
    usersDir = await mkdtemp(join(tmpdir(), 'mimic-mqtt-users-'))
    const users = join(usersDir, 'mqtt-users')
    await writeFile(users, `# who may use the embedded broker\n\n${PLC.username}:${PLC.password}\n`, { mode: 0o600 })
    t = await startTestServer({ config: { mqttUsers: users } })
    assert.equal((await t.api('PUT', `${SYS}/models`, { Device: DEVICE })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { d1: 'Device' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/d1`, 'prepare')).status, 200)
    await eventually(async () => (await adapter()).connection === 'connected')
    port = (await adapter()).port
  })
  after(async () => {
    for (const sub of subs) await sub.stop()
    await t?.close()
    await rm(usersDir, { recursive: true, force: true })
  })

  it('refuses an anonymous publication to a command topic: not authorized, the attribute unchanged', async () => {
    const before = (await adapter()).embedded_broker.refused_connects as number
    const refused = await mosquittoPubRaw(port, ['-t', 'dev/d1/setpoint/set', '-m', '99', '-q', '1'])
    assert.notEqual(refused.code, 0)
    assert.match(refused.output, /not authori[sz]ed/i)
    assert.equal((await adapter()).embedded_broker.refused_connects, before + 1)
    assert.equal(await setpoint(), 50)
  })

  it('takes the product key as the password of any user, and a user of the users file', async () => {
    await mosquittoPub(port, 'dev/d1/setpoint/set', '61.5', { qos: 1, ...KEY })
    await eventually(async () => (await setpoint()) === 61.5)
    await mosquittoPub(port, 'dev/d1/setpoint/set', '62.5', { qos: 1, ...PLC })
    await eventually(async () => (await setpoint()) === 62.5)
    const wrong = await mosquittoPubRaw(port, ['-u', 'plc', '-P', 'not-it', '-t', 'dev/d1/setpoint/set', '-m', '1', '-q', '1'])
    assert.notEqual(wrong.code, 0)
    assert.match(wrong.output, /bad user name or password|not authori[sz]ed/i)
    assert.equal(await setpoint(), 62.5)
  })

  it('refuses a subscriber to # without credentials; one with them hears the device', async () => {
    await assert.rejects(MosquittoSub.start(port, ['#'], { qos: 0 }), /not authori[sz]ed/i)
    const sub = await subscribe(['#'], KEY)
    await eventually(() => sub.heard.some((m) => m.topic === 'dev/d1/temp' && m.payload === '21.5' && m.retain))
  })

  it("keeps a device's own topics to its adapter: a client's publication there is refused and its connection closed", async () => {
    const sub = await subscribe(['dev/d1/temp', 'dev/d1/status'], KEY)
    await eventually(() => sub.payloads('dev/d1/temp').includes('21.5'))
    const before = (await adapter()).embedded_broker.refused_publishes as number
    await mosquittoPub(port, 'dev/d1/temp', '-273', { ...KEY })
    await mosquittoPub(port, 'dev/d1/status', 'offline', { ...PLC })
    await eventually(async () => (await adapter()).embedded_broker.refused_publishes === before + 2)
    assert.equal((await t.api('PUT', `${SYS}/instances/d1/attributes/temp/attr/internal_value`, { value: 22.75 })).status, 200)
    await eventually(() => sub.payloads('dev/d1/temp').includes('22.75'))
    assert.ok(!sub.payloads('dev/d1/temp').includes('-273'))
    assert.ok(!sub.payloads('dev/d1/status').includes('offline'))
  })

  it("refuses a connection that takes over the adapter's client id; the adapter keeps publishing", async () => {
    const clientId = (await adapter()).client_id as string
    assert.equal(clientId, 'mimic-d1-mqtt')
    const before = (await adapter()).embedded_broker.refused_client_ids as number
    await assert.rejects(MosquittoSub.start(port, ['dev/#'], { ...KEY, clientId }), /identifier rejected/i)
    const taken = await mosquittoPubRaw(port, ['-u', 'plc', '-P', PLC.password!, '-i', clientId, '-t', 'dev/d1/setpoint/set', '-m', '1', '-q', '1'])
    assert.notEqual(taken.code, 0)
    assert.equal((await adapter()).embedded_broker.refused_client_ids, before + 2)
    assert.equal((await adapter()).connection, 'connected')
    const sub = await subscribe(['dev/d1/temp'], KEY)
    assert.equal((await t.api('PUT', `${SYS}/instances/d1/attributes/temp/attr/internal_value`, { value: 23.5 })).status, 200)
    await eventually(() => sub.payloads('dev/d1/temp').includes('23.5'))
  })

  it("refuses another user's client id while it is connected; the same user may take its own id over", async () => {
    const login = (l: MosquittoLogin) => ({ host: '127.0.0.1', port, username: l.username, password: l.password, clientId: 'panel-1', reconnectPeriod: 0 })
    const holder = await connectAsync(login(PLC))
    try {
      await assert.rejects(connectAsync(login(KEY)), /identifier rejected/i)
      assert.ok(holder.connected)
      // MQTT's own rule between connections of one user: the newer wins (a client back after a dropped link).
      const kicked = new Promise<void>((resolve) => holder.once('close', () => resolve()))
      const again = await connectAsync(login(PLC))
      await kicked
      assert.ok(again.connected)
      await again.endAsync()
    } finally {
      holder.end(true)
    }
  })

  it('caps retained messages: 50 retained messages of 1 MiB are refused and counted, the memory stays bounded', async () => {
    const big = join(t.dir, 'one-mib')
    await writeFile(big, Buffer.alloc(MIB, 'x'))
    const rssBefore = process.memoryUsage().rss
    const refusedBefore = (await adapter()).embedded_broker.refused_retained as number
    for (let i = 0; i < 50; i++) await mosquittoPubRaw(port, ['-u', 'x', '-P', TEST_KEY, '-t', `big/${i}`, '-f', big, '-r'])
    await eventually(async () => (await adapter()).embedded_broker.refused_retained === refusedBefore + 50)
    const stats = (await adapter()).embedded_broker
    assert.equal(stats.retained, 0)
    // Up to the cap, retained messages are kept: 100 of 200 KiB fill 16 MiB with 81 and the rest are refused.
    const medium = join(t.dir, 'medium')
    await writeFile(medium, Buffer.alloc(200 * 1024, 'y'))
    for (let i = 0; i < 100; i++) await mosquittoPubRaw(port, ['-u', 'x', '-P', TEST_KEY, '-t', `medium/${i}`, '-f', medium, '-r'])
    const kept = await eventually(async () => {
      const s = (await adapter()).embedded_broker
      return s.retained + s.refused_retained === refusedBefore + 150 && s
    })
    assert.equal(kept.retained, 81)
    assert.ok(kept.retained_bytes <= 16 * MIB)
    // A subscriber that comes later gets what was kept, nothing of what was refused.
    const client = await connectAsync({ host: '127.0.0.1', port, username: 'x', password: TEST_KEY, reconnectPeriod: 0 })
    try {
      const retained = new Set<string>()
      client.on('message', (topic, _payload, packet) => packet.retain && retained.add(topic))
      await client.subscribeAsync(['big/#', 'medium/#'])
      await eventually(() => retained.size === 81)
      assert.ok([...retained].every((topic) => topic.startsWith('medium/')))
    } finally {
      await client.endAsync()
    }
    // 66 MB went to the broker; what stays is the 16 MiB it may keep (the rest is garbage to collect).
    assert.ok(process.memoryUsage().rss - rssBefore < 160 * MIB, `RSS grew by ${Math.round((process.memoryUsage().rss - rssBefore) / MIB)} MiB`)
  })
})

describe(
  'the embedded MQTT broker of a server without a product key (reachable from this machine only)',
  { skip: missing && 'mosquitto-clients are not installed' },
  () => {
    let t: TestServer
    let port: number
    const node = `${SYS}/instances/d2/communication/mqtt`
    const adapter = async () => (await t.api('GET', node)).body
    const subs: MosquittoSub[] = []

    before(async () => {
      t = await startTestServer({ config: { productKey: undefined } })
      assert.equal((await t.api('PUT', `${SYS}/models`, { Device: DEVICE })).status, 200)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { d2: 'Device' })).status, 200)
      assert.equal((await t.call(`${SYS}/instances/d2`, 'prepare')).status, 200)
      await eventually(async () => (await adapter()).connection === 'connected')
      port = (await adapter()).port
    })
    after(async () => {
      for (const sub of subs) await sub.stop()
      await t?.close()
    })

    it('lets anonymous clients subscribe to # and publish commands, but not to the device’s own topics or with its client id', async () => {
      const sub = await MosquittoSub.start(port, ['#'])
      subs.push(sub)
      await eventually(() => sub.payloads('dev/d2/temp').includes('21.5'))
      await mosquittoPub(port, 'dev/d2/setpoint/set', '70.25', { qos: 1 })
      await eventually(async () => (await t.api('GET', `${SYS}/instances/d2/attributes/setpoint`)).body.internal_value === 70.25)
      await mosquittoPub(port, 'dev/d2/temp', '-273')
      await eventually(async () => (await adapter()).embedded_broker.refused_publishes === 1)
      await assert.rejects(MosquittoSub.start(port, ['#'], { clientId: 'mimic-d2-mqtt' }), /identifier rejected/i)
      assert.equal((await adapter()).connection, 'connected')
      assert.ok(!sub.payloads('dev/d2/temp').includes('-273'))
    })
  },
)
