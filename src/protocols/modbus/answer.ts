import type { Logger } from 'pino'
import { EXCEPTION_CODES, MAX_ADU_LENGTH, buildExceptionResponse, writeException } from './codec.js'
import type { ModbusUnit, UnitAnswer } from './connection.js'

/**
 * What the transports other than Modbus TCP (udp, rtu_over_tcp) make of a unit's answer: the
 * response ADU in a buffer of its own (MBAP header not stamped) and how it leaves. They handle a
 * request at a time, so the in-place slab of connection.ts would buy them nothing.
 *
 * @example
 * const settled = await settleAnswer(unit, frame, 1, frame.length - 3, logger)
 * if (settled.adu !== null) send(settled.adu)
 */

/** A settled answer: null adu for no answer at all. */
export interface SettledAnswer {
  adu: Buffer | null
  delayMs: number
  rewrite: ((adu: Buffer) => Buffer) | null
  parts: number
  gapMs: number
}

/**
 * Hands the request PDU of `pduLength` bytes at `pduOffset` of `frame` to `unit` and settles its
 * answer. The unit runs synchronously within the call (a write is applied before it returns,
 * unless the attribute's setter is asynchronous); a unit that throws answers exception 04.
 *
 * @example
 * const { adu, delayMs } = await settleAnswer(unit, frame, 7, 5, logger)
 */
export async function settleAnswer(unit: ModbusUnit, frame: Buffer, pduOffset: number, pduLength: number, logger: Logger): Promise<SettledAnswer> {
  const fc = frame[pduOffset]!
  const out = Buffer.allocUnsafe(MAX_ADU_LENGTH)
  let answer: UnitAnswer
  try {
    answer = unit.handle(frame, pduOffset, pduLength, out, 0)
  } catch (error) {
    logger.error({ err: error }, 'modbus unit failed to answer')
    answer = writeException(out, 0, fc, EXCEPTION_CODES.SERVER_DEVICE_FAILURE)
  }
  const shaped = typeof answer === 'object' && !(answer instanceof Promise) ? answer : null
  const inner = shaped === null ? (answer as number | Promise<Buffer | null>) : shaped.answer
  let adu: Buffer | null
  if (typeof inner === 'number') {
    adu = inner === 0 ? null : out.subarray(0, inner)
  } else {
    adu = await inner.catch((error: unknown) => {
      logger.error({ err: error }, 'modbus unit failed to answer')
      return buildExceptionResponse(fc, EXCEPTION_CODES.SERVER_DEVICE_FAILURE)
    })
  }
  if (shaped === null) return { adu, delayMs: unit.responseDelayMs, rewrite: null, parts: 1, gapMs: 0 }
  return { adu, delayMs: shaped.delayMs, rewrite: shaped.rewrite, parts: shaped.parts, gapMs: shaped.gapMs }
}
