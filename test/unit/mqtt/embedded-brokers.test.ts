// src/protocols/mqtt/embedded-brokers.ts: the in-process broker on a real loopback port, and the fault when the port is taken.
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { describe, it } from 'node:test'
import { pino } from 'pino'
import { ConflictError } from '../../../src/errors.js'
import { EmbeddedBrokers } from '../../../src/protocols/mqtt/embedded-brokers.js'

describe('embedded MQTT brokers: a port that cannot be had', () => {
  it('is a 409 naming the port, and the broker opens on it once it is free', async () => {
    const brokers = new EmbeddedBrokers({ logger: pino({ level: 'silent' }) })
    const blocker = createServer()
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r))
    const taken = (blocker.address() as { port: number }).port
    try {
      const refused = await brokers.acquire(taken).catch((e: unknown) => e)
      assert.ok(refused instanceof ConflictError)
      assert.equal(refused.message, `Cannot open the embedded MQTT broker: port 127.0.0.1:${taken} is already in use by another program`)
      assert.deepEqual(refused.details, [{ path: 'port', message: `port 127.0.0.1:${taken} is already in use by another program` }])
      await new Promise<void>((r) => blocker.close(() => r()))
      const lease = await brokers.acquire(taken)
      assert.equal(lease.port, taken)
      await lease.release()
    } finally {
      blocker.close()
      await brokers.close()
    }
  })
})
