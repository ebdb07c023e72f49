// The Prometheus registry behind GET /metrics, made at the first scrape: metrics.ts loads this
// module then. prom-client costs a process about 28 ms of CPU to load, which a server nobody
// scrapes (the tests, a short-lived CLI server) need not pay. Everything Mimic counts is read from
// the system and from the tallies metrics.ts keeps from the server's start, so the first scrape
// shows all of it; only prom-client's own event-loop lag and garbage-collection metrics start
// with the registry.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { System } from '../system/system.js'
import { ADAPTER_BUCKETS, HTTP_BUCKETS, STEP_BUCKETS, type HttpSeries, type Tally } from './metrics-tally.js'

/** What the Python worker pool counts (PythonPool.stats). */
export interface PoolCounts {
  workers: number
  alive: number
  started: number
  exited: number
  requests: number
}

/** What the registry reads when scraped. */
export interface MetricsSources {
  system: System
  pool: () => PoolCounts | undefined
  http: { series(): Iterable<HttpSeries> } & Tally
  adapters: Tally
  steps: Tally
}

/** The registry with Mimic's metrics and prom-client's default ones, reading `sources` when scraped. */
export function buildRegistry(sources: MetricsSources): Registry {
  const registry = new Registry()
  const registers = [registry]
  const { system, pool } = sources
  collectDefaultMetrics({ register: registry })
  // Gauges prom-client names *_total, which promtool's lint refuses (only counters end in _total).
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name)
  const tally = sources.http
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
  new TalliedHistogram(sources.steps, STEP_BUCKETS, {
    name: 'mimic_step_duration_seconds',
    help: 'Duration of a system step (of one message of steps, when a run sends several to the Python workers at once)',
    buckets: STEP_BUCKETS,
    registers,
  })
  new TalliedHistogram(sources.adapters, ADAPTER_BUCKETS, {
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
  poolGauge('mimic_python_worker_exits_total', 'Python worker processes that ended while the server ran (crash, timeout, os._exit)', (c) => c.exited, 'counter')
  poolGauge('mimic_python_requests_total', 'Messages sent to the Python workers (a batch of steps counts once)', (c) => c.requests, 'counter')
  return registry
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

function numberOf(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0
}
