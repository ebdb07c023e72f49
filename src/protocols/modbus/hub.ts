import { pino } from 'pino'
import type { Logger } from 'pino'
import { ConflictError, ValidationError } from '../../errors.js'
import { listenProblem } from '../adapter-kit.js'
import type { HeldPort, PortHolder, ProtocolContext } from '../adapter.js'
import { ModbusListener } from './listener.js'
import { ModbusUdpListener } from './udp-listener.js'
import { ModbusSerialListener } from './serial-listener.js'
import { SerialLineError } from '../serial/port.js'
import type { SerialSettings } from '../serial/port.js'
import type { ModbusUnit } from './connection.js'
import type { ConnectionRules } from './connection-rules.js'

/**
 * The shared Modbus TCP listeners of one server, keyed by host:port. Several units (instances)
 * share a listener with different unit ids; the listener opens with its first unit and closes with
 * its last. A unit that names no port gets the first port from `firstAutoPort` (5020) up that is
 * free on its host: neither held by another program nor by one of our listeners.
 *
 * A listener has one transport: `tcp` (MBAP frames) and `rtu_over_tcp` (RTU frames) listen on TCP
 * and cannot share a port with each other; `udp` listens on a UDP socket, so a udp and a tcp
 * listener of the same port number are different listeners. A `serial` listener is a serial line,
 * keyed by its device: the units on it (multi-drop) must give it the same settings.
 *
 * @example
 * const hub = new ModbusHub({ logger })
 * const registration = await hub.register({ host: '127.0.0.1', port: 5020, unitId: 1, unit })
 * await hub.unregister(registration)
 * await hub.close()
 */

/** Options of a hub. */
export interface ModbusHubOptions {
  logger?: Logger
  /** Where the search for a free port starts when a unit names none; default 5020. */
  firstAutoPort?: number
  /** Who else in the server holds a port this hub cannot open (see PortHolder). */
  portHolder?: PortHolder
}

/** How a listener frames requests: see the module comment. */
export type ModbusTransport = 'tcp' | 'udp' | 'rtu_over_tcp' | 'serial'

/** A listener of any kind, as the hub uses it. */
type AnyListener = ModbusListener | ModbusUdpListener | ModbusSerialListener

/** What to register. */
export interface ModbusRegisterOptions {
  host: string
  /** Default 'tcp'. */
  transport?: ModbusTransport
  /** Omitted: the first free port >= firstAutoPort. 0: a port the operating system chooses. Not for serial. */
  port?: number
  /** The line, for transport serial (required there). */
  serial?: SerialSettings
  unitId: number
  unit: ModbusUnit
}

/** Where a unit ended up; pass it back to unregister. */
export interface ModbusRegistration {
  readonly host: string
  readonly transport: ModbusTransport
  /** 0 for a serial line. */
  readonly port: number
  /** The serial device, for transport serial. */
  readonly device?: string
  readonly unitId: number
  readonly unit: ModbusUnit
}

/** One listener as shown by `listeners()`. */
export interface ModbusListenerInfo {
  host: string
  transport: ModbusTransport
  port: number
  /** The serial device, for transport serial (host is '' and port 0 there). */
  device?: string
  unitIds: number[]
  connections: number
  /** The rules the listener applies: the strictest of its units'. */
  rules: ConnectionRules
}

const DEFAULT_FIRST_AUTO_PORT = 5020

/**
 * The shared listeners of one server (see the module comment).
 *
 * @example
 * const hub = new ModbusHub({ logger, firstAutoPort: 5020 })
 * const { port } = await hub.register({ host: '127.0.0.1', unitId: 1, unit })
 * await hub.close()
 */
export class ModbusHub implements ProtocolContext {
  #logger: Logger
  #firstAutoPort: number
  readonly #portHolder: PortHolder | undefined
  /** Keyed by host:port; holds listeners that are still opening too, so they can be joined. */
  #listeners = new Map<string, AnyListener>()
  /** Listeners on port 0 whose port is not known yet. */
  #anonymous = new Set<AnyListener>()
  /** Listeners that lost their last unit and are closing, by host:port. */
  #closing = new Map<string, Promise<void>>()

  constructor(options: ModbusHubOptions = {}) {
    this.#logger = options.logger ?? pino({ level: 'silent' })
    this.#firstAutoPort = options.firstAutoPort ?? DEFAULT_FIRST_AUTO_PORT
    this.#portHolder = options.portHolder
  }

