import { MimicNode } from './node.js'
import type { LogEntry, LogLevel, TailOptions } from './types.js'

/**
 * A `logs` node (`sim.logs` for the whole server, `sim.instances.at(i).logs` for one instance):
 * the server's recent log records, newest last.
 *
 * @example
 * const problems = await sim.instances.at('pump').logs.tail({ level: 'warn', since: '1m' })
 * for (const e of problems) console.log(e.time, e.level, e.msg, e.correlation_id ?? '')
 */
export class LogsHandle extends MimicNode {
  /** The newest matching records, oldest first (`limit` default 100). */
  async tail(options: TailOptions = {}): Promise<LogEntry[]> {
    const kwargs: Record<string, unknown> = {}
    for (const key of ['limit', 'level', 'since', 'contains'] as const) if (options[key] !== undefined) kwargs[key] = options[key]
    return await this.call<LogEntry[]>('tail', kwargs)
  }

  /** Empties this node's view (the records stay in other views); resolves to how many were in it. */
  async clear(): Promise<number> {
    return (await this.call<{ cleared: number }>('clear')).cleared
  }

  /**
   * Polls for new records every `intervalMs` (default 500) and yields each one, oldest first,
   * until `signal` aborts. Starts with the newest `limit` records that match (default 20; 0 for
   * new ones only).
   *
   * @example
   * const stop = new AbortController()
   * for await (const e of sim.logs.follow({ level: 'warn', signal: stop.signal })) console.log(e.msg)
   */
  async *follow(options: Omit<TailOptions, 'since' | 'limit'> & { limit?: number; intervalMs?: number; signal?: AbortSignal } = {}): AsyncGenerator<LogEntry> {
    const { intervalMs = 500, signal, limit = 20, ...filter } = options
    let cursor: number
    if (limit > 0) {
      const first = await this.tail({ ...filter, limit })
      for (const entry of first) yield entry
      // Nothing matched so far, so every later match is newer than any record now: start at 0.
      cursor = first.length ? first[first.length - 1]!.seq : 0
    } else cursor = await this.read<number>('last_seq')
    while (!signal?.aborted) {
      await sleep(intervalMs, signal)
      if (signal?.aborted) return
      const next = await this.tail({ ...filter, since: cursor, limit: 10_000 })
      for (const entry of next) yield entry
      if (next.length) cursor = next[next.length - 1]!.seq
    }
  }
}

/** Levels from the least to the most severe. */
export const LOG_LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal']

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms)
    function done(): void {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, { once: true })
  })
}
