/**
 * The server's recent log records, in memory: a ring of the last `capacity` pino records, fed by
 * the same records that go to stdout (the buffer is one destination of a pino multistream), so
 * the `logs` nodes, the event stream and the dashboard see exactly what the operator's log shows.
 */

/** Log levels by name, as pino numbers them. */
export const LOG_LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const

export type LogLevelName = keyof typeof LOG_LEVELS

/** Default number of records kept (`--log-buffer`). */
export const DEFAULT_LOG_BUFFER = 10_000

/** Longest message kept in an entry: a record is bounded, not only their number. */
export const MAX_MESSAGE_CHARS = 16 * 1024

/**
 * One log record as the logs nodes give it: its sequence number (1, 2, ... for the life of the
 * server), time (ISO 8601 UTC), level name, message and the record's own fields (`instance`,
 * `correlation_id`, `stream`, `err`, ...).
 *
 * @example
 * const entry: LogEntry = { seq: 7, time: '2026-01-01T00:00:00.000Z', level: 'info', msg: 'hello', instance: 'pump', stream: 'stdout' }
 */
export interface LogEntry {
  seq: number
  time: string
  level: LogLevelName
  msg: string
  instance?: string
  correlation_id?: string
  [field: string]: unknown
}

/** Which entries a query wants; every part is optional. */
export interface LogQuery {
  /** Only entries with a larger `seq`. */
  afterSeq?: number
  /** Only entries at or after this time (milliseconds since the epoch). */
  sinceMs?: number
  /** Only entries at this level or above. */
  minLevel?: LogLevelName
  /** Only entries of this instance (their `instance` field). */
  instance?: string
  /** Only entries whose message or a field value holds this text (case-insensitive). */
  contains?: string
  /** At most this many, the newest ones (still returned oldest first). */
  limit?: number
}

/** Fields of a pino record that say nothing about the event itself. */
const DROPPED_FIELDS = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'service', 'v'])

const LEVEL_BY_NUMBER = new Map<number, LogLevelName>(Object.entries(LOG_LEVELS).map(([name, n]) => [n, name as LogLevelName]))

/**
 * The ring. `write(line)` is what pino calls with each serialized record; `query` reads.
 *
 * @example
 * const buffer = new LogBuffer(10_000)
 * const logger = pino({}, pino.multistream([{ stream: process.stdout }, { level: 'trace', stream: buffer }]))
 * logger.info({ instance: 'pump' }, 'started')
 * buffer.query({ instance: 'pump', limit: 10 }) // [{ seq: 1, level: 'info', msg: 'started', instance: 'pump', ... }]
 */
export class LogBuffer {
  readonly capacity: number
  readonly #ring: Array<LogEntry | undefined>
  #next = 0
  #size = 0
  #seq = 0
  readonly #listeners = new Set<(entry: LogEntry) => void>()

