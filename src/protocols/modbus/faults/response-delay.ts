import { z } from 'zod'
import { faultSeconds, selectorShape } from '../../../definition/modbus-faults-schema.js'
import { defineFault, shapeOf } from './kind.js'

/**
 * `response_delay`: each answer waits `seconds` plus a random 0..`jitter`; while set it replaces
 * the adapter's own `response_delay`.
 *
 * @example
 * // faults: { response_delay: 0.5 } or { response_delay: { seconds: 0.8, jitter: 0.4 } }
 */
export const responseDelayFault = defineFault({
  key: 'response_delay',
  schema: z.preprocess(
    (v) => (typeof v === 'number' ? { seconds: v } : v),
    z.strictObject(
      {
        seconds: faultSeconds('response_delay', 3600),
        /** Adds a random 0..jitter seconds to each delay. */
        jitter: faultSeconds('jitter', 3600).optional(),
        ...selectorShape,
      },
      { error: 'response_delay is seconds, or {seconds, jitter}' },
    ),
  ),
  counter: 'fault_delays',
  counts: "answers held back by the faults' `response_delay`",
  apply: (decision, value, random) => {
    const { seconds, jitter } = value
    shapeOf(decision).delayMs = Math.round((seconds + (jitter ? random() * jitter : 0)) * 1000)
  },
})
