import { isIP } from 'node:net'
import { ForbiddenError, UnsupportedMediaTypeError, ValidationError, type MimicError } from '../errors.js'

/**
 * What keeps web pages from driving the server (docs/security.md). A browser lets any page send
 * requests to any address, the loopback included: a page on another origin can send "simple"
 * requests (a form, `fetch` with `mode: 'no-cors'`) without asking first, and through DNS
 * rebinding a page can even read answers, its own name then pointing at 127.0.0.1. So:
 *
 * - `Host` must be a name the server is meant to be reached by (loopback names, IP literals,
 *   `--allowed-hosts`): a rebound page sends its own name, which a loopback server refuses.
 * - A request that changes something, the event stream and `/mcp` must not come from a page of
 *   another origin (`Origin`, or `Sec-Fetch-Site: cross-site` when a browser leaves Origin out),
 *   unless that origin is listed with `--cors-origin`.
 * - A body must be declared JSON: the cross-origin requests a browser sends unasked can only be
 *   text/plain, form-urlencoded or multipart.
 * - CORS headers only for the origins of `--cors-origin`.
 *
 * The checks look at header values only, so the fast lane and the fastify hook share them.
 */

/** Which headers of a request the guard reads (raw values, undefined when absent). */
export interface GuardedRequest {
  method: string
  url: string
  host: string | undefined
  origin: string | undefined
  secFetchSite: string | undefined
  contentType: string | undefined
  /** The request has a body (a Content-Length above 0, or a Transfer-Encoding). */
  hasBody: boolean
}

/** How the guard is set up. */
export interface BrowserGuardOptions {
  /** `--allowed-hosts`: names besides loopback (`*` any, `.example.com` that domain and its subdomains). */
  allowedHosts?: readonly string[]
  /** `--cors-origin`: origins whose pages may call the API, answered with CORS headers. */
  corsOrigins?: readonly string[]
  /**
   * Whether the server asks for a product key. Without one Host is always checked; with one
   * only when `--allowed-hosts` is given (API.md section 2: the bearer header already keeps
   * rebound pages out of the API), and `--cors-origin *` is allowed only with one.
   */
  productKeySet: boolean
}

