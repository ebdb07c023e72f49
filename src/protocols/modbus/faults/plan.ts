import type { ModbusFaultSelector } from '../../../definition/modbus-faults-schema.js'
import { MODBUS_FAULT_KINDS } from './index.js'
import type { ModbusFaults } from './index.js'
import { touches } from './kind.js'
import type { FaultDecision, ModbusFaultKind } from './kind.js'

/**
 * Fault injection for one Modbus unit: a FaultPlan holds a validated `faults` value (see
 * index.ts, the registry) and decides, request by request, what the unit does wrong: close the
 * connections, swallow the request, answer an exception, or answer late, corrupted, edited or in
 * pieces. The adapter asks it only while faults are set, so normal service costs one check per
 * request.
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

/** The faults that act on single requests, in the order they decide one (a stable sort keeps registry order among equals). */
const DECIDING: readonly ModbusFaultKind[] = (MODBUS_FAULT_KINDS as readonly ModbusFaultKind[])
  .filter((kind) => kind.apply !== undefined)
  .sort((a, b) => (a.precedence ?? 0) - (b.precedence ?? 0))

/** One request-level fault in force and how often its selector matched so far. */
class Selector {
  readonly kind: ModbusFaultKind
  readonly spec: ModbusFaultSelector
  #matched = 0

  constructor(kind: ModbusFaultKind, spec: ModbusFaultSelector) {
    this.kind = kind
    this.spec = spec
  }

  /** Whether the fault hits this request; draws from `random` only when it has a probability. */
  hits(pdu: Buffer, offset: number, length: number, random: () => number): boolean {
    const fc = pdu[offset]!
    if (this.kind.functions !== undefined && !this.kind.functions.includes(fc)) return false
    const { functions, addresses, every, probability } = this.spec
    if (functions !== undefined && !functions.includes(fc)) return false
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
 * plan.decide(pdu, 0, 5) // { action: 'exception', code: 6, shape: null, hits: ['fault_exceptions'] }
 * plan.decide(pdu, 0, 5); plan.spent // true
 */
export class FaultPlan {
  #value: ModbusFaults
  #random: () => number
  #setAt: number
  /** Requests decided since the plan was made. */
  #requests = 0
  /** The request-level faults in force, in the order they decide (their precedence). */
  #selectors: Selector[]

  constructor(value: ModbusFaults, now = Date.now()) {
    this.#value = value
    this.#random = seededRandom(value.seed ?? Math.floor(Math.random() * 0x100000000))
    this.#setAt = now
    const values = value as Record<string, ModbusFaultSelector | undefined>
    this.#selectors = DECIDING.filter((kind) => values[kind.key] !== undefined).map((kind) => new Selector(kind, values[kind.key]!))
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
    const decision: FaultDecision = { action: 'answer', code: 0, shape: null, hits: [] }
    if (value.disconnect !== undefined && this.#requests > (value.disconnect.after ?? 0)) {
      decision.action = 'disconnect'
      return decision
    }
    const values = value as Record<string, unknown>
    for (const selector of this.#selectors) {
      if (!selector.hits(pdu, offset, length, random)) continue
      const kind = selector.kind
      kind.apply!(decision, values[kind.key], random)
      decision.hits.push(kind.counter)
      if (decision.action === 'drop') break
    }
    return decision
  }
}
