// The live event stream GET /api/v3/events (docs/events.md), over real sockets: structure and
// frames, per-client diffs, the instance filter, rate limits, shutdown, and a load of 100
// instances at 10 Hz with several clients.
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { get as httpGet, type IncomingMessage } from 'node:http'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import pino from 'pino'
import { parseConfig } from '../src/config.js'
import { startMimic, type MimicServer } from '../src/mimic.js'
import { buildApp } from '../src/server/app.js'
import { registerEvents, type EventStreams, type FrameEvent, type StructureEvent } from '../src/server/events.js'
import { SseParser, type SseEvent } from '../ui/src/sse-parser.ts'
import { eventually, testEnv } from './helpers/server.js'

const KEY = 'events-test-key'

interface EventServer {
  url: string
  mimic: MimicServer
  app: FastifyInstance
  streams: EventStreams
  close(): Promise<void>
}

/**
 * A real Mimic (services, system) with a second HTTP app around its system that has the event
 * stream registered, as startMimic will once the plugin is wired in.
 */
async function startEventServer(opts: { system?: string; keepaliveMs?: number } = {}): Promise<EventServer> {
  const dir = await mkdtemp(join(tmpdir(), 'mimic-events-'))
  let systemFile: string | undefined
  if (opts.system) {
    systemFile = join(dir, 'system.yaml')
    await writeFile(systemFile, opts.system)
  }
  const config = parseConfig(
    { port: 0, productKey: KEY, snapshotsDir: join(dir, 'snapshots'), extensions: [dir], system: systemFile, pythonWorkers: 1 },
    testEnv(),
  )
  const logger = pino({ level: 'silent' })
  const mimic = await startMimic(config, { logger })
  let streams: EventStreams | undefined
  const app = await buildApp({
    system: mimic.system,
    logger,
    productKey: KEY,
    bodyLimit: config.bodyLimit,
    fastLane: config.fastLane === 'on',
    plugins: [(a) => void (streams = registerEvents(a, mimic.system, { keepaliveMs: opts.keepaliveMs }))],
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.server.address() as { port: number }).port
  return {
    url: `http://127.0.0.1:${port}`,
    mimic,
    app,
    streams: streams!,
    close: async () => {
      await app.close()
      await mimic.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** A stream client that keeps every event and lets a test wait for the one it expects. */
class StreamClient {
  readonly events: SseEvent[] = []
  readonly raw: string[] = []
  readonly abort = new AbortController()
  ended = false
  #waiters: Array<() => void> = []

  /** Opens a stream on its own connection (no keep-alive pool, so nothing lingers after a test). */
  static async open(url: string, query = ''): Promise<StreamClient> {
    const client = new StreamClient()
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpGet(`${url}/api/v3/events${query}`, { agent: false, headers: { authorization: `Bearer ${KEY}` }, signal: client.abort.signal }, resolve)
      req.once('error', reject)
    })
    assert.equal(res.statusCode, 200)
    assert.match(res.headers['content-type'] ?? '', /^text\/event-stream/)
    const parser = new SseParser()
    res.setEncoding('utf8')
    res.on('data', (chunk: string) => {
      client.raw.push(chunk)
      client.events.push(...parser.push(chunk))
      client.#wake()
    })
    const ended = (): void => {
      client.ended = true
      client.#wake()
    }
    res.once('end', ended)
    res.once('close', ended)
    res.once('error', ended)
    return client
  }

  #wake(): void {
    for (const wake of this.#waiters.splice(0)) wake()
  }

  frames(from = 0): FrameEvent[] {
    return this.events
      .slice(from)
      .filter((e) => e.event === 'frame')
      .map((e) => JSON.parse(e.data) as FrameEvent)
  }

  /** Waits for the first event at index >= `from` that `match` accepts; returns its index. */
  async waitFor(match: (e: SseEvent) => boolean, opts: { from?: number; timeoutMs?: number } = {}): Promise<number> {
    const deadline = Date.now() + (opts.timeoutMs ?? 3000)
    for (;;) {
      const index = this.events.findIndex((e, i) => i >= (opts.from ?? 0) && match(e))
      if (index >= 0) return index
      if (this.ended) throw new Error(`stream ended before the expected event; got ${this.events.map((e) => e.event).join(',')}`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`no matching event within ${opts.timeoutMs ?? 3000} ms; got ${this.events.length} events`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.#waiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
  }

  close(): void {
    this.abort.abort()
  }
}

const isFrame = (e: SseEvent): boolean => e.event === 'frame'
const frameWith =
  (check: (f: FrameEvent) => boolean) =>
  (e: SseEvent): boolean =>
    e.event === 'frame' && check(JSON.parse(e.data) as FrameEvent)

const TWO_LAMPS = `
models:
  Lamp:
    attributes:
      power: { default: 0.0, type: float, unit: W }
      on: false
      label: lamp
instances:
  - hall: Lamp
  - porch: Lamp
`

describe('event stream', () => {
  let server: EventServer
  before(async () => {
    server = await startEventServer({ system: TWO_LAMPS })
  })
  after(async () => {
    await server.close()
  })

  const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: await res.json() }
  }

  test('needs the product key like every /api request', async () => {
    const res = await fetch(`${server.url}/api/v3/events`)
    assert.equal(res.status, 401)
    const fault = (await res.json()) as { type: string; http_status: number }
    assert.equal(fault.type, 'fault')
    assert.equal(fault.http_status, 401)
  })

  test('refuses a rate outside 1..50 and malformed instance names with a 422 fault', async () => {
    for (const query of ['hz=0', 'hz=51', 'hz=abc', 'hz=2.5']) {
      const res = await api('GET', `/api/v3/events?${query}`)
      assert.equal(res.status, 422, query)
      assert.equal(res.body.error.details[0].path, 'query.hz')
    }
    const res = await api('GET', '/api/v3/events?instances=hall,bad.name')
    assert.equal(res.status, 422)
    assert.equal(res.body.error.details[0].path, 'query.instances')
  })

  test('starts with the structure, then a frame holding every value', async () => {
    const client = await StreamClient.open(server.url)
    try {
      const first = await client.waitFor(() => true)
      assert.equal(client.events[first]!.event, 'structure')
      const structure = JSON.parse(client.events[first]!.data) as StructureEvent
      assert.equal(structure.hz, 10)
      assert.equal(structure.filter, null)
      assert.deepEqual(structure.models, [{ name: 'Lamp', instances: ['hall', 'porch'] }])
      const hall = structure.instances.find((i) => i.name === 'hall')!
      assert.equal(hall.model, 'Lamp')
      assert.deepEqual(hall.attributes, [
        { name: 'power', type: 'float', unit: 'W' },
        { name: 'on', type: 'bool' },
        { name: 'label', type: 'str' },
      ])
      assert.ok(hall.methods.includes('prepare') && hall.methods.includes('run'))

      const at = await client.waitFor(isFrame)
      const frame = client.frames(at)[0]!
      assert.equal(typeof frame.t, 'number')
      assert.equal(frame.system?.state, 'INITIALIZED')
      assert.equal(frame.instances?.hall?.state, 'INITIALIZED')
      assert.deepEqual(frame.instances?.porch?.attributes, {
        power: { internal_value: 0, external_value: 0 },
        on: { internal_value: false, external_value: false },
        label: { internal_value: 'lamp', external_value: 'lamp' },
      })
    } finally {
      client.close()
    }
  })

  test('later frames carry only what changed since the last frame', async () => {
    const client = await StreamClient.open(server.url)
    try {
      const full = await client.waitFor(isFrame)
      assert.equal((await api('PUT', '/api/v3/system/instances/hall/attributes/power/attr/internal_value', { value: 42.5 })).status, 200)
      const at = await client.waitFor(
        frameWith((f) => f.instances?.hall?.attributes?.power !== undefined),
        { from: full + 1 },
      )
      const frame = client.frames(at)[0]!
      assert.deepEqual(frame.instances, { hall: { attributes: { power: { internal_value: 42.5, external_value: 42.5 } } } })
      assert.equal(frame.system, undefined)

      // An external override changes only external_value; the next run clears it again.
      await api('PUT', '/api/v3/system/instances/hall/attributes/power/attr/external_value', { value: 7 })
      const at2 = await client.waitFor(
        frameWith((f) => f.instances?.hall?.attributes?.power !== undefined),
        { from: at + 1 },
      )
      assert.deepEqual(client.frames(at2)[0]!.instances?.hall?.attributes, { power: { external_value: 7 } })

      await api('POST', '/api/v3/system/instances/hall/method/run', { kwargs: {} })
      const at3 = await client.waitFor(
        frameWith((f) => f.instances?.hall?.attributes?.power?.external_value === 42.5),
        { from: at2 + 1 },
      )
      assert.ok(at3 > at2)

      // Nothing changes: no frames at all (10 Hz would have sent several). A negative check: a
      // moment for a frame already on its way, then none in 400 ms.
      await new Promise((r) => setTimeout(r, 300))
      const before = client.frames().length
      await new Promise((r) => setTimeout(r, 400))
      assert.equal(client.frames().length, before)
    } finally {
      client.close()
    }
  })

  test('instances= limits values to those instances; states of all still come', async () => {
    const client = await StreamClient.open(server.url, '?instances=porch')
    try {
      const at = await client.waitFor(isFrame)
      const first = client.frames(at)[0]!
      assert.deepEqual(Object.keys(first.instances ?? {}).sort(), ['hall', 'porch'])
      assert.equal(first.instances?.hall?.attributes, undefined)
      assert.equal(first.instances?.hall?.state, 'INITIALIZED')
      assert.ok(first.instances?.porch?.attributes?.power)

      await api('PUT', '/api/v3/system/instances/hall/attributes/power/attr/internal_value', { value: 1.25 })
      await api('PUT', '/api/v3/system/instances/porch/attributes/power/attr/internal_value', { value: 3.5 })
      const at2 = await client.waitFor(
        frameWith((f) => f.instances?.porch?.attributes?.power?.internal_value === 3.5),
        { from: at + 1 },
      )
      // A negative check: none of the frames of the next 250 ms carries hall's values either.
      await new Promise((r) => setTimeout(r, 250))
      for (const frame of client.frames(at + 1)) assert.equal(frame.instances?.hall?.attributes, undefined)

      await api('POST', '/api/v3/system/instances/hall/method/prepare', { kwargs: {} })
      await client.waitFor(
        frameWith((f) => f.instances?.hall?.state === 'PREPARED'),
        { from: at2 + 1 },
      )
    } finally {
      client.close()
    }
  })

  test('a structural change sends a new structure, then every value again', async () => {
    const client = await StreamClient.open(server.url)
    try {
      const at = await client.waitFor(isFrame)
      assert.equal((await api('PUT', '/api/v3/system/instances', { attic: 'Lamp' })).status, 200)
      const s = await client.waitFor((e) => e.event === 'structure', { from: at + 1 })
      const structure = JSON.parse(client.events[s]!.data) as StructureEvent
      assert.deepEqual(
        structure.instances.map((i) => i.name),
        ['hall', 'porch', 'attic'],
      )
      const f = await client.waitFor(isFrame, { from: s + 1 })
      const frame = client.frames(f)[0]!
      assert.deepEqual(Object.keys(frame.instances ?? {}).sort(), ['attic', 'hall', 'porch'])
      assert.ok(frame.instances?.hall?.attributes?.power, 'values are sent again in full after a structure event')
      assert.ok(frame.system?.state)
      await api('DELETE', '/api/v3/system/instances/attic')
      const gone = await client.waitFor((e) => e.event === 'structure', { from: f + 1 })
      assert.deepEqual(
        (JSON.parse(client.events[gone]!.data) as StructureEvent).instances.map((i) => i.name),
        ['hall', 'porch'],
      )
    } finally {
      client.close()
    }
  })

  test('sends at most hz frames per second, however often values change', async () => {
    const client = await StreamClient.open(server.url, '?hz=5&instances=hall')
    const attr = server.mimic.system.instances.get('hall')!.attributes.get('power')!
    let v = 0
    const writer = setInterval(() => void attr.setInternal(++v), 5)
    try {
      const start = await client.waitFor(isFrame)
      await new Promise((r) => setTimeout(r, 1000))
      const frames = client.frames(start + 1).filter((f) => f.instances?.hall?.attributes?.power)
      assert.ok(frames.length >= 3 && frames.length <= 7, `expected about 5 frames in one second at hz=5, got ${frames.length}`)
    } finally {
      clearInterval(writer)
      client.close()
    }
  })

  test('a client that goes away is forgotten', async () => {
    const client = await StreamClient.open(server.url)
    await client.waitFor(isFrame)
    assert.ok(server.streams.open >= 1)
    const openBefore = server.streams.open
    client.close()
    const end = Date.now() + 2000
    while (server.streams.open >= openBefore && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
    assert.equal(server.streams.open, openBefore - 1)
  })
})

describe('event stream with a Modbus adapter', () => {
  test('reports the adapter state, port and request counter', async () => {
    const server = await startEventServer({
      system: `
models:
  Meter:
    attributes: { level: 12 }
    communication:
      - modbus_slave:
          host: 127.0.0.1
          unit_id: 7
          mapping:
            level: { address: 0, group: h_r, type: uint_16 }
instances:
  - meter: Meter
`,
    })
    const client = await StreamClient.open(server.url, '?instances=meter&hz=20')
    try {
      const first = client.frames(await client.waitFor(isFrame))[0]!
      assert.deepEqual(first.instances?.meter?.adapters, { modbus_slave: { state: 'STOPPED', port: null, requests: 0, errors: 0 } })
      const started = await fetch(`${server.url}/api/v3/system/instances/meter/method/start`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` } })
      assert.equal(started.status, 200)
      const at = await client.waitFor(frameWith((f) => f.instances?.meter?.adapters?.modbus_slave?.state === 'RUNNING'))
      const port = client.frames(at)[0]!.instances!.meter!.adapters!.modbus_slave!.port!
      assert.ok(port >= 1)
      // Read holding register 0 of unit 7 (MBAP header + function 3), the way any Modbus master would.
      const answer = await new Promise<Buffer>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port }, () => socket.write(Buffer.from([0, 1, 0, 0, 0, 6, 7, 3, 0, 0, 0, 1])))
        socket.once('data', (data) => {
          socket.destroy()
          resolve(data)
        })
        socket.once('error', reject)
        socket.setTimeout(2000, () => reject(new Error('no Modbus answer')))
      })
      assert.equal(answer.readUInt16BE(answer.length - 2), 12)
      await client.waitFor(
        frameWith((f) => f.instances?.meter?.adapters?.modbus_slave?.requests === 1),
        { from: at },
      )
    } finally {
      client.close()
      await server.close()
    }
  })
})

describe('event stream under load and at shutdown', () => {
  test('100 instances changing at 20 Hz, three clients at 10 Hz: every frame complete, never above the rate, the server answers', async (t) => {
    const instances = Array.from({ length: 100 }, (_, i) => `  - unit_${i}: Cell`).join('\n')
    const server = await startEventServer({
      system: `models:\n  Cell:\n    attributes: { a: 0.0, b: 0.0, c: 0.0, d: 0.0, e: 0.0 }\ninstances:\n${instances}\n`,
    })
    const clients = await Promise.all([0, 1, 2].map(() => StreamClient.open(server.url)))
    const attrs = [...server.mimic.system.instances.all()].flatMap((inst) => [...inst.attributes.all()])
    const delay = monitorEventLoopDelay({ resolution: 10 })
    let step = 0
    try {
      await Promise.all(clients.map((c) => c.waitFor(isFrame)))
      delay.enable()
      const writer = setInterval(() => {
        step++
        for (const attr of attrs) void attr.setInternal(step)
      }, 50)
      await new Promise((r) => setTimeout(r, 2000))
      clearInterval(writer)
      // Every client catches up with the last written value of all 500 attributes.
      for (const client of clients) {
        await client.waitFor(
          frameWith((f) => f.instances?.unit_99?.attributes?.e?.internal_value === step),
          { timeoutMs: 2000 },
        )
        const frames = client.frames().filter((f) => f.instances?.unit_0?.attributes)
        // The rate is a ceiling the server keeps; how close a loaded machine comes to it is reported.
        assert.ok(frames.length <= 24, `at most 10 frames per second, got ${frames.length} in ~2 s`)
        t.diagnostic(`${frames.length} frames with values in ~2 s`)
        const last = frames[frames.length - 1]!
        assert.equal(Object.keys(last.instances!).length, 100)
      }
      delay.disable()
      t.diagnostic(`event-loop delay p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`)
      const health = await fetch(`${server.url}/health`)
      assert.equal(health.status, 200)
    } finally {
      for (const c of clients) c.close()
      await server.close()
    }
  })

  test('closing the server ends open streams with a close event instead of hanging', async () => {
    const server = await startEventServer({ system: TWO_LAMPS })
    const clients = await Promise.all([StreamClient.open(server.url), StreamClient.open(server.url, '?hz=1')])
    await Promise.all(clients.map((c) => c.waitFor(isFrame)))
    assert.equal(server.streams.open, 2)
    const started = Date.now()
    await server.close()
    // Not a speed check: a stream left open would hold close() for the 72 s keep-alive timeout.
    assert.ok(Date.now() - started < 30_000, `close took ${Date.now() - started} ms`)
    for (const client of clients) {
      const at = await client.waitFor((e) => e.event === 'close')
      assert.deepEqual(JSON.parse(client.events[at]!.data), { reason: 'server shutting down' })
      const end = Date.now() + 1000
      while (!client.ended && Date.now() < end) await new Promise((r) => setTimeout(r, 10))
      assert.ok(client.ended, 'the response ends')
    }
    assert.equal(server.streams.open, 0)
  })

  test('a quiet stream gets keep-alive comments', async () => {
    const server = await startEventServer({ system: TWO_LAMPS, keepaliveMs: 150 })
    const client = await StreamClient.open(server.url, '?hz=20')
    try {
      await client.waitFor(isFrame)
      // Every 150 ms while nothing changes.
      await eventually(() => client.raw.join('').includes(': keep-alive\n\n'), 2000)
    } finally {
      client.close()
      await server.close()
    }
  })
})
