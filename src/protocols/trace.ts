/**
 * Traffic traces (docs/traces.md): what the clients of each protocol adapter asked and got, in a
 * bounded ring per adapter read with `.../communication/<adapter>/method/tail`, and every client
 * write as a `protocol.write` event of the server's journal, which the event stream
 * (`/api/v3/events`) sends to its clients. One module for every protocol kind: an adapter that
 * knows its exchanges records each with one call (`trace.record(...)`, or the Modbus decoder of
 * modbus/trace.ts); the attribute writes of every adapter are seen through its accessor, so an
 * adapter that records nothing still has its writes in its trace and in the event stream.
 *
 * @example
 * const trace = new AdapterTrace({ instance: 'meter', adapter: 'modbus_slave', kind: 'modbus_slave', journal })
 * trace.record({ operation: 'write', function: 16, address: 0, count: 2, values: [16800, 0] })
 * trace.tail({ args: [], kwargs: { limit: 10, function: 16 } }) // [{ seq: 1, time: '...', operation: 'write', ... }]
 */
import { z } from 'zod'
import { ValidationError, summarize } from '../errors.js'
import { parseSince } from '../logs/index.js'
import type { CallArgs } from '../tree/component.js'
import { methodArguments } from '../tree/method-arguments.js'

/** Exchanges an adapter's ring keeps unless its `trace_size` is set. */
export const DEFAULT_TRACE_SIZE = 200
/** Most exchanges one adapter's ring may keep (`trace_size`). */
export const MAX_TRACE_SIZE = 10_000
/** `protocol.write` events the server keeps for event streams that fell behind. */
export const JOURNAL_SIZE = 10_000
/** Longest text (an MQTT payload, an instrument's answer) kept in an entry; longer is cut and marked. */
export const MAX_TRACE_TEXT = 1024

/**
 * One exchange as an adapter describes it: `operation` (`read`, `write`, `publish`, `command`,
 * ...) and whatever its protocol has (Modbus `unit`, `function`, `address`, `count`, `values`,
 * `exception`; MQTT `topic`, `direction`, `size`, `payload`; OPC UA `node`, `status`; text
 * instruments `command`, `answer`). Values are plain JSON.
 */
export interface Exchange {
  operation: string
  /** `in` (a client's request or message) or `out` (what the adapter sent on its own). */
  direction?: 'in' | 'out'
  /** Seconds from the request to the answer, when the adapter timed it. */
  latency?: number
  /** A refusal or failure, as text (a Modbus exception's name, an OPC UA status). */
  error?: string
  [field: string]: unknown
}

/** An exchange in the ring: its sequence number (per adapter), wall-clock time and the attributes it set. */
export interface TraceEntry extends Exchange {
  seq: number
  /** ISO 8601 UTC. */
  time: string
  /** The attributes the exchange wrote and their new values (internal), when it wrote any. */
  attributes?: Record<string, unknown>
}

/** The `protocol.write` event: an exchange that set attributes, with where it happened. */
export interface ProtocolWriteEvent extends TraceEntry {
  /** Sequence number in the server's journal (1, 2, ... for the life of the server). */
  event_seq: number
  instance: string
  adapter: string
  kind: string
}

/**
 * The server's `protocol.write` events, newest `JOURNAL_SIZE` kept, and the hearer of exchange
 * latencies (`/metrics`). One per server (ProtocolContexts.traffic).
 *
 * @example
 * const journal = new TrafficJournal()
 * const mark = journal.lastSeq
 * // ... a client writes ...
 * journal.after(mark) // [{ event_seq: 1, instance: 'meter', adapter: 'modbus_slave', ... }]
 */
export class TrafficJournal {
  readonly #ring: ProtocolWriteEvent[] = []
  #seq = 0
  /** Hears each timed exchange (set by the server's metrics). */
  onLatency: ((labels: { instance: string; adapter: string; kind: string }, seconds: number) => void) | undefined

  /** Sequence number of the newest event (0 before the first). */
  get lastSeq(): number {
    return this.#seq
  }

