import type { Socket } from 'node:net'
import Fastify, { LogController, type FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { NotFoundError, UnauthorizedError } from '../errors.js'
import type { System } from '../system/system.js'
import { API_VERSION, SERVER_VERSION } from '../version.js'
import { bearerCheck } from './auth.js'
import { BrowserGuard } from './browser-guard.js'
import { capConnections } from './connection-cap.js'
import { attachFastLane, treeLaneHandler, type FastLane } from './fast-lane/index.js'
import { buildFault, correlationIdOf, faultFor, logFault } from './faults.js'
import { MAX_LOGGED_CHARS, RefusalLog } from './refusal-log.js'
import { parseJsonBody } from './json-body.js'
import { serveInTurn } from './pipelining.js'
import { registerApiDocs } from './api-docs.js'
import { registerTreeRoutes } from './tree-routes.js'
import { registerAdminRoutes } from './admin-routes.js'

declare module 'fastify' {
  interface FastifyRequest {
    correlationId: string
  }
}

/** What the HTTP layer needs. */
export interface AppOptions {
  system: System
  logger: Logger
  productKey?: string
  bodyLimit: number
  /** Plain tree requests answered straight from the socket (fast-lane/); off, node:http serves every request. */
  fastLane: boolean
  /** Extra routes (the event stream, the dashboard) registered by their own modules. */
  plugins?: Array<(app: FastifyInstance) => void | Promise<void>>
  /** `--allowed-hosts`: Host names answered besides loopback names and IP addresses (browser-guard.ts). */
  allowedHosts?: readonly string[]
  /** `--cors-origin`: web origins whose pages may call the API, answered with CORS headers. */
  corsOrigins?: readonly string[]
  /** `--max-connections` (default 1024), lowered under a low descriptor limit (connection-cap.ts). */
  maxConnections?: number
  /** `--max-connections-per-address` (default 256). */
  maxConnectionsPerAddress?: number
  /** Hears every answer: the route's pattern, method, status and seconds taken (/metrics, metrics.ts). */
  observeHttp?: (route: string, method: string, status: number, seconds: number) => void
}

/** Default of `--max-connections`. */
export const DEFAULT_MAX_CONNECTIONS = 1024
/** Default of `--max-connections-per-address`. */
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256

/**
 * Builds the HTTP server: open endpoints, Bearer auth on `/api/v3/**`, the generic tree routes
 * and one error handler that turns every error into the fault document of API.md section 6.
 * Before anything else, every request passes the browser checks (browser-guard.ts: Host,
 * Origin, JSON bodies, CORS), and every connection the caps (connection-cap.ts); refusals are
 * logged at a sampled rate (refusal-log.ts).
 *
 * @example
 * const app = await buildApp({ system, logger, bodyLimit: 1 << 20, fastLane: true })
 * await app.listen({ port: 0, host: '127.0.0.1' })
 */
export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  // Typed as a plain instance: the pino Logger generic fastify infers adds nothing plugins can use.
  const app = Fastify({
    loggerInstance: opts.logger,
    // Per-request lines would drown the log of a server polled many times a second.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: opts.bodyLimit,
    // Correlation ids are ours; fastify's request ids would be a second, confusing id.
    genReqId: (req) => correlationIdOf(req.headers['x-correlation-id']),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 4096 },
    // No child logger per request: faults log their correlation id themselves, and a child per
    // request is measurable work on a server polled thousands of times a second.
    childLoggerFactory: (logger) => logger,
  }) as unknown as FastifyInstance
  // Pipelined requests one at a time per connection, a bounded number waiting (pipelining.ts).
  serveInTurn(app.server, { logger: opts.logger })
  const authorized = bearerCheck(opts.productKey)
  const guard = new BrowserGuard({ allowedHosts: opts.allowedHosts ?? [], corsOrigins: opts.corsOrigins ?? [], productKeySet: Boolean(opts.productKey) })
  const refusals = new RefusalLog(opts.logger)
  app.addHook('onClose', async () => refusals.close())

  const observe = opts.observeHttp
  if (observe)
    app.addHook('onResponse', (req, reply, done) => {
      observe(req.routeOptions.url ?? 'unmatched', req.method, reply.statusCode, reply.elapsedTime / 1000)
      done()
    })

  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: opts.bodyLimit }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as string))
    } catch (err) {
      done(err as Error, undefined)
    }
  })

  // A callback hook, not an async one: no promise per request.
  app.addHook('onRequest', (req, reply, done) => {
    req.correlationId = req.id
    reply.header('x-correlation-id', req.id)
    const headers = req.headers
    const origin = headerText(headers.origin)
    const cors = guard.corsHeaders(origin)
    // On the raw response: the event stream and /mcp write their heads themselves.
    if (cors) for (const [name, value] of Object.entries(cors)) reply.raw.setHeader(name, value)
    if (req.method === 'OPTIONS' && origin !== undefined && headers['access-control-request-method'] !== undefined) {
      const answer = guard.hostRefusal(headerText(headers.host)) ?? guard.preflight(origin)
      if (answer instanceof Error) return done(answer)
      void reply.status(204).headers(answer.headers).send()
      return
    }
    const refusal = guard.refusal({
      method: req.method,
      // The matched route: the router decodes the path, so `/%6dcp` is /mcp.
      url: req.routeOptions.url ?? req.url,
      host: headerText(headers.host),
      origin,
      secFetchSite: headerText(headers['sec-fetch-site']),
      contentType: headers['content-type'],
      // `Content-Length: 00` is no body either, as node reads it.
      hasBody: (headers['content-length'] !== undefined && Number(headers['content-length']) !== 0) || headers['transfer-encoding'] !== undefined,
    })
    if (refusal) return done(refusal)
    // The matched route decides too: the router decodes the path, so `/%61pi/v3/...` reaches an
    // /api route although the raw URL does not start with /api/.
    const protectedPath = req.url.startsWith('/api/') || (req.routeOptions.url ?? '').startsWith('/api/')
    done(protectedPath && !authorized(req.headers.authorization) ? new UnauthorizedError() : undefined)
  })

  app.setErrorHandler((error, req, reply) => {
    const { status, fault } = faultFor(error, req.mimicFault ?? { action: req.method.toLowerCase(), component: null }, req.id, refusals)
    void reply.status(status).header('x-correlation-id', req.id).send(fault)
  })

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0]!
    // The client knows what it sent: a long path is not repeated whole, in the answer or the log.
    const shown = path.length > MAX_LOGGED_CHARS ? `${path.slice(0, MAX_LOGGED_CHARS)}... (${path.length} characters)` : path
    const err = new NotFoundError(`No route ${req.method} ${shown} (the API lives under /api/${API_VERSION}/system)`)
    const fault = buildFault(err, { action: req.method.toLowerCase(), component: null, correlationId: req.id })
    logFault(refusals, fault)
    void reply.status(404).send(fault)
  })

  registerApiDocs(app)

  app.get('/', async () => ({
    message: 'Mimic device-simulation server. API under /api/v3/system, docs at /docs.',
    server_version: SERVER_VERSION,
    api_version: API_VERSION,
    supported_versions: [API_VERSION],
  }))

  // A request still running when close() begins leaves its keep-alive connection idle afterwards,
  // and http.Server.close() would wait for it until the keep-alive timeout (72 s): while closing,
  // close such connections as soon as they are idle.
  let sweep: NodeJS.Timeout | undefined
  app.addHook('preClose', async () => {
    sweep = setInterval(() => app.server.closeIdleConnections(), 50)
    sweep.unref()
  })
  app.addHook('onClose', async () => clearInterval(sweep))

  registerTreeRoutes(app, opts.system)
  registerAdminRoutes(app, opts.system, authorized)
  for (const plugin of opts.plugins ?? []) await plugin(app)

  let lane: FastLane | undefined
  if (opts.fastLane) {
    const handler = treeLaneHandler({
      system: opts.system,
      authorized,
      guard,
      logger: refusals,
      ...(observe ? { observe: (method: string, status: number, seconds: number) => observe(TREE_ROUTE, method, status, seconds) } : {}),
    })
    lane = attachFastLane(app.server, handler, {
      bodyLimit: opts.bodyLimit,
      logger: opts.logger,
    })
    const attached = lane
    app.addHook('preClose', async () => attached.close())
  } else {
    closeSilentConnections(app)
  }
  // Last, so the caps decide before node:http or the lane sees a connection.
  const maxConnections = opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS
  const connections = capConnections(app.server, {
    maxConnections,
    maxConnectionsPerAddress: opts.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    refusals,
    ...(lane ? { laneIdleSince: lane.idleSince } : {}),
  })
  // After the caps, whose counters it shows; routes may come in any order before listen().
  app.get('/health', async () => ({
    status: 'ok',
    server_version: SERVER_VERSION,
    api_version: API_VERSION,
    uptime_s: Math.round(process.uptime()),
    instances: opts.system.instances.size,
    ...(opts.system.shard ? { shard: opts.system.shardText } : {}),
    unsupported_adapters: opts.system.unsupportedAdapters(),
    // Every protocol listener open now: kind, transport, host, port and what it serves.
    listeners: opts.system.services.protocols.listeners(),
    http: { connections: connections.stats(), refused: refusals.counts() },
  }))
  const { limit } = connections.stats()
  if (limit < maxConnections)
    opts.logger.info(
      { limit, max_connections: maxConnections },
      `HTTP connections capped at ${limit}, below --max-connections ${maxConnections}: the process may open few descriptors (ulimit -n), and the rest are kept for files and protocol sockets`,
    )
  return app
}

/** A header's single value (node:http joins repeated ones or keeps the first, by header). */
function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

/**
 * Closes, when the server closes, the connections that never sent a byte. node:http counts them
 * as requests under way (their headers timeout runs from the connection, 60 s), so close() would
 * wait for them; the fast lane closes them itself, so this is for `--fast-lane off`.
 */
function closeSilentConnections(app: FastifyInstance): void {
  const sockets = new Set<Socket>()
  app.server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })
  app.addHook('preClose', async () => {
    for (const socket of sockets) if (socket.bytesRead === 0) socket.destroy()
  })
}

/** The tree route's pattern, as fastify names it for the requests it serves itself. */
const TREE_ROUTE = '/api/v3/system/*'
