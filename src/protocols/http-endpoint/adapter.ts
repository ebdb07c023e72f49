import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Socket } from 'node:net'
import type { Logger } from 'pino'
import { AdapterLifecycle, readOnly, secondsProblem } from '../adapter-kit.js'
import type { AdapterStats, AttributeAccessor, ProtocolAdapter } from '../adapter.js'
import type { AdapterTrace } from '../trace.js'
import type { ValidationError } from '../../errors.js'
import { MimicError } from '../../errors.js'
import { isMark, plainJson } from '../../values/number.js'
import { parseAlias, pathParams, requestParam, responseAttribute } from '../../definition/http-endpoint-schema.js'
import type { HttpAlias, HttpEndpointDefinition, HttpEndpointMethod, HttpEndpointRoute } from '../../definition/http-endpoint-schema.js'
import type { HttpEndpointHub, HttpServer } from './hub.js'

/**
 * The `http_endpoint` adapter of one instance (the reference product's HTTP adapter): an HTTP
 * server on the adapter's own port whose endpoints answer JSON built from the instance's
 * attributes and write attributes from the request (path segments, query parameters and the JSON
 * body's fields), as the definition's `alias` lines say (docs/http-endpoint.md).
 *
 * A request is answered in this order: the path and method are matched (404 or 405 as JSON
 * faults otherwise); the body is parsed as JSON whatever its content type, since `curl -d` sends
 * form-encoded headers (400 when it is not JSON, or not an object where fields are read); every
 * write is converted to its attribute's type and checked before any is made (422 naming the
 * parameter and the attribute); then the writes are made in order and the response template is
 * filled with the values after them. A body field the request does not carry writes nothing, so a
 * PATCH may send only what changes.
 *
 * Detached, the server keeps its port and reads requests but answers none (clients time out); the
 * requests held are closed on attach and stop.
 *
 * @example
 * const adapter = new HttpEndpointAdapter({ hub, definition, accessor, logger, name: 'aq.http_endpoint' })
 * await adapter.start() // curl http://127.0.0.1:<port>/v1/air-quality/urban
 */

/** Requests held unanswered while detached; more close the oldest. */
const MAX_HELD = 1000

interface CompiledRoute {
  path: string
  method: HttpEndpointMethod
  pattern: RegExp
  params: string[]
  aliases: HttpAlias[]
  route: HttpEndpointRoute
}

/** A request refused, with the status and the fault's details. */
class RequestFault extends Error {
  constructor(
    readonly status: number,
    readonly event: string,
    readonly type: string,
    message: string,
    readonly details: Array<{ path: string; message: string }> = [],
  ) {
    super(message)
  }
}

/**
 * One instance's `http_endpoint` adapter (see the module comment).
 *
 * @example
 * adapter.stats() // { state: 'RUNNING', port: 8092, requests: 3, errors: 1, writes: 2, running: true, request_count: 3 }
 */
export class HttpEndpointAdapter implements ProtocolAdapter {
  readonly name: string
  readonly settable = ['response_delay'] as const
  readonly #hub: HttpEndpointHub
  readonly #definition: HttpEndpointDefinition
  readonly #accessor: AttributeAccessor
  readonly #logger: Logger
  readonly #routes: CompiledRoute[]
  readonly #life: AdapterLifecycle<HttpServer>
  readonly #held = new Set<Socket>()
  readonly #trace: AdapterTrace | undefined
  #counters = { requests: 0, errors: 0, writes: 0, not_found: 0, ignored: 0 }

  constructor(options: {
    hub: HttpEndpointHub
    definition: HttpEndpointDefinition
    accessor: AttributeAccessor
    logger: Logger
    name?: string
    /** The adapter's traffic trace (docs/traces.md): each request and the status it was answered with. */
    trace?: AdapterTrace | undefined
  }) {
    this.#hub = options.hub
    this.#trace = options.trace
    this.#definition = { ...options.definition }
    this.#accessor = options.accessor
    this.name = options.name ?? 'http_endpoint'
    this.#logger = options.logger.child({ adapter: this.name })
    this.#life = new AdapterLifecycle(this.name)
    this.#routes = Object.entries(this.#definition.endpoints).map(([path, route]) => compileRoute(path, route))
  }

