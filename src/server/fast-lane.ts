import { STATUS_CODES, type Server } from 'node:http'
import type { Socket } from 'node:net'
import { spendInTurn, turnBudgetSpent } from './turn-budget.js'

/**
 * The fast lane of the HTTP server: plain keep-alive HTTP/1.1 requests to the tree (a client
 * polling attributes, calling methods) are parsed and answered straight from the socket; every
 * other connection, and every request the lane does not take, is handed to node:http (and so
 * to fastify) with its bytes untouched, so it is served exactly as before.
 *
 * Why by hand: node:http builds an IncomingMessage and a ServerResponse with their stream
 * machinery for every request, and on a 2-core machine that costs as much again as the
 * loopback write of the answer: a bare node:http server answers about half as many requests
 * per second as a node:net server writing the same bytes (bench/ANALYSIS.md, benchmark 2). The
 * libraries that avoid it (uWebSockets.js and the servers built on it) are not published on the
 * npm registry. The lane keeps the hand-written part small by declining anything unusual:
 *
 * - only complete requests are taken: a request whose head or body has not fully arrived sends
 *   the connection to node:http, whose parser, limits and timeouts then own it;
 * - only `HTTP/1.1` with a Host header, `Content-Length` bodies (no chunked transfer, no
 *   `Expect`, no `Upgrade`, no `Connection` other than keep-alive), each header at most once;
 * - the handler declines whatever it would not answer exactly as the fastify routes do.
 *
 * A connection handed over stays with node:http for the rest of its life. Pipelined requests are
 * answered one after the other, each started once the one before it is answered, as on the
 * connections node:http serves (pipelining.ts). A client that half-closes gets the answers to the
 * complete requests it sent, then the connection closes. Resources stay bounded whatever the
 * client does: the lane reads at most MAX_BACKLOG_BYTES ahead of its answers, makes no new
 * answer while the socket has not taken the last ones, answers a bounded batch per turn of the
 * event loop, drops what is left when the client goes away, and closes a connection whose client
 * takes none of its answers for the keep-alive timeout.
 */

/** The headers the lane reads (any other header is passed over). */
export interface LaneHeaders {
  host: string | undefined
  authorization: string | undefined
  'x-correlation-id': string | undefined
  'content-type': string | undefined
  'content-length': string | undefined
  connection: string | undefined
}

/** A request the lane parsed; `body` is the UTF-8 text. */
export interface LaneRequest {
  method: string
  url: string
  headers: LaneHeaders
  body: string
}

/** The answer to a request the lane took: always JSON. */
export interface LaneResponse {
  status: number
  /** Header lines before content-type and content-length, each `name: value\r\n`, as they go on the wire. */
  headers: string
  body: string
}

/**
 * Decides synchronously whether to take a request, before anything runs: `undefined` declines
 * it (node:http gets the connection), otherwise the answer. It must not reject.
 */
export type LaneHandler = (req: LaneRequest) => LaneResponse | Promise<LaneResponse> | undefined

/** Longest request head the lane reads; longer ones are node:http's (which answers 431). */
const MAX_HEAD_BYTES = 8 * 1024
const HEAD_END = Buffer.from('\r\n\r\n')
/** How often idle keep-alive connections are looked for. */
const SWEEP_MS = 1000
/** Unanswered request bytes a connection may send ahead before the lane stops reading it. */
const MAX_BACKLOG_BYTES = 1 << 20
/**
 * Requests answered in one turn of the event loop before the lane lets other connections and
 * timers run, and the answer bytes one turn may hold: a buffer full of pipelined requests for
 * large documents must not freeze the server while it answers them all.
 */
const MAX_ANSWERS_PER_TURN = 16
const MAX_OUTPUT_PER_TURN = 256 * 1024
const REQUEST_LINE = /^(GET|POST|PUT|PATCH|DELETE) (\/[!-~]*) HTTP\/1\.1$/
// Header lines after the request line, to the end of the head: `token ":" value`, CRLF between.
// Sticky, so it checks the head in place; unambiguous (a value holds no CR), so it runs in
// linear time.
const HEADER_LINES = /(?:[!#$%&'*+.^_`|~0-9A-Za-z-]+:[\t\x20-\x7e\x80-\xff]*(?:\r\n|$))*/y
/**
 * The headers the lane reads, by lower-case name, and those it leaves to node:http. A Map
 * rather than a computed key on the headers object: indexing with the freshly sliced name would
 * make V8 look it up in its string table on every request.
 */
const READ_HEADERS = new Map<string, keyof LaneHeaders | 'decline'>([
  ['host', 'host'],
  ['authorization', 'authorization'],
  ['x-correlation-id', 'x-correlation-id'],
  ['content-type', 'content-type'],
  ['content-length', 'content-length'],
  ['connection', 'connection'],
  ['transfer-encoding', 'decline'],
  ['expect', 'decline'],
  ['upgrade', 'decline'],
])
const READ_LENGTHS = new Set([...READ_HEADERS.keys()].map((name) => name.length))
const DIGITS = /^\d{1,15}$/
const JSON_TYPE = /^application\/json\s*(;|$)/i
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])

