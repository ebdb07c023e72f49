// What keeps web pages and floods away from the HTTP API (docs/security.md): the Host
// allow-list (DNS rebinding), the Origin check (cross-site requests), JSON bodies only, CORS only
// where configured, connection caps, sampled logging of refusals, and the product key kept off
// the command line. Real servers, raw sockets, fetch, the compiled CLI and Chromium.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer as createHttpServer, type Server } from 'node:http'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { chromium, type Browser } from 'playwright-core'
import { LOGGED_PER_INTERVAL, MAX_LOGGED_CHARS } from '../src/server/refusal-log.js'
import { CHROMIUM, chromiumMissing } from './helpers/dashboard.js'
import { eventually, startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

/** One HTTP answer read off a raw socket. */
interface RawAnswer {
  status: number
  headers: Record<string, string>
  body: string
}

/**
 * Sends each request on one keep-alive connection, the next once the answer before it is in, and
 * returns the answers: what a plain HTTP/1.1 client (the kind the fast lane serves) does.
 */
async function exchange(port: number, requests: string[]): Promise<RawAnswer[]> {
  const socket = connect(port, '127.0.0.1')
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  const answers: RawAnswer[] = []
  let buffer = Buffer.alloc(0)
  let waiting: (() => void) | undefined
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk])
    waiting?.()
  })
  socket.on('close', () => waiting?.())
  try {
    for (const request of requests) {
      socket.write(request)
      for (;;) {
        const answer = takeAnswer()
        if (answer) {
          answers.push(answer)
          break
        }
        if (socket.destroyed) throw new Error(`connection closed before the answer to ${request.split('\r\n')[0]}`)
        await new Promise<void>((resolve) => (waiting = resolve))
      }
    }
  } finally {
    socket.destroy()
  }
  return answers

  function takeAnswer(): RawAnswer | undefined {
    const end = buffer.indexOf('\r\n\r\n')
    if (end < 0) return undefined
    const head = buffer.toString('latin1', 0, end).split('\r\n')
    const headers: Record<string, string> = {}
    for (const line of head.slice(1)) {
      const colon = line.indexOf(':')
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
    }
    const length = Number(headers['content-length'] ?? 0)
    if (buffer.length < end + 4 + length) return undefined
    const body = buffer.toString('utf8', end + 4, end + 4 + length)
    buffer = buffer.subarray(end + 4 + length)
    return { status: Number(head[0]!.split(' ')[1]), headers, body }
  }
}

/** A GET as a plain keep-alive client writes it. */
function get(path: string, host: string, extra = ''): string {
  return `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`
}

function portOf(t: TestServer): number {
  return Number(new URL(t.url).port)
}

/** The snapshots the server has saved (each is kept in memory, and in a file too when durable). */
async function snapshotCount(t: TestServer): Promise<number> {
  const res = await t.call(`${SYS}/snapshots`, 'list')
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return Math.max(res.body.result.in_memory.length, res.body.result.files.length)
}

async function health(t: TestServer): Promise<any> {
  const res = await fetch(`${t.url}/health`)
  assert.equal(res.status, 200)
  return res.json()
}

