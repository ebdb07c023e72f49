import { z } from 'zod'
import { referencedAttribute } from './attribute-reference.js'

/**
 * The `ocpp` adapter definition: OCPP 1.6J over WebSocket, as a charge point that connects to a
 * central system (`role: charge_point`, `endpoint`, `charge_point_id`) or as a central system
 * that charge points connect to (`role: central_system`, `server: {host, port, path}`). The
 * reference product's keys, as its library writes them: `bindings` is a map of named bindings,
 * each one message of one action (`direction` inbound/outbound, `frame_type` call/call_result,
 * `action`, `payload` whose `#attr(x)` strings stand for attributes, `interval` for calls sent
 * periodically).
 *
 * @example
 * const d = ocppSchema.parse({
 *   role: 'charge_point',
 *   endpoint: 'ws://127.0.0.1:9000/ocpp',
 *   charge_point_id: 'cp-1',
 *   bindings: { boot: { direction: 'outbound', frame_type: 'call', action: 'BootNotification', payload: { chargePointVendor: '#attr(vendor)' } } },
 * })
 * d.subprotocol // 'ocpp1.6'
 */

/** One named binding: one message of one action, its payload's `#attr(x)` fields bound to attributes. */
export const ocppBindingSchema = z
  .object({
    direction: z.enum(['inbound', 'outbound']),
    frame_type: z.enum(['call', 'call_result']),
    action: z.string().regex(/^[A-Za-z][A-Za-z0-9]*$/, 'an OCPP action name such as BootNotification'),
    payload: z.record(z.string(), z.unknown()).default({}),
    /** Seconds between sends of an outbound call (besides the one after each boot); 0 or absent: once per connection. */
    interval: z.number().min(0).max(86_400).optional(),
  })
  .strict()
export type OcppBinding = z.output<typeof ocppBindingSchema>

const serverSchema = z
  .object({
    // Loopback unless the model says otherwise, as every listener of Mimic (docs/security.md).
    host: z.string().min(1).default('127.0.0.1'),
    port: z.number().int().min(0).max(65_535).default(9000),
    path: z
      .string()
      .default('/ocpp')
      .refine((p) => p.startsWith('/'), 'a path starts with /'),
    subprotocol: z.string().min(1).optional(),
  })
  .strict()

/** The OCPP 1.6 CALLERROR codes a fault may answer with. @example OCPP_ERROR_CODES.includes('InternalError') */
export const OCPP_ERROR_CODES = [
  'NotImplemented',
  'NotSupported',
  'InternalError',
  'ProtocolError',
  'SecurityError',
  'FormationViolation',
  'PropertyConstraintViolation',
  'OccurenceConstraintViolation',
  'TypeConstraintViolation',
  'GenericError',
] as const

export const ocppSchema = z
  .object({
    role: z.enum(['charge_point', 'central_system']).default('charge_point'),
    /** The central system's URL a charge point connects to; the charge point id is appended as the last path segment. */
    endpoint: z
      .string()
      .regex(/^wss?:\/\/[^\s]+$/, 'a ws:// or wss:// URL')
      .optional(),
    subprotocol: z.string().min(1).default('ocpp1.6'),
    charge_point_id: z
      .string()
      .regex(/^[^\s/]+$/, 'no spaces or slashes')
      .optional(),
    server: serverSchema.optional(),
    bindings: z.record(z.string(), ocppBindingSchema).default({}),
    /** Seconds a call waits for its answer. */
    call_timeout: z.number().min(0.1).max(600).default(30),
    /** Seconds before a charge point connects again after its connection dropped (doubling up to 60). */
    reconnect_period: z.number().min(0.1).max(3600).default(5),
    /** A fault: while set, every CALL received is answered with a CALLERROR of this code. */
    call_error: z.enum(OCPP_ERROR_CODES).nullable().default(null),
  })
  .strict()
  .superRefine((d, ctx) => {
    if (d.role === 'charge_point' && d.endpoint === undefined)
      ctx.addIssue({ code: 'custom', path: ['endpoint'], message: 'a charge point needs the endpoint of its central system (ws://host:port/path)' })
  })
export type OcppDefinition = z.output<typeof ocppSchema>

/**
 * Every attribute an `ocpp` definition's bindings name (`#attr(x)` strings anywhere in a
 * payload), with its path, for the model's check that they are declared.
 *
 * @example
 * ocppAttributeReferences({ bindings: { b: { payload: { status: '#attr(s)' } } } })
 * // [{ path: ['bindings', 'b', 'payload', 'status'], attribute: 's' }]
 */
export function ocppAttributeReferences(settings: unknown): Array<{ path: (string | number)[]; attribute: string }> {
  const out: Array<{ path: (string | number)[]; attribute: string }> = []
  const walk = (value: unknown, path: (string | number)[]): void => {
    if (typeof value === 'string') {
      const attribute = value.trim().startsWith('#attr(') ? referencedAttribute(value.trim()) : null
      if (attribute !== null) out.push({ path, attribute })
    } else if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, i]))
    else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, [...path, k])
  }
  const bindings = (settings as { bindings?: unknown } | null)?.bindings
  if (bindings !== null && typeof bindings === 'object' && !Array.isArray(bindings))
    for (const [name, binding] of Object.entries(bindings)) walk((binding as { payload?: unknown } | null)?.payload, ['bindings', name, 'payload'])
  return out
}
