import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import type { Server } from 'node:net'
import { ConflictError, ValidationError } from '../../../src/errors.js'
import { ModbusHub, ModbusSlaveAdapter, parseModbusSlave } from '../../../src/protocols/modbus/index.js'
import { MapAccessor, TestClient, exceptionOf, registersOf, silentLogger } from './helpers.js'

function adapterFor(
  hub: ModbusHub,
  options: { port?: number; unitId: number; value: number; host?: string; delay?: number; connections?: Record<string, number> },
): ModbusSlaveAdapter {
  return new ModbusSlaveAdapter({
    hub,
    logger: silentLogger,
    accessor: new MapAccessor({ v: options.value }),
    definition: parseModbusSlave({
      host: options.host ?? '127.0.0.1',
      port: options.port,
      unit_id: options.unitId,
      response_delay: options.delay ?? 0,
      ...options.connections,
      mapping: { v: { address: 0, group: 'h_r', type: 'uint_16' } },
    }),
  })
}

function listenOn(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen({ host: '127.0.0.1', port }, () => resolve(server))
  })
}

const portOf = (server: Server): number => (server.address() as { port: number }).port
const closeServer = (server: Server): Promise<void> => new Promise((resolve) => server.close(() => resolve()))

describe('ModbusHub', () => {
  it('serves several unit ids on one shared port', async () => {
    const hub = new ModbusHub({ logger: silentLogger })
    try {
      const first = adapterFor(hub, { port: 0, unitId: 1, value: 11 })
      await first.start()
      const port = first.info().port!
      const second = adapterFor(hub, { port, unitId: 2, value: 22 })
      await second.start()
      assert.equal(second.info().port, port)
      assert.deepEqual(
        hub.listeners().map((l) => [l.port, l.unitIds]),
        [[port, [1, 2]]],
      )
      const client = await TestClient.connect(port)
      assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 1 }, { unitId: 1 })), [11])
      assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 1 }, { unitId: 2 })), [22])
      // Nobody is unit 3; with two units, 0 and 255 are no wildcard either.
      assert.equal(exceptionOf(await client.request({ fc: 3, address: 0, quantity: 1 }, { unitId: 3 })), 0x0b)
      assert.equal(exceptionOf(await client.request({ fc: 3, address: 0, quantity: 1 }, { unitId: 255 })), 0x0b)
      // A unit that stops leaves the others serving on the same connection.
      await first.stop()
      assert.equal(exceptionOf(await client.request({ fc: 3, address: 0, quantity: 1 }, { unitId: 1 })), 0x0b)
      // With exactly one unit left, ids 0 and 255 reach it.
      assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 1 }, { unitId: 0 })), [22])
      assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 1 }, { unitId: 255 })), [22])
      // The last unit leaving closes the listener and its connections.
      await second.stop()
      await client.closed
      assert.deepEqual(hub.listeners(), [])
      await assert.rejects(TestClient.connect(port), /ECONNREFUSED/)
    } finally {
      await hub.close()
    }
  })

  it('on a shared port, an answer without delay waits behind the held-back answer of a request sent before it', async () => {
    const hub = new ModbusHub({ logger: silentLogger })
    try {
      const slow = adapterFor(hub, { port: 0, unitId: 1, value: 11, delay: 0.1 })
      await slow.start()
      const port = slow.info().port!
      await adapterFor(hub, { port, unitId: 2, value: 22 }).start()
      const client = await TestClient.connect(port)
      const read = { fc: 3, address: 0, quantity: 1 } as const
      const answers = await Promise.all([
        client.request(read, { unitId: 2 }),
        client.request(read, { unitId: 1 }),
        client.request(read, { unitId: 2 }),
        client.request(read, { unitId: 3 }),
      ])
      assert.deepEqual(
        answers.map((a) => exceptionOf(a) ?? registersOf(a)[0]),
        [22, 11, 22, 0x0b],
      )
      assert.deepEqual(
        client.arrivals,
        answers.map((a) => a.transactionId),
        'answers arrive in request order',
      )
      client.close()
    } finally {
      await hub.close()
    }
  })

  it('refuses a duplicate unit id on one port with a ValidationError naming host:port and unit id', async () => {
    const hub = new ModbusHub({ logger: silentLogger })
    try {
      const first = adapterFor(hub, { port: 0, unitId: 7, value: 1 })
      await first.start()
      const port = first.info().port!
      const twin = adapterFor(hub, { port, unitId: 7, value: 2 })
      const error = await twin.start().then(
        () => null,
        (e: unknown) => e,
      )
      assert.ok(error instanceof ValidationError, `got ${String(error)}`)
      assert.equal(error.status, 422)
      assert.match(error.message, new RegExp(`unit id 7 is already in use on 127\\.0\\.0\\.1:${port}`))
      assert.equal(twin.state, 'STOPPED')
      // The first unit is untouched.
      const client = await TestClient.connect(port)
      assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 1 }, { unitId: 7 })), [1])
      client.close()
    } finally {
      await hub.close()
    }
  })

  it('a port held by another program is a ConflictError (409), not a crash', async () => {
    const blocker = await listenOn(0)
    const hub = new ModbusHub({ logger: silentLogger })
    try {
      const adapter = adapterFor(hub, { port: portOf(blocker), unitId: 1, value: 1 })
      const error = await adapter.start().then(
        () => null,
        (e: unknown) => e,
      )
      assert.ok(error instanceof ConflictError, `got ${String(error)}`)
      assert.equal(error.status, 409)
      assert.match(error.message, new RegExp(`port 127\\.0\\.0\\.1:${portOf(blocker)} is already in use by another program`))
      assert.equal(adapter.state, 'STOPPED')
      assert.deepEqual(hub.listeners(), [])
      // Two units racing for the same taken port both get the conflict.
      const a = adapterFor(hub, { port: portOf(blocker), unitId: 1, value: 1 })
      const b = adapterFor(hub, { port: portOf(blocker), unitId: 2, value: 1 })
      const results = await Promise.allSettled([a.start(), b.start()])
      assert.ok(results.every((r) => r.status === 'rejected' && r.reason instanceof ConflictError))
    } finally {
      await hub.close()
      await closeServer(blocker)
    }
  })

  it('an omitted port takes the first free one from firstAutoPort, skipping ours and other programs', async () => {
    const blocker = await listenOn(0)
    const base = portOf(blocker)
    const hub = new ModbusHub({ logger: silentLogger, firstAutoPort: base })
    try {
      const one = adapterFor(hub, { unitId: 1, value: 1 })
      const two = adapterFor(hub, { unitId: 1, value: 2 })
      await Promise.all([one.start(), two.start()])
      const ports = [one.info().port!, two.info().port!]
      assert.ok(
        ports.every((p) => p > base),
        `ports ${ports} must skip the taken ${base}`,
      )
      assert.notEqual(ports[0], ports[1])
      const client = await TestClient.connect(ports[1]!)
      assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 1 })), [2])
      client.close()
    } finally {
      await hub.close()
      await closeServer(blocker)
    }
  })

  it('detach leaves the connection open but silent (the client times out); attach restores answers', async () => {
    const hub = new ModbusHub({ logger: silentLogger })
    try {
      const adapter = adapterFor(hub, { port: 0, unitId: 1, value: 42 })
      await adapter.start()
      const client = await TestClient.connect(adapter.info().port!)
      adapter.detach()
      assert.equal(adapter.state, 'DETACHED')
      await assert.rejects(client.request({ fc: 3, address: 0, quantity: 1 }, { timeoutMs: 300 }), /time-out/)
      assert.equal(client.socket.destroyed, false)
      adapter.attach()
      assert.equal(adapter.state, 'RUNNING')
      assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 1 })), [42])
      // The silent period did not leave a stale answer behind.
      assert.equal(client.unmatched.length, 0)
      client.close()
    } finally {
      await hub.close()
    }
  })

  it('stop then start without waiting reopens the same port (lifecycle steps run in order)', async () => {
    const hub = new ModbusHub({ logger: silentLogger })
    try {
      const probe = adapterFor(hub, { port: 0, unitId: 1, value: 5 })
      await probe.start()
      const port = probe.info().port!
      await probe.stop()
      const adapter = adapterFor(hub, { port, unitId: 1, value: 6 })
      for (let i = 0; i < 5; i++) {
        const steps = [adapter.start(), adapter.stop(), adapter.start()]
        await Promise.all(steps)
        assert.equal(adapter.state, 'RUNNING')
        assert.equal(adapter.info().port, port)
      }
      // Another unit taking over the port while the last one leaves it.
      const successor = adapterFor(hub, { port, unitId: 1, value: 7 })
      await Promise.all([adapter.stop(), successor.start()])
      assert.equal(successor.state, 'RUNNING')
      const client = await TestClient.connect(port)
      assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 1 })), [7])
      client.close()
    } finally {
      await hub.close()
    }
  })

  it('close() destroys open connections and listeners quickly', async () => {
    const hub = new ModbusHub({ logger: silentLogger })
    const adapter = adapterFor(hub, { port: 0, unitId: 1, value: 1 })
    await adapter.start()
    const clients = await Promise.all(Array.from({ length: 20 }, () => TestClient.connect(adapter.info().port!)))
    const started = Date.now()
    await hub.close()
    await Promise.all(clients.map((c) => c.closed))
    assert.ok(Date.now() - started < 1000)
    assert.deepEqual(hub.listeners(), [])
  })

  it('a shared listener applies the strictest rules of its units, recomputed as units come and go', async () => {
    const hub = new ModbusHub({ logger: silentLogger })
    try {
      const lax = adapterFor(hub, { port: 0, unitId: 1, value: 1, connections: { idle_timeout: 0, frame_timeout: 20, max_connections: 300 } })
      await lax.start()
      const port = lax.info().port!
      const rules = (): unknown => hub.listeners()[0]!.rules
      // Idle 0 is "never": alone, it stays never.
      assert.deepEqual(rules(), { idleTimeoutMs: 0, frameTimeoutMs: 20_000, maxConnections: 300 })
      const strict = adapterFor(hub, { port, unitId: 2, value: 2, connections: { idle_timeout: 0.5, frame_timeout: 30, max_connections: 5 } })
      await strict.start()
      assert.deepEqual(rules(), { idleTimeoutMs: 500, frameTimeoutMs: 20_000, maxConnections: 5 })
      const defaults = adapterFor(hub, { port, unitId: 3, value: 3 })
      await defaults.start()
      assert.deepEqual(rules(), { idleTimeoutMs: 500, frameTimeoutMs: 10_000, maxConnections: 5 })
      await strict.stop()
      assert.deepEqual(rules(), { idleTimeoutMs: 300_000, frameTimeoutMs: 10_000, maxConnections: 256 })
      await defaults.stop()
      assert.deepEqual(rules(), { idleTimeoutMs: 0, frameTimeoutMs: 20_000, maxConnections: 300 })
    } finally {
      await hub.close()
    }
  })

  it('a unit with a lower limit joining: the next newcomer closes the longest idle connections down to it', async () => {
    const hub = new ModbusHub({ logger: silentLogger })
    try {
      const first = adapterFor(hub, { port: 0, unitId: 1, value: 1 })
      await first.start()
      const port = first.info().port!
      const clients: TestClient[] = []
      for (let i = 0; i < 4; i++) {
        const client = await TestClient.connect(port)
        assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 1 })), [1])
        clients.push(client)
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
      const strict = adapterFor(hub, { port, unitId: 2, value: 2, connections: { max_connections: 2 } })
      await strict.start()
      // Joining closes nothing by itself.
      assert.equal(hub.listeners()[0]!.connections, 4)
      const newcomer = await TestClient.connect(port)
      await Promise.all([clients[0]!.closed, clients[1]!.closed, clients[2]!.closed])
      assert.deepEqual(registersOf(await newcomer.request({ fc: 3, address: 0, quantity: 1 }, { unitId: 2 })), [2])
      assert.deepEqual(registersOf(await clients[3]!.request({ fc: 3, address: 0, quantity: 1 })), [1])
      assert.equal(hub.listeners()[0]!.connections, 2)
      assert.equal(first.info().counters.evictions, 3)
      assert.equal(strict.info().counters.evictions, 3)
      newcomer.close()
      clients[3]!.close()
    } finally {
      await hub.close()
    }
  })

  it('refuses a unit id outside 0..255 and a host that is not local', async () => {
    const hub = new ModbusHub({ logger: silentLogger })
    try {
      const unit = { handle: () => 0, responseDelayMs: 0 }
      await assert.rejects(hub.register({ host: '127.0.0.1', port: 0, unitId: 256, unit }), ValidationError)
      const error = await hub.register({ host: '192.0.2.1', port: 0, unitId: 1, unit }).then(
        () => null,
        (e: unknown) => e,
      )
      assert.ok(error instanceof ConflictError)
      assert.match(error.message, /not an address of this machine/)
    } finally {
      await hub.close()
    }
  })
})
