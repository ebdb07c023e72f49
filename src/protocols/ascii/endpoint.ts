import { createHmac, randomBytes } from 'node:crypto'
import { createSocket } from 'node:dgram'
import type { Socket as UdpSocket } from 'node:dgram'
import { createServer, isIP } from 'node:net'
import type { AddressInfo, BlockList, Server, Socket } from 'node:net'
import type { Logger } from 'pino'
import { listenOnce } from '../adapter-kit.js'
import { UDP_REPLY_FACTOR } from '../../definition/ascii-schema.js'
import type { AsciiTransport } from '../../definition/ascii-schema.js'
import type { LineResult } from './instrument.js'

/**
 * Where an `ascii` adapter listens: a TCP listener whose clients send lines, or a UDP socket whose
 * datagrams hold lines. Both cut the input at the terminator's last character (so `\n` and `\r\n`
 * both end a line whatever the terminator) and end every reply with the terminator.
 *
 * A TCP client is answered in order, one line after the other; replies to the lines of one read are
 * written together. A client that does not read its replies is not read either once the socket's
 * buffer is full (and once a thousand lines wait for an asynchronous write), so its memory stays
 * bounded. Input that is not text (control bytes other than tab, CR, LF and the terminator's), or a
 * line longer than `maxLineLength` bytes, closes that client; the reason goes to `dropped`. A TCP
 * client that sent no line for `idleTimeoutMs` is closed by a sweep (as the Modbus listener does);
 * at `maxConnections`, or at `maxConnectionsPerAddress` for its address, a new client makes room by
 * closing the one idle the longest that is not waiting for an answer, and is refused only when
 * every one is. A full listener therefore never locks clients out for as long as others hold it.
 *
 * UDP senders cannot be told from forged ones, so an endpoint never answers an unproven sender
 * with more than the larger of `udp.replyLimit` bytes and UDP_REPLY_FACTOR times its datagram:
 * a forged datagram cannot make Mimic a strong amplifier. A sender is proven when the operator
 * lists it (`udp.trusted`), or for PROOF_MS after it echoed the token only it could have received
 * (`SYST:COMM:UDP:TOK?`, then `SYST:COMM:UDP:TOK <token>`, see docs/ascii.md). Datagrams wait for
 * their answers in a queue per sender, bounded per address and in all; more are dropped. After
 * close nothing is sent, however late a delayed answer becomes due.
 *
 * @example
 * const endpoint = new TcpEndpoint({ host: '127.0.0.1', port: 0, logger, handler })
 * await endpoint.listen() // the effective port
 * await endpoint.close()
 */

/** What an endpoint serves. */
export interface LineHandler {
  /** The reply to one line (without terminator), or null; `client` is `address:port`. */
  line(text: string, client: string): LineResult
  /** Ends each reply. */
  readonly terminator: string
  readonly maxLineLength: number
  readonly maxConnections: number
  readonly maxConnectionsPerAddress: number
  /** TCP clients silent this long are closed; 0: never. */
  readonly idleTimeoutMs: number
  readonly udp: UdpRules
  /** Milliseconds before each reply, read for every reply. */
  replyDelayMs(): number
  /** A client closed (or a datagram ignored) for bad input, idling or room, or a client refused, and why. */
  dropped(kind: DropKind, reason: string, client: string): void
  /** An answer to an unproven UDP sender was larger than it may be and was not sent. */
  oversized(client: string, bytes: number, limit: number): void
}

/** What limits the answers and the queue of a UDP endpoint (see the module comment). */
export interface UdpRules {
  /** Bytes an unproven sender's answer may have, when more than UDP_REPLY_FACTOR times its datagram. */
  readonly replyLimit: number
  /** Senders whose answers are not limited; null: none. */
  readonly trusted: BlockList | null
  readonly queuePerAddress: number
  readonly queue: number
}

/**
 * Why a client was dropped: input that is not text, a line too long, no room for it (refused),
 * idle past the idle timeout, closed to make room for a new one (evicted), or a datagram beyond
 * the UDP queue's bound.
 */