  publish(event: Omit<ProtocolWriteEvent, 'event_seq'>): void {
    const full = { ...event, event_seq: ++this.#seq } as ProtocolWriteEvent
    this.#ring.push(full)
    if (this.#ring.length > JOURNAL_SIZE) this.#ring.splice(0, this.#ring.length - JOURNAL_SIZE)
  }

  /** Events after `seq`, oldest first (at most the newest `limit`). */
  after(seq: number, limit = JOURNAL_SIZE): ProtocolWriteEvent[] {
    if (seq >= this.#seq) return []
    const ring = this.#ring
    let i = ring.length
    while (i > 0 && ring[i - 1]!.event_seq > seq) i--
    return ring.slice(Math.max(i, ring.length - limit))
  }
}

const TAIL_ARGS = ['limit', 'since', 'operation', 'function', 'direction', 'contains'] as const

const tailSchema = z.strictObject({
  limit: z.number().int().min(1).max(MAX_TRACE_SIZE).nullish(),
  since: z.union([z.number(), z.string()]).nullish(),
  operation: z.string().max(100).nullish(),
  function: z.number().int().min(1).max(127).nullish(),
  direction: z.enum(['in', 'out']).nullish(),
  contains: z.string().max(1000).nullish(),
})

/** What `tail` was asked for, checked. */
interface TailQuery {
  limit: number
  afterSeq?: number
  sinceMs?: number
  operation?: string
  function?: number
  direction?: 'in' | 'out'
  contains?: string
}

/**
 * One adapter's trace: the ring, the attribute writes under way, and the tail method.
 *
 * @example
 * accessor.write = (attr, value) => (trace.attributeWritten(attr, value), target.setInternal(value))
 */
export class AdapterTrace {
  readonly instance: string
  readonly adapter: string
  readonly kind: string
  readonly #journal: TrafficJournal
  /** Kept as recorded, with the time in milliseconds (`at`); `tail` gives the ISO 8601 text (formatting it for every exchange cost more than the rest of a record). */
  #ring: Stored[] = []
  #size: number
  #seq = 0
  /** Attribute writes since the last recorded exchange (see `attributeWritten`). */
  #pending: Record<string, unknown> | null = null
  #flushQueued = false

  constructor(opts: { instance: string; adapter: string; kind: string; journal: TrafficJournal; size?: number }) {
    this.instance = opts.instance
    this.adapter = opts.adapter
    this.kind = opts.kind
    this.#journal = opts.journal
    this.#size = opts.size ?? DEFAULT_TRACE_SIZE
    this.#labels = Object.freeze({ instance: this.instance, adapter: this.adapter, kind: this.kind })
  }

  /** The adapter's labels in /metrics, made once. */
  readonly #labels: Readonly<{ instance: string; adapter: string; kind: string }>

  /** How many exchanges the ring keeps; 0 turns tracing off (writes still reach the event stream). */
  get size(): number {
    return this.#size
  }

  set size(size: number) {
    const problem = traceSizeProblem(size)
    if (problem) throw new ValidationError(problem, [{ path: 'trace_size', message: problem }])
    this.#size = size
    if (this.#ring.length > size) this.#ring = this.#ring.slice(this.#ring.length - size)
  }

  /** False when nothing is kept (size 0): an adapter may then skip describing its exchanges. */
  get on(): boolean {
    return this.#size > 0
  }

  /** Exchanges recorded since the adapter was made. */
  get recorded(): number {
    return this.#seq
  }

  /**
   * Records one exchange. The attribute writes seen since the last one are its `attributes`; an
   * exchange that wrote any is also a `protocol.write` event.
   */
  record(exchange: Exchange): void {
    // The exchange object itself is kept (each adapter makes a fresh one), without a copy.
    const entry = exchange as Stored
    entry.seq = ++this.#seq
    entry.at = Date.now()
    if (this.#pending !== null) {
      entry.attributes = this.#pending
      this.#pending = null
    }
    if (typeof exchange.latency === 'number') this.#journal.onLatency?.(this.#labels, exchange.latency)
    if (this.#size > 0) {
      this.#ring.push(entry)
      if (this.#ring.length > this.#size) this.#ring.shift()
    }
    if (entry.attributes !== undefined) this.#journal.publish({ ...shown(entry), instance: this.instance, adapter: this.adapter, kind: this.kind })
  }

  /**
   * Hears an attribute write of the adapter (its accessor calls this). The write joins the next
   * recorded exchange; when the adapter records none by the end of the current turn, the writes
   * are recorded on their own as a `write` exchange.
   */
  attributeWritten(attr: string, value: unknown): void {
    ;(this.#pending ??= {})[attr] = value
    if (this.#flushQueued) return
    this.#flushQueued = true
    // A Modbus request that writes records its exchange in the same turn; this catches the rest.
    setImmediate(() => {
      this.#flushQueued = false
      if (this.#pending !== null) this.record({ operation: 'write', direction: 'in' })
    })
  }

  /** The `tail` method: the newest matching exchanges, oldest first. */
  tail(call: CallArgs): TraceEntry[] {
    const query = parseTraceTail(call)
    const matches: TraceEntry[] = []
    const needle = query.contains?.toLowerCase()
    for (let i = this.#ring.length - 1; i >= 0 && matches.length < query.limit; i--) {
      const stored = this.#ring[i]!
      if (query.afterSeq !== undefined && stored.seq <= query.afterSeq) break
      if (query.sinceMs !== undefined && stored.at < query.sinceMs) break
      const e = shown(stored)
      if (query.operation !== undefined && e.operation !== query.operation) continue
      if (query.function !== undefined && e.function !== query.function) continue
      if (query.direction !== undefined && e.direction !== query.direction) continue
      if (needle !== undefined && !JSON.stringify(e).toLowerCase().includes(needle)) continue
      matches.push(e)
    }
    return matches.reverse()
  }

  /** Empties the ring; returns how many exchanges it held. */
  clear(): number {
    const n = this.#ring.length
    this.#ring = []
    return n
  }
}

/** An exchange as the ring keeps it: the time in milliseconds. */
interface Stored extends Exchange {
  seq: number
  at: number
  attributes?: Record<string, unknown>
}

/** An entry as `tail` and the event stream give it: `seq`, then `time` as ISO 8601 text, then the rest. */
function shown(stored: Stored): TraceEntry {
  const { seq, at, ...rest } = stored
  return { seq, time: new Date(at).toISOString(), ...rest } as TraceEntry
}

/** Why `size` is not a trace size, or null. */
export function traceSizeProblem(size: unknown): string | null {
  if (typeof size === 'number' && Number.isInteger(size) && size >= 0 && size <= MAX_TRACE_SIZE) return null
  return `'trace_size' must be an integer from 0 (no trace) to ${MAX_TRACE_SIZE}`
}

/**
 * A text as an entry keeps it: at most MAX_TRACE_TEXT characters, a longer one cut and marked.
 *
 * @example
 * traceText('x'.repeat(2000)).length // 1025 ('…' marks the cut)
 */
export function traceText(text: string): string {
  return text.length > MAX_TRACE_TEXT ? `${text.slice(0, MAX_TRACE_TEXT)}…` : text
}

function parseTraceTail(call: CallArgs): TailQuery {
  const { data, details } = methodArguments('tail', call, TAIL_ARGS, tailSchema)
  const query: TailQuery = { limit: DEFAULT_TRACE_SIZE }
  if (data) {
    const d = data
    if (d.limit != null) query.limit = d.limit
    if (d.operation != null) query.operation = d.operation
    if (d.function != null) query.function = d.function
    if (d.direction != null) query.direction = d.direction
    if (d.contains != null && d.contains !== '') query.contains = d.contains
    if (d.since != null) {
      const bound = parseSince(d.since)
      if (!bound)
        details.push({ path: 'kwargs.since', message: 'expected a trace sequence number, an ISO 8601 time or a duration back from now such as 30s, 5m' })
      else Object.assign(query, bound)
    }
  }
  if (details.length) throw new ValidationError(summarize('tail', details), details)
  return query
}