  constructor(capacity: number = DEFAULT_LOG_BUFFER) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError(`A log buffer holds at least one entry (got ${capacity})`)
    this.capacity = capacity
    this.#ring = new Array<LogEntry | undefined>(capacity)
  }

  /** Sequence number of the newest entry (0 before the first). */
  get lastSeq(): number {
    return this.#seq
  }

  /** Entries held now (at most `capacity`). */
  get size(): number {
    return this.#size
  }

  /** Entries pushed out of the ring by newer ones since the server started. */
  get evicted(): number {
    return this.#seq - this.#size
  }

  /** A pino destination: one serialized record per call (a line of JSON). Never throws. */
  write(chunk: string): boolean {
    let record: unknown
    try {
      record = JSON.parse(chunk)
    } catch {
      return true
    }
    if (record && typeof record === 'object' && !Array.isArray(record)) this.push(record as Record<string, unknown>)
    return true
  }

  /** Adds one pino record (an object with `level`, `time`, `msg` and its fields). */
  push(record: Record<string, unknown>): LogEntry {
    const level = typeof record.level === 'number' ? (LEVEL_BY_NUMBER.get(record.level) ?? nearestLevel(record.level)) : 'info'
    const time = typeof record.time === 'number' ? new Date(record.time).toISOString() : new Date().toISOString()
    let msg = typeof record.msg === 'string' ? record.msg : ''
    if (msg.length > MAX_MESSAGE_CHARS) msg = `${msg.slice(0, MAX_MESSAGE_CHARS)}... (${msg.length - MAX_MESSAGE_CHARS} more characters)`
    const entry: LogEntry = { seq: ++this.#seq, time, level, msg }
    for (const [key, value] of Object.entries(record)) if (!DROPPED_FIELDS.has(key) && value !== undefined) entry[key] = value
    // Older records log the correlation id as `correlationId`: one name for queries and clients.
    if (entry.correlation_id === undefined && typeof entry.correlationId === 'string') {
      entry.correlation_id = entry.correlationId
      delete entry.correlationId
    }
    this.#ring[this.#next] = entry
    this.#next = (this.#next + 1) % this.capacity
    if (this.#size < this.capacity) this.#size++
    for (const listener of this.#listeners) listener(entry)
    return entry
  }

  /** Calls `listener` with every new entry until the returned function is called. */
  subscribe(listener: (entry: LogEntry) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** The entries that match, the newest `limit` of them, oldest first. */
  query(query: LogQuery = {}): LogEntry[] {
    const limit = query.limit ?? Number.POSITIVE_INFINITY
    const minLevel = query.minLevel ? LOG_LEVELS[query.minLevel] : 0
    const needle = query.contains ? query.contains.toLowerCase() : undefined
    const afterSeq = query.afterSeq ?? 0
    const out: LogEntry[] = []
    for (let i = 1; i <= this.#size && out.length < limit; i++) {
      const entry = this.#ring[(this.#next - i + this.capacity) % this.capacity]!
      if (entry.seq <= afterSeq) break
      if (minLevel && LOG_LEVELS[entry.level] < minLevel) continue
      if (query.instance !== undefined && entry.instance !== query.instance) continue
      if (query.sinceMs !== undefined && Date.parse(entry.time) < query.sinceMs) continue
      if (needle !== undefined && !matches(entry, needle)) continue
      out.push(entry)
    }
    return out.reverse()
  }

  /** How many entries match (no limit). */
  count(query: Omit<LogQuery, 'limit'> = {}): number {
    if (!query.afterSeq && !query.instance && !query.minLevel && query.sinceMs === undefined && !query.contains) return this.#size
    return this.query(query).length
  }
}

function matches(entry: LogEntry, needle: string): boolean {
  if (entry.msg.toLowerCase().includes(needle)) return true
  for (const [key, value] of Object.entries(entry)) {
    if (key === 'msg' || key === 'seq' || key === 'time' || key === 'level') continue
    const text = typeof value === 'string' ? value : value !== null && typeof value === 'object' ? JSON.stringify(value) : String(value)
    if (text.toLowerCase().includes(needle)) return true
  }
  return false
}

/** Custom pino levels have numbers of their own: name them by the nearest standard level below. */
function nearestLevel(n: number): LogLevelName {
  let best: LogLevelName = 'trace'
  for (const [name, value] of Object.entries(LOG_LEVELS)) if (value <= n) best = name as LogLevelName
  return best
}

/**
 * Parses the `since` of a logs query: a sequence number (entries after it), an ISO 8601 time
 * (entries at or after it) or a duration back from now (`30s`, `5m`, `2h`, `500ms`). Returns
 * undefined when the text is none of these.
 *
 * @example
 * parseSince(120)            // { afterSeq: 120 }
 * parseSince('5m', Date.now()) // { sinceMs: <five minutes ago> }
 */
export function parseSince(since: unknown, now: number = Date.now()): { afterSeq: number } | { sinceMs: number } | undefined {
  if (typeof since === 'number') return Number.isSafeInteger(since) && since >= 0 ? { afterSeq: since } : undefined
  if (typeof since !== 'string' || since.trim() === '') return undefined
  const text = since.trim()
  if (/^\d+$/.test(text)) return { afterSeq: Number(text) }
  const duration = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/.exec(text)
  if (duration) {
    const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[duration[2] as 'ms' | 's' | 'm' | 'h' | 'd']
    return { sinceMs: now - Number(duration[1]) * unit }
  }
  if (/^\d{4}-\d{2}-\d{2}(T|$)/.test(text)) {
    const ms = Date.parse(text)
    return Number.isNaN(ms) ? undefined : { sinceMs: ms }
  }
  return undefined
}
