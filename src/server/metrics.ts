import type { FastifyInstance } from 'fastify'
import type { Registry } from 'prom-client'
import { UnauthorizedError } from '../errors.js'
import type { System } from '../system/system.js'
import { bearerCheck } from './auth.js'
import type { PoolCounts } from './metrics-registry.js'
import { AdapterTally, adapterKey, HttpTally, StepTally } from './metrics-tally.js'

export type { PoolCounts } from './metrics-registry.js'

/** Who may read `/metrics` (`--metrics`): the API's key (`auth`), anyone who reaches the port (`open`), or nobody (`off`). */
export type MetricsMode = 'auth' | 'open' | 'off'

/**
 * Mimic's numbers in the Prometheus text format, with prom-client: HTTP requests by route,
 * method and status with their latency, system steps and their duration, each protocol adapter's
 * requests, errors and injected faults, the Python workers, and the process (CPU, memory, event
 * loop lag, under their usual names). Counters the system already keeps (steps, adapter stats,
 * worker counts) are read when scraped, so stepping and serving pay nothing for them; the HTTP,
 * adapter and step timings are counted as they happen, in plain numbers (metrics-tally.ts). The
 * registry that writes all of it, with prom-client, is made at the first scrape
 * (metrics-registry.ts).
 *
 * @example
 * const metrics = new ServerMetrics(system, () => pool?.stats())
 * buildApp({ ..., observeHttp: metrics.observeHttp })
 * registerMetrics(app, metrics, { mode: 'auth', productKey })
 */
export class ServerMetrics {
  readonly #httpTally = new HttpTally()
  readonly #adapterTally: AdapterTally
  readonly #stepTally = new StepTally()
  readonly #system: System
  readonly #pool: () => PoolCounts | undefined
  #registry: Promise<Registry> | undefined

  constructor(system: System, pool: () => PoolCounts | undefined) {
    this.#system = system
    this.#pool = pool
    // The adapters of the system now, as the tally keys its series: a deleted instance's series
    // go at the next scrape, as they do from the adapter counters.
    this.#adapterTally = new AdapterTally(() => {
      const keys = new Set<string>()
      for (const instance of system.instances.all())
        for (const node of instance.communication.adapterNodes()) keys.add(adapterKey(instance.name, node.name, node.kind.name))
      return keys
    })
  }

  /** The Prometheus registry, made (with prom-client loaded) at the first call: see metrics-registry.ts. */
  registry(): Promise<Registry> {
    this.#registry ??= import('./metrics-registry.js').then(({ buildRegistry }) =>
      buildRegistry({ system: this.#system, pool: this.#pool, http: this.#httpTally, adapters: this.#adapterTally, steps: this.#stepTally }),
    )
    // A registry that could not be made is tried again at the next scrape.
    this.#registry.catch(() => (this.#registry = undefined))
    return this.#registry
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
    this.#stepTally.observe(seconds)
  }
}

/** Registers `GET /metrics`: with `auth`, it asks for the API's key when the server has one. */
export function registerMetrics(app: FastifyInstance, metrics: ServerMetrics, opts: { mode: MetricsMode; productKey: string | undefined }): void {
  if (opts.mode === 'off') return
  const authorized = bearerCheck(opts.productKey)
  app.get('/metrics', async (req, reply) => {
    if (opts.mode === 'auth' && !authorized(req.headers.authorization)) throw new UnauthorizedError()
    const registry = await metrics.registry()
    const text = await registry.metrics()
    return reply.type(registry.contentType).send(text)
  })
}
