import { createServer } from 'node:net'
import type { AddressInfo, Server, Socket } from 'node:net'
import type { Logger } from 'pino'
import { listenOnce } from '../adapter-kit.js'
import type { Endpoint, EndpointListener, LineHandler } from './endpoint.js'

/**
 * The `vxi11` transport of an `ascii` adapter: what PyVISA's `TCPIP::host::INSTR` (and NI-VISA,
 * Keysight IO, python-vxi11) speak to a LAN instrument. VXI-11 is ONC RPC (RFC 5531) over TCP with
 * record marking: the client asks the port mapper (program 100000 version 2, GETPORT) where the
 * core channel (program 0x0607AF version 1) listens, then opens a link (create_link), writes
 * commands (device_write) and reads answers (device_read). The commands run through the same
 * handler as the TCP and UDP transports, so the mappings and the IEEE 488.2 commands are the same.
 *
 * Written here rather than taken from npm: no maintained VXI-11 server exists there (the packages
 * found are clients, or ONC RPC libraries without VXI-11 and unmaintained for years), and the part
 * an instrument needs is small: XDR integers and opaques, record marking, GETPORT and eight
 * procedures. The abort and interrupt channels are not served (create_link answers abort port 0,
 * create_intr_chan "operation not supported"), as many real instruments do.
 *
 * The port mapper listens on `portmapperPort` (111 by default, which needs privileges: see
 * docs/ascii-serial-vxi11.md) and answers GETPORT for the core channel only. Each endpoint has its
 * own port mapper, so two VXI-11 instruments of one server use two host addresses (127.0.0.1,
 * 127.0.0.2, ...), as two instruments on a LAN have two addresses.
 *
 * @example
 * const endpoint = new Vxi11Endpoint({ host: '127.0.0.1', port: 0, portmapperPort: 0, deviceName: 'inst0', logger, handler })
 * await endpoint.listen() // the core channel's port; endpoint.portmapperPort is the port mapper's
 */

const PMAP_PROG = 100000
const PMAP_VERS = 2
const PMAPPROC_GETPORT = 3
const PMAPPROC_DUMP = 4
const IPPROTO_TCP = 6
const CORE_PROG = 0x0607af
const CORE_VERS = 1

/** VXI-11 core procedures (VXI-11 specification, B.6). */
const PROC = {
  null: 0,
  create_link: 10,
  device_write: 11,
  device_read: 12,
  device_readstb: 13,
  device_trigger: 14,
  device_clear: 15,
  device_remote: 16,
  device_local: 17,
  device_lock: 18,
  device_unlock: 19,
  device_enable_srq: 20,
  device_docmd: 22,
  destroy_link: 23,
  create_intr_chan: 25,
  destroy_intr_chan: 26,
} as const

/** Device_ErrorCode values the server answers. */
const ERR = { none: 0, syntax: 1, notAccessible: 3, invalidLink: 4, notSupported: 8, ioTimeout: 15, abort: 23 } as const
/** device_write flag: the data ends a message. */
const FLAG_END = 0x08
/** device_read reasons: the request size was reached, the message ended. */
const REASON_REQCNT = 1
const REASON_END = 4
/** A record larger than this (a command of max_line_length plus the RPC header) closes the connection. */
const RECORD_SLACK = 4096
/** The longest a device_read waits for an answer, whatever io_timeout the client asks. */
const MAX_READ_WAIT_MS = 60_000
/** Links one connection may open. */
const MAX_LINKS_PER_CONNECTION = 16

/** RPC accept_stat values. */
const ACCEPT = { success: 0, progUnavail: 1, progMismatch: 2, procUnavail: 3, garbageArgs: 4 } as const

/** Reads XDR (RFC 4506) items from a record; throws RangeError when the record is too short. */
class XdrReader {
  #offset = 0
  constructor(readonly data: Buffer) {}