export type DropKind = 'binary' | 'overlong' | 'refused' | 'idle' | 'evicted' | 'queue'

/** A socket an endpoint listens on, for the server's list of listeners. */
export interface EndpointListener {
  transport: 'tcp' | 'udp'
  port: number
  /** e.g. 'VXI-11 port mapper'; omitted for the one socket of a TCP or UDP endpoint. */
  role?: string
}

/** One open endpoint: a TCP listener, a UDP socket, a serial line (serial.ts) or a VXI-11 server (vxi11.ts). */
export interface Endpoint {
  readonly transport: AsciiTransport
  readonly host: string
  readonly port: number
  /** Clients connected (TCP) or heard from (UDP). */
  readonly clients: number
  /** Datagrams waiting for their answers (UDP; 0 for TCP). */
  readonly waiting: number
  /** The sockets it listens on, when not just one of `transport` on `port` (none for a serial line). */
  listeners?(): EndpointListener[]
  listen(): Promise<number>
  close(): Promise<void>
}

/** Lines a busy TCP client may have waiting before reading from it stops. */
const MAX_WAITING_LINES = 1000
/** Distinct UDP peers remembered for the `clients` count. */
const MAX_UDP_PEERS = 4096
/** How long an echoed token proves a sender. */
const PROOF_MS = 10 * 60_000
/** Proven senders remembered at once; the oldest proof is forgotten first. */
const MAX_PROVEN = 4096
/** The sweep of idle TCP clients runs at least this often, and at most this often. */
const MAX_SWEEP_MS = 1000
const MIN_SWEEP_MS = 50
/** `SYSTem:COMMunicate:UDP:TOKen?` and `SYSTem:COMMunicate:UDP:TOKen <token>`, in long or short form, alone on a line. */
const TOKEN_LINE = /^\s*:?SYST(?:EM)?:COMM(?:UNICATE)?:UDP:TOK(?:EN)?(?:\s*(\?)|\s+"?([0-9A-Fa-f]{1,64})"?)\s*$/i

/** Bytes that may appear in a line: tab, LF, CR and printable text (UTF-8 included), plus the terminator's. */
function allowedBytes(terminator: string): Uint8Array {
  const allowed = new Uint8Array(256).fill(1)
  for (let b = 0; b < 0x20; b++) allowed[b] = 0
  allowed[0x7f] = 0
  for (const b of [0x09, 0x0a, 0x0d, ...Buffer.from(terminator, 'latin1')]) allowed[b] = 1
  return allowed
}

function badByte(data: Buffer, allowed: Uint8Array): number {
  for (let i = 0; i < data.length; i++) if (allowed[data[i]!] === 0) return i
  return -1
}

/**
 * A TCP listener of one adapter (see the module comment).
 *
 * @example
 * const endpoint = new TcpEndpoint({ host: '127.0.0.1', port: 5025, logger, handler })
 * await endpoint.listen()
 */
export class TcpEndpoint implements Endpoint {
  readonly transport = 'tcp'
  readonly host: string
  #port: number
  readonly #server: Server
  readonly #connections = new Set<LineConnection>()
  readonly #byAddress = new Map<string, number>()
  readonly #handler: LineHandler
  #sweep: NodeJS.Timeout | null = null
  #listening: Promise<number> | null = null
  #closing: Promise<void> | null = null

