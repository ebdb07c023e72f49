import { randomUUID } from 'node:crypto'
import { BadRequestError, FAULT_KINDS, InternalError, MimicError, PayloadTooLargeError, type ErrorDetail } from '../errors.js'
import { guessComponent, type RequestFaultContext } from './tree-routes.js'

/** The `component` block of a fault: which node the failed request was about. */
export interface FaultComponent {
  name: string
  path: string
  state: string | null
}

/** The fault document of API.md section 6. */
export interface FaultDocument {
  type: 'fault'
  event: string
  http_status: number
  action: string
  component: FaultComponent | null
  correlation_id: string
  when: string
  error: { type: string; message: string; details: ErrorDetail[] }
}

/** Turns anything thrown into a MimicError; unknown errors become a 500 InternalError. */
export function asMimicError(err: unknown): MimicError {
  if (err instanceof MimicError) return err
  return new InternalError(`Internal error: ${(err as Error)?.message ?? String(err)}`, [], { cause: err })
}

/**
 * Builds the fault document for an error.
 *
 * @example
 * buildFault(new NotFoundError('nope'), { action: 'get', component: null, correlationId: 'abc' })
 */
export function buildFault(err: MimicError, ctx: { action: string; component: FaultComponent | null; correlationId: string }): FaultDocument {
  return {
    type: 'fault',
    event: err.event,
    http_status: err.status,
    action: ctx.action,
    component: ctx.component,
    correlation_id: ctx.correlationId,
    when: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    error: { type: err.name, message: err.message, details: err.details },
  }
}

/** A correlation id for a request: the client's own when it sent a sane one. */
export function correlationIdOf(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header
  if (value && value.length <= 128 && /^[\x21-\x7e]+$/.test(value)) return value
  return randomUUID()
}

/**
 * The status and fault document (API.md section 6) for an error, logged when it is the server's.
 * Shared by fastify's error handler and the fast lane, so both answer a failure alike.
 *
 * @example
 * const { status, fault } = faultFor(err, treeFaultContext('GET'), correlationId, logger)
 */
export function faultFor(error: unknown, base: RequestFaultContext, correlationId: string, log: FaultLog): { status: number; fault: FaultDocument } {
  const err = fastifyToMimic(error)
  // The state as it is now: a failed prepare has just moved the instance to ERROR.
  const component = err.component ?? base.node?.faultInfo() ?? base.component ?? (base.segments ? guessComponent(base.segments) : null)
  const fault = buildFault(err, { action: base.action, component, correlationId })
  logFault(log, fault, error)
  return { status: err.status, fault }
}

/** What a fault is logged to: the server's logger, or its sampling refusal log (refusal-log.ts). */
export interface FaultLog {
  warn(fields: object, message: string): void
  error(fields: object, message: string): void
}

/**
 * Logs a fault the server answered, with its correlation id and, when it is about an instance or
 * something inside one, the instance's name (so the instance's `logs` node shows it): the
 * server's own failures (5xx) as errors with the underlying error, the client's (4xx) as warnings.
 * A run stopped by the server's shutdown (503 `shutting_down`) is a warning too: the operator
 * asked for it, nothing failed.
 *
 * @example
 * logFault(logger, fault, err)
 */
export function logFault(log: FaultLog, fault: FaultDocument, cause?: unknown): void {
  const fields: Record<string, unknown> = {
    correlation_id: fault.correlation_id,
    status: fault.http_status,
    event: fault.event,
    action: fault.action,
    component: fault.component?.path ?? null,
  }
  const instance = instanceOfPath(fault.component?.path)
  if (instance !== undefined) fields.instance = instance
  if (fault.error.details.length) fields.details = fault.error.details.slice(0, 20)
  if (fault.http_status >= 500 && fault.event !== FAULT_KINDS.SHUTTING_DOWN.event) log.error({ ...fields, err: cause }, fault.error.message)
  else log.warn(fields, fault.error.message)
}

/** `pump` for `instances.pump` and anything below it. */
function instanceOfPath(path: string | undefined): string | undefined {
  if (!path?.startsWith('instances.')) return undefined
  const name = path.split('.')[1]
  return name || undefined
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
