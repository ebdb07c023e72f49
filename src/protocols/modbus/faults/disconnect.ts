import { z } from 'zod'
import { MAX_FAULT_COUNT, switchable } from '../../../definition/modbus-faults-schema.js'
import { defineFault } from './kind.js'

/**
 * `disconnect`: closes every client connection of the listener, now or when the request after
 * the next `after` ones arrives; the fault then ends by itself. The plan (plan.ts) decides it
 * before any other fault.
 *
 * @example
 * // faults: { disconnect: { after: 100 } }
 */
export const disconnectFault = defineFault({
  key: 'disconnect',
  schema: switchable(
    z.strictObject(
      {
        /** Requests answered before every connection is closed; 0 closes them now. */
        after: z.number().int('after is a whole number of requests').min(0, 'after is at least 0').max(MAX_FAULT_COUNT).optional(),
      },
      { error: 'disconnect is true, or an object {after}' },
    ),
  ),
  counter: 'fault_disconnects',
  counts: 'client connections the faults closed',
})
