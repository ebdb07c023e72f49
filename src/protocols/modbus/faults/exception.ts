import { z } from 'zod'
import { selectorShape } from '../../../definition/modbus-faults-schema.js'
import { defineFault } from './kind.js'

/**
 * `exception`: the exception `code` instead of the answer; the request is not carried out.
 *
 * @example
 * // faults: { exception: { code: 6, functions: [3] } }
 */
export const exceptionFault = defineFault({
  key: 'exception',
  schema: z.strictObject(
    {
      code: z.number({ error: 'code is an exception code, 1..255' }).int('code is a whole number').min(1, 'code is 1..255').max(255, 'code is 1..255'),
      ...selectorShape,
    },
    { error: 'exception is an object {code, functions, addresses, every, probability}' },
  ),
  counter: 'fault_exceptions',
  counts: "exceptions the faults chose (not counted in `errors`, which counts the device's own)",
  precedence: -1,
  apply: (decision, value) => {
    decision.action = 'exception'
    decision.code = value.code
  },
})
