import type { z } from 'zod'

/**
 * What a Modbus fault is (docs/modbus-faults.md): one file in this folder describes one key of
 * the adapter's `faults` property, and the registry (index.ts) lists the files. From that list
 * come the `faults` schema, the order in which faults decide a request, and the adapter's fault
 * counters (its node's `counters` and its `stats()`).
 *
 * @example
 * export const noResponseFault = defineFault({
 *   key: 'no_response', schema: switchable(z.strictObject(selectorShape)),
 *   counter: 'fault_no_responses', counts: 'requests swallowed',
 *   apply: (decision) => { decision.action = 'drop' },
 * })
 */

/** What happens to one request. */
export type FaultAction = 'answer' | 'drop' | 'exception' | 'disconnect'

/** How one answer leaves the connection. */
export interface AnswerShape {
  /** Milliseconds the answer is held back; null keeps the adapter's own response_delay. */
  delayMs: number | null
  /** Rewrites the complete answer (header stamped) before it leaves, into a frame a client should refuse; null leaves it as it is. */
  rewrite: ((adu: Buffer) => Buffer) | null
  /**
   * Changes a valid answer into another valid one with wrong contents, in place: the response
   * ADU of `length` bytes at `at` of `adu` (its first 7 bytes not yet stamped). The adapter
   * applies it before the answer leaves, so it works alike on every transport.
   */
  edit: ((adu: Buffer, at: number, length: number) => void) | null
  /** Pieces the answer is written in (1: whole). */
  parts: number
  /** Milliseconds between two pieces. */
  gapMs: number
}

/** The plan's decision for one request, which the faults that hit it fill in (see ModbusFaultKind.apply). */
export interface FaultDecision {
  action: FaultAction
  /** The exception code when action is 'exception'. */
  code: number
  /** How the answer leaves, or null for as usual. */
  shape: AnswerShape | null
  /** The counters (ModbusFaultKind.counter) of the faults that hit the request. */
  hits: string[]
}

/**
 * One fault kind. A fault with `apply` acts on single requests, and its value may carry the
 * selector keys (`functions`, `addresses`, `every`, `probability`); a fault without it is handled
 * by the plan itself (`disconnect`, `clear_after`).
 */
export interface ModbusFaultKind<Key extends string = string, Schema extends z.ZodType = z.ZodType, Counter extends string = string> {
  /** The key under `faults`, e.g. `no_response`. */
  readonly key: Key
  /** The schema of its value (the registry makes it optional). */
  readonly schema: Schema
  /** The name of its counter, e.g. `fault_no_responses`. */
  readonly counter: Counter
  /** What the counter counts, in words for the docs. */
  readonly counts: string
  /**
   * Function codes of requests the fault can act on at all (all when absent): other requests
   * pass it by without being counted for its `every`.
   */
  readonly functions?: readonly number[]
  /**
   * When the fault decides, against the others: lower first, registry order among equals
   * (default 0). Faults that replace the answer (`no_response`, `exception`) go before those
   * that shape it.
   */
  readonly precedence?: number
  /**
   * Fills in the decision for a request the fault hits (its selector matched). Runs in
   * `precedence` order; a fault that sets action 'drop' ends the decision. `random` is the plan's seeded
   * generator: draw from it only here, in a fixed order, so that a seed repeats the faults.
   */
  readonly apply?: (decision: FaultDecision, value: z.output<Schema>, random: () => number) => void
}

/**
 * A fault kind with its key, schema and counter kept as literal types, so that the registry can
 * type the faults value and the counters.
 *
 * @example
 * const fault = defineFault({ key: 'no_response', schema, counter: 'fault_no_responses', counts: 'requests swallowed' })
 */
export function defineFault<const Key extends string, Schema extends z.ZodType, const Counter extends string>(
  kind: ModbusFaultKind<Key, Schema, Counter>,
): ModbusFaultKind<Key, Schema, Counter> {
  return kind
}

/** The shape of a decision's answer, made on first need. */
export function shapeOf(decision: FaultDecision): AnswerShape {
  return (decision.shape ??= { delayMs: null, rewrite: null, edit: null, parts: 1, gapMs: 0 })
}

/**
 * Whether the request PDU of `length` bytes at `offset` reads or writes an address in one of the
 * ranges. A request whose addresses cannot be read (an unknown function code, a short frame)
 * matches none.
 *
 * @example
 * touches(Buffer.from('0300080004', 'hex'), 0, 5, [[10, 20]]) // true: it reads 8..11
 */
export function touches(pdu: Buffer, offset: number, length: number, ranges: ReadonlyArray<number | readonly [number, number]>): boolean {
  const fc = pdu[offset]!
  if (length < 5) return false
  const first = pdu.readUInt16BE(offset + 1)
  let count: number
  switch (fc) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 15:
    case 16:
      count = pdu.readUInt16BE(offset + 3)
      break
    case 5:
    case 6:
      count = 1
      break
    case 23:
      if (length >= 9 && overlaps(pdu.readUInt16BE(offset + 5), pdu.readUInt16BE(offset + 7), ranges)) return true
      count = pdu.readUInt16BE(offset + 3)
      break
    default:
      return false
  }
  return overlaps(first, count, ranges)
}

function overlaps(first: number, count: number, ranges: ReadonlyArray<number | readonly [number, number]>): boolean {
  const last = first + Math.max(count, 1) - 1
  for (const range of ranges) {
    const [a, b] = typeof range === 'number' ? [range, range] : range
    if (first <= b && last >= a) return true
  }
  return false
}
