import type { FastifyInstance } from 'fastify'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import { UnauthorizedError } from '../errors.js'
import type { System } from '../system/system.js'
import { bearerCheck } from './auth.js'

/** Who may read `/metrics` (`--metrics`): the API's key (`auth`), anyone who reaches the port (`open`), or nobody (`off`). */
export type MetricsMode = 'auth' | 'open' | 'off'

/** What the Python worker pool counts (PythonPool.stats). */
export interface PoolCounts {
  workers: number
  alive: number
  started: number
  exited: number
  requests: number
}

/**
 * Mimic's numbers in the Prometheus text format, with prom-client: HTTP requests by route,
 * method and status with their latency, system steps and their duration, each protocol adapter's
 * requests, errors and injected faults, the Python workers, and the process (CPU, memory, event
 * loop lag, under their usual names). Counters the system already keeps (steps, adapter stats,
 * worker counts) are read when scraped, so stepping and serving pay nothing for them; the HTTP
 * and step timings are observed as they happen (the HTTP ones into an HttpTally, read at scrape).
 *
 * @example
 * const metrics = new ServerMetrics(system, () => pool?.stats())
 * buildApp({ ..., observeHttp: metrics.observeHttp })
 * registerMetrics(app, metrics, { mode: 'auth', productKey })
 */
export class ServerMetrics {
  readonly registry = new Registry()
  readonly #httpTally = new HttpTally()
  readonly #adapterTally: AdapterTally
  readonly #stepSeconds: Histogram

  constructor(system: System, pool: () => PoolCounts | undefined) {
    // The adapters of the system now, as the tally keys its series: a deleted instance's series
    // go at the next scrape, as they do from the adapter counters below.
    this.#adapterTally = new AdapterTally(() => {
      const keys = new Set<string>()
      for (const instance of system.instances.all())
        for (const node of instance.communication.adapterNodes()) keys.add(adapterKey(instance.name, node.name, node.kind.name))
      return keys
    })
    const registers = [this.registry]
    collectDefaultMetrics({ register: this.registry })
    // Gauges prom-client names *_total, which promtool's lint refuses (only counters end in _total).
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) this.registry.removeSingleMetric(name)
    const tally = this.#httpTally
    new Counter({
      name: 'mimic_http_requests_total',
      help: 'HTTP requests answered, by route (the pattern, e.g. /api/v3/system/*), method and status',
      labelNames: ['route', 'method', 'status'],
      registers,
      collect() {
        this.reset()
        for (const series of tally.series()) for (const status of series.statuses.values()) this.inc(status.labels, status.count)
      },
    })
    new TalliedHistogram(tally, HTTP_BUCKETS, {
      name: 'mimic_http_request_duration_seconds',
      help: 'Time from a request to its answer, by route and method',
      labelNames: ['route', 'method'],
      buckets: HTTP_BUCKETS,
      registers,
    })
    this.#stepSeconds = new Histogram({
      name: 'mimic_step_duration_seconds',
      help: 'Duration of a system step (of one message of steps, when a run sends several to the Python workers at once)',
      buckets: [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers,
    })
    new TalliedHistogram(this.#adapterTally, ADAPTER_BUCKETS, {
      name: 'mimic_adapter_request_duration_seconds',
      help: 'Time a protocol adapter took to answer a request, from its traffic trace (docs/traces.md), by instance, adapter and kind',
      labelNames: ['instance', 'adapter', 'kind'],
      buckets: ADAPTER_BUCKETS,
      registers,
    })
    new Counter({
      name: 'mimic_steps_total',
      help: 'System steps taken since the server started or the system was reset',
      registers,
      collect() {
        this.reset()
        this.inc(system.engine.steps)
      },
    })
    new Gauge({
      name: 'mimic_instances',
      help: 'Instances by state',
      labelNames: ['state'],
      registers,
      collect() {
        this.reset()
        for (const instance of system.instances.all()) this.inc({ state: instance.state })
      },
    })
    // One series per adapter: instance, adapter key and kind (a fleet of 10,000 Modbus meters
    // gives 10,000 series per counter; docs/metrics.md says how to keep that down).
    const adapterCounter = (name: string, help: string, read: (stats: Record<string, unknown>) => Array<[Record<string, string>, number]>): void => {
      new Counter({
        name,
        help,
        labelNames: ['instance', 'adapter', 'kind', 'fault'],
        registers,
        collect() {
          this.reset()
          for (const instance of system.instances.all())
            for (const node of instance.communication.adapterNodes()) {
              const labels = { instance: instance.name, adapter: node.name, kind: node.kind.name }
              for (const [extra, value] of read(node.adapter.stats())) if (value > 0) this.inc({ ...labels, ...extra }, value)
            }
        },
      })
    }
    adapterCounter(
      'mimic_adapter_requests_total',
      'Requests a protocol adapter answered (Modbus requests, SCPI commands, MQTT messages, OPC UA operations)',
      (s) => [[{}, numberOf(s.requests)]],
    )
    adapterCounter('mimic_adapter_errors_total', "Requests a protocol adapter answered with an error of the device's own (not an injected fault)", (s) => [
      [{}, numberOf(s.errors)],
    ])
    adapterCounter('mimic_adapter_faults_injected_total', 'Requests an injected fault changed, by fault (the fault_* counters of docs/modbus-faults.md)', (s) =>
      Object.entries(s)
        .filter(([key]) => key.startsWith('fault_'))
        .map(([key, value]) => [{ fault: key.slice('fault_'.length) }, numberOf(value)]),
    )
    const poolGauge = (name: string, help: string, read: (c: PoolCounts) => number, kind: 'gauge' | 'counter'): void => {
      const collect = function (this: Gauge | Counter): void {
        const counts = pool()
        this.reset()
        if (counts) this.inc(read(counts))
      }
      if (kind === 'gauge') new Gauge({ name, help, registers, collect })
      else new Counter({ name, help, registers, collect })
    }
    poolGauge('mimic_python_workers', 'Python worker processes running', (c) => c.alive, 'gauge')
    poolGauge(
      'mimic_python_workers_started_total',
      'Python worker processes started (a worker that died is started again on next use)',
      (c) => c.started,
      'counter',
    )
    poolGauge(
      'mimic_python_worker_exits_total',
      'Python worker processes that ended while the server ran (crash, timeout, os._exit)',
      (c) => c.exited,
      'counter',
    )
    poolGauge('mimic_python_requests_total', 'Messages sent to the Python workers (a batch of steps counts once)', (c) => c.requests, 'counter')
  }

  /** Counts one HTTP answer (given to buildApp, which calls it for node:http and the fast lane alike). */
  readonly observeHttp = (route: string, method: string, status: number, seconds: number): void => {
    this.#httpTally.observe(route, method, status, seconds)
  }

  /** Times one answer of a protocol adapter (given to the protocols' traffic journal, src/protocols/trace.ts). */
  readonly observeAdapter = (labels: { instance: string; adapter: string; kind: string }, seconds: number): void => {
    this.#adapterTally.observe(labels, seconds)
  }

  /** Times one system step (given to the system's engine). */
  readonly observeStep = (seconds: number): void => {
    this.#stepSeconds.observe(seconds)
  }
}

