/** One problem of a fault, located by a path (API.md section 6). */
export interface FaultDetail {
  path: string
  message: string
  line?: number
  column?: number
}

/** The fault document every API error answers with. */
export interface FaultDocument {
  type: 'fault'
  event: string
  http_status: number
  action: string
  component: { name: string; path: string; state: string | null } | null
  correlation_id: string
  when: string
  error: { type: string; message: string; details: FaultDetail[] }
}

/**
 * A failed request: the server's fault when it sent one, otherwise what went wrong on the way.
 *
 * @example
 * try { await api.get('/instances/x') } catch (e) { if (e instanceof ApiError) console.log(e.status, e.details) }
 */
export class ApiError extends Error {
  readonly status: number
  readonly fault: FaultDocument | undefined
  readonly request: string

  constructor(opts: { message: string; status: number; request: string; fault?: FaultDocument }) {
    super(opts.message)
    this.name = 'ApiError'
    this.status = opts.status
    this.request = opts.request
    this.fault = opts.fault
  }

  get details(): FaultDetail[] {
    return this.fault?.error.details ?? []
  }
}

/** Base of the tree API. */
export const SYSTEM = '/api/v3/system'

/**
 * The HTTP API as the dashboard uses it: JSON in and out, the product key as a Bearer token,
 * every failure turned into an ApiError that carries the fault.
 *
 * @example
 * const api = new ApiClient('secret')
 * const doc = await api.get(`${SYSTEM}/instances/tank_sensor`)
 * await api.call(`${SYSTEM}/instances/tank_sensor`, 'run')
 */
export class ApiClient {
  readonly #key: string

  constructor(key: string) {
    this.#key = key
  }

  /** Headers every request carries (also used by the event stream). */
  headers(): Record<string, string> {
    return this.#key ? { authorization: `Bearer ${this.#key}` } : {}
  }

  get<T = Record<string, unknown>>(path: string): Promise<T> {
    return this.#send<T>('GET', path)
  }

  put<T = Record<string, unknown>>(path: string, body: unknown): Promise<T> {
    return this.#send<T>('PUT', path, body)
  }

  delete<T = Record<string, unknown>>(path: string): Promise<T> {
    return this.#send<T>('DELETE', path)
  }

  /** Calls a public method of a node and returns its `result`. */
  async call<T = unknown>(node: string, method: string, kwargs: Record<string, unknown> = {}): Promise<T> {
    const answer = await this.#send<{ result: T }>('POST', `${node}/method/${encodeURIComponent(method)}`, { kwargs })
    return answer.result
  }

  async #send<T>(method: string, path: string, body?: unknown): Promise<T> {
    const request = `${method} ${path}`
    let res: Response
    try {
      res = await fetch(path, {
        method,
        headers: { ...this.headers(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store',
      })
    } catch (err) {
      throw new ApiError({ message: `Cannot reach the Mimic server (${(err as Error).message})`, status: 0, request })
    }
    const text = await res.text()
    let parsed: unknown
    try {
      parsed = text ? JSON.parse(text) : undefined
    } catch {
      parsed = undefined
    }
    if (!res.ok) {
      const fault = isFault(parsed) ? parsed : undefined
      const message = fault?.error.message ?? `${res.status} ${res.statusText}${text ? `: ${text.slice(0, 300)}` : ''}`
      throw new ApiError({ message, status: res.status, request, fault })
    }
    return parsed as T
  }
}

/** Percent-encodes each name of a tree path: `node('instances', name)`. */
export function node(...names: string[]): string {
  return [SYSTEM, ...names.map(encodeURIComponent)].join('/')
}

function isFault(value: unknown): value is FaultDocument {
  return (
    typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'fault' && typeof (value as { error?: unknown }).error === 'object'
  )
}
