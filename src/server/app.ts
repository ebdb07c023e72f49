import type { Socket } from 'node:net'
import Fastify, { LogController, type FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { NotFoundError, UnauthorizedError } from '../errors.js'
import type { System } from '../system/system.js'
import { API_VERSION, SERVER_VERSION } from '../version.js'
import { bearerCheck } from './auth.js'
import { attachFastLane, treeLaneHandler } from './fast-lane/index.js'
import { buildFault, correlationIdOf, faultFor, logFault } from './faults.js'
import { parseJsonBody } from './json-body.js'
import { serveInTurn } from './pipelining.js'
import { registerApiDocs } from './api-docs.js'
import { registerTreeRoutes } from './tree-routes.js'

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
}

/**
 * Builds the HTTP server: open endpoints, Bearer auth on `/api/v3/**`, the generic tree routes
 * and one error handler that turns every error into the fault document of API.md section 6.
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
    // The matched route decides too: the router decodes the path, so `/%61pi/v3/...` reaches an
    // /api route although the raw URL does not start with /api/.
    const protectedPath = req.url.startsWith('/api/') || (req.routeOptions.url ?? '').startsWith('/api/')
    done(protectedPath && !authorized(req.headers.authorization) ? new UnauthorizedError() : undefined)
  })

  app.setErrorHandler((error, req, reply) => {
    const { status, fault } = faultFor(error, req.mimicFault ?? { action: req.method.toLowerCase(), component: null }, req.id, req.log)
    void reply.status(status).header('x-correlation-id', req.id).send(fault)
  })

  app.setNotFoundHandler((req, reply) => {
    const err = new NotFoundError(`No route ${req.method} ${req.url.split('?')[0]} (the API lives under /api/${API_VERSION}/system)`)
    const fault = buildFault(err, { action: req.method.toLowerCase(), component: null, correlationId: req.id })
    logFault(opts.logger, fault)
    void reply.status(404).send(fault)
  })

  registerApiDocs(app)

  app.get('/', async () => ({
    message: 'Mimic device-simulation server. API under /api/v3/system, docs at /docs.',
    server_version: SERVER_VERSION,
    api_version: API_VERSION,
    supported_versions: [API_VERSION],
  }))
  app.get('/health', async () => ({
    status: 'ok',
    server_version: SERVER_VERSION,
    api_version: API_VERSION,
    uptime_s: Math.round(process.uptime()),
    instances: opts.system.instances.size,
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
  for (const plugin of opts.plugins ?? []) await plugin(app)

  if (opts.fastLane) {
    const lane = attachFastLane(app.server, treeLaneHandler({ system: opts.system, authorized, logger: opts.logger }), {
      bodyLimit: opts.bodyLimit,
      logger: opts.logger,
    })
    app.addHook('preClose', async () => lane.close())
  } else {
    closeSilentConnections(app)
  }
  return app
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
