import { MODBUS_CONNECTION_DEFAULTS } from '../../definition/modbus-schema.js'
import type { ModbusSlaveDefinition } from '../../definition/modbus-schema.js'

/**
 * How long Modbus connections may stay quiet or half-sent, and how many a listener holds. Each
 * adapter states its own; a listener shared by several adapters applies the strictest of them:
 * the smallest idle timeout (0, never, counts only when every adapter says so), the smallest frame
 * timeout and the smallest connection limit, recomputed whenever an adapter joins or leaves.
 * Strictest, because a connection is not tied to one unit: a client may address every unit id of
 * the port, so no adapter's limit could hold if a laxer neighbour's applied.
 *
 * @example
 * combineRules([rulesOf({ idle_timeout: 300, frame_timeout: 10, max_connections: 256 }), rulesOf({ idle_timeout: 0.5, frame_timeout: 10, max_connections: 5 })])
 * // { idleTimeoutMs: 500, frameTimeoutMs: 10000, maxConnections: 5 }
 */

/** The connection rules of one adapter, or of a listener once combined. */
export interface ConnectionRules {
  /** Milliseconds a connection may go without completing a request; 0: never closed for that. */
  readonly idleTimeoutMs: number
  /** Milliseconds within which a frame whose first bytes arrived must be complete. */
  readonly frameTimeoutMs: number
  /** Connections held at once. */
  readonly maxConnections: number
}

/** Why a listener closed (or did not take) a connection; each reason has an adapter counter. */
export type ConnectionCloseReason = 'idle' | 'frame' | 'evicted' | 'refused'

/**
 * The rules a definition states (its defaults included), in milliseconds.
 *
 * @example
 * rulesOf({ idle_timeout: 0.3, frame_timeout: 10, max_connections: 5 }).idleTimeoutMs // 300
 */
export function rulesOf(definition: Pick<ModbusSlaveDefinition, 'idle_timeout' | 'frame_timeout' | 'max_connections'>): ConnectionRules {
  return {
    idleTimeoutMs: Math.round(definition.idle_timeout * 1000),
    frameTimeoutMs: Math.max(1, Math.round(definition.frame_timeout * 1000)),
    maxConnections: definition.max_connections,
  }
}

/**
 * The rules a definition gets when it states none.
 *
 * @example
 * DEFAULT_CONNECTION_RULES.maxConnections // 256
 */
export const DEFAULT_CONNECTION_RULES: ConnectionRules = rulesOf(MODBUS_CONNECTION_DEFAULTS)

/**
 * The strictest of several adapters' rules (see the module comment); the defaults for none.
 *
 * @example
 * combineRules([]) // DEFAULT_CONNECTION_RULES
 */
export function combineRules(all: Iterable<ConnectionRules>): ConnectionRules {
  let idle = Infinity
  let frame = Infinity
  let max = Infinity
  let any = false
  for (const rules of all) {
    any = true
    if (rules.idleTimeoutMs > 0) idle = Math.min(idle, rules.idleTimeoutMs)
    frame = Math.min(frame, rules.frameTimeoutMs)
    max = Math.min(max, rules.maxConnections)
  }
  if (!any) return DEFAULT_CONNECTION_RULES
  return { idleTimeoutMs: idle === Infinity ? 0 : idle, frameTimeoutMs: frame, maxConnections: max }
}
