import { createServer } from 'node:net'
import type { AddressInfo, Server } from 'node:net'
import { listenOnce } from '../adapter-kit.js'
import type { Logger } from 'pino'
import { ModbusConnection } from './connection.js'
import { RtuConnection } from './rtu-connection.js'
import { UnitListener } from './unit-listener.js'
import type { ModbusUnit } from './connection.js'
import { combineRules, DEFAULT_CONNECTION_RULES } from './connection-rules.js'
import type { ConnectionCloseReason, ConnectionRules } from './connection-rules.js'

/**
 * One TCP listener (host:port) and the units it serves, keyed by unit id. A request for a unit id
 * nobody registered is answered by the only unit when there is exactly one and the id is 0 or 255
 * (the ids clients use when they do not care); otherwise the connection answers exception 0x0B.
 * An `rtu_over_tcp` listener cuts RTU frames instead (rtu-connection.ts) and answers nothing for
 * an unknown unit id, as a serial line would; the rules below apply to it alike.
 *
 * The listener enforces the strictest connection rules of its units (connection-rules.ts): one
 * sweep, a few times per smallest timeout and at least once a second, closes the connections
 * that completed no request within the idle timeout or left a frame unfinished past the frame
 * timeout. A timer per connection, re-armed on every request, would cost the fast path; the sweep
 * costs a pass over the connections, with no timer at all while there are none. At the limit, a
 * new connection closes the one whose last complete request is oldest, among those not waiting
 * for an answer of ours; only when every one is waiting is the new one refused.
 *
 * @example
 * const listener = new ModbusListener({ host: '127.0.0.1', port: 0, logger })
 * listener.add(1, unit)
 * await listener.listen() // the effective port
 */

/** Options of a listener. */
export interface ModbusListenerOptions {
  host: string
  /** 0 lets the operating system choose. */
  port: number
  logger: Logger
  /** How frames are cut: 'tcp' (MBAP, the default) or 'rtu_over_tcp' (RTU frames, see rtu-connection.ts). */
  transport?: 'tcp' | 'rtu_over_tcp'
}

/** What the listener needs of a connection, whatever its framing. */
type ListenerConnection = Pick<ModbusConnection, 'remote' | 'lastRequestAt' | 'partialSince' | 'answering' | 'destroy'>

/** Sweeps at least this often, so a timeout is late by at most a quarter of itself or this. */
const MAX_SWEEP_MS = 1000
/** And at most this often, however small the timeouts. */
const MIN_SWEEP_MS = 50
/** Info-level notes that the limit was reached, at most one per this many milliseconds. */
const LIMIT_NOTE_MS = 10_000

/**
 * One TCP listener and its units (see the module comment).
 *
 * @example
 * const listener = new ModbusListener({ host: '127.0.0.1', port: 0, logger })
 * listener.add(1, unit)
 * const port = await listener.listen()
 * await listener.close()
 */
export class ModbusListener extends UnitListener {
  readonly transport: 'tcp' | 'rtu_over_tcp'
  #server: Server
  #logger: Logger
  #connections = new Set<ListenerConnection>()
  #listening: Promise<number> | null = null
  #closing: Promise<void> | null = null
  #rules: ConnectionRules = DEFAULT_CONNECTION_RULES
  #sweep: NodeJS.Timeout | null = null
  #sweepMs = 0
  #lastLimitNote = 0

