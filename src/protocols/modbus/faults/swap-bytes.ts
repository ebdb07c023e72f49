import { z } from 'zod'
import { selectorShape, switchable } from '../../../definition/modbus-faults-schema.js'
import { defineFault, shapeOf } from './kind.js'

/** The reads whose answers carry registers: read holding (3), read input (4), read/write (23). */
const REGISTER_READS = [3, 4, 23] as const
/** Where a read answer's byte count is, counted from the start of its ADU (MBAP 7 bytes, function code 1). */
const BYTE_COUNT_AT = 8

/**
 * `swap_bytes`: register reads are answered with the two bytes of every register swapped, as by a
 * device or gateway that gets the byte order wrong: a valid answer (right length, right CRC on
 * rtu_over_tcp) with wrong values, e.g. 258 (0x0102) read as 513 (0x0201). Only the answers to
 * function codes 3, 4 and 23 change, and only they count for `every`.
 *
 * @example
 * // faults: { swap_bytes: true } or { swap_bytes: { addresses: [[0, 9]], every: 2 } }
 */
export const swapBytesFault = defineFault({
  key: 'swap_bytes',
  schema: switchable(z.strictObject(selectorShape, { error: 'swap_bytes is true, or an object {functions, addresses, every, probability}' })),
  counter: 'fault_swaps',
  counts: 'register read answers sent with the bytes of each register swapped',
  functions: REGISTER_READS,
  apply: (decision) => {
    shapeOf(decision).edit = swapRegisterBytes
  },
})

/**
 * Swaps the two bytes of every register in the read answer ADU of `length` bytes at `at` of
 * `adu`; an exception answer (or any other) is left as it is.
 *
 * @example
 * swapRegisterBytes(adu, 0, 11) // 03 02 01 02 -> 03 02 02 01
 */
export function swapRegisterBytes(adu: Buffer, at: number, length: number): void {
  const fc = adu[at + BYTE_COUNT_AT - 1]!
  if (!(REGISTER_READS as readonly number[]).includes(fc) || length <= BYTE_COUNT_AT) return
  const end = Math.min(at + length, at + BYTE_COUNT_AT + 1 + adu[at + BYTE_COUNT_AT]!)
  for (let i = at + BYTE_COUNT_AT + 1; i + 1 < end; i += 2) {
    const high = adu[i]!
    adu[i] = adu[i + 1]!
    adu[i + 1] = high
  }
}
