import Fastify, { LogController, type FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { BadRequestError, MimicError, NotFoundError, PayloadTooLargeError, UnauthorizedError } from '../errors.js'
import type { System } from '../system/system.js'
import { API_VERSION, SERVER_VERSION } from '../version.js'
import { bearerCheck } from './auth.js'
import { attachFastLane, type LaneHandler, type LaneRequest, type LaneResponse } from './fast-lane.js'
import { asMimicError, buildFault, correlationIdOf, type FaultDocument } from './faults.js'
import { parseJsonBody } from './json-body.js'
import { serveInTurn } from './pipelining.js'
import { registerApiDocs } from './api-docs.js'
import { JsonText, answerTree, guessComponent, registerTreeRoutes, treeFaultContext, type RequestFaultContext } from './tree-routes.js'

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
  /** Extra routes (the event stream, the dashboard) registered by their own modules. */
  plugins?: Array<(app: FastifyInstance) => void | Promise<void>>
}

/**
 * Builds the HTTP server: open endpoints, Bearer auth on `/api/v3/**`, the generic tree routes
 * and one error handler that turns every error into the fault document of API.md section 6.
 *
 * @example
 * const app = await buildApp({ system, logger, bodyLimit: 1 << 20 })
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
    void reply.status(404).send(buildFault(err, { action: req.method.toLowerCase(), component: null, correlationId: req.id }))
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

  const lane = attachFastLane(app.server, treeLane(opts.system, authorized, opts.logger), { bodyLimit: opts.bodyLimit })
  app.addHook('preClose', async () => lane.close())
  return app
}

/** Tree URLs the fast lane answers: plain segments only (no percent-encoding, query or empty segment). */
const LANE_URL = /^\/api\/v3\/system(?:\/[A-Za-z0-9_-]+)*$/

/**
 * The fast lane's handler (see fast-lane.ts): tree requests with a plain URL, an accepted key
 * and a body that parses, answered by the same code as the fastify route. Everything else is
 * declined before it runs, so fastify answers it, 401s and 400s included.
 */
function treeLane(system: System, authorized: (header: string | undefined) => boolean, log: Logger): LaneHandler {
  return (req) => {
    if (!LANE_URL.test(req.url) || !authorized(req.headers.authorization)) return undefined
    let body: unknown
    try {
      body = parseJsonBody(req.body)
    } catch {
      return undefined
    }
    return answerLane(system, req, body, log)
  }
}

/** The lane's answer to a tree request it took: the route's document, or the fault fastify would send. */
function answerLane(system: System, req: LaneRequest, body: unknown, log: Logger): LaneResponse | Promise<LaneResponse> {
  const id = correlationIdOf(req.headers['x-correlation-id'])
  const context = treeFaultContext(req.method)
  const answered = (result: unknown): LaneResponse => ({
    status: 200,
    headers: `x-correlation-id: ${id}\r\ncache-control: no-store\r\n`,
    body: result instanceof JsonText ? result.text : JSON.stringify(result),
  })
  const failed = (error: unknown): LaneResponse => {
    const { status, fault } = faultFor(error, context, id, log)
    return { status, headers: `x-correlation-id: ${id}\r\n`, body: JSON.stringify(fault) }
  }
  try {
    const result = answerTree(system, req.method, req.url, body, context)
    // A read is answered in this turn, without a promise chain (see answerTree).
    if (!(result instanceof Promise)) return answered(result)
    return result.then((value) => {
      try {
        return answered(value)
      } catch (error) {
        return failed(error)
      }
    }, failed)
  } catch (error) {
    return failed(error)
  }
}

/** The status and fault document (API.md section 6) for an error, logged when it is the server's. */
function faultFor(error: unknown, base: RequestFaultContext, correlationId: string, log: Pick<Logger, 'error'>): { status: number; fault: FaultDocument } {
  const err = fastifyToMimic(error)
  if (err.status >= 500) log.error({ err: error, correlationId }, err.message)
  // The state as it is now: a failed prepare has just moved the instance to ERROR.
  const component = err.component ?? base.node?.faultInfo() ?? base.component ?? (base.segments ? guessComponent(base.segments) : null)
  return { status: err.status, fault: buildFault(err, { action: base.action, component, correlationId }) }
}

/** Maps fastify's own errors (body too large, bad content) onto the fault catalogue. */
function fastifyToMimic(error: unknown): MimicError {
  if (error instanceof MimicError) return error
  const code = (error as { code?: string }).code
  const message = (error as Error).message
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new PayloadTooLargeError(`Request body is larger than the limit: ${message}`)
  if (code?.startsWith('FST_ERR_CTP') || code === 'FST_ERR_BAD_URL') return new BadRequestError(message)
  if ((error as { statusCode?: number }).statusCode === 400) return new BadRequestError(message)
  return asMimicError(error)
}
