/**
 * The fast lane's request parser against node's own (llhttp), on the same bytes.
 *
 * The reference is a real node:http server on loopback with node's default parser settings (the
 * ones fastify's server runs with): each input is written on a fresh connection and followed by
 * the client's FIN, so node either parses every request in it or refuses it; the server records
 * every request node hands over (method, URL, version, headers, body, keep-alive) and the parse
 * error that ends a connection. The rule held, for the input as one piece and for every split of
 * it into two pieces: whatever the lane's parser takes (parseRequest, applied as the lane's
 * connection applies it until the first refusal), node parses as the same requests, in the same
 * order, with the same method, URL, the headers the lane reads and the same body, and keeps the
 * connection alive after each. Everything else the lane must decline, and a declined request goes
 * to node:http byte for byte.
 *
 * The inputs: a corpus of well-formed tree requests and the usual ways of smuggling a second
 * reading into a request (duplicate Content-Length, Content-Length with Transfer-Encoding,
 * folded header lines, bare LF, whitespace before the colon, invalid tokens, NUL and other
 * control bytes, huge lengths, too many headers), then seeded random mutations of them:
 * MIMIC_FUZZ_SEED replays a run, MIMIC_FUZZ_COUNT sets how many (400 by default).
 *
 * Then end to end: the same inputs on two real Mimic servers, one with the fast lane and one
 * without, in one and in two TCP writes (the second only once the server has read the first):
 * each input gets the same status lines and bodies from both, Date and correlation ids aside.
 * Where node's parser refuses part of an input, node:http's own answers to the requests before
 * that part depend on timing (see `compare`): there the answers given must be the same as far as
 * both go.
 */
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import { connect, type Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { parseRequest, type LaneRequest } from '../../src/server/fast-lane/index.js'
import { startTestServer, TEST_KEY, type TestServer } from '../helpers/server.js'
import { generator } from '../helpers/seeded-random.js'

const SEED = Number(process.env.MIMIC_FUZZ_SEED ?? Date.now() % 1_000_000)
const COUNT = Number(process.env.MIMIC_FUZZ_COUNT ?? 400)
/** The test servers' body limit (Mimic's default), which the lane's parser is given too. */
const BODY_LIMIT = 16 * 1024 * 1024

const SYS = '/api/v3/system'
const TEMP = `${SYS}/instances/dev/attributes/temperature`
const AUTH = `Authorization: Bearer ${TEST_KEY}`

/** A request head from its lines, CRLF-terminated, with an optional body. */
function http(lines: string[], body = ''): string {
  return `${lines.join('\r\n')}\r\n\r\n${body}`
}

const get = (path: string, extra: string[] = []): string => http([`GET ${path} HTTP/1.1`, 'Host: 127.0.0.1', AUTH, ...extra])
const put = (path: string, body: string, extra: string[] = []): string =>
  http([`PUT ${path} HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`, ...extra], body)

/** Well-formed requests the lane takes, and the hostile forms it must leave to node. */
const CORPUS: Record<string, string> = {
  'GET the root': get(SYS),
  'GET an attribute': get(TEMP),
  'GET a property, client correlation id': get(`${TEMP}/attr/internal_value`, ['X-Correlation-Id: abc-1']),
  'PUT a property': put(`${TEMP}/attr/internal_value`, '{"value": 21.5}'),
  'PATCH an attribute': http(
    [`PATCH ${TEMP} HTTP/1.1`, 'host: 127.0.0.1', AUTH, 'content-type: application/json; charset=utf-8', 'content-length: 24'],
    '{"internal_value": 22.5}',
  ),
  'POST run': http(
    [
      `POST ${SYS}/instances/dev/method/run HTTP/1.1`,
      'Host: 127.0.0.1',
      AUTH,
      'Content-Type: application/json',
      'Content-Length: 14',
      'Connection: keep-alive',
    ],
    '{"kwargs": {}}',
  ),
  'POST reset, no body': http([`POST ${SYS}/instances/dev/method/reset HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Length: 0']),
  'DELETE a missing node': http([`DELETE ${SYS}/instances/nope HTTP/1.1`, 'Host: 127.0.0.1', AUTH]),
  'other headers, odd spacing': http([
    `GET ${TEMP} HTTP/1.1`,
    'User-Agent: fuzz/1.0',
    'Host:127.0.0.1',
    `Authorization:\t Bearer ${TEST_KEY} \t`,
    'Accept: */*',
    'X-Obs-Text: caf\xe9',
  ]),
  'pipelined: GET, PUT, GET': get(TEMP) + put(`${TEMP}/attr/internal_value`, '{"value": 23}') + get(`${TEMP}/attr/internal_value`),
  'pipelined: GET, then /health': get(TEMP) + http(['GET /health HTTP/1.1', 'Host: 127.0.0.1']),
  'pipelined: PUT, then a malformed head':
    put(`${TEMP}/attr/internal_value`, '{"value": 24}') + http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', 'Bad Header: x']),
  'GET, then half a request': get(TEMP) + `GET ${TEMP} HTTP/1.1\r\nHost: 127.0.0.1\r\n`,
  'a body shorter than its Content-Length': http(
    [`PUT ${TEMP}/attr/internal_value HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', 'Content-Length: 40'],
    '{"value": 1}',
  ),
  'duplicate Content-Length, same value': http(
    [`PUT ${TEMP}/attr/internal_value HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', 'Content-Length: 12', 'Content-Length: 12'],
    '{"value": 2}',
  ),
  'duplicate Content-Length, two values': http(
    [`PUT ${TEMP}/attr/internal_value HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', 'Content-Length: 12', 'content-length: 3'],
    '{"value": 3}',
  ),
  'Content-Length listing two values': http(
    [`PUT ${TEMP}/attr/internal_value HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', 'Content-Length: 12, 12'],
    '{"value": 4}',
  ),
  // llhttp takes spaces after the digits but answers 400 to a tab there.
  'Content-Length with a tab after the digits': http(
    [`PUT ${TEMP}/attr/internal_value HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', 'Content-Length: 12\t'],
    '{"value": 8}',
  ),
  'Content-Length with spaces around the digits': http(
    [`PUT ${TEMP}/attr/internal_value HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', 'Content-Length: \t12  '],
    '{"value": 9}',
  ),
  'Content-Length with Transfer-Encoding': http(
    [`PUT ${TEMP}/attr/internal_value HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', 'Content-Length: 12', 'Transfer-Encoding: chunked'],
    'c\r\n{"value": 5}\r\n0\r\n\r\n',
  ),
  'chunked body': http(
    [`PUT ${TEMP}/attr/internal_value HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', 'Transfer-Encoding: chunked'],
    'c\r\n{"value": 6}\r\n0\r\n\r\n',
  ),
  'folded Authorization (obs-fold)': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', 'Authorization: Bearer', ` ${TEST_KEY}`]),
  'folded other header': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'X-Note: a', '\tb']),
  'bare LF line endings': `GET ${TEMP} HTTP/1.1\nHost: 127.0.0.1\n${AUTH}\n\n`,
  'bare LF after the request line': `GET ${TEMP} HTTP/1.1\nHost: 127.0.0.1\r\n${AUTH}\r\n\r\n`,
  'bare LF ending the head': `GET ${TEMP} HTTP/1.1\r\nHost: 127.0.0.1\r\n${AUTH}\r\n\nGET ${SYS} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
  'bare CR inside a value': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'X-Note: a\rb']),
  'whitespace before the colon': http([`GET ${TEMP} HTTP/1.1`, 'Host : 127.0.0.1', AUTH]),
  'whitespace before the colon of Content-Length': http(
    [`PUT ${TEMP}/attr/internal_value HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', 'Content-Length : 12'],
    '{"value": 7}',
  ),
  'a space in a header name': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'X Note: 1']),
  'a separator in a header name': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'X(Note): 1']),
  'an empty header name': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH, ': 1']),
  'a header line without a colon': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'X-Note']),
  'NUL in a value': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'X-Note: a\0b']),
  'NUL in the URL': get(`${TEMP}\0x`),
  'control byte in a value': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'X-Note: a\x01b']),
  'DEL in a value': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'X-Note: a\x7fb']),
  'control byte in a header name': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'X-\x01Note: 1']),
  'NUL in the body': put(`${TEMP}/attr/internal_value`, '{"value": "\0"}'),
  'a huge Content-Length': http(
    [`PUT ${TEMP}/attr/internal_value HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', 'Content-Length: 99999999999999999999'],
    '{"value": 8}',
  ),
  'a Content-Length past the body limit': http(
    [`PUT ${TEMP}/attr/internal_value HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', `Content-Length: ${BODY_LIMIT + 1}`],
    '{"value": 9}',
  ),
  'a signed Content-Length': http(
    [`PUT ${TEMP}/attr/internal_value HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', 'Content-Length: +12'],
    '{"value": 1}',
  ),
  'a Content-Length with leading zeros': http(
    [`PUT ${TEMP}/attr/internal_value HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', 'Content-Length: 00013'],
    '{"value": 10}',
  ),
  'a head of 9 KiB': get(TEMP, [`X-Pad: ${'a'.repeat(9 * 1024)}`]),
  'more headers than node keeps (2,000), the key last': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', ...Array.from({ length: 2000 }, () => 'a:'), AUTH]),
  'trailing whitespace in values': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1 ', `${AUTH}  `, 'X-Correlation-Id: abc-2\t']),
  'missing Host': http([`GET ${TEMP} HTTP/1.1`, AUTH]),
  'empty Host': http([`GET ${TEMP} HTTP/1.1`, 'Host:', AUTH]),
  'duplicate Host': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', 'Host: example.com', AUTH]),
  'duplicate Authorization': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', 'Authorization: Bearer wrong', AUTH]),
  'Connection: close': get(TEMP, ['Connection: close']),
  'Connection: Keep-Alive': get(TEMP, ['Connection: Keep-Alive']),
  'Connection: keep-alive, Upgrade': get(TEMP, ['Connection: keep-alive, Upgrade', 'Upgrade: websocket']),
  'Expect: 100-continue': http(
    [`PUT ${TEMP}/attr/internal_value HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', 'Content-Length: 13', 'Expect: 100-continue'],
    '{"value": 11}',
  ),
  'HTTP/1.0': http([`GET ${TEMP} HTTP/1.0`, 'Host: 127.0.0.1', AUTH]),
  'HTTP/1.2': http([`GET ${TEMP} HTTP/1.2`, 'Host: 127.0.0.1', AUTH]),
  'lower-case method': http([`get ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH]),
  'OPTIONS *': http(['OPTIONS * HTTP/1.1', 'Host: 127.0.0.1']),
  'absolute-form target': http([`GET http://127.0.0.1${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH]),
  'two spaces after the method': http([`GET  ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH]),
  'a tab after the method': http([`GET\t${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH]),
  'an empty line first': `\r\n${get(TEMP)}`,
  'a fragment and odd characters in the URL': get(`${TEMP}#frag"{}|\\^\``),
  'a GET with a body': http([`GET ${TEMP} HTTP/1.1`, 'Host: 127.0.0.1', AUTH, 'Content-Type: application/json', 'Content-Length: 2'], '{}'),
  'a body that is not UTF-8': put(`${TEMP}/attr/internal_value`, '{"value": "\xff\xfe"}'),
}

/** Bytes that make parsers disagree, for mutations. */
const SHARP_BYTES = [0x00, 0x01, 0x09, 0x0a, 0x0d, 0x20, 0x22, 0x2c, 0x3a, 0x3b, 0x7f, 0x80, 0xff, 0x30, 0x39, 0x2b, 0x2d]

/** One or two random edits of a corpus input, mostly where framing is decided (the head). */
function mutate(random: ReturnType<typeof generator>, base: Buffer): Buffer {
  let bytes = Buffer.from(base)
  const head = Math.max(1, bytes.indexOf('\r\n\r\n') + 4 || bytes.length)
  const at = (): number => (random.int(4) === 0 ? random.int(bytes.length + 1) : random.int(Math.min(head, bytes.length) + 1))
  const byte = (): number => (random.int(3) === 0 ? random.int(256) : random.pick(SHARP_BYTES))
  const lines = (): string[] => bytes.toString('latin1').split('\r\n')
  for (let edits = 1 + random.int(2); edits > 0; edits--) {
    switch (random.int(9)) {
      case 0: {
        const i = Math.min(at(), bytes.length - 1)
        if (i >= 0) bytes[i] = byte()
        break
      }
      case 1: {
        const i = at()
        bytes = Buffer.concat([bytes.subarray(0, i), Buffer.from([byte()]), bytes.subarray(i)])
        break
      }
      case 2: {
        const i = at()
        bytes = Buffer.concat([bytes.subarray(0, i), bytes.subarray(i + 1 + random.int(3))])
        break
      }
      case 3: {
        // A header line twice.
        const all = lines()
        const end = all.indexOf('')
        if (end > 1) {
          const i = 1 + random.int(end - 1)
          all.splice(i, 0, all[i]!)
          bytes = Buffer.from(all.join('\r\n'), 'latin1')
        }
        break
      }
      case 4: {
        // One line ending reduced to LF, or to CR.
        const text = bytes.toString('latin1')
        const ends = [...text.matchAll(/\r\n/g)].map((m) => m.index!)
        if (ends.length) {
          const i = random.pick(ends)
          bytes = Buffer.from(text.slice(0, i) + random.pick(['\n', '\r', '\n\r', '\r\r\n']) + text.slice(i + 2), 'latin1')
        }
        break
      }
      case 5: {
        // Whitespace around a colon or at a line start (obs-fold).
        const text = bytes.toString('latin1')
        const marks = [...text.matchAll(/:|\r\n/g)].map((m) => m.index! + (m[0] === ':' ? 0 : 2))
        if (marks.length) {
          const i = random.pick(marks)
          bytes = Buffer.from(text.slice(0, i) + random.pick([' ', '\t', '  ']) + text.slice(i), 'latin1')
        }
        break
      }
      case 6: {
        // A digit of a length changed, or a length grown.
        const text = bytes.toString('latin1')
        const m = /content-length:[ \t]*(\d+)/i.exec(text)
        if (m) {
          const start = m.index + m[0].length - m[1]!.length
          const value = random.pick([
            String(Number(m[1]) + random.int(5) - 2),
            `${m[1]}0`,
            '0',
            `${m[1]} ${m[1]}`,
            `-${m[1]}`,
            `0x${m[1]}`,
            '18446744073709551616',
          ])
          bytes = Buffer.from(text.slice(0, start) + value + text.slice(start + m[1]!.length), 'latin1')
        }
        break
      }
      case 7:
        // Cut short, or another request appended.
        bytes =
          random.int(2) === 0
            ? bytes.subarray(0, random.int(bytes.length + 1))
            : Buffer.concat([bytes, Buffer.from(random.pick(Object.values(CORPUS)), 'latin1')])
        break
      default: {
        // A header's name in another case, or another header added.
        const all = lines()
        const end = all.indexOf('')
        if (end > 1 && random.int(2) === 0) {
          const i = 1 + random.int(end - 1)
          all[i] = all[i]!.replace(/^[^:]*/, (name) => (random.int(2) ? name.toUpperCase() : name.toLowerCase()))
        } else if (end > 0) {
          all.splice(
            1 + random.int(end),
            0,
            random.pick([
              'Transfer-Encoding: chunked',
              'Content-Length: 0',
              'Host: x',
              'Connection: close',
              'Expect: 100-continue',
              'Upgrade: h2c',
              'X-Correlation-Id: fuzz',
              AUTH,
              'Content-Type: text/plain',
            ]),
          )
        }
        bytes = Buffer.from(all.join('\r\n'), 'latin1')
      }
    }
  }
  return bytes
}

/** What node:http made of one connection's bytes. */
interface NodeVerdict {
  requests: Array<{
    method: string
    url: string
    version: string
    headers: Record<string, string | string[] | undefined>
    body: Buffer
    complete: boolean
    keepAlive: boolean
  }>
  /** The parse error that ended the connection, if any (HPE_...). */
  error?: string
  /** Answers the client received: one per complete request, and node's own refusals (a missing Host). */
  answers: number
}

/** A plain node:http server that records what node parses on each connection. */
class NodeReference {
  readonly #server: Server
  readonly #verdicts = new Map<number, { verdict: NodeVerdict; closed: Promise<void>; markClosed: () => void }>()

  constructor() {
    this.#server = createServer((req, res) => {
      const seen = {
        method: req.method!,
        url: req.url!,
        version: req.httpVersion,
        headers: req.headers,
        body: Buffer.alloc(0),
        complete: false,
        keepAlive: res.shouldKeepAlive,
      }
      this.#entry(req.socket.remotePort!).verdict.requests.push(seen)
      req.on('data', (chunk: Buffer) => (seen.body = Buffer.concat([seen.body, chunk])))
      req.on('end', () => {
        seen.complete = true
        res.end()
      })
      req.on('error', () => {})
    })
    this.#server.on('connection', (socket: Socket) => {
      const entry = this.#entry(socket.remotePort!)
      socket.on('close', entry.markClosed)
    })
    this.#server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
      this.#entry(socket.remotePort!).verdict.error = err.code ?? err.message
      socket.destroy()
    })
  }

  listen(): Promise<void> {
    return new Promise((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#server.close(() => resolve()))
  }

  /** Writes the bytes on a fresh connection, then FIN, and waits for node to finish with it. */
  async verdict(bytes: Buffer): Promise<NodeVerdict> {
    const { port } = this.#server.address() as { port: number }
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect({ host: '127.0.0.1', port }, () => resolve(s))
      s.once('error', reject)
    })
    socket.on('error', () => {})
    let received = ''
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')))
    const clientClosed = new Promise((resolve) => socket.once('close', resolve))
    const clientPort = socket.localPort!
    const entry = this.#entry(clientPort)
    socket.end(bytes)
    await Promise.all([entry.closed, clientClosed])
    this.#verdicts.delete(clientPort)
    entry.verdict.answers = received.split(/^HTTP\/1\.1 /m).length - 1
    return entry.verdict
  }

  #entry(port: number): { verdict: NodeVerdict; closed: Promise<void>; markClosed: () => void } {
    let entry = this.#verdicts.get(port)
    if (!entry) {
      let markClosed = (): void => {}
      const closed = new Promise<void>((resolve) => (markClosed = resolve))
      entry = { verdict: { requests: [], answers: 0 }, closed, markClosed }
      this.#verdicts.set(port, entry)
    }
    return entry
  }
}

/**
 * The requests the lane takes from bytes arriving in these pieces, as its connection does: each
 * complete request in turn, until the first it declines (a request still arriving included),
 * where node:http gets the connection.
 */
function laneTakes(pieces: Buffer[]): LaneRequest[] {
  const taken: LaneRequest[] = []
  let buffer = Buffer.alloc(0)
  for (const piece of pieces) {
    buffer = Buffer.concat([buffer, piece])
    while (buffer.length > 0) {
      const parsed = parseRequest(buffer, BODY_LIMIT)
      if (parsed === 'decline') return taken
      taken.push(parsed.request)
      buffer = buffer.subarray(parsed.length)
    }
  }
  return taken
}

const LANE_HEADERS = ['host', 'authorization', 'x-correlation-id', 'content-type', 'content-length', 'connection', 'origin', 'sec-fetch-site'] as const

/** Fails unless node parses every request the lane took from `pieces` the same way. */
function assertNodeAgrees(what: string, pieces: Buffer[], node: NodeVerdict): number {
  const taken = laneTakes(pieces)
  const where = `${what} (${pieces.map((p) => p.length).join('+')} bytes: ${JSON.stringify(Buffer.concat(pieces).toString('latin1').slice(0, 400))})`
  const complete = node.requests.filter((r) => r.complete)
  assert.ok(taken.length <= complete.length, `${where}: the lane took ${taken.length} requests, node parsed ${complete.length} (${node.error ?? 'no error'})`)
  taken.forEach((lane, i) => {
    const seen = node.requests[i]!
    assert.ok(seen.complete, `${where}: request ${i + 1} is incomplete for node`)
    assert.equal(seen.method, lane.method, `${where}: request ${i + 1} method`)
    assert.equal(seen.url, lane.url, `${where}: request ${i + 1} URL`)
    assert.equal(seen.version, '1.1', `${where}: request ${i + 1} version`)
    assert.ok(seen.keepAlive, `${where}: node would close the connection after request ${i + 1}`)
    for (const name of LANE_HEADERS) assert.equal(seen.headers[name], lane.headers[name], `${where}: request ${i + 1} header ${name}`)
    assert.equal(seen.body.toString('utf8'), lane.body, `${where}: request ${i + 1} body`)
    assert.equal(seen.body.length, Number(lane.headers['content-length'] ?? 0), `${where}: request ${i + 1} body length`)
  })
  return taken.length
}

/** The corpus, then the seeded mutations. */
function inputs(): Array<[string, Buffer]> {
  const random = generator(SEED)
  const corpus = Object.entries(CORPUS).map(([what, text]): [string, Buffer] => [what, Buffer.from(text, 'latin1')])
  // Mostly the well-formed requests (the first twelve), where one edit can make a request the
  // lane still takes but reads otherwise than node.
  const wellFormed = corpus.slice(0, 12)
  const mutations = Array.from({ length: COUNT }, (_, i): [string, Buffer] => {
    const [what, bytes] = random.int(3) === 0 ? random.pick(corpus) : random.pick(wellFormed)
    return [`mutation ${i + 1} of "${what}" (MIMIC_FUZZ_SEED=${SEED})`, mutate(random, bytes)]
  })
  return [...corpus, ...mutations]
}

describe('HTTP request parsing: the fast lane against node (llhttp)', () => {
  const reference = new NodeReference()
  const verdicts = new Map<string, NodeVerdict>()
  const all = inputs()

  before(async () => {
    await reference.listen()
    for (const [what, bytes] of all) verdicts.set(what, await reference.verdict(bytes))
  })
  after(() => reference.close())

  it('the corpus: node parses what the lane takes, whole and split at every byte', (t) => {
    let takenWhole = 0
    for (const [what, bytes] of all.slice(0, Object.keys(CORPUS).length)) {
      const node = verdicts.get(what)!
      takenWhole += assertNodeAgrees(what, [bytes], node) > 0 ? 1 : 0
      for (let split = 1; split < bytes.length; split++) assertNodeAgrees(`${what}, split at ${split}`, [bytes.subarray(0, split), bytes.subarray(split)], node)
    }
    t.diagnostic(`${takenWhole} of ${Object.keys(CORPUS).length} corpus inputs taken (at least their first request) by the lane`)
    // The well-formed requests at the top of the corpus must be taken, or this proves nothing.
    assert.ok(takenWhole >= 12, `only ${takenWhole} corpus inputs taken`)
  })

  it(`${COUNT} seeded mutations (MIMIC_FUZZ_SEED=${SEED}): node parses what the lane takes, whole and split`, (t) => {
    const random = generator(SEED ^ 0x5bd1e995)
    let taken = 0
    for (const [what, bytes] of all.slice(Object.keys(CORPUS).length)) {
      const node = verdicts.get(what)!
      taken += assertNodeAgrees(what, [bytes], node) > 0 ? 1 : 0
      // Three split points each: every one for the corpus, a sample here.
      for (let i = 0; i < 3 && bytes.length > 1; i++) {
        const split = 1 + random.int(bytes.length - 1)
        assertNodeAgrees(`${what}, split at ${split}`, [bytes.subarray(0, split), bytes.subarray(split)], node)
      }
    }
    t.diagnostic(`${taken} of ${COUNT} mutated inputs taken (at least their first request) by the lane, seed ${SEED}`)
  })
})

/** One answer as a client compares it: the status line and the body, without per-request values. */
interface Answer {
  status: string
  body: unknown
}

/** Parses the complete answers in `bytes`; what is left over is not an answer yet. */
function answersIn(bytes: Buffer): Answer[] {
  const answers: Answer[] = []
  let rest = bytes
  for (;;) {
    const end = rest.indexOf('\r\n\r\n')
    if (end < 0) break
    const head = rest.toString('latin1', 0, end).split('\r\n')
    const fields = head.join('\n')
    let body: Buffer
    let length: number
    if (/^HTTP\/1\.1 1\d\d /.test(head[0]!)) {
      // An interim answer (100 Continue) has no body.
      body = Buffer.alloc(0)
      length = end + 4
    } else if (/^transfer-encoding:\s*chunked/im.test(fields)) {
      const chunks: Buffer[] = []
      let at = end + 4
      for (;;) {
        const lineEnd = rest.indexOf('\r\n', at)
        if (lineEnd < 0) return answers
        const size = parseInt(rest.toString('latin1', at, lineEnd), 16)
        if (rest.length < lineEnd + 2 + size + 2) return answers
        chunks.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size))
        at = lineEnd + 2 + size + 2
        if (size === 0) break
      }
      body = Buffer.concat(chunks)
      length = at
    } else {
      const declared = Number(/^content-length:\s*(\d+)/im.exec(fields)?.[1] ?? NaN)
      if (!Number.isFinite(declared) || rest.length < end + 4 + declared) break
      body = rest.subarray(end + 4, end + 4 + declared)
      length = end + 4 + declared
    }
    answers.push({ status: head[0]!, body: comparableBody(body.toString('utf8')) })
    rest = rest.subarray(length)
  }
  return answers
}

/**
 * A body without what differs from one request to the next (ids, times, uptime), nor the refusals
 * /health has counted so far: for an input node's parser refuses, the two servers may answer
 * different requests before the refusal (see `compare`), so a 401 counted by one may never have
 * been made by the other, and the tallies part for every later input.
 */
function comparableBody(text: string): unknown {
  try {
    return JSON.parse(text, (key, value) => (['correlation_id', 'when', 'uptime_s', 'refused'].includes(key) ? '-' : value))
  } catch {
    return text
  }
}

/** fastify's answer to a request node's parser refused (fastify.js defaultClientErrorHandler). */
function isClientError(body: unknown): boolean {
  return (
    typeof body === 'object' &&
    body !== null &&
    (body as { message?: unknown }).message !== undefined &&
    ['Client Error', 'Exceeded maximum allowed HTTP header size'].includes((body as { message: string }).message)
  )
}

/** A Mimic server with the model the corpus addresses, and its server-side sockets by client port. */
async function startServer(fastLane: 'on' | 'off'): Promise<{ t: TestServer; sockets: Map<number, Socket> }> {
  const t = await startTestServer({ config: { fastLane } })
  const sockets = new Map<number, Socket>()
  t.server.app.server.on('connection', (socket: Socket) => {
    sockets.set(socket.remotePort!, socket)
    socket.once('close', () => sockets.delete(socket.remotePort!))
  })
  const models = await t.api('PUT', `${SYS}/models`, {
    Dev: { attributes: { temperature: { default: 20.0, type: 'float' }, label: { default: 'x', type: 'str' } } },
  })
  assert.equal(models.status, 200)
  assert.equal((await t.api('PUT', `${SYS}/instances`, { dev: 'Dev' })).status, 200)
  return { t, sockets }
}

/**
 * Writes the pieces on a fresh connection, each once the server has read the one before, and
 * collects the answers: `expected` of them, or all until the server closes when `untilClose`.
 */
async function exchange(
  server: { t: TestServer; sockets: Map<number, Socket> },
  pieces: Buffer[],
  expected: number,
  untilClose: boolean,
  what: string,
): Promise<Answer[]> {
  const socket = await new Promise<Socket>((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port: server.t.server.port }, () => resolve(s))
    s.once('error', reject)
  })
  socket.setNoDelay(true)
  socket.on('error', () => {})
  let received = Buffer.alloc(0)
  let closed = false
  let wake = (): void => {}
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk])
    wake()
  })
  socket.on('close', () => {
    closed = true
    wake()
  })
  const deadline = Date.now() + 10_000
  try {
    let sent = 0
    for (const piece of pieces) {
      // The server has read everything before this piece: it arrives in a read of its own.
      while (sent > 0 && !closed && (server.sockets.get(socket.localPort!)?.bytesRead ?? sent) < sent && Date.now() < deadline)
        await new Promise((resolve) => setImmediate(resolve))
      if (closed) break
      socket.write(piece)
      sent += piece.length
    }
    while (!closed && (untilClose || answersIn(received).length < expected)) {
      if (Date.now() > deadline)
        assert.fail(
          `${what}: ${untilClose ? 'the connection stayed open' : `${answersIn(received).length} of ${expected} answers`} after 10 s; received ${JSON.stringify(received.toString('latin1').slice(0, 300))}`,
        )
      await new Promise<void>((resolve) => {
        wake = resolve
        setTimeout(resolve, 100).unref()
      })
    }
    return answersIn(received)
  } finally {
    socket.destroy()
  }
}

