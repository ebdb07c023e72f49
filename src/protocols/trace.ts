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

/**
 * How an adapter's exchanges recorded as 16-bit words (`AdapterTrace.recordWords`) become
 * exchanges again: one object per kind of record (the Modbus decoder's is in modbus/trace.ts), kept
 * by reference in each slot and called only when `tail` or the event stream reads the slot.
 */
export interface WordsLayout {
  /** The exchange the `length` words of `words` from `start` describe; `latency` is the one recorded with them. */
  exchange(words: Uint16Array, start: number, length: number, latency: number): Exchange
}

/** Most words one `recordWords` call may store (the widest slot of the ring's slab). */
export const MAX_RECORD_WORDS = 256

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
  #ring: TraceRing
  #seq = 0
  /** Attribute writes since the last recorded exchange (see `attributeWritten`). */
  #pending: Record<string, unknown> | null = null
  #flushQueued = false
  /** Exchanges under way that keep the writes they make for their own record (see `hold`). */
  #holds = 0

  constructor(opts: { instance: string; adapter: string; kind: string; journal: TrafficJournal; size?: number }) {
    this.instance = opts.instance
    this.adapter = opts.adapter
    this.kind = opts.kind
    this.#journal = opts.journal
    this.#ring = new TraceRing(opts.size ?? DEFAULT_TRACE_SIZE)
    this.#labels = Object.freeze({ instance: this.instance, adapter: this.adapter, kind: this.kind })
  }

  /** The adapter's labels in /metrics, made once. */
  readonly #labels: Readonly<{ instance: string; adapter: string; kind: string }>

  /** How many exchanges the ring keeps; 0 turns tracing off (writes still reach the event stream). */
  get size(): number {
    return this.#ring.capacity
  }

  set size(size: number) {
    const problem = traceSizeProblem(size)
    if (problem) throw new ValidationError(problem, [{ path: 'trace_size', message: problem }])
    if (size !== this.#ring.capacity) this.#ring = this.#ring.resized(size)
  }

  /** False when nothing is kept (size 0): an adapter may then skip describing its exchanges. */
  get on(): boolean {
    return this.#ring.capacity > 0
  }

  /** Exchanges recorded since the adapter was made. */
  get recorded(): number {
    return this.#seq
  }

  /**
   * Records one exchange. The attribute writes seen since the last one are its `attributes`; an
   * exchange that wrote any is also a `protocol.write` event. The ring keeps `exchange` as it is
   * (each adapter makes a fresh one), without a copy.
   */
  record(exchange: Exchange): void {
    const seq = ++this.#seq
    const at = Date.now()
    const attributes = this.#pending ?? (exchange.attributes as Record<string, unknown> | undefined)
    this.#pending = null
    if (typeof exchange.latency === 'number') this.#journal.onLatency?.(this.#labels, exchange.latency)
    if (this.#ring.capacity > 0) this.#ring.put(seq, at, exchange, attributes)
    if (attributes !== undefined) this.#publishWrite(entryOf(seq, at, exchange, attributes))
  }

  /**
   * Records one publication the adapter sent on its own: the exchange
   * `{ operation: 'publish', direction: 'out', topic, size, payload: traceText(payload) }`, kept
   * without an object (an MQTT adapter may publish hundreds of times a second; see TraceRing).
   * `size` is the whole payload's length in bytes.
   */
  recordPublish(topic: string, size: number, payload: string): void {
    const seq = ++this.#seq
    const at = Date.now()
    const attributes = this.#pending ?? undefined
    this.#pending = null
    if (this.#ring.capacity > 0) this.#ring.putPublication(seq, at, topic, size, payload, attributes)
    if (attributes !== undefined) this.#publishWrite(entryOf(seq, at, publication(topic, size, traceText(payload)), attributes))
  }

  /**
   * Records one exchange kept as `length` (at most MAX_RECORD_WORDS) 16-bit words from the start
   * of `words`, copied into the ring without any object, and made into an exchange by `layout`
   * only when read (a Modbus server may answer hundreds of thousands of requests a second; see
   * modbus/trace.ts). `latency` is the exchange's time to answer in seconds, kept in the slot and
   * given to /metrics. The attribute writes seen since the last record are its `attributes`, as
   * with `record`.
   */
  recordWords(layout: WordsLayout, words: Uint16Array, length: number, latency: number): void {
    if (length > MAX_RECORD_WORDS) throw new RangeError(`a trace record of ${length} words (at most ${MAX_RECORD_WORDS})`)
    const seq = ++this.#seq
    const at = Date.now()
    const attributes = this.#pending ?? undefined
    this.#pending = null
    this.#journal.onLatency?.(this.#labels, latency)
    if (this.#ring.capacity > 0) this.#ring.putWords(seq, at, layout, words, 0, length, latency, attributes)
    if (attributes !== undefined) this.#publishWrite(entryOf(seq, at, layout.exchange(words, 0, length, latency), attributes))
  }

  /**
   * Hears an attribute write of the adapter (its accessor calls this). The write joins the next
   * recorded exchange; when the adapter records none by the end of the current turn, the writes
   * are recorded on their own as a `write` exchange.
   */
  attributeWritten(attr: string, value: unknown): void {
    ;(this.#pending ??= {})[attr] = value
    this.#queueFlush()
  }

  /**
   * Keeps the attribute writes heard from now on for the adapter's own record of an exchange whose
   * writes take more than one turn (each waits on its Python setter): until the release, they are
   * not recorded as a `write` exchange of their own at the end of a turn, and the adapter's record
   * takes them all. The adapter calls the release once it recorded the exchange, or when the
   * exchange ends without a record (the writes are then recorded on their own). Writes of two
   * exchanges held at once go to the first of them recorded.
   *
   * @example
   * const release = trace.hold()
   * try { for (const w of writes) await accessor.write(w.attribute, w.value); trace.record(exchange) } finally { release() }
   */
  hold(): () => void {
    this.#holds++
    let released = false
    return () => {
      if (released) return
      released = true
      this.#holds--
      if (this.#pending !== null) this.#queueFlush()
    }
  }

  #queueFlush(): void {
    if (this.#flushQueued) return
    this.#flushQueued = true
    // A Modbus request that writes records its exchange in the same turn; this catches the rest.
    setImmediate(() => {
      this.#flushQueued = false
      if (this.#pending !== null && this.#holds === 0) this.record({ operation: 'write', direction: 'in' })
    })
  }

  /** The `tail` method: the newest matching exchanges, oldest first. */
  tail(call: CallArgs): TraceEntry[] {
    const query = parseTraceTail(call)
    const matches: TraceEntry[] = []
    const needle = query.contains?.toLowerCase()
    const ring = this.#ring
    for (let back = 0; back < ring.count && matches.length < query.limit; back++) {
      const slot = ring.slotBack(back)
      if (query.afterSeq !== undefined && ring.seqAt(slot) <= query.afterSeq) break
      if (query.sinceMs !== undefined && ring.timeAt(slot) < query.sinceMs) break
      const e = ring.entry(slot)
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
    return this.#ring.clear()
  }

  #publishWrite(entry: TraceEntry): void {
    this.#journal.publish({ ...entry, instance: this.instance, adapter: this.adapter, kind: this.kind })
  }
}

/** The longest text a publication's slot keeps in the ring's slab (UTF-16 code units); a longer one is kept as a string. */
const MAX_SLOT_CHARS = MAX_RECORD_WORDS

/** What a ring's slot keeps as numbers, at these offsets in its part of TraceRing's Float64Array. */
const SEQ = 0
const AT = 1
/** A publication's size, or a words record's latency. */
const SIZE = 2
/** A publication's text length in the slab (-1: in #longText), or a words record's length. */
const TEXT_LENGTH = 3
const NUMBERS_PER_SLOT = 4
/** The arrays of a ring that holds nothing yet, shared (a ring makes its own on its first entry). */
const NO_NUMBERS = new Float64Array(0)
const NO_TEXT = new Uint16Array(0)

/**
 * The ring of one adapter's trace: `capacity` slots written in turn, the oldest overwritten, each
 * slot's fields in arrays that grow while the ring fills and are reused after (its numbers in one
 * Float64Array, the exchange and the attributes it set by reference). A slot holds an exchange
 * object (`put`), a publication (`putPublication`: topic, size, payload text in the slab) or a words
 * record (`putWords`: latency, the words in the slab, its WordsLayout). Entries as users see them
 * are made only when `tail` reads them.
 *
 * Hand-written for speed (bench/ANALYSIS.md, benchmark 10): an object per exchange kept in an
 * array moved with `shift` cost about a fifth of the CPU of a server whose MQTT adapters publish
 * 200 times a second each, most of it in garbage collection, as every entry and payload lived long
 * enough (about a second) to be promoted to the old generation. A publication now leaves nothing
 * for the collector: its topic is the binding's own string, its size a number, and its payload is
 * copied as UTF-16 code units (exact for any string) into a slab of fixed-width slots outside the
 * JavaScript heap, widened to the longest payload seen up to MAX_SLOT_CHARS. (A loop of
 * `charCodeAt` copies a payload of 40 characters in about a third of the time of `Buffer#write`
 * with 'utf16le', whose argument handling costs more than the copy.) A Modbus exchange is kept the
 * same way, as words (its numbers, written values and read words) in the slab: an object per
 * request, kept for as long as the ring holds it, was about 7 % of a pipelined Modbus server's time.
 */
class TraceRing {
  readonly capacity: number
  /** Slots in use. */
  count = 0
  /** The slot written next. */
  #next = 0
  /**
   * Slots the arrays have: they grow (doubling) as the ring fills, up to `capacity`, so that an
   * adapter that records little keeps little; a full ring allocates nothing more.
   */
  #allocated = 0
  /** Per slot, NUMBERS_PER_SLOT numbers: sequence number, time, a publication's size (a words record's latency) and its text's length in the slab (-1: in #longText; a words record's length). */
  #numbers: Float64Array = NO_NUMBERS
  /** The exchange as recorded; undefined in a publication's slot (its topic, size and text are then the slot's) and a words record's. */
  #exchange: Array<Exchange | undefined> = []
  /** A words record's layout; undefined in other slots. */
  #layout: Array<WordsLayout | undefined> = []
  #attributes: Array<Record<string, unknown> | undefined> = []
  #topic: Array<string | undefined> = []
  #longText: Array<string | undefined> = []
  #slab: Uint16Array = NO_TEXT
  /** Code units per slot in #slab. */
  #width = 0

  constructor(capacity: number) {
    this.capacity = capacity
  }

  /** Stores an exchange in the next slot (capacity > 0). */
  put(seq: number, at: number, exchange: Exchange, attributes: Record<string, unknown> | undefined): void {
    const slot = this.#advance(seq, at, attributes)
    this.#exchange[slot] = exchange
    if (this.#topic[slot] !== undefined) this.#topic[slot] = undefined
    if (this.#longText[slot] !== undefined) this.#longText[slot] = undefined
    if (this.#layout[slot] !== undefined) this.#layout[slot] = undefined
  }

  /** Stores a words record in the next slot (capacity > 0): `length` (at most MAX_RECORD_WORDS, checked by recordWords) words of `words` from `from`. */
  putWords(
    seq: number,
    at: number,
    layout: WordsLayout,
    words: Uint16Array,
    from: number,
    length: number,
    latency: number,
    attributes: Record<string, unknown> | undefined,
  ): void {
    const slot = this.#advance(seq, at, attributes)
    if (this.#exchange[slot] !== undefined) this.#exchange[slot] = undefined
    if (this.#topic[slot] !== undefined) this.#topic[slot] = undefined
    if (this.#longText[slot] !== undefined) this.#longText[slot] = undefined
    this.#layout[slot] = layout
    if (length > this.#width) this.#widen(length)
    const slab = this.#slab
    const start = slot * this.#width
    for (let i = 0; i < length; i++) slab[start + i] = words[from + i]!
    this.#numbers[slot * NUMBERS_PER_SLOT + SIZE] = latency
    this.#numbers[slot * NUMBERS_PER_SLOT + TEXT_LENGTH] = length
  }

  /** Stores a publication in the next slot (capacity > 0); `payload` is cut to MAX_TRACE_TEXT here. */
  putPublication(seq: number, at: number, topic: string, size: number, payload: string, attributes: Record<string, unknown> | undefined): void {
    const slot = this.#advance(seq, at, attributes)
    if (this.#exchange[slot] !== undefined) this.#exchange[slot] = undefined
    if (this.#layout[slot] !== undefined) this.#layout[slot] = undefined
    this.#topic[slot] = topic
    this.#numbers[slot * NUMBERS_PER_SLOT + SIZE] = size
    const text = payload.length > MAX_TRACE_TEXT ? traceText(payload) : payload
    const length = text.length
    if (length > this.#width && length <= MAX_SLOT_CHARS) this.#widen(length)
    if (length > this.#width) {
      this.#longText[slot] = text
      this.#numbers[slot * NUMBERS_PER_SLOT + TEXT_LENGTH] = -1
      return
    }
    if (this.#longText[slot] !== undefined) this.#longText[slot] = undefined
    const slab = this.#slab
    const start = slot * this.#width
    for (let i = 0; i < length; i++) slab[start + i] = text.charCodeAt(i)
    this.#numbers[slot * NUMBERS_PER_SLOT + TEXT_LENGTH] = length
  }

  /** The slot `back` places before the newest (0: the newest); `back` < count. */
  slotBack(back: number): number {
    const slot = this.#next - 1 - back
    return slot < 0 ? slot + this.capacity : slot
  }

  seqAt(slot: number): number {
    return this.#numbers[slot * NUMBERS_PER_SLOT + SEQ]!
  }

  timeAt(slot: number): number {
    return this.#numbers[slot * NUMBERS_PER_SLOT + AT]!
  }

  /** The slot's exchange as `tail` and the event stream give it. */
  entry(slot: number): TraceEntry {
    const at = slot * NUMBERS_PER_SLOT
    const n = this.#numbers
    const layout = this.#layout[slot]
    const exchange =
      this.#exchange[slot] ??
      (layout !== undefined
        ? layout.exchange(this.#slab, slot * this.#width, n[at + TEXT_LENGTH]!, n[at + SIZE]!)
        : publication(this.#topic[slot]!, n[at + SIZE]!, this.#text(slot)))
    return entryOf(n[at + SEQ]!, n[at + AT]!, exchange, this.#attributes[slot])
  }

  /** A ring of `capacity` slots holding the newest of this one's exchanges, in order. */
  resized(capacity: number): TraceRing {
    const ring = new TraceRing(capacity)
    for (let back = Math.min(this.count, capacity) - 1; back >= 0; back--) {
      const slot = this.slotBack(back)
      const exchange = this.#exchange[slot]
      const layout = this.#layout[slot]
      const [seq, at, attributes] = [this.seqAt(slot), this.timeAt(slot), this.#attributes[slot]]
      const [size, length] = [this.#numbers[slot * NUMBERS_PER_SLOT + SIZE]!, this.#numbers[slot * NUMBERS_PER_SLOT + TEXT_LENGTH]!]
      if (exchange !== undefined) ring.put(seq, at, exchange, attributes)
      else if (layout !== undefined) ring.putWords(seq, at, layout, this.#slab, slot * this.#width, length, size, attributes)
      else ring.putPublication(seq, at, this.#topic[slot]!, size, this.#text(slot), attributes)
    }
    return ring
  }

  /** Empties the ring (dropping what it references); returns how many exchanges it held. */
  clear(): number {
    const n = this.count
    this.count = 0
    this.#next = 0
    this.#exchange.fill(undefined)
    this.#layout.fill(undefined)
    this.#attributes.fill(undefined)
    this.#topic.fill(undefined)
    this.#longText.fill(undefined)
    return n
  }

  #advance(seq: number, at: number, attributes: Record<string, unknown> | undefined): number {
    const slot = this.#next
    if (slot === this.#allocated) this.#grow()
    this.#next = slot + 1 === this.capacity ? 0 : slot + 1
    if (this.count < this.capacity) this.count++
    this.#numbers[slot * NUMBERS_PER_SLOT + SEQ] = seq
    this.#numbers[slot * NUMBERS_PER_SLOT + AT] = at
    if (attributes !== undefined || this.#attributes[slot] !== undefined) this.#attributes[slot] = attributes
    return slot
  }

  #text(slot: number): string {
    const length = this.#numbers[slot * NUMBERS_PER_SLOT + TEXT_LENGTH]!
    if (length < 0) return this.#longText[slot]!
    const slab = this.#slab
    return Buffer.from(slab.buffer, slab.byteOffset + slot * this.#width * 2, length * 2).toString('utf16le')
  }

  /** Makes every slot at least `length` code units wide (a power of two), keeping the texts stored. */
  #widen(length: number): void {
    let width = Math.max(this.#width, 16)
    while (width < length) width *= 2
    const slab = new Uint16Array(width * this.#allocated)
    const old = this.#width
    if (old > 0) for (let slot = 0; slot < this.#allocated; slot++) slab.set(this.#slab.subarray(slot * old, (slot + 1) * old), slot * width)
    this.#slab = slab
    this.#width = width
  }

  /** More slots for a ring not yet full (its slots are then 0 .. count - 1, in order). */
  #grow(): void {
    const allocated = Math.min(this.capacity, Math.max(8, this.#allocated * 2))
    const numbers = new Float64Array(allocated * NUMBERS_PER_SLOT)
    numbers.set(this.#numbers)
    this.#numbers = numbers
    if (this.#width > 0) {
      const slab = new Uint16Array(allocated * this.#width)
      slab.set(this.#slab)
      this.#slab = slab
    }
    for (let slot = this.#allocated; slot < allocated; slot++) {
      this.#exchange.push(undefined)
      this.#layout.push(undefined)
      this.#attributes.push(undefined)
      this.#topic.push(undefined)
      this.#longText.push(undefined)
    }
    this.#allocated = allocated
  }
}

/** A publication as an exchange. */
function publication(topic: string, size: number, payload: string): Exchange {
  return { operation: 'publish', direction: 'out', topic, size, payload }
}

/** An entry as `tail` and the event stream give it: `seq`, then `time` as ISO 8601 text, then the exchange, then the attributes it set. */
function entryOf(seq: number, at: number, exchange: Exchange, attributes: Record<string, unknown> | undefined): TraceEntry {
  const entry = { seq, time: new Date(at).toISOString(), ...exchange } as TraceEntry
  if (attributes !== undefined) entry.attributes = attributes
  return entry
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
