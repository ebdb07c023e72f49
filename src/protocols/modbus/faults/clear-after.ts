import { z } from 'zod'
import { MAX_FAULT_COUNT } from '../../../definition/modbus-faults-schema.js'
import { defineFault } from './kind.js'

/**
 * `clear_after`: every fault ends by itself after `requests` requests or `seconds` seconds,
 * whichever comes first (the plan, plan.ts, keeps count).
 *
 * @example
 * // faults: { exception: { code: 6 }, clear_after: { requests: 2 } }
 */
export const clearAfterFault = defineFault({
  key: 'clear_after',
  schema: z
    .strictObject(
      {
        requests: z.number().int('requests is a whole number').min(1, 'requests is at least 1').max(MAX_FAULT_COUNT).optional(),
        seconds: z.number().gt(0, 'seconds is more than 0').max(86_400, 'seconds is at most 86400 (one day)').optional(),
      },
      { error: 'clear_after is an object {requests, seconds}' },
    )
    .refine((c) => c.requests !== undefined || c.seconds !== undefined, 'give requests, seconds or both'),
  counter: 'fault_clears',
  counts: 'times `clear_after` ended the faults',
})