describe('Host allow-list: a rebound name gets nothing, through the fast lane or fastify', () => {
  let t: TestServer
  let port: number
  before(async () => {
    t = await startTestServer({ config: { productKey: undefined } })
    port = portOf(t)
  })
  after(async () => t.close())

  it('refuses a forged Host on a connection the fast lane serves, after answering a good request on it', async () => {
    const [good, forged] = await exchange(port, [get(SYS, `127.0.0.1:${port}`), get(SYS, `evil.example:${port}`)])
    assert.equal(good!.status, 200, good!.body)
    assert.equal(JSON.parse(good!.body).name, 'system')
    assert.equal(forged!.status, 403, forged!.body)
    const fault = JSON.parse(forged!.body)
    assert.equal(fault.type, 'fault')
    assert.equal(fault.event, 'forbidden')
    assert.match(fault.error.message, /Host 'evil\.example' is not allowed/)
    assert.match(fault.error.message, /--allowed-hosts evil\.example/)
    assert.equal(fault.error.details[0].path, 'headers.host')
    assert.ok(forged!.headers['x-correlation-id'])
  })

  it('refuses a forged Host on every fastify route: open endpoints, encoded tree paths, writes, the event stream', async () => {
    const answers = await exchange(port, [
      get('/health', 'evil.example'),
      get('/', 'evil.example:80'),
      get(`${SYS}/%73napshots`, `evil.example:${port}`),
      get('/api/v3/events', `rebind.test:${port}`),
      `POST ${SYS}/snapshots/method/save HTTP/1.1\r\nHost: evil.example:${port}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
    ])
    for (const answer of answers) assert.equal(answer.status, 403, answer.body)
    assert.equal(await snapshotCount(t), 0)
  })

  it('answers loopback names and IP literals, whatever the port', async () => {
    const answers = await exchange(port, [
      get(SYS, `localhost:${port}`),
      get(SYS, `127.0.0.1:${port}`),
      get(SYS, 'LOCALHOST'),
      get(SYS, `dashboard.localhost:${port}`),
      get(SYS, `[::1]:${port}`),
      get(SYS, '10.1.2.3:8000'),
      get('/health', `localhost.:${port}`),
    ])
    for (const answer of answers) assert.equal(answer.status, 200, answer.body)
  })

  it('answers an HTTP/1.0 request without Host: no browser sends one', async () => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    socket.on('data', (chunk) => (text += chunk))
    socket.write('GET /health HTTP/1.0\r\n\r\n')
    await new Promise((resolve) => socket.on('close', resolve))
    assert.match(text, /^HTTP\/1\.1 200 /)
  })
})

describe('Host allow-list: --allowed-hosts, and the product key', () => {
  it('--allowed-hosts adds names, a leading dot a domain; * any', async () => {
    const t = await startTestServer({ config: { productKey: undefined, allowedHosts: ['mimic.lan', '.corp.example'] } })
    try {
      const port = portOf(t)
      const answers = await exchange(port, [
        get(SYS, `mimic.lan:${port}`),
        get(SYS, `a.corp.example:${port}`),
        get(SYS, 'corp.example'),
        get(SYS, 'evilcorp.example'),
        get(SYS, 'mimic.lan.evil.example'),
      ])
      assert.deepEqual(
        answers.map((a) => a.status),
        [200, 200, 200, 403, 403],
      )
    } finally {
      await t.close()
    }
    const any = await startTestServer({ config: { productKey: undefined, allowedHosts: ['*'] } })
    try {
      const [answer] = await exchange(portOf(any), [get(SYS, 'anything.example')])
      assert.equal(answer!.status, 200)
    } finally {
      await any.close()
    }
  })

  it('with a product key the bearer header keeps rebound pages out; --allowed-hosts, when given, still applies (API.md section 2)', async () => {
    const auth = `Authorization: Bearer ${TEST_KEY}\r\n`
    const keyed = await startTestServer()
    try {
      const [answer, withoutKey] = await exchange(portOf(keyed), [get(SYS, 'mimic-service:8000', auth), get(SYS, 'mimic-service:8000')])
      assert.equal(answer!.status, 200, answer!.body)
      assert.equal(withoutKey!.status, 401)
    } finally {
      await keyed.close()
    }
    const listed = await startTestServer({ config: { allowedHosts: ['mimic-service'] } })
    try {
      const port = portOf(listed)
      const answers = await exchange(port, [get(SYS, 'mimic-service:8000', auth), get(SYS, 'other-service:8000', auth), get(SYS, `127.0.0.1:${port}`, auth)])
      assert.deepEqual(
        answers.map((a) => a.status),
        [200, 403, 200],
      )
    } finally {
      await listed.close()
    }
  })
})

describe('Origin check, JSON bodies and CORS', () => {
  let t: TestServer
  let hmi: TestServer
  const HMI = 'https://hmi.example:8443'
  before(async () => {
    t = await startTestServer({ config: { productKey: undefined } })
    hmi = await startTestServer({ config: { corsOrigin: [HMI] } })
  })
  after(async () => {
    await t.close()
    await hmi.close()
  })

  /** POST snapshots/method/save; `body` null sends none. */
  const save = (server: TestServer, headers: Record<string, string>, body: string | null = '{}'): Promise<Response> =>
    fetch(`${server.url}${SYS}/snapshots/method/save`, { method: 'POST', headers, ...(body === null ? {} : { body }) })

  it('refuses a POST from a foreign origin, from Origin null and cross-site without Origin; nothing is saved', async () => {
    const foreign = await save(t, { origin: 'http://evil.example', 'content-type': 'application/json' })
    assert.equal(foreign.status, 403)
    const fault = (await foreign.json()) as any
    assert.equal(fault.event, 'forbidden')
    assert.match(fault.error.message, /Origin 'http:\/\/evil\.example' may not call this server/)
    assert.match(fault.error.message, /--cors-origin http:\/\/evil\.example/)
    assert.equal(fault.error.details[0].path, 'headers.origin')
    assert.equal(foreign.headers.get('access-control-allow-origin'), null)

    const nullOrigin = await save(t, { origin: 'null', 'content-type': 'application/json' })
    assert.equal(nullOrigin.status, 403)
    assert.match(((await nullOrigin.json()) as any).error.message, /Origin 'null'/)
    const crossSite = await save(t, { 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' })
    assert.equal(crossSite.status, 403)
    // Another port of the same host is another origin.
    const otherPort = await save(t, { origin: 'http://127.0.0.1:1', 'content-type': 'application/json' })
    assert.equal(otherPort.status, 403)
    for (const method of ['PUT', 'PATCH', 'DELETE']) {
      const res = await fetch(`${t.url}${SYS}/instances/x`, { method, headers: { origin: 'http://evil.example' } })
      assert.equal(res.status, 403, method)
    }
    assert.equal(await snapshotCount(t), 0)
  })

  it('refuses the same requests on a connection the fast lane serves', async () => {
    const port = portOf(t)
    const post = (extra: string): string =>
      `POST ${SYS}/snapshots/method/save HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${extra}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`
    const answers = await exchange(port, [get(SYS, `127.0.0.1:${port}`), post('Origin: http://evil.example\r\n'), post('Sec-Fetch-Site: cross-site\r\n')])
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 403, 403],
    )
    assert.equal(await snapshotCount(t), 0)
  })

  it('answers its own pages (same host and port) and requests without Origin', async () => {
    const own = await save(t, { origin: t.url, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' })
    assert.equal(own.status, 200, await own.text())
    const port = portOf(t)
    const [localhost] = await exchange(port, [
      `POST ${SYS}/snapshots/method/save HTTP/1.1\r\nHost: localhost:${port}\r\nOrigin: http://localhost:${port}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
    ])
    assert.equal(localhost!.status, 200, localhost!.body)
    const script = await save(t, { 'content-type': 'application/json' })
    assert.equal(script.status, 200)
    // A GET of a document is not refused for its Origin: without CORS headers the page cannot read it.
    const read = await fetch(`${t.url}${SYS}`, { headers: { origin: 'http://evil.example' } })
    assert.equal(read.status, 200)
    assert.equal(read.headers.get('access-control-allow-origin'), null)
    assert.equal(await snapshotCount(t), 3)
  })

  it('refuses a body that is not declared JSON with 415, and takes JSON with parameters and +json types', async () => {
    const plain = await save(t, { 'content-type': 'text/plain' })
    assert.equal(plain.status, 415)
    const fault = (await plain.json()) as any
    assert.equal(fault.event, 'unsupported_media_type')
    assert.equal(fault.http_status, 415)
    assert.match(fault.error.message, /Content-Type: application\/json \(got 'text\/plain'\)/)
    assert.equal(fault.error.details[0].path, 'headers.content-type')
    for (const type of ['application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'text/plain;charset=UTF-8']) {
      assert.equal((await save(t, { 'content-type': type })).status, 415, type)
    }
    // fetch sends a string body as text/plain when no type is given; a Blob without a type sends none.
    const untyped = await fetch(`${t.url}${SYS}/snapshots/method/save`, { method: 'POST', body: new Blob(['{}']) })
    assert.equal(untyped.status, 415)
    assert.match(((await untyped.json()) as any).error.message, /got none/)
    const before = await snapshotCount(t)
    assert.equal((await save(t, { 'content-type': 'application/json; charset=utf-8' })).status, 200)
    assert.equal((await save(t, { 'content-type': 'application/vnd.mimic+json' })).status, 200)
    // No body, no type needed: argumentless method calls.
    assert.equal((await save(t, {}, null)).status, 200)
    assert.equal(await snapshotCount(t), before + 3)
  })

  it('--cors-origin: the listed origin may call and gets CORS headers; preflights are answered; others are refused', async () => {
    const res = await save(hmi, { origin: HMI, authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' })
    assert.equal(res.status, 200, await res.text())
    assert.equal(res.headers.get('access-control-allow-origin'), HMI)
    assert.equal(res.headers.get('access-control-expose-headers'), 'x-correlation-id')
    assert.equal(res.headers.get('access-control-allow-credentials'), null)
    // A fault carries them too, so the page can read why.
    const unauthorized = await save(hmi, { origin: HMI, 'content-type': 'application/json' })
    assert.equal(unauthorized.status, 401)
    assert.equal(unauthorized.headers.get('access-control-allow-origin'), HMI)

    const preflight = await fetch(`${hmi.url}${SYS}/snapshots/method/save`, {
      method: 'OPTIONS',
      headers: { origin: HMI, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    })
    assert.equal(preflight.status, 204)
    assert.equal(preflight.headers.get('access-control-allow-origin'), HMI)
    assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /POST/)
    assert.equal(preflight.headers.get('access-control-allow-headers'), 'authorization, content-type, x-correlation-id')

    const foreignPreflight = await fetch(`${hmi.url}${SYS}`, {
      method: 'OPTIONS',
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
    })
    assert.equal(foreignPreflight.status, 403)
    assert.equal(foreignPreflight.headers.get('access-control-allow-origin'), null)
    const foreign = await save(hmi, { origin: 'http://evil.example', authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' })
    assert.equal(foreign.status, 403)
    // Without --cors-origin there is no CORS at all.
    const none = await fetch(`${t.url}${SYS}`, { method: 'OPTIONS', headers: { origin: HMI, 'access-control-request-method': 'GET' } })
    assert.equal(none.status, 403)
    assert.equal(none.headers.get('access-control-allow-origin'), null)
  })

  it('refuses the event stream and /mcp to a foreign origin; the stream opens for its own pages and the listed origin', async () => {
    const foreign = await fetch(`${t.url}/api/v3/events`, { headers: { origin: 'http://evil.example' } })
    assert.equal(foreign.status, 403)
    assert.match(((await foreign.json()) as any).error.message, /evil\.example/)
    const crossSite = await fetch(`${t.url}/api/v3/events`, { headers: { 'sec-fetch-site': 'cross-site' } })
    assert.equal(crossSite.status, 403)
    const mcp = await fetch(`${t.url}/mcp`, {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    })
    assert.equal(mcp.status, 403)

    const own = new AbortController()
    const stream = await fetch(`${t.url}/api/v3/events`, { headers: { origin: t.url }, signal: own.signal })
    assert.equal(stream.status, 200)
    own.abort()
    const listed = new AbortController()
    const hmiStream = await fetch(`${hmi.url}/api/v3/events`, { headers: { origin: HMI, authorization: `Bearer ${TEST_KEY}` }, signal: listed.signal })
    assert.equal(hmiStream.status, 200)
    assert.equal(hmiStream.headers.get('access-control-allow-origin'), HMI)
    listed.abort()
  })

  it('counts the refusals in /health', async () => {
    const counts = (await health(t)).http.refused
    assert.ok(counts.forbidden >= 10, JSON.stringify(counts))
    assert.ok(counts.unsupported_media_type >= 4, JSON.stringify(counts))
  })

  it('refuses --cors-origin * without a product key, and origins it cannot read', async () => {
    await assert.rejects(startTestServer({ config: { productKey: undefined, corsOrigin: ['*'] } }), /--cors-origin \* would let every web page/)
    await assert.rejects(startTestServer({ config: { corsOrigin: ['hmi.example'] } }), /--cors-origin takes origins/)
  })
})

describe('connection caps', () => {
  /** Opens `n` idle connections from `localAddress` and waits until each is connected or closed by the server. */
  async function openIdle(port: number, n: number, localAddress: string): Promise<Socket[]> {
    const sockets: Socket[] = []
    for (let i = 0; i < n; i++) {
      const socket = connect({ port, host: '127.0.0.1', localAddress })
      socket.on('error', () => {})
      await new Promise<void>((resolve) => socket.once('connect', resolve).once('close', () => resolve()))
      sockets.push(socket)
    }
    return sockets
  }

  it('closes connections from an address beyond its share; other clients still get /health and the API', async () => {
    const t = await startTestServer({ config: { maxConnectionsPerAddress: 20 } })
    const sockets = await openIdle(portOf(t), 30, '127.0.0.2')
    try {
      await eventually(() => sockets.filter((s) => s.destroyed).length === 10)
      assert.equal(sockets.filter((s) => !s.destroyed).length, 20)
      const stats = (await health(t)).http.connections
      assert.equal(stats.refused, 10)
      assert.equal(stats.per_address_limit, 20)
      const api = await t.api('GET', `${SYS}/instances`)
      assert.equal(api.status, 200)
      // Sampled: at most the first few refusals are logged one by one.
      const lines = t.logs.filter((l) => l.event === 'connection_refused')
      assert.ok(lines.length >= 1 && lines.length <= LOGGED_PER_INTERVAL, String(lines.length))
    } finally {
      for (const s of sockets) s.destroy()
      await t.close()
    }
  })

  it('at the total cap closes the connection idle the longest, so a real client gets through', async () => {
    const t = await startTestServer({ config: { maxConnections: 16 } })
    const sockets = await openIdle(portOf(t), 40, '127.0.0.2')
    try {
      await eventually(() => sockets.filter((s) => s.destroyed).length >= 24)
      // The newest survive: the oldest idle ones made room.
      assert.ok(sockets.slice(-16).every((s) => !s.destroyed))
      const h = await health(t)
      assert.equal(h.status, 'ok')
      assert.ok(h.http.connections.evicted >= 24, JSON.stringify(h.http.connections))
      assert.ok(h.http.connections.open <= 16)
      const api = await t.api('GET', `${SYS}/instances`)
      assert.equal(api.status, 200)
      const save = await t.call(`${SYS}/snapshots`, 'save')
      assert.equal(save.status, 200)
    } finally {
      for (const s of sockets) s.destroy()
      await t.close()
    }
  })

  it('a connection with a request under way is not closed to make room', async () => {
    const t = await startTestServer({ config: { maxConnections: 16, fastLane: 'off' } })
    const port = portOf(t)
    // An event stream is a request that never ends.
    const streams = Array.from({ length: 16 }, () => new AbortController())
    const opened = await Promise.all(
      streams.map((c) => fetch(`${t.url}/api/v3/events?hz=1`, { headers: { authorization: `Bearer ${TEST_KEY}` }, signal: c.signal })),
    )
    try {
      assert.ok(opened.every((r) => r.status === 200))
      const [late] = await openIdle(port, 1, '127.0.0.2')
      await eventually(() => late!.destroyed)
      for (const c of streams) c.abort()
      await eventually(async () => (await fetch(`${t.url}/health`).catch(() => undefined))?.status === 200)
      const stats = (await health(t)).http.connections
      assert.ok(stats.refused >= 1, JSON.stringify(stats))
    } finally {
      for (const c of streams) c.abort()
      await t.close()
    }
  })
})

describe('refusals logged at a sampled rate', () => {
  it('2,000 requests to long unknown paths write a bounded log, and every one is counted', async () => {
    const t = await startTestServer({ config: { productKey: undefined } })
    const long = 'x'.repeat(4000)
    let sent = 0
    const worker = async (): Promise<void> => {
      while (sent < 2000) {
        const i = sent++
        const res = await fetch(`${t.url}/${long}/${i}`)
        assert.equal(res.status, 404)
        const fault = (await res.json()) as any
        assert.ok(fault.error.message.length < 400, 'the fault does not repeat the whole path')
      }
    }
    await Promise.all(Array.from({ length: 16 }, worker))
    const counts = (await health(t)).http.refused
    assert.equal(counts.not_found, 2000)
    const logBufferEntries = t.server.logs.query({ contains: 'No route' }).length
    await t.close()
    const oneByOne = t.logs.filter((l) => l.event === 'not_found' && l.suppressed === undefined)
    const summaries = t.logs.filter((l) => l.event === 'not_found' && typeof l.suppressed === 'number')
    assert.ok(oneByOne.length >= 1 && oneByOne.length <= LOGGED_PER_INTERVAL * 2, `${oneByOne.length} lines`)
    assert.ok(summaries.length >= 1)
    assert.equal(oneByOne.length + summaries.reduce((n, l) => n + Number(l.suppressed), 0), 2000)
    for (const line of oneByOne) assert.ok(JSON.stringify(line).length < 4 * MAX_LOGGED_CHARS, JSON.stringify(line).slice(0, 300))
    assert.ok(logBufferEntries <= LOGGED_PER_INTERVAL * 2, `${logBufferEntries} entries in the log buffer`)
  })

  it('401 refusals are sampled too', async () => {
    const t = await startTestServer()
    await Promise.all(Array.from({ length: 200 }, () => fetch(`${t.url}${SYS}`)))
    assert.equal((await health(t)).http.refused.unauthorized, 200)
    await t.close()
    const lines = t.logs.filter((l) => l.event === 'unauthorized' && l.suppressed === undefined)
    assert.ok(lines.length <= LOGGED_PER_INTERVAL * 2, String(lines.length))
  })
})

describe('the product key on the command line', () => {
  const BIN = new URL('../bin/mimic.js', import.meta.url).pathname
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-key-'))
  })
  after(async () => rm(dir, { recursive: true, force: true }))

  /** Starts `mimic serve` and resolves with its URL once it listens; `output()` is everything it wrote. */
  function serve(args: string[], env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string; output: () => string }> {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MIMIC_'))) as Record<string, string>
    const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--snapshots-dir', join(dir, 'snapshots'), '--extensions', dir, ...args], {
      env: { ...clean, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    return new Promise((resolve, reject) => {
      const onData = (chunk: Buffer): void => {
        out += chunk
        const m = /Mimic listening on (http:\/\/[^"\s]+)/.exec(out)
        // The warning follows the listening line: wait for the line after it too.
        if (m && out.slice(m.index).includes('\n')) resolve({ child, url: m[1]!, output: () => out })
      }
      child.stdout!.on('data', onData)
      child.stderr!.on('data', onData)
      child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${out}`)))
    })
  }

  async function stop(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
  }

  it('warns that --product-key is visible to every user, naming --product-key-file and MIMIC_PRODUCT_KEY', async (ctx) => {
    if (!existsSync(new URL('../dist/cli/cli.js', import.meta.url))) return ctx.skip('dist/ not built (npm run build)')
    const { child, url, output } = await serve(['--product-key', 'secret-on-argv'])
    try {
      await eventually(() => /product key was given on the command line/.test(output()))
      const warning = output()
        .split('\n')
        .find((l) => l.includes('product key was given on the command line'))!
      const record = JSON.parse(warning)
      assert.equal(record.level, 40)
      assert.match(record.msg, /\/proc\/<pid>\/cmdline/)
      assert.match(record.msg, /--product-key-file/)
      assert.match(record.msg, /MIMIC_PRODUCT_KEY/)
      assert.ok(!warning.includes('secret-on-argv'), 'the warning does not repeat the key')
      assert.equal((await fetch(`${url}${SYS}`, { headers: { authorization: 'Bearer secret-on-argv' } })).status, 200)
    } finally {
      await stop(child)
    }
  })

  it('--product-key-file works end to end, without the warning', async (ctx) => {
    if (!existsSync(new URL('../dist/cli/cli.js', import.meta.url))) return ctx.skip('dist/ not built (npm run build)')
    const file = join(dir, 'key')
    await writeFile(file, 'key-from-a-file\n', { mode: 0o600 })
    const { child, url, output } = await serve(['--product-key-file', file])
    try {
      assert.equal((await fetch(`${url}${SYS}`)).status, 401)
      assert.equal((await fetch(`${url}${SYS}`, { headers: { authorization: 'Bearer wrong' } })).status, 401)
      assert.equal((await fetch(`${url}${SYS}`, { headers: { authorization: 'Bearer key-from-a-file' } })).status, 200)
      assert.ok(!output().includes('given on the command line'))
      assert.ok(!output().includes('key-from-a-file'))
    } finally {
      await stop(child)
    }
    const fromEnv = await serve([], { MIMIC_PRODUCT_KEY: 'key-from-env' })
    try {
      assert.equal((await fetch(`${fromEnv.url}${SYS}`, { headers: { authorization: 'Bearer key-from-env' } })).status, 200)
      assert.ok(!fromEnv.output().includes('given on the command line'))
    } finally {
      await stop(fromEnv.child)
    }
  })
})

describe('Chromium: pages of other origins cannot drive a server without a key', { skip: chromiumMissing() }, () => {
  let t: TestServer
  let evil: Server
  let evilUrl: string
  let browser: Browser
  let port: number
  before(async () => {
    t = await startTestServer({ config: { productKey: undefined } })
    port = portOf(t)
    // A page on another local origin (another port), as any site could serve it.
    evil = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end('<!doctype html><title>evil</title><iframe name="sink"></iframe>')
    })
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve))
    evilUrl = `http://127.0.0.1:${(evil.address() as { port: number }).port}`
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--host-resolver-rules=MAP rebind.test 127.0.0.1'],
    })
  })
  after(async () => {
    await browser?.close()
    await new Promise((resolve) => evil?.close(resolve))
    await t?.close()
  })

  it('a no-cors fetch, a fetch without a body and a form POST from another origin save nothing', async () => {
    const page = await browser.newPage()
    const before = (await health(t)).http.refused
    await page.goto(evilUrl)
    const mimic = t.url
    await page.evaluate(async (base) => {
      const save = `${base}/api/v3/system/snapshots/method/save`
      await fetch(save, { method: 'POST', mode: 'no-cors', body: '{}', headers: { 'content-type': 'text/plain' } }).catch(() => {})
      await fetch(`${base}/api/v3/system/method/stop`, { method: 'POST', mode: 'no-cors' }).catch(() => {})
      const form = document.createElement('form')
      form.method = 'POST'
      form.action = save
      form.enctype = 'text/plain'
      form.target = 'sink'
      const input = document.createElement('input')
      input.name = '{"kwargs": {}, "x": "'
      input.value = '"}'
      form.append(input)
      document.body.append(form)
      form.submit()
    }, mimic)
    // Each request reached the server and was refused (not lost on the way).
    const after = await eventually(async () => {
      const refused = (await health(t)).http.refused
      return refused.forbidden >= before.forbidden + 3 ? refused : undefined
    })
    assert.ok(after.forbidden >= before.forbidden + 3)
    assert.equal(await snapshotCount(t), 0)
    await page.close()
  })

  it('a rebound name (rebind.test -> 127.0.0.1) gets neither the page nor the API', async () => {
    const page = await browser.newPage()
    const rebound = `http://rebind.test:${port}`
    const doc = await page.goto(`${rebound}/`)
    assert.equal(doc!.status(), 403)
    // The page now has the origin a rebinding attack gives it: same-origin requests, JSON and all.
    const answers = await page.evaluate(async () => {
      const read = await fetch('/api/v3/system')
      const save = await fetch('/api/v3/system/snapshots/method/save', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      const events = await fetch('/api/v3/events')
      return { read: read.status, save: save.status, events: events.status, message: ((await read.json()) as any).error.message as string }
    })
    assert.deepEqual({ read: answers.read, save: answers.save, events: answers.events }, { read: 403, save: 403, events: 403 })
    assert.match(answers.message, /Host 'rebind\.test' is not allowed/)
    assert.equal(await snapshotCount(t), 0)
    // The same server answers the same browser under its loopback address.
    const home = await page.goto(`${t.url}/health`)
    assert.equal(home!.status(), 200)
    await page.close()
  })
})
