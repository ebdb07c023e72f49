/**
 * The HTTP fast lane (src/server/fast-lane/) answers plain keep-alive tree requests straight
 * from the socket and hands every other connection to node:http and fastify. This file proves
 * that a client cannot tell the two apart: over raw sockets, the same request gets the same
 * status, the same header names in the same order and the same body (apart from correlation ids,
 * `when` and the Date value) whether the lane or fastify answers it; pipelined, split, chunked
 * and otherwise unusual requests are all answered correctly, a connection handed over in the
 * middle keeps working, the state written through either path is the state read through the
 * other, and closing the server does not wait for idle lane connections.
 *
 * Which path answered is observed, not guessed: node:http emits 'request' on the http.Server for
 * every request it parses, and the lane never does.
 *
 * test/lane-off/ runs this file again with `--fast-lane off`: every request is then expected
 * from node:http, and the same bytes must get the same answers (the reference behaviour).
 */
import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { fastLaneSetting, startTestServer, type TestServer } from './helpers/server.js'
import { SYS, TEST_AUTH } from './reliability/helpers.js'

const INST = `${SYS}/instances/dev`
const TEMP = `${INST}/attributes/temperature`
const PY = `${SYS}/instances/counter`

const FILES: Record<string, string> = {
  'counter.py': `
class Counter:
    def __init__(self):
        self.count = 0

    def tick(self):
        self.count += 1

    def bump(self, by=1):
        self.count += by
        return {"count": self.count, "by": by}

    def explode(self):
        raise RuntimeError("counter on fire")
`,
}

const MODELS = {
  Dev: { attributes: { temperature: { default: 20.0, type: 'float', unit: 'degC' }, label: { default: 'x', type: 'str' } } },
  PyCounter: {
    attributes: { count: 0 },
    import: { 'counter.py': { class: 'Counter', attributes: { count: { property: 'count' } }, methods: { run: 'tick', bump: 'bump', explode: 'explode' } } },
  },
}

/** A response exactly as it came off the wire. */
interface RawResponse {
  statusLine: string
  status: number
  /** Header lines in order, names as sent. */
  headers: Array<[string, string]>
  body: string
}

/** The JSON body, parsed. */
function json(res: RawResponse): any {
  return JSON.parse(res.body)
}

function header(res: RawResponse, name: string): string | undefined {
  return res.headers.find(([n]) => n.toLowerCase() === name.toLowerCase())?.[1]
}

/**
 * One TCP connection on which exact bytes are written and the raw responses collected in order
 * (bodies by content-length, or up to the close when there is none).
 */
class RawConnection {
  readonly socket: Socket
  #buffer = Buffer.alloc(0)
  #responses: RawResponse[] = []
  #waiters: Array<() => void> = []
  #ended = false
  /** Resolves once the server closed its side (or the socket closed). */
  readonly ended: Promise<void>