  uint(): number {
    const v = this.data.readUInt32BE(this.#offset)
    this.#offset += 4
    return v
  }

  int(): number {
    const v = this.data.readInt32BE(this.#offset)
    this.#offset += 4
    return v
  }

  opaque(): Buffer {
    const length = this.uint()
    if (this.#offset + length > this.data.length) throw new RangeError('opaque longer than the record')
    const v = this.data.subarray(this.#offset, this.#offset + length)
    this.#offset += (length + 3) & ~3
    return v
  }

  string(): string {
    return this.opaque().toString('latin1')
  }
}

/** Builds an XDR answer. */
class XdrWriter {
  readonly #parts: Buffer[] = []

  uint(v: number): this {
    const b = Buffer.alloc(4)
    b.writeUInt32BE(v >>> 0)
    this.#parts.push(b)
    return this
  }

  opaque(data: Buffer): this {
    this.uint(data.length)
    this.#parts.push(data)
    const pad = (4 - (data.length % 4)) % 4
    if (pad > 0) this.#parts.push(Buffer.alloc(pad))
    return this
  }

  buffer(): Buffer {
    return Buffer.concat(this.#parts)
  }
}

/** One link: the commands written and the answers waiting to be read. */
class Link {
  /** Bytes written without a line end yet. */
  input = ''
  /** Answers, each a message ending with the terminator; the first may be partly read. */
  readonly output: Buffer[] = []
  /** Runs the lines of one link in order. */
  chain: Promise<void> = Promise.resolve()
  /** Lines written whose answers are not in `output` yet. */
  running = 0
  readonly waiters = new Set<() => void>()

  wake(): void {
    for (const waiter of [...this.waiters]) waiter()
  }
}

/** The links of the whole endpoint, numbered from 1 (0 is never a link). */
let nextLinkId = 1

/**
 * The port mapper and core channel of one instrument (see the module comment).
 *
 * @example
 * await endpoint.close()
 */
export class Vxi11Endpoint implements Endpoint {
  readonly transport = 'vxi11'
  readonly host: string
  readonly deviceName: string
  #port: number
  #portmapperPort: number | null
  readonly #wantedPortmapper: number | null
  readonly #core: Server
  readonly #portmapper: Server | null
  readonly #handler: LineHandler
  readonly #logger: Logger
  readonly #links = new Map<number, Link>()
  readonly #sockets = new Set<Socket>()
  #listening: Promise<number> | null = null
  #closing: Promise<void> | null = null

  constructor(options: { host: string; port: number; portmapperPort: number | null; deviceName: string; logger: Logger; handler: LineHandler }) {
    this.host = options.host
    this.#port = options.port
    this.#wantedPortmapper = options.portmapperPort
    this.#portmapperPort = null
    this.deviceName = options.deviceName
    this.#handler = options.handler
    this.#logger = options.logger
    this.#core = createServer({ noDelay: true }, (socket) => this.#accept(socket, 'core'))
    this.#portmapper = options.portmapperPort === null ? null : createServer({ noDelay: true }, (socket) => this.#accept(socket, 'portmapper'))
    this.#core.on('error', (error) => this.#logger.warn({ err: error }, 'vxi11 core channel error'))
    this.#portmapper?.on('error', (error) => this.#logger.warn({ err: error }, 'vxi11 port mapper error'))
  }

  get port(): number {
    return this.#port
  }

  /** The port mapper's port, or null when there is none. */
  get portmapperPort(): number | null {
    return this.#portmapperPort
  }

  get clients(): number {
    return this.#sockets.size
  }

  get waiting(): number {
    return 0
  }

  listeners(): EndpointListener[] {
    const out: EndpointListener[] = [{ transport: 'tcp', port: this.#port, role: 'VXI-11 core channel' }]
    if (this.#portmapperPort !== null) out.push({ transport: 'tcp', port: this.#portmapperPort, role: 'VXI-11 port mapper' })
    return out
  }

  /** Opens the core channel, then the port mapper; rejects with the first failure (the error carries `vxi11Listener`: which one). */
  listen(): Promise<number> {
    this.#listening ??= (async () => {
      const core = this.#core
      try {
        this.#port = await listenOnce(
          core,
          () => core.listen({ host: this.host, port: this.#port, exclusive: true }),
          () => (core.address() as AddressInfo).port,
        )
      } catch (error) {
        throw Object.assign(error as Error, { vxi11Listener: 'core', vxi11Port: this.#port })
      }
      const mapper = this.#portmapper
      if (mapper !== null) {
        try {
          this.#portmapperPort = await listenOnce(
            mapper,
            () => mapper.listen({ host: this.host, port: this.#wantedPortmapper!, exclusive: true }),
            () => (mapper.address() as AddressInfo).port,
          )
        } catch (error) {
          throw Object.assign(error as Error, { vxi11Listener: 'portmapper', vxi11Port: this.#wantedPortmapper })
        }
      }
      return this.#port
    })()
    return this.#listening
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      if (this.#listening !== null) await this.#listening.catch(() => undefined)
      for (const socket of this.#sockets) socket.destroy()
      this.#sockets.clear()
      for (const link of this.#links.values()) link.wake()
      this.#links.clear()
      for (const server of [this.#core, this.#portmapper]) {
        if (server?.listening) await new Promise<void>((resolve) => server.close(() => resolve()))
      }
    })()
    return this.#closing
  }

  #accept(socket: Socket, channel: 'core' | 'portmapper'): void {
    const client = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`
    if (this.#closing !== null) return void socket.destroy()
    if (this.#sockets.size >= this.#handler.maxConnections) {
      socket.destroy()
      this.#handler.dropped('refused', `refused: ${this.#handler.maxConnections} VXI-11 connections are open (max_connections)`, client)
      return
    }
    this.#sockets.add(socket)
    const links = new Set<number>()
    const maxRecord = this.#handler.maxLineLength + RECORD_SLACK
    let buffered: Buffer = Buffer.alloc(0)
    let fragments: Buffer[] = []
    let recordLength = 0
    // Calls of one connection are answered in order, one after the other, as RPC over TCP expects.
    let chain = Promise.resolve()
    let idle: NodeJS.Timeout | null = null
    const touch = (): void => {
      if (this.#handler.idleTimeoutMs <= 0) return
      if (idle !== null) clearTimeout(idle)
      idle = setTimeout(() => {
        this.#handler.dropped('idle', `closed after ${Math.round(this.#handler.idleTimeoutMs / 1000)} s without a call (idle_timeout)`, client)
        socket.destroy()
      }, this.#handler.idleTimeoutMs)
      idle.unref()
    }
    touch()
    socket.on('data', (chunk: Buffer) => {
      touch()
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk])
      while (buffered.length >= 4) {
        const mark = buffered.readUInt32BE(0)
        const last = (mark & 0x80000000) !== 0
        const length = mark & 0x7fffffff
        if (recordLength + length > maxRecord) {
          this.#handler.dropped('overlong', `an RPC record of more than ${maxRecord} bytes (max_line_length and the RPC header)`, client)
          socket.destroy()
          return
        }
        if (buffered.length < 4 + length) break
        fragments.push(buffered.subarray(4, 4 + length))
        recordLength += length
        buffered = buffered.subarray(4 + length)
        if (!last) continue
        const record = Buffer.concat(fragments)
        fragments = []
        recordLength = 0
        chain = chain.then(async () => {
          const reply = await this.#call(record, channel, links, client).catch((error: unknown) => {
            this.#logger.debug({ err: error, client }, 'vxi11 call failed')
            return null
          })
          if (reply !== null && !socket.destroyed) {
            const mark = Buffer.alloc(4)
            mark.writeUInt32BE((0x80000000 | reply.length) >>> 0)
            socket.write(Buffer.concat([mark, reply]))
          }
        })
      }
    })
    const closed = (): void => {
      if (idle !== null) clearTimeout(idle)
      this.#sockets.delete(socket)
      for (const id of links) {
        this.#links.get(id)?.wake()
        this.#links.delete(id)
      }
    }
    socket.on('error', () => socket.destroy())
    socket.on('close', closed)
  }

  /** The reply record to one call record, or null for none (a reply record, or a detached instrument). */
  async #call(record: Buffer, channel: 'core' | 'portmapper', links: Set<number>, client: string): Promise<Buffer | null> {
    const r = new XdrReader(record)
    const xid = r.uint()
    if (r.uint() !== 0) return null
    const reply = (accept: number, body?: (w: XdrWriter) => void): Buffer => {
      // xid, REPLY, MSG_ACCEPTED, verifier AUTH_NONE, accept_stat, results
      const w = new XdrWriter().uint(xid).uint(1).uint(0).uint(0).uint(0).uint(accept)
      body?.(w)
      return w.buffer()
    }
    if (r.uint() !== 2) {
      // MSG_DENIED, RPC_MISMATCH: versions 2 to 2
      return new XdrWriter().uint(xid).uint(1).uint(1).uint(0).uint(2).uint(2).buffer()
    }
    const prog = r.uint()
    const vers = r.uint()
    const proc = r.uint()
    r.uint()
    r.opaque()
    r.uint()
    r.opaque()
    const [wantProg, wantVers] = channel === 'portmapper' ? [PMAP_PROG, PMAP_VERS] : [CORE_PROG, CORE_VERS]
    if (prog !== wantProg) return reply(ACCEPT.progUnavail)
    if (vers !== wantVers) return reply(ACCEPT.progMismatch, (w) => w.uint(wantVers).uint(wantVers))
    try {
      if (channel === 'portmapper') return this.#portmapperCall(r, proc, reply)
      return await this.#coreCall(r, proc, reply, links, client)
    } catch (error) {
      if (error instanceof RangeError) return reply(ACCEPT.garbageArgs)
      throw error
    }
  }

  #portmapperCall(r: XdrReader, proc: number, reply: (accept: number, body?: (w: XdrWriter) => void) => Buffer): Buffer {
    if (proc === 0) return reply(ACCEPT.success)
    if (proc === PMAPPROC_GETPORT) {
      const prog = r.uint()
      const vers = r.uint()
      const protocol = r.uint()
      const found = prog === CORE_PROG && vers === CORE_VERS && protocol === IPPROTO_TCP
      return reply(ACCEPT.success, (w) => w.uint(found ? this.#port : 0))
    }
    if (proc === PMAPPROC_DUMP) {
      // One mapping (the core channel), then the end of the list.
      return reply(ACCEPT.success, (w) => w.uint(1).uint(CORE_PROG).uint(CORE_VERS).uint(IPPROTO_TCP).uint(this.#port).uint(0))
    }
    return reply(ACCEPT.procUnavail)
  }

  async #coreCall(
    r: XdrReader,
    proc: number,
    reply: (accept: number, body?: (w: XdrWriter) => void) => Buffer,
    links: Set<number>,
    client: string,
  ): Promise<Buffer | null> {
    const error = (code: number): Buffer => reply(ACCEPT.success, (w) => w.uint(code))
    switch (proc) {
      case PROC.null:
        return reply(ACCEPT.success)
      case PROC.create_link: {
        r.int()
        r.uint()
        r.uint()
        const device = r.string()
        const known = device.toLowerCase() === this.deviceName.toLowerCase()
        if (!known || links.size >= MAX_LINKS_PER_CONNECTION) {
          return reply(ACCEPT.success, (w) => w.uint(ERR.notAccessible).uint(0).uint(0).uint(0))
        }
        const id = nextLinkId++
        if (nextLinkId > 0x7fffffff) nextLinkId = 1
        this.#links.set(id, new Link())
        links.add(id)
        const maxRecv = Math.max(1024, this.#handler.maxLineLength)
        return reply(ACCEPT.success, (w) => w.uint(ERR.none).uint(id).uint(0).uint(maxRecv))
      }
      case PROC.device_write: {
        const id = r.uint()
        r.uint()
        r.uint()
        const flags = r.uint()
        const data = r.opaque()
        const link = links.has(id) ? this.#links.get(id) : undefined
        if (link === undefined) return reply(ACCEPT.success, (w) => w.uint(ERR.invalidLink).uint(0))
        if (link.input.length + data.length > this.#handler.maxLineLength) {
          link.input = ''
          this.#handler.dropped('overlong', `a message longer than max_line_length (${this.#handler.maxLineLength})`, client)
          return reply(ACCEPT.success, (w) => w.uint(ERR.syntax).uint(0))
        }
        this.#write(link, data.toString('utf8'), (flags & FLAG_END) !== 0, client)
        return reply(ACCEPT.success, (w) => w.uint(ERR.none).uint(data.length))
      }
      case PROC.device_read: {
        const id = r.uint()
        const requestSize = r.uint()
        const ioTimeout = r.uint()
        const link = links.has(id) ? this.#links.get(id) : undefined
        if (link === undefined) return reply(ACCEPT.success, (w) => w.uint(ERR.invalidLink).uint(0).opaque(Buffer.alloc(0)))
        await this.#answerReady(link, Math.min(ioTimeout, MAX_READ_WAIT_MS))
        const first = link.output[0]
        if (first === undefined) return reply(ACCEPT.success, (w) => w.uint(ERR.ioTimeout).uint(0).opaque(Buffer.alloc(0)))
        const size = Math.max(1, requestSize)
        if (first.length <= size) {
          link.output.shift()
          return reply(ACCEPT.success, (w) => w.uint(ERR.none).uint(REASON_END).opaque(first))
        }
        link.output[0] = first.subarray(size)
        return reply(ACCEPT.success, (w) => w.uint(ERR.none).uint(REASON_REQCNT).opaque(first.subarray(0, size)))
      }
      case PROC.device_readstb: {
        const id = r.uint()
        const link = links.has(id) ? this.#links.get(id) : undefined
        if (link === undefined) return reply(ACCEPT.success, (w) => w.uint(ERR.invalidLink).uint(0))
        // The lines written so far are run first, so that MAV (bit 4: an answer waits to be read) is current.
        await link.chain
        const stb = link.output.length > 0 ? 0x10 : 0
        return reply(ACCEPT.success, (w) => w.uint(ERR.none).uint(stb))
      }
      case PROC.device_clear: {
        const id = r.uint()
        const link = links.has(id) ? this.#links.get(id) : undefined
        if (link === undefined) return error(ERR.invalidLink)
        link.input = ''
        link.output.length = 0
        return error(ERR.none)
      }
      case PROC.device_trigger:
      case PROC.device_remote:
      case PROC.device_local:
      case PROC.device_lock:
      case PROC.device_unlock:
      case PROC.device_enable_srq:
        return error(links.has(r.uint()) ? ERR.none : ERR.invalidLink)
      case PROC.destroy_link: {
        const id = r.uint()
        if (!links.has(id)) return error(ERR.invalidLink)
        links.delete(id)
        this.#links.get(id)?.wake()
        this.#links.delete(id)
        return error(ERR.none)
      }
      case PROC.device_docmd:
        return reply(ACCEPT.success, (w) => w.uint(ERR.notSupported).opaque(Buffer.alloc(0)))
      case PROC.create_intr_chan:
        return error(ERR.notSupported)
      case PROC.destroy_intr_chan:
        return error(ERR.none)
      default:
        return reply(ACCEPT.procUnavail)
    }
  }

  /** Cuts the written text into lines (at the terminator's last character, or at the end of a message) and queues their answers. */
  #write(link: Link, text: string, end: boolean, client: string): void {
    const separator = this.#handler.terminator[this.#handler.terminator.length - 1]!
    const data = link.input + text
    const parts = data.split(separator)
    link.input = end ? '' : parts.pop()!
    for (const line of parts) {
      if (line.trim() === '') continue
      link.running++
      link.chain = link.chain.then(async () => {
        let answer: string | null = null
        try {
          answer = await this.#handler.line(line, client)
        } catch {
          answer = null
        }
        const delay = answer === null ? 0 : this.#handler.replyDelayMs()
        if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay))
        link.running--
        if (answer !== null) link.output.push(Buffer.from(answer + this.#handler.terminator, 'utf8'))
        link.wake()
      })
    }
  }

  /** Resolves once an answer waits on the link, or no line is running and `timeoutMs` passed. */
  #answerReady(link: Link, timeoutMs: number): Promise<void> {
    if (link.output.length > 0) return Promise.resolve()
    return new Promise((resolve) => {
      const done = (): void => {
        if (link.output.length === 0 && link.running > 0 && this.#closing === null && Date.now() < until) return
        clearTimeout(timer)
        link.waiters.delete(done)
        resolve()
      }
      const until = Date.now() + timeoutMs
      const timer = setTimeout(() => {
        link.waiters.delete(done)
        resolve()
      }, timeoutMs)
      link.waiters.add(done)
    })
  }
}