  constructor(options: { host: string; port: number; logger: Logger; handler: LineHandler }) {
    const { handler, logger } = options
    this.host = options.host
    this.#port = options.port
    this.#server = createServer({ noDelay: true })
    const allowed = allowedBytes(handler.terminator)
    this.#handler = handler
    this.#server.on('connection', (socket) => {
      const address = socket.remoteAddress ?? '?'
      const client = `${address}:${socket.remotePort ?? '?'}`
      if (this.#closing !== null) {
        socket.destroy()
        return
      }
      const perAddress = Math.min(handler.maxConnectionsPerAddress, handler.maxConnections)
      if ((this.#byAddress.get(address) ?? 0) >= perAddress && !this.#makeRoom(address)) {
        socket.destroy()
        handler.dropped('refused', `refused: ${perAddress} clients of ${address} are connected and all wait for answers (max_connections_per_address)`, client)
        return
      }
      if (this.#connections.size >= handler.maxConnections && !this.#makeRoom(null)) {
        socket.destroy()
        handler.dropped('refused', `refused: ${handler.maxConnections} clients are connected and all wait for answers (max_connections)`, client)
        return
      }
      const connection = new LineConnection({ socket, client, address, handler, allowed, onClose: (c) => this.#onClosed(c) })
      this.#connections.add(connection)
      this.#byAddress.set(address, (this.#byAddress.get(address) ?? 0) + 1)
      if (this.#sweep === null && handler.idleTimeoutMs > 0) {
        const every = Math.min(MAX_SWEEP_MS, Math.max(MIN_SWEEP_MS, Math.floor(handler.idleTimeoutMs / 4)))
        this.#sweep = setInterval(() => this.#closeIdle(), every)
        // Clients keep the process alive by themselves; the sweep must not.
        this.#sweep.unref()
      }
    })
    this.#server.on('error', (error) => logger.warn({ err: error }, 'ascii listener error'))
  }

  get port(): number {
    return this.#port
  }

  get clients(): number {
    return this.#connections.size
  }

  get waiting(): number {
    return 0
  }

  listen(): Promise<number> {
    const server = this.#server
    this.#listening ??= listenOnce(
      server,
      () => server.listen({ host: this.host, port: this.#port, exclusive: true }),
      () => (this.#port = (server.address() as AddressInfo).port),
    )
    return this.#listening
  }

  /**
   * Closes the client idle the longest (of `address`, or of any address when null) that is not
   * waiting for an answer; false when there is none.
   */
  #makeRoom(address: string | null): boolean {
    let oldest: LineConnection | null = null
    for (const connection of this.#connections) {
      if (connection.answering || (address !== null && connection.address !== address)) continue
      if (oldest === null || connection.lastLineAt < oldest.lastLineAt) oldest = connection
    }
    if (oldest === null) return false
    const limit = address === null ? 'max_connections' : 'max_connections_per_address'
    this.#handler.dropped('evicted', `closed after ${quietSeconds(oldest)} s without a line to make room for a new client (${limit})`, oldest.client)
    oldest.destroy()
    return true
  }

  #closeIdle(): void {
    const before = Date.now() - this.#handler.idleTimeoutMs
    // Closing removes a connection from the set at once, which iteration allows.
    for (const connection of this.#connections) {
      if (connection.lastLineAt > before || connection.answering) continue
      this.#handler.dropped('idle', `closed after ${quietSeconds(connection)} s without a line (idle_timeout)`, connection.client)
      connection.destroy()
    }
  }

  #onClosed(connection: LineConnection): void {
    if (!this.#connections.delete(connection)) return
    const left = (this.#byAddress.get(connection.address) ?? 1) - 1
    if (left > 0) this.#byAddress.set(connection.address, left)
    else this.#byAddress.delete(connection.address)
    if (this.#connections.size === 0) this.#stopSweep()
  }

  #stopSweep(): void {
    if (this.#sweep !== null) clearInterval(this.#sweep)
    this.#sweep = null
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#stopSweep()
      for (const connection of [...this.#connections]) connection.destroy()
      this.#connections.clear()
      this.#byAddress.clear()
      if (this.#listening !== null) await this.#listening.catch(() => undefined)
      if (this.#server.listening) await new Promise<void>((resolve) => this.#server.close(() => resolve()))
    })()
    return this.#closing
  }
}

function quietSeconds(connection: LineConnection): number {
  return Math.round((Date.now() - connection.lastLineAt) / 1000)
}

/** One TCP client: cuts lines, answers them in order, applies backpressure. */
class LineConnection {
  readonly client: string
  readonly address: string
  /** When the last complete line arrived (or the client connected): what idling is measured from. */
  lastLineAt = Date.now()
  readonly #socket: Socket
  readonly #handler: LineHandler
  readonly #allowed: Uint8Array
  readonly #separator: number
  readonly #onClose: (c: LineConnection) => void
  #partial: Buffer | null = null
  #lines: string[] = []
  #head = 0
  /** Waiting for an asynchronous reply or a reply delay. */
  #busy = false
  #closed = false
  #pausedForLines = false
  #pausedForDrain = false

  constructor(options: { socket: Socket; client: string; address: string; handler: LineHandler; allowed: Uint8Array; onClose: (c: LineConnection) => void }) {
    this.#socket = options.socket
    this.client = options.client
    this.address = options.address
    this.#handler = options.handler
    this.#allowed = options.allowed
    this.#onClose = options.onClose
    this.#separator = options.handler.terminator.charCodeAt(options.handler.terminator.length - 1)
    this.#socket.on('data', (chunk: Buffer) => this.#onData(chunk))
    this.#socket.on('drain', () => {
      this.#pausedForDrain = false
      this.#resume()
    })
    this.#socket.on('error', () => this.destroy())
    this.#socket.on('close', () => this.destroy())
  }

  /** Whether a line of this client waits for its answer (or lines wait to be run): such a client is not idle. */
  get answering(): boolean {
    return this.#busy || this.#head < this.#lines.length
  }

  destroy(): void {
    if (this.#closed) return
    this.#closed = true
    this.#lines = []
    this.#partial = null
    this.#socket.destroy()
    this.#onClose(this)
  }

  #drop(kind: DropKind, reason: string): void {
    if (this.#closed) return
    this.#handler.dropped(kind, reason, this.client)
    this.destroy()
  }

  #onData(chunk: Buffer): void {
    if (this.#closed) return
    const bad = badByte(chunk, this.#allowed)
    if (bad !== -1) return this.#drop('binary', `binary data: byte 0x${chunk[bad]!.toString(16).padStart(2, '0')} is not text`)
    const data = this.#partial === null ? chunk : Buffer.concat([this.#partial, chunk])
    let start = 0
    for (;;) {
      const end = data.indexOf(this.#separator, start)
      if (end === -1) break
      if (end - start > this.#handler.maxLineLength)
        return this.#drop('overlong', `a line of ${end - start} bytes is longer than max_line_length (${this.#handler.maxLineLength})`)
      this.#lines.push(data.toString('utf8', start, end))
      this.lastLineAt = Date.now()
      start = end + 1
    }
    const rest = data.length - start
    if (rest > this.#handler.maxLineLength) {
      return this.#drop('overlong', `${rest} bytes without a terminator: longer than max_line_length (${this.#handler.maxLineLength})`)
    }
    // A copy, so that a small remainder does not keep a large chunk alive.
    this.#partial = rest === 0 ? null : Buffer.from(data.subarray(start))
    this.#pump()
  }

  #pump(): void {
    if (this.#busy || this.#closed) return
    let out = ''
    while (this.#head < this.#lines.length) {
      const line = this.#lines[this.#head++]!
      const result = this.#handler.line(line, this.client)
      if (result === null) continue
      const delay = this.#handler.replyDelayMs()
      if (!(result instanceof Promise) && delay <= 0) {
        out += result + this.#handler.terminator
        continue
      }
      this.#write(out)
      out = ''
      this.#busy = true
      void this.#later(result, delay)
      break
    }
    this.#write(out)
    if (this.#head === this.#lines.length) {
      this.#lines = []
      this.#head = 0
    }
    const waiting = this.#lines.length - this.#head
    if (waiting > MAX_WAITING_LINES && !this.#pausedForLines) {
      this.#pausedForLines = true
      this.#socket.pause()
    } else if (waiting <= MAX_WAITING_LINES && this.#pausedForLines) {
      this.#pausedForLines = false
      this.#resume()
    }
  }

  async #later(result: LineResult, delay: number): Promise<void> {
    let reply: string | null = null
    try {
      reply = await result
    } catch {
      reply = null
    }
    if (reply !== null && delay > 0) await new Promise((resolve) => setTimeout(resolve, delay))
    if (this.#closed) return
    if (reply !== null) this.#write(reply + this.#handler.terminator)
    this.#busy = false
    this.#pump()
  }

  #write(text: string): void {
    if (text === '' || this.#closed) return
    if (!this.#socket.write(text) && !this.#pausedForDrain) {
      this.#pausedForDrain = true
      this.#socket.pause()
    }
  }

  #resume(): void {
    if (!this.#pausedForDrain && !this.#pausedForLines && !this.#closed) this.#socket.resume()
  }
}

/**
 * A UDP socket of one adapter: each datagram holds one or more lines, and the replies to them go
 * back to the sender in one datagram. The datagrams of one sender are handled one after the other;
 * senders do not wait for each other, so one sender's reply delays do not hold up the rest.
 * Answers are limited for unproven senders, queues are bounded (see the module comment).
 *
 * @example
 * const endpoint = new UdpEndpoint({ host: '127.0.0.1', port: 0, logger, handler })
 * await endpoint.listen()
 */
export class UdpEndpoint implements Endpoint {
  readonly transport = 'udp'
  readonly host: string
  #port: number
  readonly #socket: UdpSocket
  readonly #handler: LineHandler
  readonly #logger: Logger
  readonly #allowed: Uint8Array
  readonly #peers = new Set<string>()
  /** Each sender's (address:port) datagrams, handled in order. */
  readonly #queues = new Map<string, { chain: Promise<void>; waiting: number }>()
  readonly #waitingByAddress = new Map<string, number>()
  #waiting = 0
  /** Senders (address:port) that echoed their token, with when the proof ends, oldest first. */
  readonly #proven = new Map<string, number>()
  /** Signs the tokens: a sender's token is known only to whoever receives what is sent to it. */
  readonly #secret = randomBytes(32)
  #listening: Promise<number> | null = null
  #closing: Promise<void> | null = null

  constructor(options: { host: string; port: number; logger: Logger; handler: LineHandler }) {
    this.host = options.host
    this.#port = options.port
    this.#handler = options.handler
    this.#logger = options.logger
    this.#allowed = allowedBytes(options.handler.terminator)
    this.#socket = createSocket({ type: options.host.includes(':') ? 'udp6' : 'udp4' })
    this.#socket.on('message', (message, remote) => this.#receive(message, remote.address, remote.port))
    this.#socket.on('error', (error) => options.logger.warn({ err: error }, 'ascii udp socket error'))
  }

  get port(): number {
    return this.#port
  }

  get clients(): number {
    return this.#peers.size
  }

  /** Datagrams waiting for their answers, all senders together. */
  get waiting(): number {
    return this.#waiting
  }

  #receive(message: Buffer, address: string, port: number): void {
    if (this.#closing !== null) return
    const client = `${address}:${port}`
    const rules = this.#handler.udp
    const ofAddress = this.#waitingByAddress.get(address) ?? 0
    if (ofAddress >= rules.queuePerAddress || this.#waiting >= rules.queue) {
      const bound = ofAddress >= rules.queuePerAddress ? `${rules.queuePerAddress} of ${address} (udp_queue_per_address)` : `${rules.queue} (udp_queue)`
      this.#handler.dropped('queue', `datagram dropped: ${bound} datagrams wait for their answers`, client)
      return
    }
    if (this.#peers.size < MAX_UDP_PEERS) this.#peers.add(client)
    this.#waiting++
    this.#waitingByAddress.set(address, ofAddress + 1)
    let queue = this.#queues.get(client)
    if (queue === undefined) this.#queues.set(client, (queue = { chain: Promise.resolve(), waiting: 0 }))
    queue.waiting++
    const own = queue
    queue.chain = queue.chain
      .then(() => this.#datagram(message, address, port, client))
      .catch((error: unknown) => this.#logger.warn({ err: error, client }, 'ascii udp datagram failed'))
      .finally(() => {
        this.#waiting--
        const left = (this.#waitingByAddress.get(address) ?? 1) - 1
        if (left > 0) this.#waitingByAddress.set(address, left)
        else this.#waitingByAddress.delete(address)
        if (--own.waiting === 0 && this.#queues.get(client) === own) this.#queues.delete(client)
      })
  }

  async #datagram(message: Buffer, address: string, port: number, client: string): Promise<void> {
    if (this.#closing !== null) return
    const bad = badByte(message, this.#allowed)
    if (bad !== -1) return this.#handler.dropped('binary', `binary data: byte 0x${message[bad]!.toString(16).padStart(2, '0')} is not text`, client)
    if (message.length > this.#handler.maxLineLength) {
      return this.#handler.dropped('overlong', `a datagram of ${message.length} bytes is longer than max_line_length (${this.#handler.maxLineLength})`, client)
    }
    const terminator = this.#handler.terminator
    const separator = terminator[terminator.length - 1]!
    let out = ''
    for (const line of message.toString('utf8').split(separator)) {
      if (line.trim() === '') continue
      const token = TOKEN_LINE.exec(line)
      if (token !== null) {
        if (token[1] === '?') out += this.#token(client) + terminator
        else this.#prove(client, token[2]!)
        continue
      }
      let reply: string | null
      try {
        reply = await this.#handler.line(line, client)
      } catch {
        reply = null
      }
      if (reply !== null) out += reply + terminator
    }
    if (out === '' || this.#closing !== null) return
    const bytes = Buffer.byteLength(out)
    const limit = Math.max(this.#handler.udp.replyLimit, UDP_REPLY_FACTOR * message.length)
    if (bytes > limit && !this.#isProven(address, client)) return this.#handler.oversized(client, bytes, limit)
    const delay = this.#handler.replyDelayMs()
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay))
    // Stopped, reloaded or replaced by a snapshot while the answer waited: the socket is gone.
    if (this.#closing !== null) return
    await new Promise<void>((resolve) => {
      try {
        this.#socket.send(out, port, address, (error) => {
          if (error) this.#logger.debug({ err: error, client }, 'ascii udp answer not sent')
          resolve()
        })
      } catch (error) {
        this.#logger.debug({ err: error, client }, 'ascii udp answer not sent')
        resolve()
      }
    })
  }

  /** The token of a sender: the same for every ask, as long as the endpoint runs. */
  #token(client: string): string {
    return createHmac('sha256', this.#secret).update(client).digest('hex').slice(0, 16)
  }

  #prove(client: string, token: string): void {
    if (token.toLowerCase() !== this.#token(client)) return
    this.#proven.delete(client)
    this.#proven.set(client, Date.now() + PROOF_MS)
    if (this.#proven.size > MAX_PROVEN) this.#proven.delete(this.#proven.keys().next().value!)
  }

  #isProven(address: string, client: string): boolean {
    const trusted = this.#handler.udp.trusted
    if (trusted !== null && trusted.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4')) return true
    const until = this.#proven.get(client)
    if (until === undefined) return false
    if (until > Date.now()) return true
    this.#proven.delete(client)
    return false
  }

  listen(): Promise<number> {
    const socket = this.#socket
    this.#listening ??= listenOnce(
      socket,
      () => socket.bind({ address: this.host, port: this.#port, exclusive: true }),
      () => (this.#port = socket.address().port),
    )
    return this.#listening
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      if (this.#listening !== null) await this.#listening.catch(() => undefined)
      await new Promise<void>((resolve) => {
        try {
          this.#socket.close(() => resolve())
        } catch {
          // A socket whose bind failed is closed already.
          resolve()
        }
      })
    })()
    return this.#closing
  }
}
