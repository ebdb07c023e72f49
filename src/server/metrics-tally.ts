// What /metrics counts as it happens, in plain numbers (metrics.ts keeps these from the server's
// start; metrics-registry.ts writes them when scraped).

export const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
export const ADAPTER_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1]
export const STEP_BUCKETS = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5]

/** Times of one series of labels, counted by bucket (not cumulative), as a TalliedHistogram writes them. */
export interface TalliedSeries {
  labels: Record<string, string>
  buckets: number[]
  count: number
  sum: number
}

/** The series a TalliedHistogram writes when scraped. */
export interface Tally {
  series(): Iterable<TalliedSeries>
  clear(): void
}

/** Counts `seconds` into `series`: as prom-client's histogram, the first bucket whose bound holds it (none: only +Inf). */
function observeInto(series: TalliedSeries, bounds: readonly number[], seconds: number): void {
  series.count++
  series.sum += seconds
  for (let i = 0; i < bounds.length; i++)
    if (seconds <= bounds[i]!) {
      series.buckets[i]!++
      break
    }
}

/** The HTTP answers of one route and method: per status, and their times by bucket (not cumulative). */
export interface HttpSeries extends TalliedSeries {
  labels: { route: string; method: string }
  statuses: Map<number, { labels: { route: string; method: string; status: string }; count: number }>
}

/**
 * The HTTP answers counted and timed in plain numbers, read into the two HTTP metrics when
 * scraped. prom-client's `inc` and `observe` build and hash a key of their labels on every call:
 * 2-4 us per answer here, a share of a fast-lane GET's own work one can see in a profile.
 */
export class HttpTally implements Tally {
  readonly #routes = new Map<string, Map<string, HttpSeries>>()

  observe(route: string, method: string, status: number, seconds: number): void {
    let methods = this.#routes.get(route)
    if (methods === undefined) this.#routes.set(route, (methods = new Map()))
    let series = methods.get(method)
    if (series === undefined) {
      series = { labels: { route, method }, statuses: new Map(), buckets: HTTP_BUCKETS.map(() => 0), count: 0, sum: 0 }
      methods.set(method, series)
    }
    let counted = series.statuses.get(status)
    if (counted === undefined) series.statuses.set(status, (counted = { labels: { route, method, status: String(status) }, count: 0 }))
    counted.count++
    observeInto(series, HTTP_BUCKETS, seconds)
  }

  *series(): IterableIterator<HttpSeries> {
    for (const methods of this.#routes.values()) yield* methods.values()
  }

  clear(): void {
    this.#routes.clear()
  }
}

/**
 * A protocol adapter's answers timed in plain numbers (`onLatency` of the traffic journal, one
 * call per traced exchange), read into their histogram when scraped: prom-client's `observe`
 * hashes its labels on every call, a sixth of a Modbus server's busy time under pipelined reads.
 * Each adapter's trace passes the same labels object every time, so a series is found by that
 * object; two objects with the same labels (an adapter made again) share one series.
 */
export class AdapterTally implements Tally {
  #byObject = new WeakMap<object, TalliedSeries>()
  readonly #byKey = new Map<string, TalliedSeries>()
  /** The keys of the adapters that exist now (adapterKey): the series of others are dropped when read. */
  readonly #present: () => Set<string>

  constructor(present: () => Set<string>) {
    this.#present = present
  }

  observe(labels: { instance: string; adapter: string; kind: string }, seconds: number): void {
    let series = this.#byObject.get(labels)
    if (series === undefined) {
      const key = adapterKey(labels.instance, labels.adapter, labels.kind)
      series = this.#byKey.get(key)
      if (series === undefined) {
        series = { labels: { instance: labels.instance, adapter: labels.adapter, kind: labels.kind }, buckets: ADAPTER_BUCKETS.map(() => 0), count: 0, sum: 0 }
        this.#byKey.set(key, series)
      }
      this.#byObject.set(labels, series)
    }
    observeInto(series, ADAPTER_BUCKETS, seconds)
  }

  series(): Iterable<TalliedSeries> {
    const present = this.#present()
    for (const key of this.#byKey.keys())
      if (!present.has(key)) {
        this.#byKey.delete(key)
        this.#byObject = new WeakMap()
      }
    return this.#byKey.values()
  }

  clear(): void {
    this.#byKey.clear()
    this.#byObject = new WeakMap()
  }
}

export function adapterKey(instance: string, adapter: string, kind: string): string {
  return `${instance}\0${adapter}\0${kind}`
}

/** The system's steps timed in plain numbers: one series without labels. */
export class StepTally implements Tally {
  readonly #series: TalliedSeries = { labels: {}, buckets: STEP_BUCKETS.map(() => 0), count: 0, sum: 0 }

  observe(seconds: number): void {
    observeInto(this.#series, STEP_BUCKETS, seconds)
  }

  /** Its one series, also before the first step: prom-client writes a histogram without labels from its start. */
  series(): Iterable<TalliedSeries> {
    return [this.#series]
  }

  clear(): void {
    this.#series.buckets.fill(0)
    this.#series.count = 0
    this.#series.sum = 0
  }
}
