import Fastify from 'fastify'
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { ConflictError } from '../../errors.js'
import { HTTP_ENDPOINT_BODY_LIMIT, HTTP_ENDPOINT_MAX_CONNECTIONS } from '../../definition/http-endpoint-schema.js'
import { listenProblem } from '../adapter-kit.js'
import type { HeldPort, PortHolder } from '../adapter.js'

/**
 * The HTTP servers of the `http_endpoint` adapters of one server: one fastify instance per
 * adapter, on a port of its own, so that a second adapter on a port one already serves is a
 * conflict (409) naming it, and another protocol's listener on the port is named too.
 *
 * Without a product key the server listens on loopback only (docs/security.md); an adapter whose
 * host is another address (the catalog's models say 0.0.0.0) is then served on 127.0.0.1, and a
 * warning says so. With a key the host is used as written: like Modbus and SCPI, a device's HTTP
 * endpoint has no authentication of its own, and the operator decides where it is reachable.
 *
 * @example
 * const hub = new HttpEndpointHub({ logger, loopbackOnly: true })
 * const server = await hub.open({ host: '0.0.0.0', port: 8092, owner: 'aq.http_endpoint', setup: (app) => app.all('*', handler) })
 * server.host // '127.0.0.1'
 * await hub.release(server)
 */

/** An open server. */
export interface HttpServer {
  /** The host asked for. */
  readonly asked: string
  /** The host listened on. */
  readonly host: string
  readonly port: number
  readonly app: FastifyInstance
}

/** Whether a listen address is on this machine only. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)
}

/**
 * The servers of one Mimic server (see the module comment).
 *
 * @example
 * await hub.close()
 */
export class HttpEndpointHub {
  readonly #logger: Logger
  readonly #loopbackOnly: boolean
  readonly #portHolder: PortHolder | undefined
  readonly #servers = new Map<number, { server: HttpServer; owner: string }>()

  constructor(options: { logger: Logger; loopbackOnly: boolean; portHolder?: PortHolder | undefined }) {
    this.#logger = options.logger
    this.#loopbackOnly = options.loopbackOnly
    this.#portHolder = options.portHolder
  }

  heldPorts(): HeldPort[] {
    return [...this.#servers.values()].map(({ server, owner }) => ({
      transport: 'tcp' as const,
      host: server.host,
      port: server.port,
      holder: `HTTP endpoint adapter '${owner}'`,
    }))
  }

  /** Opens a server with the routes `setup` adds; resolves once clients can connect. ConflictError (409) when the port cannot be had. */
  async open(options: { host: string; port: number; owner: string; setup: (app: FastifyInstance) => void }): Promise<HttpServer> {
    const { port, owner } = options
    const host = this.#loopbackOnly && !isLoopbackHost(options.host) ? '127.0.0.1' : options.host
    if (host !== options.host) {
      this.#logger.warn(
        { adapter: owner, host: options.host, served_on: host },
        `http_endpoint '${owner}' asks for host ${options.host}: served on ${host}, as the server has no product key (docs/http-endpoint.md)`,
      )
    }
    const holder = port === 0 ? undefined : this.#servers.get(port)
    if (holder !== undefined) {
      const message = `port ${port} is already served by HTTP endpoint adapter '${holder.owner}'`
      throw new ConflictError(`Cannot open an http_endpoint: ${message}`, [{ path: 'port', message }])
    }
    const app = Fastify({ logger: false, bodyLimit: HTTP_ENDPOINT_BODY_LIMIT, forceCloseConnections: true, return503OnClosing: true })
    // Clients beyond this many open connections are turned away by the socket (node:http's limit).
    app.server.maxConnections = HTTP_ENDPOINT_MAX_CONNECTIONS
    options.setup(app)
    try {
      await app.listen({ host, port, listenTextResolver: () => '' })
    } catch (error) {
      await app.close().catch(() => undefined)
      const problem = listenProblem(error, host, port, { heldBy: this.#portHolder?.('tcp', port) })
      throw new ConflictError(`Cannot open an http_endpoint: ${problem.message}`, [problem])
    }
    const address = app.server.address()
    const actual = typeof address === 'object' && address !== null ? address.port : port
    const server: HttpServer = { asked: options.host, host, port: actual, app }
    this.#servers.set(actual, { server, owner })
    return server
  }

  /** Closes a server and frees its port. */
  async release(server: HttpServer): Promise<void> {
    if (this.#servers.get(server.port)?.server === server) this.#servers.delete(server.port)
    await server.app.close()
  }

  async close(): Promise<void> {
    const all = [...this.#servers.values()].map((s) => s.server)
    this.#servers.clear()
    await Promise.all(all.map((s) => s.app.close().catch(() => undefined)))
  }
}
