import { ConnectionsCollection } from './connections-collection.js'
import { InstancesCollection } from './instances-collection.js'
import { LogsHandle } from './logs.js'
import { ModelsCollection } from './models-collection.js'
import { MimicNode, type CallOptions } from './node.js'
import { PollingHandle } from './polling.js'
import { SnapshotsHandle } from './snapshots.js'
import { Transport } from './transport.js'
import type { HealthInfo, JsonValue, MimicState, NodeDocument, ReloadResult, SystemDefinition } from './types.js'

/**
 * Options of {@link connect}.
 *
 * @example
 * connect({ address: 'http://127.0.0.1:8000', productKey: process.env.MIMIC_PRODUCT_KEY, timeoutMs: 10_000 })
 */
export interface ConnectOptions {
  /** Base address of the server; default `http://127.0.0.1:8000`. */
  address?: string
  /** The server's product key; default the environment variable `MIMIC_PRODUCT_KEY`. */
  productKey?: string | undefined
  /** Upper bound for each request in milliseconds (default 30 000); a call never hangs longer. */
  timeoutMs?: number
  /** A fetch implementation to use instead of the global one. */
  fetch?: typeof fetch
}

/**
 * Options of {@link MimicClient.run}.
 *
 * @example
 * await sim.run({ steps: 10, dt: 0.1 })
 */
export interface SystemRunOptions {
  /** How many system steps (default 1). */
  steps?: number
  /** Simulated seconds per step; the system timer's `dt` when omitted. */
  dt?: number
}

/**
 * A client of one Mimic server. Every method is one HTTP request (keep-alive connections are
 * reused); failures reject with MimicApiError, and with its subclass MimicConnectionError when
 * the server cannot be reached or does not answer within `timeoutMs`.
 *
 * @example
 * const sim = new MimicClient({ address: 'http://127.0.0.1:8000', productKey: 'k' })
 * await sim.run({ steps: 5 })
 */
export class MimicClient {
  readonly models: ModelsCollection
  readonly instances: InstancesCollection
  readonly connections: ConnectionsCollection
  readonly snapshots: SnapshotsHandle
  /** The system polling node (background stepping of the whole system). */
  readonly polling: PollingHandle
  /** The system timer (properties `time`, `dt`; method `reset`). */
  readonly timer: MimicNode
  /** The server's recent log records (`tail`, `clear`, `follow`). */
  readonly logs: LogsHandle
  #transport: Transport
  #root: MimicNode

  constructor(options: ConnectOptions = {}) {
    this.#transport = new Transport({ ...options, productKey: options.productKey ?? envProductKey() })
    this.#root = new MimicNode(this.#transport)
    this.models = new ModelsCollection(this.#transport, 'models')
    this.instances = new InstancesCollection(this.#transport, 'instances')
    this.connections = new ConnectionsCollection(this.#transport, 'connections')
    this.snapshots = new SnapshotsHandle(this.#transport)
    this.polling = new PollingHandle(this.#transport, ['polling'])
    this.timer = new MimicNode(this.#transport, ['timer'])
    this.logs = new LogsHandle(this.#transport, ['logs'])
  }

  /** The server's base address, normalised (no trailing slash). */
  get address(): string {
    return this.#transport.baseUrl
  }

  /** A handle on any component by path (`'instances/s1/timer'`); no request yet. */
  node(path: string | readonly string[]): MimicNode {
    return this.#root.node(path)
  }

  /** `GET /health` (needs no product key). */
  async health(): Promise<HealthInfo> {
    return await this.#transport.request<HealthInfo>('GET', '/health', undefined, { auth: false })
  }

  /** The system root's node document. */
  async get(): Promise<NodeDocument> {
    return await this.#root.get()
  }

  /** The system state. */
  async state(): Promise<MimicState> {
    return await this.#root.read<MimicState>('state')
  }

  /**
   * The whole current structure as a system definition (`GET /api/v3/system/definition`): what a
   * snapshot holds, loadable as it is (`--system`, or PUT back on the root).
   */
  async definition(): Promise<SystemDefinition> {
    return (await this.#root.read('definition')) as unknown as SystemDefinition
  }

  /**
   * Reads the server's `--system` file again and replaces the whole structure with it, as a
   * snapshot load does (every instance starts fresh). An invalid file rejects with a 422 and
   * leaves the system as it was; a server started without `--system` answers 409.
   */
  async reload(): Promise<ReloadResult> {
    return await this.call<ReloadResult>('reload')
  }

  /** Calls a method of the system root. */
  async call<T = JsonValue>(method: string, kwargs: Record<string, unknown> = {}, options: CallOptions = {}): Promise<T> {
    return await this.#root.call<T>(method, kwargs, options)
  }

  /** Prepares every instance. */
  async prepare(): Promise<boolean> {
    return await this.call<boolean>('prepare')
  }

  /** Runs `steps` system steps: every instance steps once per step, connections transfer. */
  async run(options: SystemRunOptions = {}): Promise<boolean> {
    const kwargs: Record<string, number> = {}
    if (options.steps !== undefined) kwargs.steps = options.steps
    if (options.dt !== undefined) kwargs.dt = options.dt
    return await this.call<boolean>('run', kwargs)
  }

  /** Starts background stepping of the system. */
  async start(): Promise<boolean> {
    return await this.call<boolean>('start')
  }

  async stop(): Promise<boolean> {
    return await this.call<boolean>('stop')
  }

  async reset(): Promise<boolean> {
    return await this.call<boolean>('reset')
  }
}

/**
 * Creates a client of a Mimic server. Nothing is sent until the first call.
 *
 * @example
 * import { connect } from 'mimic-sim-client'
 *
 * const sim = connect({ address: 'http://127.0.0.1:8000', productKey: process.env.MIMIC_PRODUCT_KEY })
 * await sim.instances.set('s1', 'pt100')
 * const s1 = sim.instances.at('s1')
 * await s1.polling.disable()
 * await s1.prepare()
 * await s1.run()
 * console.log(await s1.attributes.at('temperature').internalValue())
 */
export function connect(options: ConnectOptions = {}): MimicClient {
  return new MimicClient(options)
}

/** Read lazily and defensively so the client also loads where `process` does not exist. */
function envProductKey(): string | undefined {
  return typeof process === 'undefined' ? undefined : process.env.MIMIC_PRODUCT_KEY
}