/** What the lane makes of the bytes at the start of a connection's buffer. */
type Parsed = { request: LaneRequest; length: number } | 'decline'

/** The live lane: closing it ends its idle connections and the busy ones after their answer. */
export interface FastLane {
  close(): void
}

/**
 * Puts the lane in front of an http.Server: its own connection listener takes every new
 * connection and calls node:http's listener for those it hands over.
 *
 * @example
 * const lane = attachFastLane(app.server, (req) => (req.url === '/ping' ? Promise.resolve({ status: 200, headers: '', body: '"pong"' }) : undefined), { bodyLimit: 1 << 20 })
 */
export function attachFastLane(server: Server, handler: LaneHandler, options: { bodyLimit: number }): FastLane {
  const httpListeners = server.listeners('connection') as Array<(socket: Socket) => void>
  server.removeAllListeners('connection')
  const connections = new Set<LaneConnection>()
  let closing = false
  const handOver = (socket: Socket): void => {
    for (const listener of httpListeners) listener.call(server, socket)
  }
  server.on('connection', (socket: Socket) => {
    if (closing) return handOver(socket)
    const connection = new LaneConnection(socket, server, handler, options.bodyLimit, handOver, () => connections.delete(connection))
    connections.add(connection)
  })
  // Idle keep-alive connections are closed after the server's keep-alive timeout, as node:http
  // does. One sweep for all of them rather than a timer per socket: a socket's own timer is
  // re-armed on every read and write, a measurable share of a request here.
  const sweep = setInterval(() => {
    const idleSince = Date.now() - server.keepAliveTimeout
    for (const connection of connections) connection.closeIfIdleSince(idleSince)
  }, SWEEP_MS)
  sweep.unref()
  return {
    close() {
      closing = true
      clearInterval(sweep)
      for (const connection of connections) connection.closeWhenIdle()
    },
  }
}

/**
 * Connections with answers waiting to be written. Answers go out once per turn of the event
 * loop, after every ready socket has been read: the client then wakes once for a burst of
 * answers instead of once per answer, and on a small machine those wake-ups cost more than the
 * answers (benchmark 2 answered 25-60% more requests per second this way).
 */
const unflushed = new Set<LaneConnection>()

function flushAll(): void {
  for (const connection of unflushed) connection.flush()
  unflushed.clear()
}

class LaneConnection {
  #buffer: Buffer | undefined
  /** Answers not yet written (see `unflushed`). */
  #out = ''
  #busy = false
  #closing = false
  /** The client half-closed: answer what arrived complete, then close. */
  #ended = false
  #done = false
  /** Why reading is paused: the client does not read its answers, or sends faster than they are made. */
  #waitingForDrain = false
  #backlogged = false
  /** When the connection last received a request or sent an answer (Date.now()). */
  #lastActive = Date.now()
  /** Wakes `#serve` when the socket drains or closes. */
  #wake: (() => void) | undefined

