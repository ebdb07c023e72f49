// src/protocols/mqtt/broker-guard.ts through EmbeddedBrokers: a real broker on a loopback port, MQTT.js clients.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { connectAsync, type IClientOptions, type MqttClient } from 'mqtt'
import { pino } from 'pino'
import { EmbeddedBrokers, type BrokerLease } from '../../../src/protocols/mqtt/embedded-brokers.js'

const KEY = 'the-key'

/** Waits until `check` holds (the broker answers asynchronously). */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 10))
  assert.ok(check())
}

/** The CONNACK code a connection gets (0: accepted, then closed again). */
async function connackCode(port: number, options: IClientOptions): Promise<number> {
  try {
    const client = await connectAsync({ host: '127.0.0.1', port, reconnectPeriod: 0, ...options })
    await client.endAsync()
    return 0
  } catch (error) {
    return (error as { code?: number }).code ?? -1
  }
}

describe('embedded broker access: credentials, client ids, device topics, retained caps', () => {
  const brokers = new EmbeddedBrokers({
    logger: pino({ level: 'silent' }),
    security: { productKey: KEY },
    limits: { retainedMessages: 3, retainedMessageBytes: 100, retainedBytes: 200 },
  })
  let lease: BrokerLease
  let device: MqttClient
  const open: MqttClient[] = []
  const client = async (options: IClientOptions = {}) => {
    const c = await connectAsync({ host: '127.0.0.1', port: lease.port, username: 'u', password: KEY, reconnectPeriod: 0, ...options })
    open.push(c)
    return c
  }

  before(async () => {
    lease = await brokers.acquire(0, { clientId: 'dev-1', publishes: ['dev/1/state', 'dev/1/both'], subscribes: ['dev/1/cmd', 'dev/1/both'] })
    device = await connectAsync({ host: '127.0.0.1', port: lease.port, clientId: 'dev-1', reconnectPeriod: 0, ...lease.credentials })
  })
  after(async () => {
    for (const c of [device, ...open]) c.end(true)
    await lease.release()
    await brokers.close()
  })

  it('wants the key or no connection: anonymous is not authorized (5), a wrong password is refused (4)', async () => {
    assert.equal(await connackCode(lease.port, {}), 5)
    assert.equal(await connackCode(lease.port, { username: 'u', password: 'wrong' }), 4)
    assert.equal(await connackCode(lease.port, { username: 'u', password: KEY }), 0)
    assert.equal(lease.stats().refused_connects, 2)
  })

  it("keeps the device's state topic to it; its command topics and a `both` topic are open", async () => {
    const watcher = await client()
    const heard: string[] = []
    watcher.on('message', (topic, payload) => heard.push(`${topic}=${payload.toString()}`))
    await watcher.subscribeAsync('dev/#', { qos: 1 })
    await device.publishAsync('dev/1/state', 'from-device', { qos: 1 })
    const writer = await client()
    await writer.publishAsync('dev/1/cmd', 'command', { qos: 1 })
    await writer.publishAsync('dev/1/both', 'both', { qos: 1 })
    const closed = new Promise<void>((resolve) => writer.once('close', () => resolve()))
    writer.publish('dev/1/state', 'forged')
    await closed
    await until(() => heard.includes('dev/1/both=both'))
    assert.deepEqual(heard, ['dev/1/state=from-device', 'dev/1/cmd=command', 'dev/1/both=both'])
    assert.equal(lease.stats().refused_publishes, 1)
  })

  it("refuses the device's client id to others even with the key, and keeps the device connected", async () => {
    assert.equal(await connackCode(lease.port, { username: 'u', password: KEY, clientId: 'dev-1' }), 2)
    assert.ok(device.connected)
  })

  it('caps retained messages of clients by size, count and total; an empty payload frees a place; the device is not capped', async () => {
    const refusedBefore = lease.stats().refused_retained
    const publishRetained = async (topic: string, bytes: number): Promise<boolean> => {
      const c = await client()
      const closed = new Promise<boolean>((resolve) => c.once('close', () => resolve(false)))
      c.publish(topic, Buffer.alloc(bytes, 'x'), { qos: 1, retain: true })
      const acked = new Promise<boolean>((resolve) => c.once('packetreceive', (p) => p.cmd === 'puback' && resolve(true)))
      const accepted = await Promise.race([acked, closed])
      c.end(true)
      return accepted
    }
    // 100 bytes a message at most, topic included.
    assert.equal(await publishRetained('r/1', 98), false)
    assert.equal(await publishRetained('r/1', 60), true)
    assert.equal(await publishRetained('r/2', 60), true)
    // 200 bytes in all: 126 are taken, so 83 more are too many and 13 are not.
    assert.equal(await publishRetained('r/3', 80), false)
    assert.equal(await publishRetained('r/3', 10), true)
    // Three messages at most.
    assert.equal(await publishRetained('r/4', 1), false)
    // Replacing one does not add one; clearing one frees its place.
    assert.equal(await publishRetained('r/3', 20), true)
    assert.equal(await publishRetained('r/3', 0), true)
    assert.equal(await publishRetained('r/4', 1), true)
    assert.deepEqual([lease.stats().retained, lease.stats().refused_retained - refusedBefore], [3, 3])
    // The device's own retained messages are not counted against clients.
    await device.publishAsync('dev/1/state', Buffer.alloc(1000, 'd'), { qos: 1, retain: true })
    assert.equal(lease.stats().retained, 3)
  })
})
