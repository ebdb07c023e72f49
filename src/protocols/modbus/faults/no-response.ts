import { z } from 'zod'
import { selectorShape, switchable } from '../../../definition/modbus-faults-schema.js'
import { defineFault } from './kind.js'

/**
 * `no_response`: the request gets no answer at all, and the client times out; the connection
 * stays open.
 *
 * @example
 * // faults: { no_response: { every: 3 } }
 */
export const noResponseFault = defineFault({
  key: 'no_response',
  schema: switchable(z.strictObject(selectorShape, { error: 'no_response is true, or an object {every, probability, functions, addresses}' })),
  counter: 'fault_no_responses',
  counts: 'requests swallowed',
  precedence: -2,
  apply: (decision) => {
    decision.action = 'drop'
  },
})
