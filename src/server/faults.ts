import { randomUUID } from 'node:crypto'
import { InternalError, MimicError, type ErrorDetail } from '../errors.js'

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
