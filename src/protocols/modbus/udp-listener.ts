import { createSocket } from 'node:dgram'
import type { RemoteInfo, Socket } from 'node:dgram'
import { isIPv6 } from 'node:net'
import type { Logger } from 'pino'
import { listenOnce } from '../adapter-kit.js'
import { MAX_ADU_LENGTH, MBAP_LENGTH, headerProblem, stampHeader } from './codec.js'
import { DEFAULT_CONNECTION_RULES } from './connection-rules.js'
import type { ConnectionRules } from './connection-rules.js'
import { settleAnswer } from './answer.js'
import { UnitListener } from './unit-listener.js'

/**
 * One Modbus UDP listener (host:port) and its units: each datagram carries one MBAP-framed request
 * and the answer goes back to its sender in one datagram. A udp and a tcp listener of the same
 * port are different sockets. A datagram that is not exactly one valid MBAP frame (header, length
 * field, at most MAX_ADU_LENGTH bytes) is dropped; a unit id nobody serves answers exception 0x0B,
 * as on TCP.
 *
 * Requests are answered independently (the transaction id pairs them), each after its own delay.
 * Memory is bounded: at most MAX_PENDING_PER_SOURCE requests of one sender, and requests of at
 * most MAX_SOURCES senders, are in hand at once; a datagram beyond that is dropped. There are no
 * connections, so idle_timeout, frame_timeout and max_connections do not apply; a `split_frames`
 * fault sends the answer whole (a datagram cannot arrive in pieces) and a `disconnect` has no
 * connection to close (see docs/modbus-faults.md).
 *
 * @example
 * const listener = new ModbusUdpListener({ host: '127.0.0.1', port: 0, logger })
 * listener.add(1, unit)
 * await listener.listen() // the effective port
 */

/** Options of a listener. */
export interface ModbusUdpListenerOptions {
  host: string
  /** 0 lets the operating system choose. */
  port: number
  logger: Logger
}

/** Requests of one sender in hand (being answered or delayed) before its datagrams are dropped. */
export const MAX_PENDING_PER_SOURCE = 16
/** Senders with requests in hand before a new sender's datagrams are dropped. */
export const MAX_SOURCES = 1024

/**
 * One UDP listener and its units (see the module comment).
 *
 * @example
 * const listener = new ModbusUdpListener({ host: '127.0.0.1', port: 0, logger })
 * listener.add(1, unit)
 * const port = await listener.listen()
 * await listener.close()
 */
export class ModbusUdpListener extends UnitListener {
  readonly transport = 'udp' as const
  #socket: Socket
  #logger: Logger
  /** Requests in hand per sender (address:port). */
  #pending = new Map<string, number>()
  #timers = new Set<NodeJS.Timeout>()
  #listening: Promise<number> | null = null
  #closing: Promise<void> | null = null
  #bound = false

  constructor(options: ModbusUdpListenerOptions) {
    super(options.host, options.port)
    this.#logger = options.logger
    this.#socket = createSocket({ type: isIPv6(options.host) ? 'udp6' : 'udp4' })
    this.#socket.on('message', (message, remote) => this.#onMessage(message, remote))
    this.#socket.on('error', (error) => this.#logger.warn({ err: error }, 'modbus udp listener error'))
  }

  /** Always 0: UDP has no connections. */
  get connectionCount(): number {
    return 0
  }

  /** The defaults: no rule applies to UDP, which has no connections. */
  get rules(): ConnectionRules {
    return DEFAULT_CONNECTION_RULES
  }

  /** Binds (once); resolves with the effective port, rejects with the system error. */
  listen(): Promise<number> {
    const socket = this.#socket
    this.#listening ??= listenOnce(
      socket,
      () => socket.bind({ address: this.host, port: this.boundPort, exclusive: true }),
      () => {
        this.#bound = true
        return (this.boundPort = socket.address().port)
      },
    )
    return this.#listening
  }

  /** Nothing to close: 0. */
  dropConnections(): number {
    return 0
  }

  /** Unbinds and forgets the delayed answers; safe to call more than once. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const timer of this.#timers) clearTimeout(timer)
      this.#timers.clear()
      if (this.#listening !== null) await this.#listening.catch(() => undefined)
      if (this.#bound) await new Promise<void>((resolve) => this.#socket.close(() => resolve()))
    })()
    return this.#closing
  }

  #onMessage(message: Buffer, remote: RemoteInfo): void {
    if (this.#closing !== null) return
    const from = `${remote.address}:${remote.port}`
    const problem =
      message.length < MBAP_LENGTH + 1 || message.length > MAX_ADU_LENGTH
        ? `a datagram of ${message.length} bytes`
        : (headerProblem(message, 0) ?? (6 + message.readUInt16BE(4) !== message.length ? 'the length field does not match the datagram' : null))
    if (problem !== null) {
      this.#logger.debug({ remote: from, problem }, 'dropped a modbus udp datagram')
      return
    }
    const pending = this.#pending.get(from) ?? 0
    if (pending >= MAX_PENDING_PER_SOURCE || (pending === 0 && this.#pending.size >= MAX_SOURCES)) {
      this.#logger.debug({ remote: from, pending }, 'dropped a modbus udp datagram: too many requests in hand')
      return
    }
    this.#pending.set(from, pending + 1)
    void this.#answer(message, remote).finally(() => {
      const left = (this.#pending.get(from) ?? 1) - 1
      if (left > 0) this.#pending.set(from, left)
      else this.#pending.delete(from)
    })
  }

  async #answer(request: Buffer, remote: RemoteInfo): Promise<void> {
    const transactionId = request.readUInt16BE(0)
    const unitId = request[6]!
    const unit = this.resolve(unitId)
    let adu: Buffer
    let delayMs = 0
    let rewrite: ((adu: Buffer) => Buffer) | null = null
    if (unit === undefined) {
      adu = Buffer.from([0, 0, 0, 0, 0, 0, 0, (request[MBAP_LENGTH]! | 0x80) & 0xff, 0x0b])
    } else {
      const settled = await settleAnswer(unit, request, MBAP_LENGTH, request.length - MBAP_LENGTH, this.#logger)
      if (settled.adu === null) return
      // A buffer of our own: the unit's may be one it keeps.
      adu = Buffer.from(settled.adu)
      delayMs = settled.delayMs
      rewrite = settled.rewrite
    }
    stampHeader(adu, 0, adu.length, transactionId, unitId)
    if (rewrite !== null) adu = rewrite(adu)
    if (delayMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.#timers.delete(timer)
          resolve()
        }, delayMs)
        this.#timers.add(timer)
      })
    }
    if (this.#closing !== null) return
    this.#socket.send(adu, remote.port, remote.address, (error) => {
      if (error) this.#logger.debug({ err: error }, 'modbus udp answer not sent')
    })
  }
}
