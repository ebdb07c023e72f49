import { z } from 'zod'
import { selectorShape } from '../../../definition/modbus-faults-schema.js'
import { defineFault, shapeOf } from './kind.js'

/** What `corrupt` does to an answer. */
export const MODBUS_CORRUPTIONS = ['transaction_id', 'length', 'junk'] as const
/** @example const kind: ModbusCorruption = 'junk' */
export type ModbusCorruption = (typeof MODBUS_CORRUPTIONS)[number]

/**
 * `corrupt`: a frame the client should refuse (see `corruption`).
 *
 * @example
 * // faults: { corrupt: { kind: 'junk' }, seed: 7 }
 */
export const corruptFault = defineFault({
  key: 'corrupt',
  schema: z.strictObject(
    {
      kind: z.enum(MODBUS_CORRUPTIONS, { error: `kind is one of ${MODBUS_CORRUPTIONS.join(', ')}` }),
      ...selectorShape,
    },
    { error: 'corrupt is an object {kind, functions, addresses, every, probability}' },
  ),
  counter: 'fault_corruptions',
  counts: 'answers corrupted',
  apply: (decision, value, random) => {
    shapeOf(decision).rewrite = corruption(value.kind, random)
  },
})

/**
 * The rewrite of an answer for a corruption kind: `transaction_id` flips every bit of the
 * transaction id, `length` makes the MBAP length field one more than the bytes that follow, and
 * `junk` replaces the answer by as many random bytes (never with protocol id 0, so it is never a
 * valid frame by chance).
 *
 * @example
 * corruption('transaction_id', Math.random)(adu) // adu with its transaction id inverted
 */
export function corruption(kind: ModbusCorruption, random: () => number): (adu: Buffer) => Buffer {
  switch (kind) {
    case 'transaction_id':
      return (adu) => {
        adu[0] = ~adu[0]! & 0xff
        adu[1] = ~adu[1]! & 0xff
        return adu
      }
    case 'length':
      return (adu) => {
        adu.writeUInt16BE(adu.readUInt16BE(4) + 1, 4)
        return adu
      }
    case 'junk': {
      // Drawn now, in the request's turn, so that the bytes follow from the seed alone.
      const bytes = Array.from({ length: 260 }, () => Math.floor(random() * 256))
      return (adu) => {
        for (let i = 0; i < adu.length; i++) adu[i] = bytes[i]!
        if (adu.length > 3 && adu[2] === 0 && adu[3] === 0) adu[2] = 0xff
        return adu
      }
    }
  }
}
