import type { FaultLog } from './faults.js'

/**
 * Logs refused and unanswerable requests (unknown paths, missing keys, foreign hosts or
 * origins, bodies that are not JSON, connections over a cap) at a sampled rate, and counts all
 * of them.
 *
 * Anyone who can reach the port can send such requests, thousands a second, and each logged
 * line used to carry the whole URL: 12,000 requests to long unknown paths wrote 185 MB of log,
 * and the log buffer (src/logs/log-buffer.ts, 10,000 records by default) held on to 140 MB of
 * those URLs for good. So of each kind the first few per interval are logged, with the URL and
 * every other value cut to {@link MAX_LOGGED_CHARS}; the rest are counted, and one summary line
 * per interval says how many went unlogged.
 */

/** Lines logged one by one per kind and interval. */
export const LOGGED_PER_INTERVAL = 10
/** Length of the interval, in milliseconds. */
export const REFUSAL_LOG_INTERVAL_MS = 60_000
/** Longest text (a URL, a message, a path) a sampled line repeats. */
export const MAX_LOGGED_CHARS = 200

/** The kinds counted, by fault event (API.md section 6) and for refused connections. */
export type RefusalKind = 'not_found' | 'unauthorized' | 'forbidden' | 'unsupported_media_type' | 'connection_refused'

const SAMPLED_EVENTS = new Set<string>(['not_found', 'unauthorized', 'forbidden', 'unsupported_media_type'])

interface KindState {
  total: number
  /** Logged one by one in the current interval. */
  logged: number
  /** Not logged in the current interval. */
  suppressed: number
}

/** What a refusal log writes to. */
export type RefusalLogger = Pick<FaultLog, 'warn'> & { info(obj: object, msg: string): void }

/**
 * The sampling log of one server. As a {@link FaultLog} it passes every fault through but those
 * of the sampled kinds, which it counts and logs at the sampled rate.
 *
 * @example
 * const refusals = new RefusalLog(logger)
 * faultFor(err, context, correlationId, refusals) // a 404 is counted, and logged if among the first few
 * refusals.counts() // { not_found: 1, unauthorized: 0, ... }
 * refusals.close() // the last summary line, the timer stopped
 */
export class RefusalLog implements FaultLog {
  readonly #logger: FaultLog & RefusalLogger
  readonly #kinds = new Map<RefusalKind, KindState>()
  readonly #timer: NodeJS.Timeout
  readonly #intervalMs: number

  constructor(logger: FaultLog & RefusalLogger, options: { intervalMs?: number } = {}) {
    this.#logger = logger
    this.#intervalMs = options.intervalMs ?? REFUSAL_LOG_INTERVAL_MS
    for (const kind of ['not_found', 'unauthorized', 'forbidden', 'unsupported_media_type', 'connection_refused'] as const)
      this.#kinds.set(kind, { total: 0, logged: 0, suppressed: 0 })
    this.#timer = setInterval(() => this.#summarize(), this.#intervalMs)
    this.#timer.unref()
  }

  /** Every refusal counted since the start, by kind. */
  counts(): Record<RefusalKind, number> {
    const out = {} as Record<RefusalKind, number>
    for (const [kind, state] of this.#kinds) out[kind] = state.total
    return out
  }

  /**
   * Counts one refusal and logs it if it is among the first of its kind in this interval.
   *
   * @example
   * refusals.note('connection_refused', { remote: '10.0.0.9' }, 'connection refused: 256 open from this address')
   */
  note(kind: RefusalKind, fields: Record<string, unknown>, message: string): void {
    const state = this.#kinds.get(kind)!
    state.total++
    if (state.logged >= LOGGED_PER_INTERVAL) {
      state.suppressed++
      return
    }
    state.logged++
    this.#logger.warn(bounded({ event: kind, ...fields }), cut(message))
  }

  warn(fields: object, message: string): void {
    const event = (fields as { event?: unknown }).event
    if (typeof event === 'string' && SAMPLED_EVENTS.has(event)) this.note(event as RefusalKind, fields as Record<string, unknown>, message)
    else this.#logger.warn(fields, message)
  }

  error(fields: object, message: string): void {
    this.#logger.error(fields, message)
  }

  /** Writes the summary of the interval under way and stops the timer. */
  close(): void {
    clearInterval(this.#timer)
    this.#summarize()
  }

  #summarize(): void {
    for (const [kind, state] of this.#kinds) {
      if (state.suppressed > 0)
        this.#logger.warn(
          { event: kind, suppressed: state.suppressed, total: state.total, interval_s: this.#intervalMs / 1000 },
          `${state.suppressed} more ${kind.replaceAll('_', ' ')} refusals not logged one by one (${state.total} since the start)`,
        )
      state.logged = 0
      state.suppressed = 0
    }
  }
}

/** A log line's fields with every string cut to MAX_LOGGED_CHARS. */
function bounded(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(fields)) {
    if (typeof value === 'string') out[key] = cut(value)
    else if (Array.isArray(value))
      out[key] = value
        .slice(0, 5)
        .map((item: unknown) =>
          item !== null && typeof item === 'object' ? bounded(item as Record<string, unknown>) : typeof item === 'string' ? cut(item) : item,
        )
    else out[key] = value
  }
  return out
}

function cut(text: string): string {
  return text.length > MAX_LOGGED_CHARS ? `${text.slice(0, MAX_LOGGED_CHARS)}... (${text.length} characters)` : text
}
