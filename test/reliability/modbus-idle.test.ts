/**
 * Modbus connections that go quiet, stall half-way through a frame or pile up, against a
 * `mimic serve` child process (so that /proc/<pid>/fd counts the server's descriptors only) with
 * raw sockets on loopback. Each adapter states idle_timeout, frame_timeout and max_connections;
 * the figures measured here are printed as test diagnostics and recorded in docs/reliability.md.
 */
import assert from 'node:assert/strict'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { encodeRequest } from '../../src/protocols/modbus/index.js'
import { socketsOn } from '../helpers/opcua-client.js'
import { TestClient, registersOf } from '../unit/modbus/helpers.js'
import { SYS, freePort, procStats, request, serveMimic, waitFor, type ServedMimic } from './helpers.js'

const KEY = 'modbus-idle-key'
const AUTH = { authorization: `Bearer ${KEY}` }
const READ = { fc: 3, address: 0, quantity: 1 } as const
const FLOOD = 500

/** A model whose one attribute `v` is holding register 0, with the given adapter settings. */
function model(value: number, modbus: Record<string, unknown>): Record<string, unknown> {
  return {
    attributes: { v: { default: value, type: 'int' } },
    communication: [{ modbus_slave: { host: '127.0.0.1', unit_id: 1, ...modbus, mapping: { v: { address: 0, group: 'h_r', type: 'uint_16' } } } }],
  }
}

/** Resolves with Date.now() when the client's connection closes; rejects if it is still open after `withinMs`. */
async function closedAt(client: TestClient, withinMs = 15_000): Promise<number> {
  const timer = sleep(withinMs, 'open', { ref: false })
  const outcome = await Promise.race([client.closed.then(() => 'closed' as const), timer])
  assert.equal(outcome, 'closed', `the server left the connection open for ${withinMs} ms`)
  return Date.now()
}