describe('end to end: every input gets the same answers with the fast lane on and off', () => {
  const reference = new NodeReference()
  let on: Awaited<ReturnType<typeof startServer>>
  let off: Awaited<ReturnType<typeof startServer>>

  before(async () => {
    await reference.listen()
    on = await startServer('on')
    off = await startServer('off')
  })
  after(async () => {
    await reference.close()
    await on?.t.close()
    await off?.t.close()
  })

  /** Sends the input to both servers in these pieces and compares what comes back. */
  const compare = async (what: string, bytes: Buffer, pieces: Buffer[]): Promise<void> => {
    const node = await reference.verdict(bytes)
    const complete = node.requests.filter((r) => r.complete).length
    const untilClose = node.error !== undefined && node.error !== 'HPE_INVALID_EOF_STATE'
    const expected = Math.max(complete, node.answers)
    const input = `(${pieces.map((p) => p.length).join('+')} bytes: ${JSON.stringify(bytes.toString('latin1').slice(0, 2000))}; node: ${complete} requests, ${node.answers} answers, ${node.error ?? 'no error'})`
    const withLane = await exchange(on, pieces, expected, untilClose, `${what}, fast lane on ${input}`)
    const without = await exchange(off, pieces, expected, untilClose, `${what}, fast lane off ${input}`)
    const statuses = (answers: Answer[]): string => answers.map((a) => a.status.slice(9)).join(', ')
    const message = `${what} ${input}: answers with the lane [${statuses(withLane)}] (actual), without [${statuses(without)}] (expected)`
    if (!untilClose) return assert.deepEqual(withLane, without, message)
    // node's parser refuses something in the input: node:http ends the connection there, with
    // fastify's 400 (431 for a head too long) if the socket is still writable. Which of the
    // requests before it are answered, and whether the 400 still goes out, depends on how the
    // bytes arrive and how soon each answer is made: node:http answers a read before it reaches
    // the refused bytes of the same piece, a write after them, bytes handed over by the lane in
    // one step, and a request after `Connection: close` not at all. What must hold is that the
    // answers given are the same ones, in order, as far as both go.
    const answered = (answers: Answer[]): Answer[] => (answers.length && isClientError(answers.at(-1)!.body) ? answers.slice(0, -1) : answers)
    const [shorter, longer] =
      answered(withLane).length <= answered(without).length ? [answered(withLane), answered(without)] : [answered(without), answered(withLane)]
    assert.deepEqual(shorter, longer.slice(0, shorter.length), message)
    // A request node:http started but did not answer may have changed the instance on one server
    // only: both start the next input from a new one.
    for (const { t } of [on, off]) {
      assert.equal((await t.api('DELETE', `${SYS}/instances/dev`)).status, 200)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { dev: 'Dev' })).status, 200)
    }
  }

  it('the corpus, in one write', async () => {
    for (const [what, text] of Object.entries(CORPUS)) {
      const bytes = Buffer.from(text, 'latin1')
      await compare(what, bytes, [bytes])
    }
  })

  it('requests split across two writes at every byte', async () => {
    for (const what of ['PUT a property', 'pipelined: GET, then /health', 'folded Authorization (obs-fold)']) {
      const bytes = Buffer.from(CORPUS[what]!, 'latin1')
      for (let split = 1; split < bytes.length; split++) await compare(`${what}, split at ${split}`, bytes, [bytes.subarray(0, split), bytes.subarray(split)])
    }
  })

  it(`seeded mutations (MIMIC_FUZZ_SEED=${SEED}), whole and split once`, async () => {
    const random = generator(SEED ^ 0x1b873593)
    for (const [what, bytes] of inputs().slice(Object.keys(CORPUS).length, Object.keys(CORPUS).length + COUNT)) {
      await compare(what, bytes, [bytes])
      const split = 1 + random.int(Math.max(1, bytes.length - 1))
      if (split < bytes.length) await compare(`${what}, split at ${split}`, bytes, [bytes.subarray(0, split), bytes.subarray(split)])
    }
  })
})