  constructor(
    private readonly socket: Socket,
    private readonly server: Server,
    private readonly handler: LaneHandler,
    private readonly bodyLimit: number,
    private readonly handOver: (socket: Socket) => void,
    private readonly forget: () => void,
  ) {
    socket.setNoDelay(true)
    socket.on('data', this.#onData)
    socket.on('error', this.#onError)
    socket.on('close', this.#onClose)
    socket.on('end', this.#onEnd)
  }

  /**
   * Closes the connection if it has been idle since `time` (one waiting for a slow answer is not
   * idle), or if its client has not taken any of its answers since then.
   */
  closeIfIdleSince(time: number): void {
    if (this.#lastActive >= time) return
    if ((!this.#busy && !this.#out) || this.#waitingForDrain) this.socket.destroy()
  }

  /** Writes the answers waiting for this connection; reading pauses while the client lags behind. */
  flush(): void {
    const text = this.#out
    if (!text) return
    this.#out = ''
    const socket = this.socket
    if (socket.destroyed) return
    const taken = socket.write(text)
    if (taken) {
      this.#lastActive = Date.now()
    } else if (!this.#waitingForDrain) {
      this.#waitingForDrain = true
      this.#updateReading()
      socket.once('drain', () => {
        this.#waitingForDrain = false
        this.#lastActive = Date.now()
        this.#updateReading()
        this.#wakeUp()
      })
    }
  }

  #wakeUp(): void {
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }

  #updateReading(): void {
    if (this.#done) return
    const pause = this.#waitingForDrain || this.#backlogged
    if (pause && !this.socket.isPaused()) this.socket.pause()
    else if (!pause && this.socket.isPaused()) this.socket.resume()
  }

  /** Ends the connection after the answers it is owed: now if idle, else after the current one. */
  closeWhenIdle(): void {
    this.#closing = true
    if (!this.#busy) this.#end()
  }

  #end(): void {
    this.flush()
    // destroySoon: the answers written so far still reach the client, then the socket closes.
    this.socket.destroySoon()
  }

  #onData = (chunk: Buffer): void => {
    this.#lastActive = Date.now()
    this.#buffer = this.#buffer ? Buffer.concat([this.#buffer, chunk]) : chunk
    // The handler never rejects; anything else failing here is a bug in the lane, and costs this
    // connection, not the server.
    if (!this.#busy) this.#serve().catch(() => this.socket.destroy())
    else if (this.#buffer.length > MAX_BACKLOG_BYTES && !this.#backlogged) {
      // Requests pile up behind a slow answer: read no more until they are answered.
      this.#backlogged = true
      this.#updateReading()
    }
  }

  #onError = (): void => {
    this.socket.destroy()
  }

  #onEnd = (): void => {
    this.#ended = true
    if (!this.#busy) this.#end()
  }

  #onClose = (): void => {
    this.#done = true
    // Nobody will read the answers: what is still buffered is dropped unanswered.
    this.#buffer = undefined
    this.#out = ''
    this.forget()
    this.#wakeUp()
  }

  /**
   * Answers the complete requests in the buffer in order, one after the other; each answer joins
   * the connection's output as soon as it is ready, and the output leaves at the end of the turn.
   * A turn answers a bounded number of requests; a socket that does not take its answers is
   * waited for before the next one is made; a client gone away stops it.
   */
  async #serve(): Promise<void> {
    this.#busy = true
    let answeredThisTurn = 0
    while (this.#buffer && this.#buffer.length > 0) {
      if (this.#waitingForDrain || answeredThisTurn >= MAX_ANSWERS_PER_TURN || this.#out.length >= MAX_OUTPUT_PER_TURN || turnBudgetSpent()) {
        this.flush()
        await (this.#waitingForDrain ? new Promise<void>((resolve) => (this.#wake = resolve)) : new Promise<void>((resolve) => setImmediate(resolve)))
        if (this.#done) return
        answeredThisTurn = 0
        continue
      }
      const started = performance.now()
      const parsed = parse(this.#buffer, this.bodyLimit)
      const answer = parsed === 'decline' ? undefined : this.handler(parsed.request)
      if (parsed === 'decline' || answer === undefined) {
        // After the client's FIN a socket cannot be handed over (its bytes cannot be put back),
        // and node:http would not answer either: what remains is dropped.
        if (!this.#ended) return this.#handOver()
        this.#buffer = undefined
        break
      }
      this.#buffer = parsed.length === this.#buffer.length ? undefined : this.#buffer.subarray(parsed.length)
      // An answer known at once (a read) joins the output without a trip through the microtask queue.
      const response = answer instanceof Promise ? await answer : answer
      if (this.#done) return
      if (!this.#out) {
        if (unflushed.size === 0) setImmediate(flushAll)
        unflushed.add(this)
      }
      this.#out += serialize(response, this.server.keepAliveTimeout)
      answeredThisTurn++
      // An answer that waited for a promise was made in another turn: only synchronous work counts.
      if (!(answer instanceof Promise)) spendInTurn(performance.now() - started)
    }
    this.#busy = false
    if (this.#backlogged) {
      this.#backlogged = false
      this.#updateReading()
    }
    if (this.#closing || this.#ended) this.#end()
  }

  /** From here on node:http owns the connection, starting with the bytes the lane did not take. */
  #handOver(): void {
    const socket = this.socket
    // The lane's answers first: node:http may answer the next request within this turn.
    this.flush()
    this.#done = true
    this.forget()
    socket.pause()
    socket.off('data', this.#onData)
    socket.off('error', this.#onError)
    socket.off('close', this.#onClose)
    socket.off('end', this.#onEnd)
    if (this.#buffer) socket.unshift(this.#buffer)
    this.#buffer = undefined
    this.handOver(socket)
    socket.resume()
  }
}

/**
 * Parses the request at the start of the buffer, or declines: incomplete, unusual or invalid
 * requests are all node:http's to answer.
 */
function parse(buffer: Buffer, bodyLimit: number): Parsed {
  const end = buffer.indexOf(HEAD_END)
  if (end < 0 || end > MAX_HEAD_BYTES) return 'decline'
  // latin1 keeps one character per byte, so string offsets are byte offsets.
  const text = buffer.toString('latin1', 0, end)
  let lineEnd = text.indexOf('\r\n')
  if (lineEnd < 0) lineEnd = end
  const start = REQUEST_LINE.exec(text.slice(0, lineEnd))
  if (!start) return 'decline'
  // One pass checks every header line as node's parser would: a token, a colon, a value
  // without control characters (tab aside), CRLF.
  HEADER_LINES.lastIndex = Math.min(lineEnd + 2, end)
  if (!HEADER_LINES.test(text) || HEADER_LINES.lastIndex !== end) return 'decline'
  // Every field present from the start: one object shape for every request.
  const headers: LaneHeaders = { host: undefined, authorization: undefined, 'x-correlation-id': undefined, 'content-type': undefined, 'content-length': undefined, connection: undefined }
  for (let pos = lineEnd + 2; pos < end; pos = lineEnd + 2) {
    lineEnd = text.indexOf('\r\n', pos)
    if (lineEnd < 0) lineEnd = end
    const colon = text.indexOf(':', pos)
    // Only names of the lengths the lane reads are looked at: the others need no slicing.
    if (!READ_LENGTHS.has(colon - pos)) continue
    const key = READ_HEADERS.get(text.slice(pos, colon).toLowerCase())
    if (key === undefined) continue
    // node:http joins or drops repeated headers by rules of its own: a repeated one, like a
    // header the lane does not support, sends the request there.
    if (key === 'decline' || headers[key] !== undefined) return 'decline'
    headers[key] = trimSpaces(text, colon + 1, lineEnd)
  }
  if (headers.host === undefined) return 'decline'
  if (headers.connection !== undefined && headers.connection.toLowerCase() !== 'keep-alive') return 'decline'
  const method = start[1]!
  const lengthHeader = headers['content-length']
  if (lengthHeader !== undefined && !DIGITS.test(lengthHeader)) return 'decline'
  const bodyLength = lengthHeader === undefined ? 0 : Number(lengthHeader)
  if (bodyLength > 0 && (!BODY_METHODS.has(method) || !JSON_TYPE.test(headers['content-type'] ?? '') || bodyLength > bodyLimit)) return 'decline'
  const length = end + 4 + bodyLength
  if (buffer.length < length) return 'decline'
  const body = bodyLength > 0 ? buffer.toString('utf8', end + 4, length) : ''
  return { request: { method, url: start[2]!, headers, body }, length }
}

/** `text.slice(from, to)` without the spaces and tabs around it (a header value's OWS). */
function trimSpaces(text: string, from: number, to: number): string {
  while (from < to && (text.charCodeAt(from) === 32 || text.charCodeAt(from) === 9)) from++
  while (to > from && (text.charCodeAt(to - 1) === 32 || text.charCodeAt(to - 1) === 9)) to--
  return text.slice(from, to)
}

let dateSecond = -1
let dateText = ''

/** The HTTP date, formatted once per second as node:http does. */
function httpDate(): string {
  const now = Date.now()
  const second = Math.floor(now / 1000)
  if (second !== dateSecond) {
    dateSecond = second
    dateText = new Date(now).toUTCString()
  }
  return dateText
}

/** The response as node:http writes fastify's replies: the same headers, in the same order. */
function serialize(response: LaneResponse, keepAliveTimeout: number): string {
  return (
    `HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? 'unknown'}\r\n${response.headers}` +
    `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(response.body)}\r\n` +
    `Date: ${httpDate()}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=${Math.floor(keepAliveTimeout / 1000)}\r\n\r\n` +
    response.body
  )
}
