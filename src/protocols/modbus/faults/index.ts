import { z } from 'zod'
import { parseFaultsValue } from '../../../definition/modbus-faults-schema.js'
import { clearAfterFault } from './clear-after.js'
import { corruptFault } from './corrupt.js'
import { disconnectFault } from './disconnect.js'
import { exceptionFault } from './exception.js'
import { noResponseFault } from './no-response.js'
import { responseDelayFault } from './response-delay.js'
import { splitFramesFault } from './split-frames.js'
import { swapBytesFault } from './swap-bytes.js'

/**
 * The registry of Modbus faults (docs/modbus-faults.md): one file per fault in this folder, listed
 * once here. The `faults` schema, the order in which faults decide a request and the adapter's
 * fault counters all come from this list, so adding a fault is its file and one line below.
 *
 * @example
 * parseModbusFaults({ no_response: { every: 2 } }) // { no_response: { every: 2 } }
 * emptyFaultCounters() // { fault_no_responses: 0, fault_exceptions: 0, ... }
 */

export type { AnswerShape, FaultAction, FaultDecision, ModbusFaultKind } from './kind.js'
export { defineFault, touches } from './kind.js'
export { MODBUS_CORRUPTIONS, corruption } from './corrupt.js'
export type { ModbusCorruption } from './corrupt.js'
export { DEFAULT_SPLIT_GAP } from './split-frames.js'
export { swapRegisterBytes } from './swap-bytes.js'
export { clearAfterFault, disconnectFault }

/**
 * The faults, in the order of the schema's keys (and so of a 422's details) and of the counters.
 * They decide a request in another order: a due `disconnect` first (the plan sees to it), then
 * each fault with `apply` by its `precedence`; a fault that drops the request ends the decision.
 */
export const MODBUS_FAULT_KINDS = [
  responseDelayFault,
  exceptionFault,
  noResponseFault,
  corruptFault,
  splitFramesFault,
  swapBytesFault,
  disconnectFault,
  clearAfterFault,
] as const

type Kinds = (typeof MODBUS_FAULT_KINDS)[number]

/** The name of a fault counter, e.g. `fault_no_responses`. */
export type ModbusFaultCounter = Kinds['counter']

/** What the faults did since the adapter was created: one counter per fault (see each fault's `counts`). */
export type ModbusFaultCounters = Record<ModbusFaultCounter, number>

/**
 * The faults value, strict: unknown keys are errors.
 *
 * @example
 * modbusFaultsSchema.safeParse({ no_response: { every: 0 } }).success // false: every is at least 1
 */
export const modbusFaultsSchema = z.strictObject(
  {
    ...(Object.fromEntries(MODBUS_FAULT_KINDS.map((kind) => [kind.key, kind.schema.optional()])) as {
      [K in Kinds as K['key']]: z.ZodOptional<K['schema']>
    }),
    /** Seeds the random choices (probability, jitter, junk bytes), so a run can be repeated. */
    seed: z.number().int('seed is a whole number').min(0, 'seed is 0..4294967295').max(0xffffffff, 'seed is 0..4294967295').optional(),
  },
  { error: 'faults is an object (or {} / null for none)' },
)

/**
 * A faults value after validation: booleans turned into objects (`true` into `{}`), a number
 * `response_delay` into `{seconds}`, switched-off faults left out.
 *
 * @example
 * const f: ModbusFaults = parseModbusFaults({ split_frames: true }) // { split_frames: {} }
 */
export type ModbusFaults = z.output<typeof modbusFaultsSchema>

/**
 * Validates a faults value (null means none), throwing a ValidationError (422) that lists every
 * problem with its path under `prefix`, e.g. `value.exception.code`.
 *
 * @example
 * parseModbusFaults(null) // {}
 * parseModbusFaults({ exception: { code: 0 } }) // throws: value.exception.code: code is 1..255
 */
export function parseModbusFaults(input: unknown, prefix = 'value'): ModbusFaults {
  return parseFaultsValue(modbusFaultsSchema, input, 'Modbus faults', prefix)
}

/**
 * Every fault counter at 0, in registry order.
 *
 * @example
 * emptyFaultCounters().fault_swaps // 0
 */
export function emptyFaultCounters(): ModbusFaultCounters {
  return Object.fromEntries(MODBUS_FAULT_KINDS.map((kind) => [kind.counter, 0])) as ModbusFaultCounters
}
