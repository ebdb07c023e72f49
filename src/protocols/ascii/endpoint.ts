import { createSocket } from 'node:dgram'
import type { Socket as UdpSocket } from 'node:dgram'
import { createServer } from 'node:net'
import type { Server, Socket } from 'node:net'
import type { Logger } from 'pino'
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
 * line longer than `maxLineLength` bytes, closes that client; the reason goes to `dropped`.
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
  /** Milliseconds before each reply, read for every reply. */
  replyDelayMs(): number
  /** A client closed (or a datagram ignored) for bad input, or a client refused, and why. */
  dropped(kind: DropKind, reason: string, client: string): void
}

/** Why a client was dropped: input that is not text, a line too long, no room for it. */
export type DropKind = 'binary' | 'overlong' | 'refused'

/** One open endpoint. */
export interface Endpoint {
  readonly transport: 'tcp' | 'udp'
  readonly host: string
  readonly port: number
  /** Clients connected (TCP) or heard from (UDP). */
  readonly clients: number
  listen(): Promise<number>
  close(): Promise<void>
}

/** Lines a busy TCP client may have waiting before reading from it stops. */
const MAX_WAITING_LINES = 1000
/** Distinct UDP peers remembered for the `clients` count. */
const MAX_UDP_PEERS = 4096

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
  #listening: Promise<number> | null = null
  #closing: Promise<void> | null = null

  constructor(options: { host: string; port: number; logger: Logger; handler: LineHandler }) {
    const { handler, logger } = options
    this.host = options.host
    this.#port = options.port
    this.#server = createServer({ noDelay: true })
    const allowed = allowedBytes(handler.terminator)
    this.#server.on('connection', (socket) => {
      const client = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`
      if (this.#closing !== null) {
        socket.destroy()
        return
      }
      if (this.#connections.size >= handler.maxConnections) {
        socket.destroy()
        handler.dropped('refused', `refused: ${handler.maxConnections} clients are connected (max_connections)`, client)
        return
      }
      const connection = new LineConnection({ socket, client, handler, allowed, onClose: (c) => this.#connections.delete(c) })
      this.#connections.add(connection)
    })
    this.#server.on('error', (error) => logger.warn({ err: error }, 'ascii listener error'))
  }

  get port(): number {
    return this.#port
  }

  get clients(): number {
    return this.#connections.size
  }

  listen(): Promise<number> {
    this.#listening ??= new Promise<number>((resolve, reject) => {
      const server = this.#server
      const onError = (error: Error): void => {
        server.off('listening', onListening)
        reject(error)
      }
      const onListening = (): void => {
        server.off('error', onError)
        const address = server.address()
        if (address !== null && typeof address === 'object') this.#port = address.port
        resolve(this.#port)
      }
      server.once('error', onError)
      server.once('listening', onListening)
      server.listen({ host: this.host, port: this.#port, exclusive: true })
    })
    return this.#listening
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const connection of this.#connections) connection.destroy()
      this.#connections.clear()
      if (this.#listening !== null) await this.#listening.catch(() => undefined)
      if (this.#server.listening) await new Promise<void>((resolve) => this.#server.close(() => resolve()))
    })()
    return this.#closing
  }
}

/** One TCP client: cuts lines, answers them in order, applies backpressure. */
class LineConnection {
  readonly #socket: Socket
  readonly #client: string
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

  constructor(options: { socket: Socket; client: string; handler: LineHandler; allowed: Uint8Array; onClose: (c: LineConnection) => void }) {
    this.#socket = options.socket
    this.#client = options.client
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
    this.#handler.dropped(kind, reason, this.#client)
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
      const result = this.#handler.line(line, this.#client)
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
 * back to the sender in one datagram. Datagrams are handled one after the other.
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
  readonly #allowed: Uint8Array
  readonly #peers = new Set<string>()
  #chain: Promise<void> = Promise.resolve()
  #listening: Promise<number> | null = null
  #closing: Promise<void> | null = null

  constructor(options: { host: string; port: number; logger: Logger; handler: LineHandler }) {
    this.host = options.host
    this.#port = options.port
    this.#handler = options.handler
    this.#allowed = allowedBytes(options.handler.terminator)
    this.#socket = createSocket({ type: options.host.includes(':') ? 'udp6' : 'udp4' })
    this.#socket.on('message', (message, remote) => {
      const client = `${remote.address}:${remote.port}`
      if (this.#peers.size < MAX_UDP_PEERS) this.#peers.add(client)
      this.#chain = this.#chain.then(() => this.#datagram(message, remote.address, remote.port, client))
    })
    this.#socket.on('error', (error) => options.logger.warn({ err: error }, 'ascii udp socket error'))
  }

  get port(): number {
    return this.#port
  }

  get clients(): number {
    return this.#peers.size
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
      let reply: string | null
      try {
        reply = await this.#handler.line(line, client)
      } catch {
        reply = null
      }
      if (reply !== null) out += reply + terminator
    }
    if (out === '' || this.#closing !== null) return
    const delay = this.#handler.replyDelayMs()
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay))
    this.#socket.send(out, port, address)
  }

  listen(): Promise<number> {
    this.#listening ??= new Promise<number>((resolve, reject) => {
      const onError = (error: Error): void => reject(error)
      this.#socket.once('error', onError)
      this.#socket.bind({ address: this.host, port: this.#port, exclusive: true }, () => {
        this.#socket.off('error', onError)
        this.#port = this.#socket.address().port
        resolve(this.#port)
      })
    })
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
