import { z } from 'zod'
import { ValidationError, summarize } from '../errors.js'
import { LOG_LEVELS, parseSince, type LogBuffer, type LogEntry, type LogQuery } from '../logs/index.js'
import { Component, noArguments, type CallArgs, type MethodHandler } from '../tree/component.js'
import { methodArguments } from '../tree/method-arguments.js'

/** Most entries one `tail` call returns. */
export const MAX_TAIL_LIMIT = 100_000

/** Entries `tail` returns when no limit is given. */
export const DEFAULT_TAIL_LIMIT = 100

const TAIL_ARGS = ['limit', 'level', 'since', 'contains'] as const

const tailSchema = z.strictObject({
  limit: z.number().int().min(1).max(MAX_TAIL_LIMIT).nullish(),
  level: z.enum(Object.keys(LOG_LEVELS) as [keyof typeof LOG_LEVELS, ...Array<keyof typeof LOG_LEVELS>]).nullish(),
  since: z.union([z.number(), z.string()]).nullish(),
  contains: z.string().max(1000).nullish(),
})

/**
 * A `logs` node: the server's recent log records, on the system root (every record) and on
 * each instance (the records about it: its Python output, its faults, its warnings). Records come
 * from one ring buffer shared by all nodes; `clear()` empties this node's view only.
 *
 * @example
 * await system.logs.call('tail', { args: [], kwargs: { limit: 20, level: 'warn', since: '5m', contains: 'timeout' } })
 */
export class Logs extends Component {
  readonly type = 'Logs'
  readonly #buffer: LogBuffer
  readonly #instance: string | undefined
  #clearedSeq = 0

  constructor(parent: Component, options: { buffer: LogBuffer; instance?: string }) {
    super('logs', parent)
    this.#buffer = options.buffer
    this.#instance = options.instance
  }

  override properties(): Record<string, unknown> {
    return {
      capacity: this.#buffer.capacity,
      entries: this.#buffer.count(this.#scope({})),
      last_seq: this.#buffer.lastSeq,
      cleared_seq: this.#clearedSeq,
      instance: this.#instance ?? null,
    }
  }

  override methods(): Record<string, MethodHandler> {
    return {
      tail: (call) => this.tail(parseTail(call)),
      clear: noArguments(() => ({ cleared: this.clear() })),
    }
  }

  /** The newest matching entries of this node's view, oldest first. */
  tail(query: LogQuery): LogEntry[] {
    return this.#buffer.query(this.#scope(query))
  }

  /** Hides every entry so far from this node's view; returns how many were in it. */
  clear(): number {
    const count = this.#buffer.count(this.#scope({}))
    this.#clearedSeq = this.#buffer.lastSeq
    return count
  }

  #scope(query: LogQuery): LogQuery {
    const scoped: LogQuery = { ...query, afterSeq: Math.max(query.afterSeq ?? 0, this.#clearedSeq) }
    if (this.#instance !== undefined) scoped.instance = this.#instance
    return scoped
  }
}

/**
 * The arguments of `tail(limit, level, since, contains)`, positional or by keyword, as a query;
 * a 422 listing every bad one otherwise.
 */
export function parseTail(call: CallArgs): LogQuery {
  const { data, details } = methodArguments('tail', call, TAIL_ARGS, tailSchema)
  const query: LogQuery = { limit: DEFAULT_TAIL_LIMIT }
  if (data) {
    const { limit, level, since, contains } = data
    if (limit != null) query.limit = limit
    if (level != null) query.minLevel = level
    if (contains != null && contains !== '') query.contains = contains
    if (since != null) {
      const bound = parseSince(since)
      if (!bound)
        details.push({ path: 'kwargs.since', message: 'expected a sequence number, an ISO 8601 time or a duration back from now such as 30s, 5m, 2h' })
      else Object.assign(query, bound)
    }
  }
  if (details.length) throw new ValidationError(summarize('tail', details), details)
  return query
}
