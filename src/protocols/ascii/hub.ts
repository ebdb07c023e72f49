import { pino } from 'pino'
import type { Logger } from 'pino'
import { ConflictError } from '../../errors.js'
import { listenProblem } from '../adapter-kit.js'
import type { HeldPort, PortHolder } from '../adapter.js'
import type { AsciiTransport } from '../../definition/ascii-schema.js'
import { ASCII_DEFAULTS } from '../../definition/ascii-schema.js'
import type { SerialSettings } from '../../definition/serial-schema.js'
import { SerialLineError } from '../serial/port.js'
import { TcpEndpoint, UdpEndpoint } from './endpoint.js'
import type { Endpoint, LineHandler } from './endpoint.js'
import { SerialEndpoint } from './serial.js'
import { Vxi11Endpoint } from './vxi11.js'

/**
 * The `ascii` endpoints of one server, by transport, host and port. An instrument answers on a
 * port of its own, so a second adapter on a port one already serves is a conflict (409). An
 * adapter that names no port gets the first port from 5025 (the SCPI raw-socket port) up that is
 * free on its host: neither held by another program nor by another adapter.
 *
 * @example
 * const hub = new AsciiHub({ logger })
 * const endpoint = await hub.open({ transport: 'tcp', host: '127.0.0.1', owner: 'dmm.ascii', handler })
 * endpoint.port // 5025 when it was free
 * await hub.release(endpoint)
 */

/** What to open. */
export interface AsciiOpenOptions {
  transport: AsciiTransport
  host: string
  /** Omitted: the first free port >= firstAutoPort. 0: a port the operating system chooses. */
  port?: number
  /** Who holds the endpoint, named in conflicts (e.g. 'dmm.ascii'). */
  owner: string
  handler: LineHandler
  /** Transport serial: the line. */
  serial?: SerialSettings
  /** Transport vxi11: the port mapper's port (undefined: 111 when allowed, else none) and the device name. */
  vxi11?: { portmapperPort: number | undefined; deviceName: string }
}

/**
 * The endpoints of one server (see the module comment).
 *
 * @example
 * await hub.close()
 */
export class AsciiHub {
  readonly #logger: Logger
  readonly #firstAutoPort: number
  readonly #endpoints = new Map<string, { endpoint: Endpoint; owner: string }>()
  readonly #closing = new Map<string, Promise<void>>()

  readonly #portHolder: PortHolder | undefined

  constructor(options: { logger?: Logger; firstAutoPort?: number; portHolder?: PortHolder } = {}) {
    this.#logger = options.logger ?? pino({ level: 'silent' })
    this.#firstAutoPort = options.firstAutoPort ?? ASCII_DEFAULTS.first_port
    this.#portHolder = options.portHolder
  }