  get state(): AdapterStats['state'] {
    return this.#life.state
  }

  start(): Promise<void> {
    return this.#life.start(async () => {
      const d = this.#definition
      const server = await this.#hub.open({ host: d.host, port: d.port, owner: this.name, setup: (app) => this.#setup(app) })
      this.#logger.info({ host: server.host, port: server.port }, 'http endpoint started')
      return server
    })
  }

  stop(): Promise<void> {
    return this.#life.stop(async (server) => {
      this.#releaseHeld()
      await this.#hub.release(server)
      this.#logger.info({ host: server.host, port: server.port }, 'http endpoint stopped')
    })
  }

  detach(): void {
    this.#life.detach()
  }

  attach(): void {
    this.#life.attach()
    this.#releaseHeld()
  }

  /**
   * Live state and counters: `requests` (answered or not), `errors` (4xx answers), `writes`
   * (attribute writes made), `not_found` (requests no endpoint matched), `ignored` (requests
   * held while detached); `running` and `request_count` as the reference product names them.
   */
  stats(): AdapterStats {
    const server = this.#life.resource
    return {
      state: this.state,
      port: server?.port ?? this.#definition.port,
      running: server !== null,
      request_count: this.#counters.requests,
      ...this.#counters,
    }
  }

  settings(): Record<string, unknown> {
    const d = this.#definition
    const server = this.#life.resource
    const { state: _state, port, ...counters } = this.stats()
    return {
      host: d.host,
      served_host: server?.host ?? null,
      port,
      response_delay: d.response_delay,
      endpoints: Object.fromEntries(
        this.#routes.map((r) => [r.path, { method: r.method, alias: [...r.route.alias], response: jsonValue(r.route.response ?? null) }]),
      ),
      counters,
    }
  }

  set(name: string, value: unknown): void {
    const refusal = this.refusal(name, value)
    if (refusal) throw refusal
    this.#definition.response_delay = value as number
  }

  refusal(name: string, value: unknown): ValidationError | null {
    return name === 'response_delay' ? secondsProblem(name, value, 0, 3600) : readOnly(this, name)
  }

  valueProblem(): string | null {
    return null
  }

  #setup(app: FastifyInstance): void {
    // Any content type is read as text and parsed as JSON by the handler: `curl -d '{...}'` sends
    // application/x-www-form-urlencoded, and a device's users expect that to work.
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body))
    app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
      const status = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500
      this.#counters.errors++
      if (this.#trace?.on) this.#traced(request, undefined, status, error.message, performance.now())
      void reply
        .code(status)
        .send(fault(status, status === 413 ? 'payload_too_large' : 'bad_request', status === 413 ? 'PayloadTooLargeError' : 'BadRequestError', error.message))
    })
    app.all('*', (request, reply) => this.#handle(request, reply))
  }

  async #handle(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const started = performance.now()
    this.#counters.requests++
    if (this.#life.detached) {
      this.#counters.ignored++
      this.#hold(request, reply)
      if (this.#trace?.on) this.#traced(request, undefined, null, 'NO_ANSWER', started)
      return
    }
    let matched: CompiledRoute | undefined
    let traced = false
    let release: (() => void) | undefined
    try {
      const [path, query] = splitUrl(request.url)
      const matching = this.#routes.filter((r) => r.pattern.test(path))
      if (matching.length === 0) {
        this.#counters.not_found++
        throw new RequestFault(404, 'not_found', 'NotFoundError', `no endpoint at ${path}`, [
          { path: 'path', message: `known: ${this.#routes.map((r) => r.path).join(', ') || 'none'}` },
        ])
      }
      const route = matching.find((r) => r.method === request.method) ?? (request.method === 'HEAD' ? matching.find((r) => r.method === 'GET') : undefined)
      if (route === undefined) {
        const allowed = [...new Set(matching.map((r) => r.method))].join(', ')
        void reply.header('allow', allowed)
        throw new RequestFault(405, 'method_not_allowed', 'MethodNotAllowedError', `${path} answers ${allowed}, not ${request.method}`)
      }
      matched = route
      const segments = route.pattern.exec(path)!.slice(1)
      const params = new Map<string, string>()
      route.params.forEach((name, i) => params.set(name, safeDecode(segments[i]!)))
      const body = parseBody(request.body, route)
      const writes = this.#writes(route, params, query, body)
      // The writes join this request's entry even when each waits on a Python setter.
      if (writes.length > 0) release = this.#trace?.hold()
      for (const { attribute, value } of writes) {
        await this.#accessor.write(attribute, value)
        this.#counters.writes++
      }
      // Recorded here, in the turn of the last write (the writes join the entry as its attributes),
      // before the response_delay (not part of the latency, as for the other kinds).
      traced = true
      const status = route.route.response === undefined && route.route.status === 200 ? 204 : route.route.status
      if (this.#trace !== undefined && (this.#trace.on || writes.length > 0)) this.#traced(request, route, status, undefined, started)
      const delay = this.#definition.response_delay
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay * 1000))
      if (route.route.response === undefined) {
        void reply.code(route.route.status === 200 ? 204 : route.route.status).send()
        return
      }
      const answer = this.#render(route.route.response, params, query, body)
      void reply.code(route.route.status).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(answer))
    } catch (error) {
      this.#counters.errors++
      const status = error instanceof RequestFault || error instanceof MimicError ? error.status : 500
      if (!traced && this.#trace?.on) this.#traced(request, matched, status, (error as Error).message, started)
      if (error instanceof RequestFault) {
        void reply.code(error.status).send(fault(error.status, error.event, error.type, error.message, error.details))
      } else if (error instanceof MimicError) {
        void reply.code(error.status).send(fault(error.status, error.event, error.name, error.message, error.details))
      } else {
        this.#logger.warn({ err: error }, 'http endpoint request failed')
        void reply.code(500).send(fault(500, 'internal', 'InternalError', (error as Error).message))
      }
    } finally {
      release?.()
    }
  }

  /**
   * Records a request (docs/traces.md): `write` when its endpoint writes attributes (a request no
   * endpoint matched: when its method is not GET or HEAD), `status` as answered (null: none, while
   * detached), `error` the fault's message.
   */
  #traced(request: FastifyRequest, route: CompiledRoute | undefined, status: number | null, error: string | undefined, started: number): void {
    const [path] = splitUrl(request.url)
    const writes = route !== undefined ? route.aliases.length > 0 : request.method !== 'GET' && request.method !== 'HEAD'
    this.#trace!.record({
      operation: writes ? 'write' : 'read',
      direction: 'in',
      method: request.method,
      path,
      endpoint: route?.path,
      client: `${request.socket.remoteAddress}:${request.socket.remotePort}`,
      status,
      error,
      latency: (performance.now() - started) / 1000,
    })
  }

  /** The writes a request makes, each converted to its attribute's type and checked, before any is made. */
  #writes(route: CompiledRoute, params: Map<string, string>, query: URLSearchParams, body: unknown): Array<{ attribute: string; value: unknown }> {
    const out: Array<{ attribute: string; value: unknown }> = []
    const problems: Array<{ path: string; message: string }> = []
    for (const alias of route.aliases) {
      let value: unknown
      let where: string
      if ('literal' in alias.source) {
        value = alias.source.literal
        where = `alias #attr(${alias.attribute})`
      } else {
        const found = lookup(alias.source.param, params, query, body)
        if (!found.present) continue
        value = found.value
        where = paramPath(alias.source.param)
      }
      const type = this.#accessor.describe?.(alias.attribute)?.type
      const converted = convert(value, type)
      if (typeof converted === 'object' && converted !== null && 'problem' in converted) {
        problems.push({ path: where, message: `${converted.problem} for attribute '${alias.attribute}'` })
        continue
      }
      if (!this.#accessor.writable(alias.attribute)) {
        problems.push({ path: where, message: `attribute '${alias.attribute}' cannot be written` })
        continue
      }
      const problem = this.#accessor.valueProblem?.(alias.attribute, converted.value) ?? null
      if (problem !== null) problems.push({ path: where, message: `attribute '${alias.attribute}': ${problem}` })
      else out.push({ attribute: alias.attribute, value: converted.value })
    }
    if (problems.length > 0) {
      const summary = problems.length === 1 ? problems[0]!.message : `${problems.length} problems: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`
      throw new RequestFault(422, 'validation', 'ValidationError', `Cannot apply the request: ${summary}`, problems)
    }
    return out
  }

  #render(template: unknown, params: Map<string, string>, query: URLSearchParams, body: unknown): unknown {
    // A number the model wrote (1.0 is kept as a float mark by the loader) is answered as a number.
    if (isMark(template)) return jsonValue(template)
    if (typeof template === 'string') {
      const attribute = responseAttribute(template)
      if (attribute !== null) return jsonValue(this.#accessor.read(attribute))
      const param = requestParam(template)
      if (param !== null) {
        const found = lookup(param, params, query, body)
        return found.present ? jsonValue(found.value) : null
      }
      return template
    }
    if (Array.isArray(template)) return template.map((t) => this.#render(t, params, query, body))
    if (template !== null && typeof template === 'object') {
      const out: Record<string, unknown> = {}
      for (const [k, v] of Object.entries(template))
        Object.defineProperty(out, k, { value: this.#render(v, params, query, body), enumerable: true, writable: true, configurable: true })
      return out
    }
    return template
  }

  /** Keeps a request unanswered while detached (a silent device); closed on attach and stop. */
  #hold(request: FastifyRequest, reply: FastifyReply): void {
    reply.hijack()
    const socket = request.raw.socket
    if (this.#held.size >= MAX_HELD) {
      const oldest = this.#held.values().next().value!
      this.#held.delete(oldest)
      oldest.destroy()
    }
    this.#held.add(socket)
    socket.once('close', () => this.#held.delete(socket))
  }

  #releaseHeld(): void {
    for (const socket of this.#held) socket.destroy()
    this.#held.clear()
  }
}

function compileRoute(path: string, route: HttpEndpointRoute): CompiledRoute {
  const params = pathParams(path)
  let source = ''
  for (const part of path.split(/(\{[^{}/]*\})/)) {
    source += /^\{[^{}/]*\}$/.test(part) ? '([^/]+)' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  }
  const aliases = route.alias.map((line) => parseAlias(line)).filter((a): a is HttpAlias => typeof a !== 'string')
  // A trailing slash is the same endpoint, as most HTTP servers treat it.
  return { path, method: route.method, pattern: new RegExp(`^${source}/?$`), params, aliases, route }
}

function splitUrl(url: string): [string, URLSearchParams] {
  const at = url.indexOf('?')
  return at === -1 ? [url, new URLSearchParams()] : [url.slice(0, at), new URLSearchParams(url.slice(at + 1))]
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    throw new RequestFault(400, 'bad_request', 'BadRequestError', `'${text}' is not a valid path segment (bad percent-encoding)`, [
      { path: 'path', message: 'bad percent-encoding' },
    ])
  }
}

function usesBody(route: CompiledRoute): boolean {
  return route.aliases.some((a) => 'param' in a.source && (a.source.param === '__body__' || a.source.param.startsWith('__body__.')))
}

/** The JSON body, undefined when empty; a 400 naming the problem when it is not JSON, or not an object where fields are read. */
function parseBody(raw: unknown, route: CompiledRoute): unknown {
  if (typeof raw !== 'string' || raw.trim() === '') return undefined
  let body: unknown
  try {
    body = JSON.parse(raw)
  } catch (error) {
    throw new RequestFault(400, 'bad_request', 'BadRequestError', `the body is not JSON: ${(error as Error).message}`, [{ path: 'body', message: 'not JSON' }])
  }
  if (usesBody(route) && (body === null || typeof body !== 'object' || Array.isArray(body))) {
    throw new RequestFault(400, 'bad_request', 'BadRequestError', 'the body is not a JSON object: this endpoint reads fields of one', [
      { path: 'body', message: 'not a JSON object' },
    ])
  }
  return body
}

/** A request parameter: a path segment, else a query parameter; `__body__` is the body, `__body__.a.b` a field of it. */
function lookup(param: string, params: Map<string, string>, query: URLSearchParams, body: unknown): { present: boolean; value?: unknown } {
  if (param === '__body__') return body === undefined ? { present: false } : { present: true, value: body }
  if (param.startsWith('__body__.')) {
    let value: unknown = body
    for (const key of param.slice('__body__.'.length).split('.')) {
      if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return { present: false }
      value = (value as Record<string, unknown>)[key]
    }
    return { present: true, value }
  }
  if (params.has(param)) return { present: true, value: params.get(param) }
  if (query.has(param)) return { present: true, value: query.get(param) }
  return { present: false }
}

function paramPath(param: string): string {
  return param.startsWith('__body__.') ? `body.${param.slice('__body__.'.length)}` : param === '__body__' ? 'body' : param
}

/** A request's value as its attribute's type wants it: path and query parameters are text. */
function convert(value: unknown, type: string | undefined): { value: unknown } | { problem: string } {
  const shown = JSON.stringify(value)
  if (type === 'int') {
    if (typeof value === 'number' && Number.isInteger(value)) return { value }
    if (typeof value === 'string' && /^\s*-?\d+\s*$/.test(value)) return { value: Number(value) }
    return { problem: `${shown} is not an int` }
  }
  if (type === 'float') {
    if (typeof value === 'number') return { value }
    if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return { value: Number(value) }
    return { problem: `${shown} is not a number` }
  }
  if (type === 'bool') {
    if (typeof value === 'boolean') return { value }
    if (value === 1 || value === 0) return { value: value === 1 }
    if (typeof value === 'string' && /^(true|false|1|0|on|off)$/i.test(value.trim())) return { value: /^(true|1|on)$/i.test(value.trim()) }
    return { problem: `${shown} is not a bool` }
  }
  if (type === 'str') {
    if (typeof value === 'string') return { value }
    if (typeof value === 'number' || typeof value === 'boolean') return { value: String(value) }
    return { problem: `${shown} is not a string` }
  }
  if ((type === 'list' || type === 'dict') && typeof value === 'string') {
    try {
      return { value: JSON.parse(value) }
    } catch {
      return { problem: `${shown} is not a JSON ${type === 'list' ? 'list' : 'object'}` }
    }
  }
  return { value }
}

/** A value as JSON can carry it: marks as their numbers, big integers as numbers when exact (else text), non-finite floats as null. */
function jsonValue(value: unknown): unknown {
  const plain = plainJson(value)
  if (typeof plain === 'bigint') return Number.isSafeInteger(Number(plain)) ? Number(plain) : plain.toString()
  if (typeof plain === 'number') return Number.isFinite(plain) ? plain : null
  if (Array.isArray(plain)) return plain.map(jsonValue)
  if (plain !== null && typeof plain === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(plain)) Object.defineProperty(out, k, { value: jsonValue(v), enumerable: true, writable: true, configurable: true })
    return out
  }
  return plain
}

/** A fault document as API.md section 6 shapes them. */
function fault(status: number, event: string, type: string, message: string, details: Array<{ path: string; message: string }> = []): Record<string, unknown> {
  return { type: 'fault', event, http_status: status, when: new Date().toISOString(), error: { type, message, details } }
}