  private constructor(socket: Socket) {
    this.socket = socket
    this.ended = new Promise((resolve) => {
      const done = (): void => {
        this.#ended = true
        this.#parse()
        this.#wake()
        resolve()
      }
      socket.on('end', done)
      socket.on('close', done)
    })
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk])
      this.#parse()
      this.#wake()
    })
    socket.on('error', () => {})
  }

  static open(url: string): Promise<RawConnection> {
    const { hostname, port } = new URL(url)
    return new Promise((resolve, reject) => {
      const socket = connect({ host: hostname, port: Number(port) }, () => resolve(new RawConnection(socket)))
      socket.once('error', reject)
    })
  }

  write(bytes: string | Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.socket.write(bytes, (err) => (err ? reject(err) : resolve())))
  }

  /** The next `count` responses (waits for them; fails if the connection ends first). */
  async read(count = 1): Promise<RawResponse[]> {
    const deadline = setTimeout(() => this.#wake(), 10_000)
    try {
      const start = Date.now()
      while (this.#responses.length < count) {
        if (this.#ended)
          throw new Error(
            `connection ended after ${this.#responses.length} of ${count} responses; unparsed: ${JSON.stringify(this.#buffer.toString('latin1'))}`,
          )
        if (Date.now() - start > 10_000) throw new Error(`no response within 10 s; unparsed: ${JSON.stringify(this.#buffer.toString('latin1'))}`)
        await new Promise<void>((resolve) => this.#waiters.push(resolve))
      }
      return this.#responses.splice(0, count)
    } finally {
      clearTimeout(deadline)
    }
  }

  /** Writes the bytes and reads one response. */
  async exchange(bytes: string | Buffer): Promise<RawResponse> {
    await this.write(bytes)
    return (await this.read(1))[0]!
  }

  /** Responses received but not yet read. */
  get pending(): number {
    return this.#responses.length
  }

  close(): void {
    this.socket.destroy()
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter()
  }

  #parse(): void {
    for (;;) {
      const end = this.#buffer.indexOf('\r\n\r\n')
      if (end < 0) return
      const lines = this.#buffer.toString('latin1', 0, end).split('\r\n')
      const statusLine = lines[0]!
      const headers = lines.slice(1).map((line): [string, string] => {
        const colon = line.indexOf(':')
        return [line.slice(0, colon), line.slice(colon + 1).trim()]
      })
      const lengthHeader = headers.find(([n]) => n.toLowerCase() === 'content-length')?.[1]
      let total: number
      if (lengthHeader !== undefined) total = end + 4 + Number(lengthHeader)
      else if (this.#ended) total = this.#buffer.length
      else return
      if (this.#buffer.length < total) return
      const body = this.#buffer.toString('utf8', end + 4, total)
      this.#buffer = this.#buffer.subarray(total)
      this.#responses.push({ statusLine, status: Number(statusLine.split(' ')[1]), headers, body })
    }
  }
}

/** The bytes of one request: Host, the test key unless `auth` is false, and a JSON body when given. */
function request(
  method: string,
  path: string,
  opts: { body?: string | object; headers?: Array<[string, string]>; auth?: boolean; version?: string } = {},
): string {
  const body = opts.body === undefined ? '' : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body)
  const lines = [`${method} ${path} HTTP/${opts.version ?? '1.1'}`, 'Host: 127.0.0.1']
  if (opts.auth !== false) lines.push(`Authorization: ${TEST_AUTH.authorization}`)
  if (opts.body !== undefined) lines.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`)
  for (const [name, value] of opts.headers ?? []) lines.push(`${name}: ${value}`)
  return `${lines.join('\r\n')}\r\n\r\n${body}`
}

const HEALTH = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'

const LANE_ON = fastLaneSetting() === 'on'

/** Of `total` requests, how many node:http parses: `withLane` when the lane is on, all when off. */
function parsedByHttp(withLane: number, total: number): number {
  return LANE_ON ? withLane : total
}

/** A body with the per-request fields of a fault removed. */
function comparable(res: RawResponse): unknown {
  const body = json(res)
  if (body && typeof body === 'object' && body.type === 'fault') {
    const { correlation_id: _id, when: _when, ...rest } = body
    return rest
  }
  return body
}

/** Asserts two responses are the same to a client: status line, header names in order, values except Date and ids, body. */
function assertSame(lane: RawResponse, fastify: RawResponse, what: string): void {
  assert.equal(lane.statusLine, fastify.statusLine, `${what}: status line`)
  assert.deepEqual(
    lane.headers.map(([n]) => n),
    fastify.headers.map(([n]) => n),
    `${what}: header names and order`,
  )
  const values = (res: RawResponse): Array<[string, string]> =>
    res.headers.filter(([n]) => !['date', 'x-correlation-id', 'content-length'].includes(n.toLowerCase()))
  assert.deepEqual(values(lane), values(fastify), `${what}: header values`)
  assert.deepEqual(comparable(lane), comparable(fastify), `${what}: body`)
  for (const res of [lane, fastify]) {
    assert.equal(Number(header(res, 'content-length')), Buffer.byteLength(res.body), `${what}: content-length`)
    assert.match(header(res, 'date') ?? '', /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/, `${what}: Date`)
    const body = json(res)
    if (body?.type === 'fault') assert.equal(body.correlation_id, header(res, 'x-correlation-id'), `${what}: correlation id in fault and header`)
  }
}

describe('HTTP fast lane: indistinguishable from fastify', () => {
  let t: TestServer
  /** Requests node:http parsed so far (the lane's never count). */
  let viaHttp = 0
  const countRequest = (): void => {
    viaHttp++
  }

  /** A connection on which the lane is first to read. */
  const laneConnection = (): Promise<RawConnection> => RawConnection.open(t.url)

  /** A connection already handed to node:http (its first request, /health, is one the lane declines). */
  const fastifyConnection = async (): Promise<RawConnection> => {
    const conn = await RawConnection.open(t.url)
    const health = await conn.exchange(HEALTH)
    assert.equal(health.status, 200)
    return conn
  }

  /** Runs `check` on a fresh lane connection and on one already handed to fastify, then closes both. */
  const onBothPaths = async (check: (lane: RawConnection, fastify: RawConnection) => Promise<void>): Promise<void> => {
    const lane = await laneConnection()
    const fastify = await fastifyConnection()
    try {
      await check(lane, fastify)
    } finally {
      lane.close()
      fastify.close()
    }
  }

  /** Sends `bytes` on `conn` and asserts which path answered. */
  const answeredBy = async (path: 'lane' | 'fastify', conn: RawConnection, bytes: string): Promise<RawResponse> => {
    const before = viaHttp
    const res = await conn.exchange(bytes)
    const lane = LANE_ON && path === 'lane'
    assert.equal(viaHttp - before, lane ? 0 : 1, `${bytes.split('\r\n')[0]} answered by ${lane ? 'the lane' : 'node:http'}`)
    return res
  }

  before(async () => {
    t = await startTestServer({ files: FILES })
    t.server.app.server.on('request', countRequest)
    const models = await t.api('PUT', `${SYS}/models`, MODELS)
    assert.equal(models.status, 200, JSON.stringify(models.body))
    const instances = await t.api('PUT', `${SYS}/instances`, { dev: 'Dev', counter: 'PyCounter' })
    assert.equal(instances.status, 200, JSON.stringify(instances.body))
    const prepared = await t.call(PY, 'prepare')
    assert.equal(prepared.status, 200, JSON.stringify(prepared.body))
  })
  after(async () => {
    t.server.app.server.off('request', countRequest)
    await t.close()
  })

  it('answers each request exactly as fastify does: status, header names and order, content-type, body', async () => {
    const cases: Array<[string, string, 'lane' | 'fastify', number]> = [
      ['GET the system root', request('GET', SYS), 'lane', 200],
      ['GET an instance document', request('GET', INST), 'lane', 200],
      ['GET an attribute', request('GET', TEMP), 'lane', 200],
      ['GET a property through attr/', request('GET', `${TEMP}/attr/internal_value`), 'lane', 200],
      ['GET a property by its name', request('GET', `${TEMP}/unit`), 'lane', 200],
      ['GET a missing instance (404)', request('GET', `${SYS}/instances/nope`), 'lane', 404],
      ['GET a missing property (404)', request('GET', `${TEMP}/attr/nope`), 'lane', 404],
      ['POST a missing method (404)', request('POST', `${INST}/method/nope`, { body: {} }), 'lane', 404],
      ['POST to a node, not a method (400)', request('POST', INST, { body: {} }), 'lane', 400],
      ['GET a method (400)', request('GET', `${INST}/method/run`), 'lane', 400],
      ['PUT a property', request('PUT', `${TEMP}/attr/internal_value`, { body: { value: 21.5 } }), 'lane', 200],
      ['PUT a non-ASCII string', request('PUT', `${INST}/attributes/label/attr/internal_value`, { body: { value: 'Grüße, 日本 \u2028' } }), 'lane', 200],
      ['GET a non-ASCII string', request('GET', `${INST}/attributes/label`), 'lane', 200],
      ['PUT a property, wrong type (422)', request('PUT', `${TEMP}/attr/internal_value`, { body: { value: 'hot' } }), 'lane', 422],
      ['PUT a property, no envelope (400)', request('PUT', `${TEMP}/attr/internal_value`, { body: { temperature: 1 } }), 'lane', 400],
      ['PUT a property, empty body (400)', request('PUT', `${TEMP}/attr/internal_value`, { body: '' }), 'lane', 400],
      ['PATCH an attribute', request('PATCH', TEMP, { body: { internal_value: 21.5 } }), 'lane', 200],
      ['PATCH the attributes container (404)', request('PATCH', `${INST}/attributes`, { body: { label: 'patched' } }), 'lane', 404],
      ['PUT the attributes container', request('PUT', `${INST}/attributes`, { body: { label: 'put' } }), 'lane', 200],
      ['POST prepare', request('POST', `${INST}/method/prepare`, { body: {} }), 'lane', 200],
      ['POST run without a body', request('POST', `${INST}/method/run`), 'lane', 200],
      ['POST run with kwargs', request('POST', `${INST}/method/run`, { body: { kwargs: {} } }), 'lane', 200],
      ['POST reset', request('POST', `${INST}/method/reset`, { body: { kwargs: {} } }), 'lane', 200],
      ['POST with an unexpected key (400)', request('POST', `${INST}/method/run`, { body: { kw: {} } }), 'lane', 400],
      ['DELETE a missing instance (404)', request('DELETE', `${SYS}/instances/nope`), 'lane', 404],
      ['DELETE the root (409)', request('DELETE', SYS), 'lane', 409],
      ['POST a Python method that raises (500)', request('POST', `${PY}/method/explode`, { body: {} }), 'lane', 500],
      ['a body that is not JSON (400)', request('PUT', `${TEMP}/attr/internal_value`, { body: '{"value": 1,}' }), 'fastify', 400],
      ['a body with __proto__ (400)', request('PUT', `${TEMP}/attr/internal_value`, { body: '{"__proto__": {"value": 1}}' }), 'fastify', 400],
      ['a wrong bearer key (401)', request('GET', INST, { auth: false, headers: [['Authorization', 'Bearer wrong']] }), 'fastify', 401],
      ['no bearer key (401)', request('GET', INST, { auth: false }), 'fastify', 401],
      ['a URL outside the tree (404)', request('GET', '/api/v3/nowhere'), 'fastify', 404],
    ]
    for (const [what, bytes, path, status] of cases) {
      await onBothPaths(async (lane, fastify) => {
        const a = await answeredBy(path, lane, bytes)
        const b = await answeredBy('fastify', fastify, bytes)
        assert.equal(a.status, status, `${what}: ${a.body}`)
        assertSame(a, b, what)
        assert.equal(header(a, 'content-type'), 'application/json; charset=utf-8', what)
        const names = ['x-correlation-id', ...(status === 200 ? ['cache-control'] : []), 'content-type', 'content-length', 'Date', 'Connection', 'Keep-Alive']
        if (header(a, 'connection') !== 'close')
          assert.deepEqual(
            a.headers.map(([n]) => n),
            names,
            what,
          )
        // Unless the answer said otherwise (fastify closes after a body it could not parse),
        // the connection stays open for the next request, still on the same path.
        if (header(a, 'connection') === 'close') await lane.ended
        else assert.equal((await answeredBy(path, lane, request('GET', `${TEMP}/attr/internal_value`))).status, 200, what)
      })
    }
  })

  it('a Python method call through the lane reaches the worker and answers as fastify does', async () => {
    await onBothPaths(async (lane, fastify) => {
      const start = (await t.api('GET', `${PY}/attributes/count/attr/internal_value`)).body.value as number
      const a = await answeredBy('lane', lane, request('POST', `${PY}/method/bump`, { body: { kwargs: { by: 2 } } }))
      assert.equal(a.status, 200, a.body)
      assert.deepEqual(json(a), { result: { count: start + 2, by: 2 } })
      const b = await answeredBy('fastify', fastify, request('POST', `${PY}/method/bump`, { body: { kwargs: { by: 2 } } }))
      assert.deepEqual(json(b), { result: { count: start + 4, by: 2 } })
      assert.deepEqual(
        a.headers.map(([n]) => n),
        b.headers.map(([n]) => n),
      )
      assert.equal(a.statusLine, b.statusLine)
      // run through the lane calls tick() in the worker; the lane reads the new value back.
      assert.equal((await answeredBy('lane', lane, request('POST', `${PY}/method/run`))).status, 200)
      const count = await answeredBy('lane', lane, request('GET', `${PY}/attributes/count/attr/internal_value`))
      assert.deepEqual(json(count), { value: start + 5 })
    })
  })

  it('echoes a client x-correlation-id in the header and in a fault, on both paths', async () => {
    await onBothPaths(async (lane, fastify) => {
      for (const [path, conn] of [
        ['lane', lane],
        ['fastify', fastify],
      ] as const) {
        const ok = await answeredBy(path, conn, request('GET', TEMP, { headers: [['X-Correlation-Id', 'abc-123']] }))
        assert.equal(ok.status, 200)
        assert.equal(header(ok, 'x-correlation-id'), 'abc-123', path)
        const fault = await answeredBy(path, conn, request('GET', `${SYS}/instances/nope`, { headers: [['x-correlation-id', 'abc-123']] }))
        assert.equal(fault.status, 404)
        assert.equal(header(fault, 'x-correlation-id'), 'abc-123', path)
        assert.equal(json(fault).correlation_id, 'abc-123', path)
        // One that is not sane (a space inside) is replaced by a fresh UUID on both paths.
        const replaced = await answeredBy(path, conn, request('GET', `${SYS}/instances/nope`, { headers: [['x-correlation-id', 'a b']] }))
        assert.match(header(replaced, 'x-correlation-id') ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, path)
        assert.equal(json(replaced).correlation_id, header(replaced, 'x-correlation-id'))
      }
    })
  })

  it('answers three pipelined requests written at once, in order', async () => {
    const value = `${TEMP}/attr/internal_value`
    const pipelined = (put: number): string =>
      request('GET', value, { headers: [['x-correlation-id', 'first']] }) +
      request('PUT', value, { body: { value: put }, headers: [['x-correlation-id', 'second']] }) +
      request('GET', value, { headers: [['x-correlation-id', 'third']] })

    const lane = await laneConnection()
    try {
      const before = viaHttp
      await lane.write(pipelined(31.25))
      const [first, put, last] = await lane.read(3)
      assert.equal(viaHttp - before, parsedByHttp(0, 3), 'all three answered by the lane')
      assert.deepEqual(
        [first, put, last].map((r) => header(r!, 'x-correlation-id')),
        ['first', 'second', 'third'],
      )
      assert.notDeepEqual(json(first!), { value: 31.25 })
      assert.deepEqual(json(put!), { value: 31.25 })
      // The lane runs pipelined requests one after the other: the GET sees the PUT.
      assert.deepEqual(json(last!), { value: 31.25 })
      assert.equal(lane.pending, 0)
      assert.equal((await answeredBy('lane', lane, request('GET', value))).status, 200)
    } finally {
      lane.close()
    }

    const fastify = await fastifyConnection()
    try {
      const before = viaHttp
      await fastify.write(pipelined(32.5))
      const [first, put, last] = await fastify.read(3)
      assert.equal(viaHttp - before, 3, 'all three answered by node:http')
      assert.deepEqual(
        [first, put, last].map((r) => header(r!, 'x-correlation-id')),
        ['first', 'second', 'third'],
      )
      assert.deepEqual(json(first!), { value: 31.25 })
      assert.deepEqual(json(put!), { value: 32.5 })
      // Pipelined requests run one after the other on node:http connections too (pipelining.ts):
      // the GET starts once the PUT has been answered, so it reads the value written.
      assert.deepEqual(json(last!), { value: 32.5 })
      assert.equal(fastify.pending, 0)
    } finally {
      fastify.close()
    }
  })

  it('answers megabytes of pipelined requests in order, behind a slow answer and to a client that reads late', async () => {
    const value = `${TEMP}/attr/internal_value`
    const count = 12_000 // about 1.4 MB of requests: more than the lane reads ahead of its answers
    const many = Array.from({ length: count }, (_, i) => request('GET', value, { headers: [['x-correlation-id', `r${i}`]] })).join('')
    const conn = await laneConnection()
    try {
      // The client reads nothing for a while: the server's writes back up and it stops reading.
      conn.socket.pause()
      await conn.write(request('POST', `${PY}/method/bump`, { body: { kwargs: {} } }) + many)
      await new Promise((resolve) => setTimeout(resolve, 200))
      conn.socket.resume()
      const answers = await conn.read(count + 1)
      assert.equal(answers[0]!.status, 200)
      assert.deepEqual(
        answers.slice(1).map((r) => header(r, 'x-correlation-id')),
        Array.from({ length: count }, (_, i) => `r${i}`),
      )
      assert.ok(answers.slice(1).every((r) => r.status === 200))
    } finally {
      conn.close()
    }
  })

  it('hands a megabyte of pipelined requests over to node:http, which answers every one in order', async () => {
    const value = `${TEMP}/attr/internal_value`
    const count = 8000 // about 1.3 MB: the lane holds up to 1 MiB of them while Python answers the first
    const many = Array.from({ length: count }, (_, i) => request('GET', value, { headers: [['x-correlation-id', `h${i}`]] })).join('')
    const conn = await laneConnection()
    try {
      // The lane answers the call, then declines /health and hands everything after it over.
      await conn.write(request('POST', `${PY}/method/bump`, { body: { kwargs: {} } }) + HEALTH + many)
      const answers = await conn.read(count + 2)
      assert.equal(answers[0]!.status, 200)
      assert.equal(json(answers[1]!).status, 'ok')
      assert.deepEqual(
        answers.slice(2).map((r) => header(r, 'x-correlation-id')),
        Array.from({ length: count }, (_, i) => `h${i}`),
      )
      assert.ok(answers.slice(2).every((r) => r.status === 200))
    } finally {
      conn.close()
    }
  })

  it('hands a connection over mid-way: answers before and after, and tree requests keep working', async () => {
    for (const declined of [HEALTH, request('GET', `${TEMP}?x=1`), request('GET', `${TEMP}/`)]) {
      const conn = await laneConnection()
      try {
        const first = await answeredBy('lane', conn, request('GET', TEMP))
        assert.equal(first.status, 200)
        const second = await answeredBy('fastify', conn, declined)
        assert.equal(second.status, 200, second.body)
        if (declined !== HEALTH) assert.deepEqual(json(second), json(first))
        // The connection is node:http's now: a request the lane would take goes to fastify.
        const third = await answeredBy('fastify', conn, request('GET', TEMP))
        assertSame(first, third, 'same request before and after the hand-over')
      } finally {
        conn.close()
      }
    }

    // The same, pipelined in one write: lane request, declined request, lane-able request.
    const conn = await laneConnection()
    try {
      const before = viaHttp
      await conn.write(request('PUT', `${TEMP}/attr/internal_value`, { body: { value: 40 } }) + HEALTH + request('GET', `${TEMP}/attr/internal_value`))
      const [put, health, get] = await conn.read(3)
      assert.equal(viaHttp - before, parsedByHttp(2, 3), 'the first answered by the lane, the other two by node:http')
      assert.deepEqual(json(put!), { value: 40 })
      assert.equal(json(health!).status, 'ok')
      assert.deepEqual(json(get!), { value: 40 })
    } finally {
      conn.close()
    }

    // A slow first answer (a Python worker call) still goes out before node:http's answers.
    const slow = await laneConnection()
    try {
      const count = `${PY}/attributes/count/attr/internal_value`
      const start = (await t.api('GET', count)).body.value as number
      const before = viaHttp
      await slow.write(request('POST', `${PY}/method/bump`, { body: { kwargs: { by: 1 } } }) + request('GET', count) + HEALTH + request('GET', count))
      const [bump, lane, health, fastify] = await slow.read(4)
      assert.equal(viaHttp - before, parsedByHttp(2, 4), 'two answered by the lane, two by node:http')
      assert.deepEqual(json(bump!), { result: { count: start + 1, by: 1 } })
      assert.deepEqual(json(lane!), { value: start + 1 })
      assert.equal(json(health!).status, 'ok')
      assert.deepEqual(json(fastify!), { value: start + 1 })
    } finally {
      slow.close()
    }
  })

  it('answers a request whose head or body arrives in two pieces (node:http takes it over)', async () => {
    const pause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 50))
    const reference = await t.api('GET', TEMP)

    const head = await laneConnection()
    try {
      const bytes = request('GET', TEMP)
      const before = viaHttp
      await head.write(bytes.slice(0, 30))
      await pause()
      assert.equal(head.pending, 0)
      await head.write(bytes.slice(30))
      const [res] = await head.read(1)
      assert.equal(viaHttp - before, 1)
      assert.equal(res!.status, 200)
      assert.deepEqual(json(res!), reference.body)
    } finally {
      head.close()
    }

    const body = await laneConnection()
    try {
      const bytes = request('PUT', `${TEMP}/attr/internal_value`, { body: { value: 55.5 } })
      const split = bytes.indexOf('\r\n\r\n') + 4
      const before = viaHttp
      await body.write(bytes.slice(0, split))
      await pause()
      assert.equal(body.pending, 0)
      await body.write(bytes.slice(split))
      const [res] = await body.read(1)
      assert.equal(viaHttp - before, 1)
      assert.equal(res!.status, 200)
      assert.deepEqual(json(res!), { value: 55.5 })
      const after = await answeredBy('fastify', body, request('GET', `${TEMP}/attr/internal_value`))
      assert.deepEqual(json(after), { value: 55.5 })
    } finally {
      body.close()
    }
  })

  it('leaves unusual forms to fastify, which answers them correctly', async () => {
    const reference = (await t.api('GET', INST)).body

    // Transfer-Encoding: chunked body to a Python method call.
    const chunked = await laneConnection()
    try {
      const start = (await t.api('GET', `${PY}/attributes/count/attr/internal_value`)).body.value as number
      const payload = JSON.stringify({ kwargs: { by: 3 } })
      const bytes =
        `POST ${PY}/method/bump HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${TEST_AUTH.authorization}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `${(5).toString(16)}\r\n${payload.slice(0, 5)}\r\n${(payload.length - 5).toString(16)}\r\n${payload.slice(5)}\r\n0\r\n\r\n`
      const res = await answeredBy('fastify', chunked, bytes)
      assert.equal(res.status, 200, res.body)
      assert.deepEqual(json(res), { result: { count: start + 3, by: 3 } })
    } finally {
      chunked.close()
    }

    // Connection: close: answered, then the server closes the connection.
    const closing = await laneConnection()
    try {
      const res = await answeredBy('fastify', closing, request('GET', INST, { headers: [['Connection', 'close']] }))
      assert.equal(res.status, 200)
      assert.deepEqual(json(res), reference)
      assert.equal(header(res, 'connection'), 'close')
      await closing.ended
    } finally {
      closing.close()
    }

    // HTTP/1.0: answered, then closed (no keep-alive asked for).
    const old = await laneConnection()
    try {
      const res = await answeredBy('fastify', old, request('GET', INST, { version: '1.0' }))
      assert.equal(res.status, 200)
      assert.equal(header(res, 'connection'), 'close')
      assert.deepEqual(json(res), reference)
      await old.ended
    } finally {
      old.close()
    }

    // A percent-encoded segment and a trailing slash name the same node.
    for (const path of [`${SYS}/instances/%64ev`, `${INST}/`]) {
      const conn = await laneConnection()
      try {
        const res = await answeredBy('fastify', conn, request('GET', path))
        assert.equal(res.status, 200, path)
        assert.deepEqual(json(res), reference, path)
      } finally {
        conn.close()
      }
    }
  })

  it('leaves malformed heads to node:http, which refuses them', async () => {
    // With the key, so the lane would take them if it did not check the head.
    const head = `GET ${SYS} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${TEST_AUTH.authorization}\r\n`
    const malformed = {
      'a space in a header name': `${head}Bad Name: y\r\n\r\n`,
      'a control character in a value': `${head}X-Note: a\x01b\r\n\r\n`,
      'a folded header line': `${head}X-Note: a\r\n b\r\n\r\n`,
      'a bare LF in a value': `${head}X-Note: a\nb\r\n\r\n`,
    }
    const wellFormed = await laneConnection()
    try {
      assert.equal((await wellFormed.exchange(`${head}\r\n`)).status, 200, 'the same head, well formed')
    } finally {
      wellFormed.close()
    }
    for (const [what, bytes] of Object.entries(malformed)) {
      const conn = await laneConnection()
      try {
        const answer = await conn.exchange(bytes)
        assert.equal(answer.status, 400, what)
      } finally {
        conn.close()
      }
    }
  })

  it('answers a client that half-closes after its requests, then closes the connection', async () => {
    /** Fails instead of waiting for the 72 s keep-alive timeout when the server keeps the socket. */
    const closedSoon = (conn: RawConnection, what: string): Promise<void> =>
      Promise.race([
        conn.ended,
        new Promise<void>((_, reject) => setTimeout(() => reject(new Error(`${what}: the server kept the connection open`)), 5000).unref()),
      ])
    // As `printf ... | nc -N` does: the request, then FIN.
    const get = await laneConnection()
    get.socket.end(request('GET', `${TEMP}/attr/internal_value`))
    assert.equal((await get.read(1))[0]!.status, 200)
    await closedSoon(get, 'GET then FIN')
    // FIN while the answer still waits for Python. node:http takes the FIN for a client gone
    // away and closes at once (`--fast-lane off`): nothing is answered.
    const slow = await laneConnection()
    slow.socket.end(request('POST', `${PY}/method/bump`, { body: { kwargs: {} } }))
    if (LANE_ON) assert.equal((await slow.read(1))[0]!.status, 200)
    await closedSoon(slow, 'Python call then FIN')
    // A request the lane would hand over arrives with the FIN: the complete one before it is
    // answered, the connection closes, and the server carries on.
    const mixed = await laneConnection()
    mixed.socket.end(request('POST', `${PY}/method/bump`, { body: { kwargs: {} } }) + HEALTH)
    if (LANE_ON) assert.equal((await mixed.read(1))[0]!.status, 200)
    await closedSoon(mixed, 'call, /health, FIN')
    assert.equal((await t.api('GET', SYS)).status, 200)
  })

  it('keeps one state: what either path writes, the other (and fetch) reads', async () => {
    await onBothPaths(async (lane, fastify) => {
      const value = `${TEMP}/attr/internal_value`
      assert.deepEqual(json(await answeredBy('lane', lane, request('PUT', value, { body: { value: 1.25 } }))), { value: 1.25 })
      assert.deepEqual(json(await answeredBy('fastify', fastify, request('GET', value))), { value: 1.25 })
      assert.deepEqual(json(await answeredBy('fastify', fastify, request('PUT', value, { body: { value: 2.5 } }))), { value: 2.5 })
      assert.deepEqual(json(await answeredBy('lane', lane, request('GET', value))), { value: 2.5 })
      assert.equal((await answeredBy('lane', lane, request('PATCH', TEMP, { body: { internal_value: 3.75 } }))).status, 200)
      assert.deepEqual((await t.api('GET', value)).body, { value: 3.75 })
      assert.deepEqual(json(await answeredBy('lane', lane, request('PUT', value, { body: { value: 4.5 } }))), { value: 4.5 })
      const fetched = await t.api('GET', value)
      assert.deepEqual(fetched.body, { value: 4.5 })
      const count = json(await answeredBy('lane', lane, request('POST', `${PY}/method/bump`, { body: { kwargs: { by: 10 } } }))).result.count as number
      assert.deepEqual((await t.api('GET', `${PY}/attributes/count/attr/internal_value`)).body, { value: count })
    })
  })
})

