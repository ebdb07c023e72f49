import { pino } from 'pino'
import type { Logger } from 'pino'
import { ConflictError } from '../../errors.js'
import { listenProblem } from '../adapter-kit.js'
import type { HeldPort, PortHolder } from '../adapter.js'
import type { AsciiTransport } from '../../definition/ascii-schema.js'
import { ASCII_DEFAULTS } from '../../definition/ascii-schema.js'
import { TcpEndpoint, UdpEndpoint } from './endpoint.js'
import type { Endpoint, LineHandler } from './endpoint.js'

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
    return [...this.#endpoints.values()].map(({ endpoint, owner }) => ({
      transport: endpoint.transport,
      host: endpoint.host,
      port: endpoint.port,
      holder: `text instrument adapter '${owner}'`,
    }))
  }

  /** Opens an endpoint; resolves once clients can reach it. Throws ConflictError (409) when the port cannot be had. */
  async open(options: AsciiOpenOptions): Promise<Endpoint> {
    const { transport, host, port, owner, handler } = options
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
    const key = `${endpoint.transport}:${endpoint.host}:${endpoint.port}`
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

  /** Another host on which an endpoint of this hub holds the port, with its adapter. */
  #servedOn(transport: AsciiTransport, host: string, port: number): string | undefined {
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