/** The request headers a CORS preflight may ask for. */
const ALLOWED_REQUEST_HEADERS = 'authorization, content-type, x-correlation-id'
const ALLOWED_METHODS = 'GET, POST, PUT, PATCH, DELETE'
/** How long a browser may keep a preflight's answer (seconds). */
const PREFLIGHT_MAX_AGE = '600'
/** Distinct allowed Host values remembered (`localhost:8000`, `127.0.0.1:8000`, ...). */
const MAX_REMEMBERED_HOSTS = 64
/** Longest header value a fault message repeats: the rest is the client's own. */
const MAX_ECHO = 200
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
/** JSON with parameters (`; charset=utf-8`), and the structured `application/<x>+json` types. */
const JSON_MEDIA_TYPE = /^application\/(?:json|[a-z0-9!#$&^_.-]+\+json)[\t ]*(?:;|$)/i
/** `scheme://host[:port]` as browsers write an Origin (no path, no user, lower case). */
const ORIGIN_FORM = /^(https?):\/\/(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/
const DEFAULT_PORTS: Record<string, string> = { http: '80', https: '443' }

/**
 * The browser checks of one server, built once from its settings.
 *
 * @example
 * const guard = new BrowserGuard({ allowedHosts: ['mimic.lan'], corsOrigins: ['https://hmi.lan'], productKeySet: false })
 * guard.refusal({ method: 'POST', url: '/api/v3/system/method/run', host: 'evil.example', origin: undefined, secFetchSite: undefined, contentType: undefined, hasBody: false })
 * // a ForbiddenError naming evil.example and --allowed-hosts
 */
export class BrowserGuard {
  readonly #anyHost: boolean
  readonly #hosts: Set<string>
  readonly #domains: string[]
  readonly #corsOrigins: Set<string>
  readonly #anyOrigin: boolean
  readonly #checkHost: boolean
  /** Host header values already allowed: a client sends the same one on every request. */
  readonly #allowedHostValues = new Set<string>()

  constructor(options: BrowserGuardOptions) {
    const hosts = (options.allowedHosts ?? []).map((h) => h.trim().toLowerCase()).filter(Boolean)
    this.#anyHost = hosts.includes('*')
    this.#hosts = new Set(hosts.filter((h) => !h.startsWith('.')).map(withoutTrailingDot))
    this.#domains = hosts.filter((h) => h.startsWith('.') && h.length > 1).map(withoutTrailingDot)
    this.#checkHost = (!options.productKeySet || hosts.length > 0) && !this.#anyHost
    const origins = (options.corsOrigins ?? []).map((o) => o.trim()).filter(Boolean)
    this.#anyOrigin = origins.includes('*')
    if (this.#anyOrigin && !options.productKeySet)
      throw new ValidationError('--cors-origin * would let every web page drive this server: it needs a product key (--product-key-file)', [
        { path: 'corsOrigin', message: '* needs a product key' },
      ])
    const problems = origins.filter((o) => o !== '*' && normalOrigin(o) === undefined)
    if (problems.length)
      throw new ValidationError(
        `--cors-origin takes origins such as https://hmi.example:8443 (scheme, host and port only): ${problems.join(', ')}`,
        problems.map((o) => ({ path: 'corsOrigin', message: `not an origin: ${o}` })),
      )
    this.#corsOrigins = new Set(origins.filter((o) => o !== '*').map((o) => normalOrigin(o)!))
  }

  /** Whether any origin gets CORS headers. */
  get corsEnabled(): boolean {
    return this.#anyOrigin || this.#corsOrigins.size > 0
  }

  /**
   * Why the request must not be answered (403 for a host or an origin, 415 for a body not
   * declared JSON), or undefined when it may go on.
   */
  refusal(req: GuardedRequest): MimicError | undefined {
    const hostProblem = this.hostRefusal(req.host)
    if (hostProblem) return hostProblem
    if (STATE_CHANGING.has(req.method) || isBrowserSensitivePath(req.url)) {
      const originProblem = this.#originRefusal(req)
      if (originProblem) return originProblem
    }
    if (req.hasBody && (req.contentType === undefined || !JSON_MEDIA_TYPE.test(req.contentType))) {
      const given = req.contentType === undefined ? 'none' : `'${echo(req.contentType)}'`
      return new UnsupportedMediaTypeError(`Request bodies must be JSON, sent with Content-Type: application/json (got ${given})`, [
        { path: 'headers.content-type', message: `expected application/json, got ${given}` },
      ])
    }
    return undefined
  }

  /** The refusal of a Host header, or undefined when the server answers that name. */
  hostRefusal(host: string | undefined): ForbiddenError | undefined {
    // A request without Host (HTTP/1.0) comes from no browser: every browser sends one, and a
    // rebound page's is its own name.
    if (!this.#checkHost || host === undefined || host === '' || this.#allowedHostValues.has(host)) return undefined
    const name = hostName(host)
    if (name !== undefined && this.#hostAllowed(name)) {
      if (this.#allowedHostValues.size < MAX_REMEMBERED_HOSTS) this.#allowedHostValues.add(host)
      return undefined
    }
    const shown = echo(name ?? host)
    return new ForbiddenError(
      `Host '${shown}' is not allowed: this server answers loopback names, IP addresses and the names given with --allowed-hosts (start it with --allowed-hosts ${shown} if that name is meant to reach it)`,
      [{ path: 'headers.host', message: `not an allowed host (--allowed-hosts)` }],
    )
  }

  /** The CORS headers for an answer to `origin`, or undefined when that origin gets none. */
  corsHeaders(origin: string | undefined): Record<string, string> | undefined {
    if (origin === undefined || !this.corsEnabled) return undefined
    const listed = this.#corsOrigins.has(normalOrigin(origin) ?? '')
    if (!listed && !this.#anyOrigin) return undefined
    // Never a wildcard with credentials: the answer names the origin, or is `*` without
    // access-control-allow-credentials (the key travels in a header the page sets itself).
    return {
      'access-control-allow-origin': listed ? origin : '*',
      'access-control-expose-headers': 'x-correlation-id',
      vary: 'Origin',
    }
  }

  /**
   * The answer to a CORS preflight (OPTIONS with Access-Control-Request-Method) from an allowed
   * origin, or a refusal naming the origin.
   */
  preflight(origin: string): { headers: Record<string, string> } | ForbiddenError {
    const headers = this.corsHeaders(origin)
    if (!headers) return foreignOrigin(origin)
    return {
      headers: {
        ...headers,
        'access-control-allow-methods': ALLOWED_METHODS,
        'access-control-allow-headers': ALLOWED_REQUEST_HEADERS,
        'access-control-max-age': PREFLIGHT_MAX_AGE,
      },
    }
  }

  #hostAllowed(name: string): boolean {
    if (isIP(name.startsWith('[') ? name.slice(1, -1) : name) !== 0) return true
    if (name === 'localhost' || name.endsWith('.localhost')) return true
    if (this.#hosts.has(name)) return true
    for (const domain of this.#domains) if (name.endsWith(domain) || name === domain.slice(1)) return true
    return false
  }

  #originRefusal(req: GuardedRequest): ForbiddenError | undefined {
    const origin = req.origin
    if (origin === undefined) {
      // Browsers send Origin with every request that changes something; where one leaves it out,
      // its fetch metadata still tells a request from another site.
      if (req.secFetchSite?.trim().toLowerCase() !== 'cross-site') return undefined
      return new ForbiddenError(
        "A request from a page of another site (Sec-Fetch-Site: cross-site) may not call this server: list the page's origin with --cors-origin",
        [{ path: 'headers.sec-fetch-site', message: 'cross-site requests are refused' }],
      )
    }
    if (isSameOrigin(origin, req.host)) return undefined
    if (this.corsHeaders(origin)) return undefined
    return foreignOrigin(origin)
  }
}

/** The event stream and the MCP endpoint: reads a page of another origin must not open either. */
function isBrowserSensitivePath(url: string): boolean {
  return url.startsWith('/api/v3/events') || url.startsWith('/mcp')
}

function foreignOrigin(origin: string): ForbiddenError {
  const shown = echo(origin)
  const message =
    origin.trim() === 'null'
      ? "Origin 'null' (a sandboxed page, a local file or a redirect) may not call this server"
      : `Origin '${shown}' may not call this server: only its own pages and the origins given with --cors-origin may (start it with --cors-origin ${shown} to allow that origin)`
  return new ForbiddenError(message, [{ path: 'headers.origin', message: 'a foreign origin (--cors-origin)' }])
}

/**
 * Whether `origin` is the server's own, as reached through `host`: the same host and port. The
 * scheme is not compared, so a page served through a TLS proxy that keeps the Host header is
 * still at home; no other page can have that host and port, which are this server's.
 */
function isSameOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false
  const parsed = ORIGIN_FORM.exec(origin.trim().toLowerCase())
  if (!parsed) return false
  const [, scheme, name, port] = parsed
  const hostParts = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(host.trim().toLowerCase())
  if (!hostParts) return false
  const hostPort = hostParts[2] || undefined
  if (withoutTrailingDot(hostParts[1]!) !== withoutTrailingDot(name!)) return false
  if (port === hostPort) return true
  // An origin leaves out its scheme's default port; a Host header may leave it out too.
  return (port ?? DEFAULT_PORTS[scheme!]) === (hostPort ?? DEFAULT_PORTS[scheme!])
}

/** `scheme://host[:port]` in lower case without a default port, or undefined when `text` is no origin. */
function normalOrigin(text: string): string | undefined {
  const parsed = ORIGIN_FORM.exec(text.trim().toLowerCase().replace(/\/$/, ''))
  if (!parsed) return undefined
  const [, scheme, name, port] = parsed
  return port === undefined || DEFAULT_PORTS[scheme!] === port ? `${scheme}://${name}` : `${scheme}://${name}:${port}`
}

/** The name of a Host header without its port, in lower case (`[::1]` keeps its brackets), or undefined when malformed. */
function hostName(host: string): string | undefined {
  const parts = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::\d*)?$/.exec(host.trim())
  return parts ? withoutTrailingDot(parts[1]!.toLowerCase()) : undefined
}

function withoutTrailingDot(name: string): string {
  return name.endsWith('.') ? name.slice(0, -1) : name
}

/** A client's header value as a message repeats it: bounded and on one line. */
function echo(value: string): string {
  const line = value.replace(/[\x00-\x1f\x7f]/g, '?')
  return line.length > MAX_ECHO ? `${line.slice(0, MAX_ECHO)}...` : line
}