  heldPorts(): HeldPort[] {
    // A serial line holds a device, not a port.
    return [...this.#listeners.values()].flatMap((l) =>
      l.transport === 'serial'
        ? []
        : [
            {
              transport: l.transport === 'udp' ? 'udp' : 'tcp',
              host: l.host,
              port: l.port,
              holder: `the Modbus server of unit${l.unitIds.length === 1 ? '' : 's'} ${l.unitIds.join(', ')}`,
            } as HeldPort,
          ],
    )
  }

  /**
   * Registers a unit and resolves once its listener accepts connections.
   * Throws ValidationError (422) for a unit id already served on that host:port, ConflictError
   * (409) when the port cannot be opened (held by another program, no free port left).
   */
  async register(options: ModbusRegisterOptions): Promise<ModbusRegistration> {
    const { host, port, unitId, unit } = options
    const transport = options.transport ?? 'tcp'
    if (!Number.isInteger(unitId) || unitId < 0 || unitId > 255) {
      throw new ValidationError(`unit id ${unitId} is outside 0..255`, [{ path: 'unit_id', message: 'must be an integer in 0..255' }])
    }
    if (transport === 'serial') return this.#registerSerial(options)
    if (port === undefined) return this.#registerOnFreePort(host, transport, unitId, unit)
    if (port === 0) return this.#registerAnonymous(host, transport, unitId, unit)
    const key = keyOf(transport, host, port)
    // A listener of this key that is shutting down still holds the port for a moment.
    const closing = this.#closing.get(key)
    if (closing !== undefined && !this.#listeners.has(key)) await closing
    let listener = this.#listeners.get(key)
    if (listener !== undefined) {
      if (listener.transport !== transport) {
        const message = `${host}:${port} serves Modbus ${listener.transport}, not ${transport}: a TCP port has one framing`
        throw new ConflictError(`Cannot open a Modbus listener: ${message}`, [{ path: 'transport', message }])
      }
      if (listener.has(unitId)) {
        const message = `Modbus unit id ${unitId} is already in use on ${key}`
        throw new ValidationError(message, [{ path: 'unit_id', message }])
      }
    } else {
      listener = this.#newListener(host, port, transport)
      this.#listeners.set(key, listener)
    }
    listener.add(unitId, unit)
    try {
      await listener.listen()
    } catch (error) {
      listener.remove(unitId, unit)
      if (this.#listeners.get(key) === listener) this.#listeners.delete(key)
      const servedOn = [...this.#listeners.values()].find((l) => l.port === port && l.host !== host && (l.transport === 'udp') === (transport === 'udp'))?.host
      throw listenFailure(host, port, error, servedOn, this.#portHolder?.(transport === 'udp' ? 'udp' : 'tcp', port))
    }
    return { host, transport, port, unitId, unit }
  }

  /** Removes a unit; its listener closes (and drops its connections) when it was the last. */
  async unregister(registration: ModbusRegistration): Promise<void> {
    const key = registrationKey(registration)
    const listener = this.#listeners.get(key)
    if (listener === undefined || !listener.remove(registration.unitId, registration.unit)) return
    if (listener.size > 0) return
    this.#listeners.delete(key)
    const closing = listener.close()
    this.#closing.set(key, closing)
    try {
      await closing
    } finally {
      if (this.#closing.get(key) === closing) this.#closing.delete(key)
    }
  }

  /**
   * Closes every open connection of the registration's listener (those of the units sharing it
   * too: a connection belongs to no single unit); returns how many it closed.
   */
  dropConnections(registration: ModbusRegistration): number {
    const listener = this.#listeners.get(registrationKey(registration))
    return listener !== undefined && listener.has(registration.unitId) ? listener.dropConnections() : 0
  }

  /** For a serial registration: what is wrong with its line while it is being reopened, else null. */
  lineProblem(registration: ModbusRegistration): string | null {
    const listener = this.#listeners.get(registrationKey(registration))
    return listener instanceof ModbusSerialListener ? listener.problem : null
  }

  /** The open listeners. */
  listeners(): ModbusListenerInfo[] {
    return [...this.#listeners.values()].map((l) => ({
      host: l.host,
      transport: l.transport,
      port: l.port,
      ...(l instanceof ModbusSerialListener ? { device: l.device } : {}),
      unitIds: l.unitIds,
      connections: l.connectionCount,
      rules: l.rules,
    }))
  }

  /** Closes every listener and destroys every connection. */
  async close(): Promise<void> {
    const all = [...this.#listeners.values(), ...this.#anonymous]
    this.#listeners.clear()
    this.#anonymous.clear()
    await Promise.all(all.map((l) => l.close()))
  }

  async #registerOnFreePort(host: string, transport: Exclude<ModbusTransport, 'serial'>, unitId: number, unit: ModbusUnit): Promise<ModbusRegistration> {
    for (let port = this.#firstAutoPort; port <= 65535; port++) {
      const key = keyOf(transport, host, port)
      if (this.#listeners.has(key) || this.#closing.has(key)) continue
      const listener = this.#newListener(host, port, transport)
      // Claimed before the first await, so concurrent searches skip this port.
      this.#listeners.set(key, listener)
      listener.add(unitId, unit)
      try {
        await listener.listen()
        return { host, transport, port, unitId, unit }
      } catch (error) {
        if (this.#listeners.get(key) === listener) this.#listeners.delete(key)
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'EADDRINUSE' || code === 'EACCES') continue
        throw listenFailure(host, port, error)
      }
    }
    const message = `no free port from ${this.#firstAutoPort} up on ${host}`
    throw new ConflictError(`Cannot open a Modbus listener: ${message}`, [{ path: 'port', message }])
  }

  async #registerAnonymous(host: string, transport: Exclude<ModbusTransport, 'serial'>, unitId: number, unit: ModbusUnit): Promise<ModbusRegistration> {
    const listener = this.#newListener(host, 0, transport)
    this.#anonymous.add(listener)
    listener.add(unitId, unit)
    let port: number
    try {
      port = await listener.listen()
    } catch (error) {
      throw listenFailure(host, 0, error)
    } finally {
      this.#anonymous.delete(listener)
    }
    this.#listeners.set(keyOf(transport, host, port), listener)
    return { host, transport, port, unitId, unit }
  }

  /** Joins the line of the device, or opens it; the units of a line share its settings. */
  async #registerSerial(options: ModbusRegisterOptions): Promise<ModbusRegistration> {
    const { unitId, unit, serial } = options
    if (serial === undefined) throw new ValidationError('transport serial needs a device', [{ path: 'device', message: 'transport serial needs a device' }])
    const key = serialKey(serial.device)
    const closing = this.#closing.get(key)
    if (closing !== undefined && !this.#listeners.has(key)) await closing
    let listener = this.#listeners.get(key)
    if (listener !== undefined) {
      const line = (listener as ModbusSerialListener).settings
      for (const name of ['baudrate', 'parity', 'stopbits', 'bytesize'] as const) {
        if (line[name] === serial[name]) continue
        const message = `serial device ${serial.device} is open with ${name} ${line[name]}, not ${serial[name]}: the units of a line share its settings`
        throw new ConflictError(`Cannot open a Modbus serial line: ${message}`, [{ path: name, message }])
      }
      if (listener.has(unitId)) {
        const message = `Modbus unit id ${unitId} is already in use on serial device ${serial.device}`
        throw new ValidationError(message, [{ path: 'unit_id', message }])
      }
    } else {
      listener = new ModbusSerialListener({ settings: serial, logger: this.#logger })
      this.#listeners.set(key, listener)
    }
    listener.add(unitId, unit)
    try {
      await listener.listen()
    } catch (error) {
      listener.remove(unitId, unit)
      if (this.#listeners.get(key) === listener) this.#listeners.delete(key)
      const message = error instanceof SerialLineError ? error.message : `serial device ${serial.device}: ${(error as Error).message}`
      throw new ConflictError(`Cannot open a Modbus serial line: ${message}`, [{ path: 'device', message }])
    }
    return { host: '', transport: 'serial', port: 0, device: serial.device, unitId, unit }
  }

  #newListener(host: string, port: number, transport: Exclude<ModbusTransport, 'serial'>): AnyListener {
    if (transport === 'udp') return new ModbusUdpListener({ host, port, logger: this.#logger })
    return new ModbusListener({ host, port, logger: this.#logger, transport })
  }
}

function serialKey(device: string): string {
  return `serial:${device}`
}

function registrationKey(registration: ModbusRegistration): string {
  return registration.transport === 'serial' ? serialKey(registration.device ?? '') : keyOf(registration.transport, registration.host, registration.port)
}

/** The key of a listener: tcp and rtu_over_tcp share the TCP port space, udp has its own. */
function keyOf(transport: ModbusTransport, host: string, port: number): string {
  return transport === 'udp' ? `udp:${host}:${port}` : `${host}:${port}`
}

function listenFailure(host: string, port: number, error: unknown, servedOn?: string, heldBy?: HeldPort): ConflictError {
  const problem = listenProblem(error, host, port, { servedOn, shared: true, heldBy })
  return new ConflictError(`Cannot open a Modbus listener: ${problem.message}`, [problem])
}