  constructor(options: ModbusListenerOptions) {
    super(options.host, options.port)
    this.#logger = options.logger
    this.transport = options.transport ?? 'tcp'
    this.#server = createServer({ noDelay: true })
    this.#server.on('connection', (socket) => {
      if (this.#closing) {
        socket.destroy()
        return
      }
      // A loop, since a unit with a lower limit may have joined while more were open.
      let room = this.#connections.size < this.#rules.maxConnections
      while (!room && this.#makeRoom()) room = this.#connections.size < this.#rules.maxConnections
      if (!room) {
        this.#logger.debug(
          { remote: `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}` },
          'refused a modbus connection: every connection is waiting for an answer',
        )
        socket.destroy()
        this.#closedByRule('refused')
        return
      }
      const onClose = (c: ListenerConnection): void => this.#onConnectionClosed(c)
      const resolveUnit = (unitId: number): ModbusUnit | undefined => this.resolve(unitId)
      const connection: ListenerConnection =
        this.transport === 'rtu_over_tcp'
          ? new RtuConnection({ socket, resolveUnit, units: () => this.units.values(), logger: this.#logger, onClose })
          : new ModbusConnection({ socket, resolveUnit, logger: this.#logger, onClose })
      this.#connections.add(connection)
      if (this.#sweep === null) this.#startSweep()
    })
    this.#server.on('error', (error) => this.#logger.warn({ err: error }, 'modbus listener error'))
  }

  /** Open connections. */
  get connectionCount(): number {
    return this.#connections.size
  }

  /** The rules in force: the strictest of the units' (see the module comment). */
  get rules(): ConnectionRules {
    return this.#rules
  }

  /** Starts listening (once); resolves with the effective port, rejects with the system error. */
  listen(): Promise<number> {
    const server = this.#server
    this.#listening ??= listenOnce(
      server,
      () => server.listen({ host: this.host, port: this.boundPort, exclusive: true }),
      () => (this.boundPort = (server.address() as AddressInfo).port),
    )
    return this.#listening
  }

  /** Closes every open connection at once (the listener stays open); returns how many it closed. */
  dropConnections(): number {
    const count = this.#connections.size
    // Closing removes a connection from the set: iterate a copy.
    for (const connection of [...this.#connections]) connection.destroy()
    return count
  }

  /** Stops listening and destroys every connection; safe to call more than once. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#stopSweep()
      for (const connection of this.#connections) connection.destroy()
      this.#connections.clear()
      // A listen still in flight would open the port after we are done: let it settle first.
      if (this.#listening !== null) await this.#listening.catch(() => undefined)
      if (this.#server.listening) await new Promise<void>((resolve) => this.#server.close(() => resolve()))
    })()
    return this.#closing
  }

  protected override unitsChanged(): void {
    this.#updateRules()
  }

  /** Applies the strictest rules of the units left; a lower limit closes nothing until the next connection arrives. */
  #updateRules(): void {
    // A listener that lost its last unit keeps its rules for the moment until it closes.
    if (this.units.size === 0) return
    this.#rules = combineRules([...this.units.values()].map((unit) => unit.connectionRules ?? DEFAULT_CONNECTION_RULES))
    if (this.#sweep !== null && this.#sweepInterval() !== this.#sweepMs) {
      this.#stopSweep()
      this.#startSweep()
    }
  }

  #sweepInterval(): number {
    const { idleTimeoutMs, frameTimeoutMs } = this.#rules
    const shortest = idleTimeoutMs > 0 ? Math.min(idleTimeoutMs, frameTimeoutMs) : frameTimeoutMs
    return Math.min(MAX_SWEEP_MS, Math.max(MIN_SWEEP_MS, Math.floor(shortest / 4)))
  }

  #startSweep(): void {
    this.#sweepMs = this.#sweepInterval()
    this.#sweep = setInterval(() => this.#sweepConnections(), this.#sweepMs)
    // Connections keep the process alive by themselves; the sweep must not.
    this.#sweep.unref()
  }

  #stopSweep(): void {
    if (this.#sweep !== null) clearInterval(this.#sweep)
    this.#sweep = null
  }

  #sweepConnections(): void {
    const now = Date.now()
    const { idleTimeoutMs, frameTimeoutMs } = this.#rules
    const frameBefore = now - frameTimeoutMs
    const idleBefore = idleTimeoutMs > 0 ? now - idleTimeoutMs : -Infinity
    // Deleting from a Set while iterating it is safe: closing removes the connection at once.
    for (const connection of this.#connections) {
      const partialSince = connection.partialSince
      if (partialSince !== 0 && partialSince <= frameBefore) {
        this.#closeByRule(connection, 'frame', now - partialSince)
      } else if (connection.lastRequestAt <= idleBefore && !connection.answering) {
        this.#closeByRule(connection, 'idle', now - connection.lastRequestAt)
      }
    }
  }

  /** Closes the connection idle the longest that is not waiting for an answer; false when there is none. */
  #makeRoom(): boolean {
    let oldest: ListenerConnection | null = null
    for (const connection of this.#connections) {
      if (connection.answering) continue
      if (oldest === null || connection.lastRequestAt < oldest.lastRequestAt) oldest = connection
    }
    if (oldest === null) return false
    this.#closeByRule(oldest, 'evicted', Date.now() - oldest.lastRequestAt)
    return true
  }

  #closeByRule(connection: ListenerConnection, reason: ConnectionCloseReason, quietMs: number): void {
    this.#logger.debug({ remote: connection.remote, reason, quiet_ms: quietMs }, 'closing modbus connection')
    connection.destroy()
    this.#closedByRule(reason)
  }

  #closedByRule(reason: ConnectionCloseReason): void {
    for (const unit of this.units.values()) unit.connectionClosed?.(reason)
    if (reason !== 'evicted' && reason !== 'refused') return
    // A full listener is worth an operator's notice, but a flood must not flood the log too.
    const now = Date.now()
    if (now - this.#lastLimitNote < LIMIT_NOTE_MS) return
    this.#lastLimitNote = now
    this.#logger.info(
      { host: this.host, port: this.boundPort, max_connections: this.#rules.maxConnections, reason },
      'modbus listener at its connection limit: the longest idle connection makes room, or a new one is refused',
    )
  }

  #onConnectionClosed(connection: ListenerConnection): void {
    this.#connections.delete(connection)
    if (this.#connections.size === 0) this.#stopSweep()
  }
}
