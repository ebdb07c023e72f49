import { MimicApiError, MimicConnectionError } from './errors.js'
import type { MimicFault } from './types.js'

/**
 * Default base address of a Mimic server.
 *
 * @example
 * connect({ address: DEFAULT_ADDRESS })
 */
export const DEFAULT_ADDRESS = 'http://127.0.0.1:8000'

/**
 * How long one request may take, end to end, unless the caller says otherwise (30 s).
 *
 * @example
 * connect({ timeoutMs: DEFAULT_TIMEOUT_MS * 2 })
 */
export const DEFAULT_TIMEOUT_MS = 30_000

/**
 * HTTP verbs the API uses.
 *
 * @example
 * const verb: HttpMethod = 'PUT'
 */
export type HttpMethod = 'GET' | 'PUT' | 'PATCH' | 'DELETE' | 'POST'

/**
 * Options of a {@link Transport}.
 *
 * @example
 * new Transport({ address: 'http://127.0.0.1:8000', productKey: 'k', timeoutMs: 10_000 })
 */
export interface TransportOptions {
  /** Base address, e.g. `http://127.0.0.1:8000` (`host:port` alone means http). */
  address?: string | undefined
  /** Sent as `Authorization: Bearer <key>` on every /api/v3 request. */
  productKey?: string | undefined
  /** Upper bound for one request, connecting and reading the answer included. */
  timeoutMs?: number | undefined
  /** A fetch implementation to use instead of the global one (tests, proxies). */
  fetch?: typeof fetch | undefined
}

/**
 * Per-request options.
 *
 * @example
 * await transport.request('POST', '/api/v3/system/method/run', { kwargs: { steps: 1000 } }, { timeoutMs: 120_000 })
 */
export interface RequestOptions {
  timeoutMs?: number
  /** Send the product key (default true; /health and / do not need it). */
  auth?: boolean
}

/**
 * Sends JSON requests to one Mimic server and turns every failure into a MimicApiError.
 *
 * Connections are reused: Node's global `fetch` (undici) keeps sockets alive in its global agent
 * by default, so a sequence of calls runs over one or two TCP connections instead of one per
 * request (checked against a node:http server counting its connections).
 *
 * @example
 * const transport = new Transport({ address: 'http://127.0.0.1:8000', productKey: 'k' })
 * const doc = await transport.request('GET', '/api/v3/system')
 */
export class Transport {
  /** Normalised base URL without a trailing slash. */
  readonly baseUrl: string
  readonly timeoutMs: number
  #productKey: string | undefined
  #fetch: typeof fetch

  constructor(options: TransportOptions = {}) {
    this.baseUrl = normaliseAddress(options.address ?? DEFAULT_ADDRESS)
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
    if (!(this.timeoutMs > 0)) throw new RangeError(`timeoutMs must be a positive number of milliseconds (got ${this.timeoutMs})`)
    this.#productKey = options.productKey
    this.#fetch = options.fetch ?? globalThis.fetch
  }

  /**
   * Sends one request and resolves to the parsed JSON answer; rejects with MimicApiError for an
   * error status and MimicConnectionError when no answer arrives within the timeout.
   */
  async request<T>(method: HttpMethod, path: string, body?: unknown, options: RequestOptions = {}): Promise<T> {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs
    const headers: Record<string, string> = { accept: 'application/json' }
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (options.auth !== false && this.#productKey) headers.authorization = `Bearer ${this.#productKey}`
    let status: number
    let text: string
    let correlationId: string | undefined
    try {
      // One signal covers connecting, sending and reading the whole body, so nothing can hang.
      const response = await this.#fetch(this.baseUrl + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      })
      status = response.status
      correlationId = response.headers.get('x-correlation-id') ?? undefined
      text = await response.text()
    } catch (err) {
      throw this.#connectionError({ err, method, path, timeoutMs })
    }
    const parsed = parseJson(text)
    if (status >= 200 && status < 300) {
      if (parsed.ok) return parsed.value as T
      throw new MimicApiError({
        message: `The server at ${this.baseUrl} answered ${method} ${path} with something that is not JSON: ${text.slice(0, 200)}`,
        status,
        correlationId,
        method,
        path,
      })
    }
    const fault = parsed.ok && isFault(parsed.value) ? parsed.value : undefined
    const message = fault?.error.message ?? `HTTP ${status} from ${method} ${path}${text ? `: ${text.slice(0, 200)}` : ''}`
    throw new MimicApiError({ message, status, fault, correlationId, method, path })
  }

  #connectionError(failure: { err: unknown; method: string; path: string; timeoutMs: number }): MimicConnectionError {
    const { err, method, path, timeoutMs } = failure
    const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')
    const message = timedOut
      ? `No answer from the Mimic server at ${this.baseUrl} within ${timeoutMs} ms (${method} ${path})`
      : `Cannot reach the Mimic server at ${this.baseUrl}: ${networkReason(err)} (${method} ${path})`
    return new MimicConnectionError({ message, method, path, cause: err, timedOut })
  }
}

function normaliseAddress(address: string): string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(address) ? address : `http://${address}`
  let url: URL
  try {
    url = new URL(withScheme)
  } catch {
    throw new TypeError(`Not a server address: '${address}' (expected e.g. http://127.0.0.1:8000)`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`Unsupported scheme '${url.protocol}' in '${address}' (use http or https)`)
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`
}

/** fetch wraps the socket error ("connect ECONNREFUSED ...") in a generic "fetch failed". */
function networkReason(err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  const cause = err.cause
  if (cause instanceof Error) {
    const nested = cause as Error & { code?: string; errors?: unknown[] }
    if (nested.message) return nested.message
    if (nested.code) return nested.code
    const first = nested.errors?.[0]
    if (first instanceof Error) return first.message
  }
  return err.message
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  if (text === '') return { ok: true, value: undefined }
  try {
    return { ok: true, value: JSON.parse(text) as unknown }
  } catch {
    return { ok: false }
  }
}

function isFault(value: unknown): value is MimicFault {
  if (typeof value !== 'object' || value === null) return false
  const doc = value as { type?: unknown; error?: { message?: unknown } }
  return doc.type === 'fault' && typeof doc.error?.message === 'string'
}
