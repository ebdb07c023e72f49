import { createServer } from 'node:net'
import type { Server } from 'node:net'
import type { Logger } from 'pino'
import { ModbusConnection } from './connection.js'
import type { ModbusUnit } from './connection.js'

/**
 * One TCP listener (host:port) and the units it serves, keyed by unit id. A request for a unit id
 * nobody registered is answered by the only unit when there is exactly one and the id is 0 or 255
 * (the ids clients use when they do not care); otherwise the connection answers exception 0x0B.
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
  /** Connections accepted at once; further ones are refused by the server. */
  maxConnections?: number
}

/**
 * One TCP listener and its units (see the module comment).
 *
 * @example
 * const listener = new ModbusListener({ host: '127.0.0.1', port: 0, logger })
 * listener.add(1, unit)
 * const port = await listener.listen()
 * await listener.close()
 */
export class ModbusListener {
  readonly host: string
  #port: number
  #server: Server
  #logger: Logger
  #units = new Map<number, ModbusUnit>()
  #connections = new Set<ModbusConnection>()
  #listening: Promise<number> | null = null
  #closing: Promise<void> | null = null

  constructor(options: ModbusListenerOptions) {
    this.host = options.host
    this.#port = options.port
    this.#logger = options.logger
    this.#server = createServer({ noDelay: true })
    this.#server.maxConnections = options.maxConnections ?? 4096
    this.#server.on('connection', (socket) => {
      if (this.#closing) {
        socket.destroy()
        return
      }
      const connection = new ModbusConnection({
        socket,
        resolveUnit: (unitId) => this.resolve(unitId),
        logger: this.#logger,
        onClose: (c) => this.#connections.delete(c),
      })
      this.#connections.add(connection)
    })
    this.#server.on('error', (error) => this.#logger.warn({ err: error }, 'modbus listener error'))
  }

  /** The effective port once listening, else the requested one. */
  get port(): number {
    return this.#port
  }

  /** Unit ids registered here. */
  get unitIds(): number[] {
    return [...this.#units.keys()].sort((a, b) => a - b)
  }

  /** Open connections. */
  get connectionCount(): number {
    return this.#connections.size
  }

  /** Starts listening (once); resolves with the effective port, rejects with the system error. */
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

  has(unitId: number): boolean {
    return this.#units.has(unitId)
  }

  get size(): number {
    return this.#units.size
  }

  add(unitId: number, unit: ModbusUnit): void {
    this.#units.set(unitId, unit)
  }

  /** Removes the unit when `unit` is the one registered under `unitId`; returns whether it did. */
  remove(unitId: number, unit: ModbusUnit): boolean {
    if (this.#units.get(unitId) !== unit) return false
    this.#units.delete(unitId)
    return true
  }

  /** The unit that serves `unitId` (see the module comment). */
  resolve(unitId: number): ModbusUnit | undefined {
    const unit = this.#units.get(unitId)
    if (unit !== undefined || this.#units.size !== 1 || (unitId !== 0 && unitId !== 255)) return unit
    return this.#units.values().next().value
  }

  /** Stops listening and destroys every connection; safe to call more than once. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const connection of this.#connections) connection.destroy()
      this.#connections.clear()
      // A listen still in flight would open the port after we are done: let it settle first.
      if (this.#listening !== null) await this.#listening.catch(() => undefined)
      if (this.#server.listening) await new Promise<void>((resolve) => this.#server.close(() => resolve()))
    })()
    return this.#closing
  }
}
