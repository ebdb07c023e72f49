import type { FaultDetail, MimicFault } from './types.js'

/**
 * Stable codes of the client's errors, for code that branches without `instanceof`.
 *
 * @example
 * if (err.code === 'MIMIC_CONNECTION_ERROR') scheduleRetry()
 */
export type MimicErrorCode = 'MIMIC_API_ERROR' | 'MIMIC_CONNECTION_ERROR'

/**
 * Options of {@link MimicApiError}.
 *
 * @example
 * new MimicApiError({ message: 'Component not found', status: 404, method: 'GET', path: '/api/v3/system/x' })
 */
export interface MimicApiErrorOptions {
  message: string
  status: number
  fault?: MimicFault | undefined
  correlationId?: string | undefined
  method: string
  path: string
  cause?: unknown
}

/**
 * The one error every client call rejects with. For an answer from the server, `status` is the
 * HTTP status, `fault` the fault document, `correlationId` the id to look for in the server log
 * and `message` the fault's own message. A server that cannot be reached is the subclass
 * {@link MimicConnectionError} with `status` 0, so `catch (err instanceof MimicApiError)` covers
 * both.
 *
 * @example
 * try {
 *   await sim.instances.set('s1', 'no_such_model')
 * } catch (err) {
 *   if (err instanceof MimicApiError) console.error(err.status, err.message, err.correlationId)
 * }
 */
export class MimicApiError extends Error {
  override name = 'MimicApiError'
  readonly code: MimicErrorCode = 'MIMIC_API_ERROR'
  /** HTTP status; 0 when no answer came (see MimicConnectionError). */
  readonly status: number
  /** The server's fault document, when the server answered with one. */
  readonly fault: MimicFault | undefined
  /** The request's correlation id (response header `X-Correlation-Id`), when the server answered. */
  readonly correlationId: string | undefined
  /** HTTP method and path of the failed request. */
  readonly method: string
  readonly path: string

  constructor(options: MimicApiErrorOptions) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause })
    this.status = options.status
    this.fault = options.fault
    this.correlationId = options.correlationId ?? options.fault?.correlation_id
    this.method = options.method
    this.path = options.path
  }

  /** The fault's located problems (empty when there are none or there was no fault). */
  get details(): FaultDetail[] {
    return this.fault?.error.details ?? []
  }
}

/**
 * No answer from the server: it is down, the address is wrong, the connection broke, or no
 * response came within the request timeout. `status` is 0, `fault` and `correlationId` are
 * undefined and `cause` holds the underlying network error.
 *
 * @example
 * try { await connect({ address: 'http://127.0.0.1:1', timeoutMs: 2000 }).health() } catch (err) {
 *   if (err instanceof MimicConnectionError) console.error(err.message) // Cannot reach the Mimic server at ...
 * }
 */
export class MimicConnectionError extends MimicApiError {
  override name = 'MimicConnectionError'
  override readonly code: MimicErrorCode = 'MIMIC_CONNECTION_ERROR'
  /** True when the request was given up because no answer came in time. */
  readonly timedOut: boolean

  constructor(options: Omit<MimicApiErrorOptions, 'status' | 'fault' | 'correlationId'> & { timedOut: boolean }) {
    super({ ...options, status: 0 })
    this.timedOut = options.timedOut
  }
}
