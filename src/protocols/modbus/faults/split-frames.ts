import { z } from 'zod'
import { faultSeconds, selectorShape, switchable } from '../../../definition/modbus-faults-schema.js'
import { defineFault, shapeOf } from './kind.js'

/** Seconds between two pieces of a split answer when the value gives no `gap`. */
export const DEFAULT_SPLIT_GAP = 0.05

/**
 * `split_frames`: the answer leaves in `parts` pieces, `gap` seconds apart.
 *
 * @example
 * // faults: { split_frames: { parts: 3, gap: 0.1 } }
 */
export const splitFramesFault = defineFault({
  key: 'split_frames',
  schema: switchable(
    z.strictObject(
      {
        /** Pieces each answer is cut into (a piece is at least one byte). */
        parts: z.number().int('parts is a whole number').min(2, 'parts is 2..64').max(64, 'parts is 2..64').optional(),
        /** Seconds between two pieces. */
        gap: faultSeconds('gap', 10).optional(),
        ...selectorShape,
      },
      { error: 'split_frames is true, or an object {parts, gap, functions, addresses, every, probability}' },
    ),
  ),
  counter: 'fault_splits',
  counts: 'answers sent in pieces',
  apply: (decision, value) => {
    const shape = shapeOf(decision)
    shape.parts = value?.parts ?? 2
    shape.gapMs = Math.round((value?.gap ?? DEFAULT_SPLIT_GAP) * 1000)
  },
})