describe('Modbus connections: idle and frame time-outs, connection limit', () => {
  let dir: string
  let server: ServedMimic
  const ports: Record<string, number> = {}
  const api = (method: string, path: string, body?: unknown): ReturnType<typeof request> => request(`${server.url}${path}`, method, body, AUTH)
  const counters = async (instance: string, key = 'modbus_slave'): Promise<Record<string, number>> => {
    const res = await api('GET', `${SYS}/instances/${instance}/communication/${key}`)
    assert.equal(res.status, 200, JSON.stringify(res.body))
    return res.body.counters
  }
  const read = async (client: TestClient, unitId = 1): Promise<number> => registersOf(await client.request(READ, { unitId, timeoutMs: 5000 }))[0]!

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-rel-modbus-idle-'))
    await mkdir(join(dir, 'extensions'))
    await writeFile(join(dir, 'extensions', 'counter.py'), 'class Counter:\n    def __init__(self):\n        self.v = 7\n')
    // Two units share one listener: its port is chosen ahead; the others' are the system's choice.
    ports.shared = await freePort()
    server = await serveMimic(
      ['--extensions', join(dir, 'extensions'), '--snapshots-dir', join(dir, 'snapshots'), '--product-key', KEY, '--python-workers', '1'],
      {
        env: { MIMIC_LOG_LEVEL: 'debug' },
      },
    )
    const models = {
      Idle: model(1, { port: 0, idle_timeout: 0.5 }),
      Frame: model(2, { port: 0, idle_timeout: 60, frame_timeout: 1 }),
      Poll: model(3, { port: 0, idle_timeout: 1.5 }),
      Limit: model(4, { port: 0, idle_timeout: 60, max_connections: 5 }),
      Busy: model(5, { port: 0, idle_timeout: 60, max_connections: 2, response_delay: 5 }),
      SharedStrict: model(61, { port: ports.shared, unit_id: 1, idle_timeout: 0.5 }),
      SharedLax: model(62, { port: ports.shared, unit_id: 2 }),
      // 3 s: opening all of them must take less, even on a loaded machine, for the peak to be seen.
      Flood: model(7, { port: 0, idle_timeout: 3, max_connections: 1000 }),
      // Python behind the register, so the flood runs with the worker pipes open as in real use.
      Counter: {
        attributes: { v: { default: 0, type: 'int' } },
        import: { 'counter.py': { class: 'Counter', attributes: { v: { property: 'v' } } } },
      },
    }
    const instances = {
      idle: 'Idle',
      frame: 'Frame',
      poll: 'Poll',
      limit: 'Limit',
      busy: 'Busy',
      strict: 'SharedStrict',
      lax: 'SharedLax',
      flood: 'Flood',
      counter: 'Counter',
    }
    const put = await api('PUT', SYS, { models, instances })
    assert.equal(put.status, 200, JSON.stringify(put.body))
    const prepared = await api('POST', `${SYS}/method/prepare`, {})
    assert.equal(prepared.status, 200, JSON.stringify(prepared.body))
    for (const name of ['idle', 'frame', 'poll', 'limit', 'busy', 'flood']) {
      ports[name] = (await api('GET', `${SYS}/instances/${name}/communication/modbus_slave`)).body.port
    }
  })

  after(async () => {
    server?.kill()
    await server?.exited
    await rm(dir, { recursive: true, force: true })
  })

  it('refuses bad settings with 422 naming each path, and leaves the system as it was', async () => {
    const bad = model(0, { idle_timeout: -1, frame_timeout: 0, max_connections: 0 })
    const res = await api('PUT', `${SYS}/models`, { Bad: bad })
    assert.equal(res.status, 422, JSON.stringify(res.body))
    const paths = res.body.error.details.map((d: { path: string }) => d.path).sort()
    assert.deepEqual(paths, [
      'communication[0].modbus_slave.frame_timeout',
      'communication[0].modbus_slave.idle_timeout',
      'communication[0].modbus_slave.max_connections',
    ])
    const tooLarge = await api('PUT', `${SYS}/models`, { Bad: model(0, { idle_timeout: 86_401, max_connections: 1.5 }) })
    assert.equal(tooLarge.status, 422)
    assert.deepEqual(tooLarge.body.error.details.map((d: { path: string }) => d.path).sort(), [
      'communication[0].modbus_slave.idle_timeout',
      'communication[0].modbus_slave.max_connections',
    ])
    assert.equal((await api('GET', `${SYS}/models/Bad`)).status, 404)
    // The adapter node shows the settings in force, defaults included.
    const node = (await api('GET', `${SYS}/instances/lax/communication/modbus_slave`)).body
    assert.deepEqual([node.idle_timeout, node.frame_timeout, node.max_connections], [300, 10, 256])
    const idle = (await api('GET', `${SYS}/instances/idle/communication/modbus_slave`)).body
    assert.deepEqual([idle.idle_timeout, idle.frame_timeout, idle.max_connections], [0.5, 10, 256])
  })

  it('closes a connection that completes no request within idle_timeout, never before', async (t) => {
    const before = Date.now()
    const silent = await TestClient.connect(ports.idle!)
    const quiet = await TestClient.connect(ports.idle!)
    const asked = Date.now()
    assert.equal(await read(quiet), 1)
    const silentClosed = await closedAt(silent)
    const quietClosed = await closedAt(quiet)
    assert.ok(silentClosed - before >= 500, `a silent connection closed after ${silentClosed - before} ms, before its 500 ms`)
    assert.ok(quietClosed - asked >= 500, `a quiet connection closed ${quietClosed - asked} ms after its request, before its 500 ms`)
    t.diagnostic(`idle_timeout 0.5 s: a silent connection closed after ${silentClosed - before} ms, a quiet one ${quietClosed - asked} ms after its request`)
    const c = await counters('idle')
    assert.equal(c.idle_timeouts, 2)
    assert.equal(c.frame_timeouts, 0)
    // The log reaches us through the child's stdout, possibly after the close itself.
    const closes = (): Array<Record<string, unknown>> => server.logs.filter((r) => r.msg === 'closing modbus connection' && r.reason === 'idle')
    await waitFor(() => closes().length >= 2, 5000).catch(() => undefined)
    assert.ok(closes().length >= 2 && closes().every((r) => r.level === 20), `debug records: ${JSON.stringify(closes())}`)
  })

  it('closes a connection whose started frame is not complete within frame_timeout, however slowly bytes keep coming', async (t) => {
    const frame = encodeRequest({ transactionId: 1, unitId: 1, request: READ })
    // Half an MBAP header, then nothing.
    const half = await TestClient.connect(ports.frame!)
    const sent = Date.now()
    half.send(frame.subarray(0, 3))
    const halfClosed = await closedAt(half)
    assert.ok(halfClosed - sent >= 1000, `closed ${halfClosed - sent} ms after the first bytes, before its 1000 ms`)
    // One byte every 200 ms: bytes keep arriving, but the frame is not done within 1 s.
    const trickle = await TestClient.connect(ports.frame!)
    const trickleStart = Date.now()
    for (let i = 0; i < frame.length && !trickle.socket.destroyed; i++) {
      trickle.send(frame.subarray(i, i + 1))
      await sleep(200)
    }
    const trickleClosed = await closedAt(trickle)
    assert.ok(trickle.arrivals.length === 0, 'a frame spread over 2.4 s was answered despite frame_timeout 1 s')
    // A frame split in two that completes in time is answered, and its connection stays open.
    const split = await TestClient.connect(ports.frame!)
    const answer = split.expect(9, 5000)
    const splitFrame = encodeRequest({ transactionId: 9, unitId: 1, request: READ })
    split.send(splitFrame.subarray(0, 5))
    await sleep(150)
    split.send(splitFrame.subarray(5))
    assert.deepEqual(registersOf(await answer), [2])
    // A negative check: past frame_timeout, the answered frame left nothing to close the connection.
    await sleep(1500)
    assert.equal(await read(split), 2)
    split.close()
    t.diagnostic(`frame_timeout 1 s: half a header closed after ${halfClosed - sent} ms, a byte-per-200-ms frame after ${trickleClosed - trickleStart} ms`)
    const c = await counters('frame')
    assert.equal(c.frame_timeouts, 2)
    assert.equal(c.idle_timeouts, 0)
  })

  it('keeps a slowly but steadily polling client open', async () => {
    const client = await TestClient.connect(ports.poll!)
    let answered = 0
    // Polls every 0.2 s for 4.5 s: three times the 1.5 s idle_timeout.
    for (const end = Date.now() + 4500; Date.now() < end;) {
      assert.equal(await read(client), 3)
      answered++
      await sleep(200)
    }
    assert.ok(!client.socket.destroyed, 'the polling connection was closed')
    assert.ok(answered >= 5, `only ${answered} polls`)
    assert.equal((await counters('poll')).idle_timeouts, 0)
    client.close()
  })

  it('at max_connections, a new connection closes the one idle the longest and is served', async () => {
    const clients: TestClient[] = []
    for (let i = 0; i < 5; i++) {
      const client = await TestClient.connect(ports.limit!)
      assert.equal(await read(client), 4)
      clients.push(client)
      // Each idle since a moment of its own, so which one has been idle the longest is clear.
      await sleep(20)
    }
    // The first polls again: now the second one has been idle the longest.
    assert.equal(await read(clients[0]!), 4)
    const newcomer = await TestClient.connect(ports.limit!)
    await closedAt(clients[1]!, 5000)
    assert.equal(await read(newcomer), 4)
    for (const i of [0, 2, 3, 4]) assert.equal(await read(clients[i]!), 4, `connection ${i + 1} was closed too`)
    const c = await counters('limit')
    assert.equal(c.evictions, 1)
    assert.equal(c.refusals, 0)
    for (const client of [...clients, newcomer]) client.close()
  })

  it('refuses a new connection only when every connection waits for an answer', async () => {
    const waiting = [await TestClient.connect(ports.busy!), await TestClient.connect(ports.busy!)]
    // response_delay 5 s: both connections are waiting for their answers.
    const answers = waiting.map((client) => client.request(READ, { timeoutMs: 20_000 }))
    await waitFor(async () => (await counters('busy')).requests === 2, 5000)
    const refused = await TestClient.connect(ports.busy!)
    await closedAt(refused, 5000)
    for (const answer of answers) assert.deepEqual(registersOf(await answer), [5])
    // With the answers delivered, both are idle again: a newcomer makes room and is served.
    const next = await TestClient.connect(ports.busy!)
    assert.deepEqual(registersOf(await next.request(READ, { timeoutMs: 20_000 })), [5])
    const c = await counters('busy')
    assert.equal(c.refusals, 1)
    assert.equal(c.evictions, 1)
    const noted = (): boolean =>
      server.logs.some((r) => r.level === 30 && typeof r.msg === 'string' && r.msg.startsWith('modbus listener at its connection limit'))
    await waitFor(noted, 5000).catch(() => undefined)
    assert.ok(noted(), 'no info record of the full listener')
    for (const client of [...waiting, next]) client.close()
  })

  it('a shared listener applies the smallest idle_timeout of its adapters, recomputed when one stops and starts', async () => {
    // Unit 2 states the default 300 s, unit 1 0.5 s: the connection to unit 2 closes after 0.5 s.
    const first = await TestClient.connect(ports.shared!)
    const asked = Date.now()
    assert.equal(await read(first, 2), 62)
    const firstClosed = await closedAt(first)
    assert.ok(firstClosed - asked >= 500)
    // Both adapters count what their listener closed.
    assert.equal((await counters('strict')).idle_timeouts, 1)
    assert.equal((await counters('lax')).idle_timeouts, 1)

    // Without the strict adapter, the lax one's 300 s apply.
    assert.equal((await api('POST', `${SYS}/instances/strict/communication/modbus_slave/method/stop`, {})).status, 200)
    const second = await TestClient.connect(ports.shared!)
    assert.equal(await read(second, 2), 62)
    // A negative check: three times the strict 0.5 s, and still open.
    await sleep(1500)
    assert.equal(await read(second, 2), 62)
    second.close()

    // And with it back, 0.5 s again.
    assert.equal((await api('POST', `${SYS}/instances/strict/communication/modbus_slave/method/start`, {})).status, 200)
    const third = await TestClient.connect(ports.shared!)
    assert.equal(await read(third, 1), 61)
    await closedAt(third)
    assert.equal((await counters('lax')).idle_timeouts, 2)
  })

  it(`${FLOOD} idle connections close after idle_timeout and the server's descriptors return to where they were`, { timeout: 90_000 }, async (t) => {
    // Earlier tests' connections are gone: nothing but the listeners on their ports.
    await waitFor(() => Object.values(ports).every((port) => socketsOn(port).every((s) => s.state === 'LISTEN')), 5000)
    const start = procStats(server.pid)
    const clients: TestClient[] = []
    const opening = Date.now()
    for (let i = 0; i < FLOOD; i += 50) {
      clients.push(...(await Promise.all(Array.from({ length: Math.min(50, FLOOD - i) }, () => TestClient.connect(ports.flood!)))))
    }
    const opened = Date.now()
    const peak = (await waitFor(() => {
      const now = procStats(server.pid)
      return now.fds >= start.fds + FLOOD ? now : undefined
    }, 10_000))!
    await Promise.all(clients.map((client) => closedAt(client, 30_000)))
    const allClosed = Date.now()
    const end = (await waitFor(() => {
      const now = procStats(server.pid)
      return now.fds <= start.fds + 3 ? now : undefined
    }, 10_000))!
    assert.equal((await counters('flood')).idle_timeouts, FLOOD)
    const after = await TestClient.connect(ports.flood!)
    assert.equal(await read(after), 7)
    after.close()
    t.diagnostic(
      `descriptors: ${start.fds} before, ${peak.fds} with ${FLOOD} idle connections, ${end.fds} after; opened in ${opened - opening} ms, all closed ${allClosed - opened} ms after the last opened (idle_timeout 3 s); RSS ${start.rssKb} -> ${peak.rssKb} -> ${end.rssKb} KiB`,
    )
    assert.equal(server.logs.filter((r) => Number(r.level) >= 50).length, 0, 'error records in the log')
  })
})
