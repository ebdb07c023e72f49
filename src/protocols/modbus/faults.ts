import type { ModbusCorruption, ModbusFaults, ModbusFaultSelector } from '../../definition/modbus-faults-schema.js'

/**
 * Fault injection for one Modbus unit: a FaultPlan holds a validated `faults` value (see
 * src/definition/modbus-faults-schema.ts) and decides, request by request, what the unit does
 * wrong: close the connections, swallow the request, answer an exception, or answer late,
 * corrupted or in pieces. The adapter asks it only while faults are set, so normal service costs
 * one check per request.
 *
 * Every random choice (probability, jitter, junk bytes) comes from one generator seeded with the
 * value's `seed` (or a random seed when it has none), drawn in a fixed order per request: the same
 * seed and the same requests give the same faults.
 *
 * @example
 * const plan = new FaultPlan(parseModbusFaults({ no_response: { every: 2 } }))
 * plan.decide(pdu, 0, pdu.length).action // 'answer'
 * plan.decide(pdu, 0, pdu.length).action // 'drop'
 */

/** What happens to one request. */
export type FaultAction = 'answer' | 'drop' | 'exception' | 'disconnect'

/** How one answer leaves the connection. */
export interface AnswerShape {
  /** Milliseconds the answer is held back; null keeps the adapter's own response_delay. */
  delayMs: number | null
  /** Rewrites the complete answer (header stamped) before it leaves; null leaves it as it is. */
  rewrite: ((adu: Buffer) => Buffer) | null
  /** Pieces the answer is written in (1: whole). */
  parts: number
  /** Milliseconds between two pieces. */
  gapMs: number
}

/** The plan's decision for one request. */
export interface FaultDecision {
  action: FaultAction
  /** The exception code when action is 'exception'. */
  code: number
  /** How the answer leaves, or null for as usual. */
  shape: AnswerShape | null
}

/** Seconds between two pieces of a split answer when the value gives no `gap`. */
export const DEFAULT_SPLIT_GAP = 0.05

/**
 * A small seeded generator (mulberry32): numbers in [0, 1), the same sequence for a seed on every
 * machine.
 *
 * @example
 * const random = seededRandom(7); random() // the same number every run
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 0x100000000
  }
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

/** One request-level fault and how often its selector matched so far. */
class Selector {
  readonly spec: ModbusFaultSelector
  #matched = 0

  constructor(spec: ModbusFaultSelector) {
    this.spec = spec
  }

  /** Whether the fault hits this request; draws from `random` only when it has a probability. */
  hits(pdu: Buffer, offset: number, length: number, random: () => number): boolean {
    const { functions, addresses, every, probability } = this.spec
    if (functions !== undefined && !functions.includes(pdu[offset]!)) return false
    if (addresses !== undefined && !touches(pdu, offset, length, addresses)) return false
    this.#matched++
    if (every !== undefined && this.#matched % every !== 0) return false
    return probability === undefined || random() < probability
  }
}

/**
 * The faults in force on one unit (see the module comment).
 *
 * @example
 * const plan = new FaultPlan(parseModbusFaults({ exception: { code: 6 }, clear_after: { requests: 2 } }))
 * plan.decide(pdu, 0, 5) // { action: 'exception', code: 6, shape: null }
 * plan.decide(pdu, 0, 5); plan.spent // true
 */
export class FaultPlan {
  #value: ModbusFaults
  #random: () => number
  #setAt: number
  /** Requests decided since the plan was made. */
  #requests = 0
  #delay: Selector | null
  #exception: Selector | null
  #noResponse: Selector | null
  #corrupt: Selector | null
  #split: Selector | null

  constructor(value: ModbusFaults, now = Date.now()) {
    this.#value = value
    this.#random = seededRandom(value.seed ?? Math.floor(Math.random() * 0x100000000))
    this.#setAt = now
    this.#delay = value.response_delay ? new Selector(value.response_delay) : null
    this.#exception = value.exception ? new Selector(value.exception) : null
    this.#noResponse = value.no_response ? new Selector(value.no_response) : null
    this.#corrupt = value.corrupt ? new Selector(value.corrupt) : null
    this.#split = value.split_frames ? new Selector(value.split_frames) : null
  }

  /** The faults still in force (a disconnect that happened is gone). */
  get value(): ModbusFaults {
    return this.#value
  }

  /** The keys of the faults in force, e.g. ['exception', 'clear_after']. */
  get active(): string[] {
    return Object.keys(this.#value).filter((k) => k !== 'seed')
  }

  /** True when no fault is left (a plan of only `seed`, or whose disconnect happened). */
  get empty(): boolean {
    return this.active.every((k) => k === 'clear_after')
  }

  /** True once `clear_after.requests` requests were decided. */
  get spent(): boolean {
    const limit = this.#value.clear_after?.requests
    return limit !== undefined && this.#requests >= limit
  }

  /** Milliseconds left before `clear_after.seconds` clears the plan, or null when it has none. */
  remainingMs(now = Date.now()): number | null {
    const seconds = this.#value.clear_after?.seconds
    return seconds === undefined ? null : Math.max(0, this.#setAt + seconds * 1000 - now)
  }

  /** Whether a disconnect is due now, before any request (`disconnect: {after: 0}` or `true`). */
  get disconnectNow(): boolean {
    return this.#value.disconnect !== undefined && (this.#value.disconnect.after ?? 0) === 0
  }

  /** Forgets the disconnect once it happened. */
  disconnected(): void {
    const { disconnect: _done, ...rest } = this.#value
    this.#value = rest
  }

  /**
   * Decides what happens to the request PDU of `length` bytes at `offset` of `pdu`. The bytes
   * are only read during the call.
   */
  decide(pdu: Buffer, offset: number, length: number): FaultDecision {
    this.#requests++
    const random = this.#random
    const value = this.#value
    if (value.disconnect !== undefined && this.#requests > (value.disconnect.after ?? 0)) {
      return { action: 'disconnect', code: 0, shape: null }
    }
    if (this.#noResponse?.hits(pdu, offset, length, random)) return { action: 'drop', code: 0, shape: null }
    const exception = this.#exception?.hits(pdu, offset, length, random) === true
    let shape: AnswerShape | null = null
    if (this.#delay?.hits(pdu, offset, length, random)) {
      const { seconds, jitter } = value.response_delay!
      shape = { delayMs: Math.round((seconds + (jitter ? random() * jitter : 0)) * 1000), rewrite: null, parts: 1, gapMs: 0 }
    }
    if (this.#corrupt?.hits(pdu, offset, length, random)) {
      shape ??= { delayMs: null, rewrite: null, parts: 1, gapMs: 0 }
      shape.rewrite = corruption(value.corrupt!.kind, random)
    }
    if (this.#split?.hits(pdu, offset, length, random)) {
      shape ??= { delayMs: null, rewrite: null, parts: 1, gapMs: 0 }
      shape.parts = value.split_frames!.parts ?? 2
      shape.gapMs = Math.round((value.split_frames!.gap ?? DEFAULT_SPLIT_GAP) * 1000)
    }
    return { action: exception ? 'exception' : 'answer', code: exception ? value.exception!.code : 0, shape }
  }
}

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