  heldPorts(): HeldPort[] {
    return [...this.#endpoints.values()].flatMap(({ endpoint, owner }) => {
      const holder = `text instrument adapter '${owner}'`
      if (endpoint.listeners !== undefined) {
        return endpoint
          .listeners()
          .map((l) => ({ transport: l.transport, host: endpoint.host, port: l.port, holder: l.role ? `${holder} (${l.role})` : holder }))
      }
      return [{ transport: endpoint.transport === 'udp' ? ('udp' as const) : ('tcp' as const), host: endpoint.host, port: endpoint.port, holder }]
    })
  }

  /** Opens an endpoint; resolves once clients can reach it. Throws ConflictError (409) when the port cannot be had. */
  async open(options: AsciiOpenOptions): Promise<Endpoint> {
    const { transport, host, port, owner, handler } = options
    if (transport === 'serial') return this.#openSerial(options)
    if (transport === 'vxi11') return this.#openVxi11(options)
    if (port === undefined) return this.#openFree(options)
    if (port !== 0) {
      const key = `${transport}:${host}:${port}`
      const closing = this.#closing.get(key)
      if (closing !== undefined) await closing
      const holder = this.#endpoints.get(key)
      if (holder !== undefined) {
        const message = `${transport} port ${host}:${port} is already served by adapter '${holder.owner}'`
        throw new ConflictError(`Cannot open an ascii endpoint: ${message}`, [{ path: 'port', message }])
      }
    }
    const endpoint = this.#endpoint(transport, host, port, handler)
    const claim = port === 0 ? null : `${transport}:${host}:${port}`
    if (claim !== null) this.#endpoints.set(claim, { endpoint, owner })
    try {
      const actual = await endpoint.listen()
      if (claim === null) this.#endpoints.set(`${transport}:${host}:${actual}`, { endpoint, owner })
      return endpoint
    } catch (error) {
      if (claim !== null) this.#endpoints.delete(claim)
      await endpoint.close()
      throw listenFailure(transport, host, port, error, this.#servedOn(transport, host, port), this.#portHolder?.(transport, port))
    }
  }

  /** Closes an endpoint and frees its port. */
  async release(endpoint: Endpoint): Promise<void> {
    let key = `${endpoint.transport}:${endpoint.host}:${endpoint.port}`
    for (const [k, held] of this.#endpoints) if (held.endpoint === endpoint) key = k
    if (this.#endpoints.get(key)?.endpoint === endpoint) this.#endpoints.delete(key)
    const closing = endpoint.close()
    this.#closing.set(key, closing)
    try {
      await closing
    } finally {
      if (this.#closing.get(key) === closing) this.#closing.delete(key)
    }
  }

  /** Closes every endpoint. */
  async close(): Promise<void> {
    const all = [...this.#endpoints.values()].map((e) => e.endpoint)
    this.#endpoints.clear()
    await Promise.all(all.map((e) => e.close()))
  }

  async #openFree(options: AsciiOpenOptions): Promise<Endpoint> {
    const { transport, host, owner, handler } = options
    for (let port = this.#firstAutoPort; port <= 65535; port++) {
      const key = `${transport}:${host}:${port}`
      if (this.#endpoints.has(key) || this.#closing.has(key)) continue
      const endpoint = this.#endpoint(transport, host, port, handler)
      // Claimed before the first await, so concurrent searches skip this port.
      this.#endpoints.set(key, { endpoint, owner })
      try {
        await endpoint.listen()
        return endpoint
      } catch (error) {
        this.#endpoints.delete(key)
        await endpoint.close()
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'EADDRINUSE' || code === 'EACCES') continue
        throw listenFailure(transport, host, port, error)
      }
    }
    const message = `no free ${transport} port from ${this.#firstAutoPort} up on ${host}`
    throw new ConflictError(`Cannot open an ascii endpoint: ${message}`, [{ path: 'port', message }])
  }

  /** A serial line: one adapter per device (the device is locked while open, so another program cannot share it either). */
  async #openSerial(options: AsciiOpenOptions): Promise<Endpoint> {
    const settings = options.serial!
    const key = `serial:${settings.device}`
    const closing = this.#closing.get(key)
    if (closing !== undefined) await closing
    const holder = this.#endpoints.get(key)
    if (holder !== undefined) {
      const message = `serial device ${settings.device} is already served by adapter '${holder.owner}'`
      throw new ConflictError(`Cannot open an ascii endpoint: ${message}`, [{ path: 'device', message }])
    }
    const endpoint = new SerialEndpoint({ settings, logger: this.#logger, handler: options.handler })
    this.#endpoints.set(key, { endpoint, owner: options.owner })
    try {
      await endpoint.listen()
      return endpoint
    } catch (error) {
      this.#endpoints.delete(key)
      await endpoint.close().catch(() => undefined)
      const message = error instanceof SerialLineError ? error.message : `serial device ${settings.device}: ${(error as Error).message}`
      throw new ConflictError(`Cannot open an ascii endpoint: ${message}`, [{ path: 'device', message }])
    }
  }

  /**
   * A VXI-11 server: its core channel on `port` (omitted or 0: one the OS chooses) and its port
   * mapper on `portmapper_port`. Omitted, the port mapper takes 111 when this process may bind it,
   * and else runs without one (a warning says how clients reach it then).
   */
  async #openVxi11(options: AsciiOpenOptions): Promise<Endpoint> {
    const { host, owner, handler } = options
    const { portmapperPort, deviceName } = options.vxi11!
    const mapper = portmapperPort ?? ASCII_DEFAULTS.portmapper_port
    const key = `vxi11:${host}:${mapper}`
    const closing = this.#closing.get(key)
    if (closing !== undefined) await closing
    const holder = mapper === 0 ? undefined : this.#endpoints.get(key)
    if (holder !== undefined) {
      const message = `the VXI-11 port mapper ${host}:${mapper} is already served by adapter '${holder.owner}': give this instrument another host (127.0.0.2, ...) or portmapper_port`
      throw new ConflictError(`Cannot open an ascii endpoint: ${message}`, [{ path: 'host', message }])
    }
    const open = async (withMapper: number | null): Promise<Vxi11Endpoint> => {
      const endpoint = new Vxi11Endpoint({ host, port: options.port ?? 0, portmapperPort: withMapper, deviceName, logger: this.#logger, handler })
      try {
        await endpoint.listen()
        return endpoint
      } catch (error) {
        await endpoint.close()
        throw error
      }
    }
    let endpoint: Vxi11Endpoint
    try {
      endpoint = await open(mapper)
    } catch (error) {
      const which = (error as { vxi11Listener?: string }).vxi11Listener
      const code = (error as NodeJS.ErrnoException).code
      if (portmapperPort === undefined && which === 'portmapper' && (code === 'EACCES' || code === 'EADDRINUSE')) {
        endpoint = await open(null).catch((again: unknown) => {
          throw listenFailure('tcp', host, options.port ?? 0, again)
        })
        this.#logger.warn(
          { adapter: owner, host, port: endpoint.port },
          `VXI-11 instrument '${owner}' has no port mapper: port 111 on ${host} is ${code === 'EACCES' ? 'privileged' : 'in use'}; ` +
            'VISA clients find the core channel through port 111 only: set portmapper_port, or see docs/ascii-serial-vxi11.md',
        )
      } else {
        const port = which === 'portmapper' ? mapper : (options.port ?? 0)
        throw listenFailure(
          which === 'portmapper' ? 'VXI-11 port mapper' : 'VXI-11 core channel',
          host,
          port,
          error,
          undefined,
          this.#portHolder?.('tcp', port),
        )
      }
    }
    const claim = `vxi11:${host}:${endpoint.portmapperPort ?? `none:${endpoint.port}`}`
    this.#endpoints.set(claim, { endpoint, owner })
    return endpoint
  }

  /** Another host on which an endpoint of this hub holds the port, with its adapter. */
  #servedOn(transport: AsciiTransport | string, host: string, port: number): string | undefined {
    for (const { endpoint, owner } of this.#endpoints.values()) {
      if (endpoint.transport === transport && endpoint.port === port && endpoint.host !== host) return `${endpoint.host} (adapter '${owner}')`
    }
    return undefined
  }

  #endpoint(transport: AsciiTransport, host: string, port: number, handler: LineHandler): Endpoint {
    const options = { host, port, logger: this.#logger, handler }
    return transport === 'udp' ? new UdpEndpoint(options) : new TcpEndpoint(options)
  }
}

function listenFailure(transport: string, host: string, port: number, error: unknown, servedOn?: string, heldBy?: HeldPort): ConflictError {
  const problem = listenProblem(error, host, port, { label: transport, servedOn, heldBy })
  return new ConflictError(`Cannot open an ascii endpoint: ${problem.message}`, [problem])
}