describe('HTTP fast lane: server close', () => {
  it('closes lane connections idle for the keep-alive timeout, silent ones included', async () => {
    const t = await startTestServer()
    try {
      t.server.app.server.keepAliveTimeout = 1000
      const idle = await RawConnection.open(t.url)
      const served = await idle.exchange(request('GET', SYS))
      assert.equal(header(served, 'keep-alive'), 'timeout=1')
      // node:http leaves a connection that never sent a byte to its headers timeout (60 s); the
      // lane closes it with the idle ones.
      const silent = LANE_ON ? await RawConnection.open(t.url) : undefined
      const start = Date.now()
      await Promise.all([idle.ended, silent?.ended])
      const took = Date.now() - start
      assert.ok(took >= 900 && took < 5000, `closed after ${took} ms`)
      idle.close()
      silent?.close()
    } finally {
      await t.close()
    }
  })

  it('closes idle lane connections at once: close() does not wait for the keep-alive timeout', async () => {
    const t = await startTestServer()
    let closed = false
    const conns: RawConnection[] = []
    try {
      const idleLane = await RawConnection.open(t.url)
      conns.push(idleLane)
      const served = await idleLane.exchange(request('GET', SYS))
      assert.equal(served.status, 200)
      assert.equal(header(served, 'keep-alive'), 'timeout=72')
      const silent = await RawConnection.open(t.url)
      const idleHttp = await RawConnection.open(t.url)
      conns.push(silent, idleHttp)
      assert.equal((await idleHttp.exchange(HEALTH)).status, 200)

      const start = Date.now()
      await t.close()
      closed = true
      const took = Date.now() - start
      assert.ok(took < 5000, `close() took ${took} ms`)
      // The server closed every one of them: the lane's (served, and never written to) and node:http's.
      await Promise.all(conns.map((conn) => conn.ended))
    } finally {
      for (const conn of conns) conn.close()
      if (!closed) await t.close()
    }
  })
})