const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const ADAPTER_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1]

/** Times of one series of labels, counted by bucket (not cumulative), as a TalliedHistogram writes them. */
interface TalliedSeries {
  labels: Record<string, string>
  buckets: number[]
  count: number
  sum: number
}

/** The series a TalliedHistogram writes when scraped. */
interface Tally {
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
interface HttpSeries extends TalliedSeries {
  labels: { route: string; method: string }
  statuses: Map<number, { labels: { route: string; method: string; status: string }; count: number }>
}

/**
 * The HTTP answers counted and timed in plain numbers, read into the two HTTP metrics when
 * scraped. prom-client's `inc` and `observe` build and hash a key of their labels on every call:
 * 2-4 us per answer here, a share of a fast-lane GET's own work one can see in a profile.
 */
class HttpTally implements Tally {
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
class AdapterTally implements Tally {
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

function adapterKey(instance: string, adapter: string, kind: string): string {
  return `${instance}\0${adapter}\0${kind}`
}

/** A prom-client histogram whose series come from a tally: the same lines as its own would be. */
class TalliedHistogram<T extends string> extends Histogram<T> {
  // Not class fields: the base constructor calls reset() before a field would be defined.
  declare private tally: Tally | undefined
  declare private bounds: readonly number[]
  /** Its name and help as configured (prom-client's typings do not show the instance's own). */
  declare private described: { name: string; help: string }

  constructor(tally: Tally, bounds: readonly number[], configuration: ConstructorParameters<typeof Histogram<T>>[0]) {
    super(configuration)
    this.tally = tally
    this.bounds = bounds
    this.described = { name: configuration.name, help: configuration.help }
  }

  /** What the registry writes (prom-client calls this rather than get() when it exists). */
  getForPromString(): Promise<Awaited<ReturnType<Histogram<T>['get']>>> {
    return this.get()
  }

  override async get(): Promise<Awaited<ReturnType<Histogram<T>['get']>>> {
    const { name, help } = this.described
    const values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> = []
    for (const { labels, buckets, count, sum } of this.tally?.series() ?? []) {
      let below = 0
      buckets.forEach((n, i) => {
        below += n
        values.push({ labels: { le: this.bounds[i]!, ...labels }, value: below, metricName: `${name}_bucket` })
      })
      values.push({ labels: { le: '+Inf', ...labels }, value: count, metricName: `${name}_bucket` })
      values.push({ labels: { ...labels }, value: sum, metricName: `${name}_sum` })
      values.push({ labels: { ...labels }, value: count, metricName: `${name}_count` })
    }
    const data = { name, help, type: 'histogram', values, aggregator: 'sum' }
    return data as unknown as Awaited<ReturnType<Histogram<T>['get']>>
  }

  override reset(): void {
    this.tally?.clear()
  }
}

/** Registers `GET /metrics`: with `auth`, it asks for the API's key when the server has one. */
export function registerMetrics(app: FastifyInstance, metrics: ServerMetrics, opts: { mode: MetricsMode; productKey: string | undefined }): void {
  if (opts.mode === 'off') return
  const authorized = bearerCheck(opts.productKey)
  app.get('/metrics', async (req, reply) => {
    if (opts.mode === 'auth' && !authorized(req.headers.authorization)) throw new UnauthorizedError()
    const text = await metrics.registry.metrics()
    return reply.type(metrics.registry.contentType).send(text)
  })
}

function numberOf(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0
}
