import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
// ocpp-rpc does the OCPP-J framing (CALL, CALLRESULT, CALLERROR with message ids), the
// subprotocol handshake, call timeouts and WebSocket pings for both roles; it is also the peer
// the tests check against, so the adapter speaks the same wire as a common Node central system.
import { RPCClient, RPCServer, createRPCError } from 'ocpp-rpc'
import type { Logger } from 'pino'
import { ConflictError, ValidationError } from '../../errors.js'
import { OCPP_ERROR_CODES, type OcppBinding, type OcppDefinition } from '../../definition/ocpp-schema.js'
import type { AdapterState, AdapterStats, AttributeAccessor, ProtocolAdapter } from '../adapter.js'
import { AdapterLifecycle, ThrottledWarning, listenOnce, listenProblem, readOnly, secondsProblem } from '../adapter-kit.js'
import type { AdapterTrace } from '../trace.js'
import type { OcppContext } from './context.js'
import { boundFields, fillPayload, fitValue } from './payload.js'

/**
 * The `ocpp` adapter of one instance: OCPP 1.6J over WebSocket in one of two roles.
 *
 * - `charge_point`: connects to `endpoint/<charge_point_id>` with the `subprotocol`, sends
 *   BootNotification (the outbound `call` binding of that action, or a payload of its own), and
 *   once accepted sends every other outbound call binding once and then every `interval` seconds
 *   (Heartbeat at the interval the central system gave when no binding sets one). Answers to its
 *   calls are written to attributes through the inbound `call_result` binding of the action. It
 *   answers RemoteStartTransaction (then sends StartTransaction), RemoteStopTransaction (then
 *   StopTransaction), Reset (then boots again), ChangeConfiguration and GetConfiguration; other
 *   actions when bound (inbound `call` writes, outbound `call_result` answers) and NotImplemented
 *   otherwise. A dropped connection is retried every `reconnect_period`, doubling up to 60 s.
 * - `central_system`: listens on `server.host:port` for charge points at `server.path/<id>`,
 *   writes each received call's bound fields to attributes (inbound `call` bindings) and answers
 *   with the outbound `call_result` binding of the action, over the fields OCPP requires (a
 *   BootNotification answer has `status`, `currentTime` and `interval`).
 *
 * Faults: `call_error` (settable) answers every CALL with a CALLERROR of that code; detach drops
 * the socket(s) without a close frame and stays away (a charge point does not reconnect, a
 * central system drops the connections that come) until attach.
 *
 * @example
 * const adapter = new OcppAdapter({ definition, accessor, logger, context, name: 'evse.ocpp', instance: 'evse' })
 * await adapter.start()
 * adapter.stats() // { state: 'RUNNING', connection: 'connected', boot_status: 'Accepted', ... }
 */
export interface OcppAdapterOptions {
  definition: OcppDefinition
  accessor: AttributeAccessor
  logger: Logger
  context: OcppContext
  name?: string
  instance?: string
  model?: string
  /** The adapter's traffic trace (docs/traces.md): each call it received or sent, with its answer. */
  trace?: AdapterTrace | undefined
}

/** What a started adapter holds. */
type Link = { role: 'charge_point' } | { role: 'central_system'; http: Server; rpc: RPCServer; port: number; release: () => void }

/** What the connection to the peer is doing. */
type Connection = 'down' | 'connecting' | 'connected' | 'reconnecting' | 'detached' | 'listening'

/** Charge points a central system holds at once; one more is refused with HTTP 503 (counted as `refused`). */
const MAX_CHARGE_POINTS = 1024
/** The largest WebSocket message a central system takes (OCPP 1.6J messages are a few KiB). */
const MAX_MESSAGE_BYTES = 1024 * 1024
/** The longest wait between a charge point's connection attempts, in ms. */
const MAX_BACKOFF_MS = 60_000
/** The longest excerpt of a payload an entry of the trace keeps, in characters. */
const MAX_EXCERPT = 256

// The library's client options are all required in its typings; the adapter sets those it needs.
type ClientOptions = ConstructorParameters<typeof RPCClient>[0]
type AnyClient = InstanceType<typeof RPCClient>
type CallHandler = (call: { method?: string; params?: Record<string, unknown>; messageId?: string }) => Promise<Record<string, unknown>>

/** The answers a central system gives to calls no binding answers, by action. */
function centralDefaults(action: string, nextTransaction: () => number): Record<string, unknown> | undefined {
  const now = new Date().toISOString()
  switch (action) {
    case 'BootNotification':
      return { status: 'Accepted', currentTime: now, interval: 300 }
    case 'Heartbeat':
      return { currentTime: now }
    case 'Authorize':
      return { idTagInfo: { status: 'Accepted' } }
    case 'StartTransaction':
      return { transactionId: nextTransaction(), idTagInfo: { status: 'Accepted' } }
    case 'StopTransaction':
      return { idTagInfo: { status: 'Accepted' } }
    case 'DataTransfer':
      return { status: 'Accepted' }
    case 'StatusNotification':
    case 'MeterValues':
    case 'DiagnosticsStatusNotification':
    case 'FirmwareStatusNotification':
      return {}
    default:
      return undefined
  }
}

/** See the module comment. */
export class OcppAdapter implements ProtocolAdapter {
  readonly name: string
  readonly settable = ['call_error', 'call_timeout'] as const
  readonly #definition: OcppDefinition
  readonly #accessor: AttributeAccessor
  readonly #logger: Logger
  readonly #warning: ThrottledWarning
  readonly #trace: AdapterTrace | undefined
  /** The message id ocpp-rpc gave each call sent, by its payload (the library's `call` event names it; its `call()` does not). */
  readonly #messageIds = new WeakMap<object, string>()
  readonly #context: OcppContext
  readonly #identity: string
  readonly #model: string
  readonly #life: AdapterLifecycle<Link>
  readonly #bindings: Array<{ name: string; binding: OcppBinding }>
  /** The charge point's current client, or the central system's connected clients. */
  #client: AnyClient | null = null
  readonly #clients = new Set<AnyClient>()
  #connection: Connection = 'down'
  #backoffMs: number
  #retryTimer: NodeJS.Timeout | null = null
  readonly #timers = new Set<NodeJS.Timeout>()
  #heartbeatSeconds = 0
  #bootStatus: string | null = null
  #transactionId: number | null = null
  #transactionCounter = 0
  #lastIdTag: string | null = null
  /** A Reset was accepted: the next connection comes at once (a restart, not an outage). */
  #restarting = false
  /** Payloads of StatusNotification bindings as last sent, so a change is sent at once. */
  readonly #lastStatus = new Map<string, string>()
  readonly #configuration = new Map<string, string>()
  #lastError: string | null = null
  readonly #counters = { calls_sent: 0, calls_received: 0, call_errors: 0, connects: 0, refused: 0, errors: 0 }

  constructor(options: OcppAdapterOptions) {
    this.name = options.name ?? 'ocpp'
    const instance = options.instance ?? this.name.split('.')[0]!
    this.#definition = structuredClone(options.definition)
    this.#accessor = options.accessor
    this.#logger = options.logger.child({ adapter: this.name })
    this.#warning = new ThrottledWarning(this.#logger)
    this.#trace = options.trace
    this.#context = options.context
    this.#identity = this.#definition.charge_point_id ?? instance
    this.#model = options.model ?? 'Mimic'
    this.#life = new AdapterLifecycle<Link>(this.name)
    this.#bindings = Object.entries(this.#definition.bindings).map(([name, binding]) => ({ name, binding }))
    this.#backoffMs = this.#definition.reconnect_period * 1000
  }

  get state(): AdapterState {
    return this.#life.state
  }

  /** Starts the role: a charge point resolves once its first connection attempt has an outcome; a central system once it listens. */
  start(): Promise<void> {
    return this.#life.start(async () => {
      if (this.#definition.role === 'central_system') return this.#listen()
      this.#backoffMs = this.#definition.reconnect_period * 1000
      this.#connection = 'connecting'
      await this.#connect()
      return { role: 'charge_point' as const }
    })
  }

  stop(): Promise<void> {
    return this.#life.stop(async (link) => {
      this.#clearTimers()
      this.#connection = 'down'
      const client = this.#client
      this.#client = null
      if (client) await client.close({ force: true }).catch(() => undefined)
      if (link.role === 'central_system') {
        link.release()
        for (const c of this.#clients) dropSocket(c)
        this.#clients.clear()
        await link.rpc.close({ force: true }).catch(() => undefined)
        // Plain HTTP connections kept alive would hold close() up: they go first.
        const closed = new Promise<void>((resolve) => link.http.close(() => resolve()))
        link.http.closeAllConnections()
        await closed
      }
      this.#logger.info('ocpp adapter stopped')
    })
  }

  /** Drops the connection(s) without a close frame and stays away until attach. */
  detach(): void {
    this.#life.detach()
    this.#connection = 'detached'
    this.#clearTimers()
    if (this.#client) dropSocket(this.#client)
    this.#client = null
    for (const c of this.#clients) dropSocket(c)
    this.#clients.clear()
  }

  attach(): void {
    const wasDetached = this.#life.detached
    this.#life.attach()
    if (!wasDetached) return
    if (this.#definition.role === 'central_system') {
      this.#connection = 'listening'
      return
    }
    this.#backoffMs = this.#definition.reconnect_period * 1000
    this.#connection = 'connecting'
    void this.#connect()
  }

  stats(): AdapterStats {
    const c = this.#counters
    const link = this.#life.resource
    return {
      state: this.state,
      requests: c.calls_sent + c.calls_received,
      errors: c.errors,
      role: this.#definition.role,
      connection: this.#connection,
      port: link?.role === 'central_system' ? link.port : null,
      clients: this.#definition.role === 'central_system' ? this.#clients.size : this.#client ? 1 : 0,
      calls_sent: c.calls_sent,
      calls_received: c.calls_received,
      call_errors: c.call_errors,
      connects: c.connects,
      refused: c.refused,
      boot_status: this.#bootStatus,
      transaction_id: this.#transactionId,
    }
  }

  settings(): Record<string, unknown> {
    const d = this.#definition
    const link = this.#life.resource
    return {
      role: d.role,
      endpoint: d.endpoint ?? null,
      charge_point_id: this.#identity,
      subprotocol: d.server?.subprotocol ?? d.subprotocol,
      host: d.server?.host ?? null,
      port: link?.role === 'central_system' ? link.port : (d.server?.port ?? null),
      path: d.server?.path ?? null,
      call_timeout: d.call_timeout,
      reconnect_period: d.reconnect_period,
      call_error: d.call_error,
      bindings: structuredClone(d.bindings),
      connection: this.#connection,
      clients: this.#definition.role === 'central_system' ? this.#clients.size : this.#client ? 1 : 0,
      boot_status: this.#bootStatus,
      heartbeat_interval: this.#heartbeatSeconds,
      transaction_id: this.#transactionId,
      configuration: Object.fromEntries(this.#configuration),
      last_error: this.#lastError,
      counters: { ...this.#counters },
    }
  }

  /**
   * `call_error`: an OCPP error code (or null) every CALL received is answered with, as a fault;
   * `call_timeout`: seconds a call waits for its answer.
   *
   * @example
   * adapter.set('call_error', 'InternalError')
   */
  set(name: string, value: unknown): void {
    const refusal = this.refusal(name, value)
    if (refusal) throw refusal
    if (name === 'call_error') this.#definition.call_error = value as OcppDefinition['call_error']
    else this.#definition.call_timeout = value as number
  }

  refusal(name: string, value: unknown): ValidationError | null {
    if (name === 'call_timeout') return secondsProblem(name, value, 0.1, 600)
    if (name !== 'call_error') return readOnly(this, name)
    if (value === null || (OCPP_ERROR_CODES as readonly unknown[]).includes(value)) return null
    const message = `expected null or one of ${OCPP_ERROR_CODES.join(', ')}`
    return new ValidationError(`'call_error' of adapter '${this.name}' ${message}`, [{ path: name, message }])
  }

  valueProblem(): string | null {
    return null
  }

  /** After a step: a StatusNotification whose bound values changed is sent at once (a charger reports each status change). */
  afterStep(): void {
    if (this.#definition.role !== 'charge_point' || this.#bootStatus !== 'Accepted' || !this.#client || this.#life.detached) return
    for (const { name, binding } of this.#bindings) {
      if (binding.direction !== 'outbound' || binding.frame_type !== 'call' || binding.action !== 'StatusNotification') continue
      const payload = JSON.stringify(this.#fill(binding.payload))
      if (this.#lastStatus.get(name) !== payload) void this.#send(binding.action, binding.payload, name)
    }
  }

  // ---- charge point ----

  /** One connection attempt of the charge point; a failure schedules the next. */
  async #connect(): Promise<void> {
    const d = this.#definition
    const client = new RPCClient({
      endpoint: d.endpoint!.replace(/\/+$/, ''),
      identity: this.#identity,
      protocols: [d.subprotocol],
      strictMode: false,
      reconnect: false,
      callTimeoutMs: d.call_timeout * 1000,
      pingIntervalMs: 30_000,
      respondWithDetailedErrors: false,
    } as unknown as ClientOptions)
    this.#client = client
    client.handle(this.#handler(client) as never)
    this.#noteMessageIds(client)
    client.on('close', () => this.#closed(client))
    client.on('socketError', (error: Error) => this.#fail('ocpp socket error', error))
    try {
      await client.connect()
    } catch (error) {
      if (this.#client === client) this.#fail(`ocpp connection to ${d.endpoint} failed`, error as Error)
      return
    }
    if (this.#client !== client) {
      // Stopped or detached while connecting.
      dropSocket(client)
      return
    }
    this.#connection = 'connected'
    this.#counters.connects++
    this.#backoffMs = d.reconnect_period * 1000
    this.#lastError = null
    this.#logger.info({ endpoint: d.endpoint, identity: this.#identity }, 'ocpp charge point connected')
    void this.#boot(client)
  }

  #closed(client: AnyClient): void {
    if (this.#client !== client) return
    this.#client = null
    this.#clearTimers()
    this.#bootStatus = null
    if (this.#life.resource === null || this.#life.detached) return
    if (this.#connection === 'connected' && !this.#restarting) this.#logger.warn({ endpoint: this.#definition.endpoint }, 'ocpp connection lost: reconnecting')
    this.#connection = 'reconnecting'
    const delay = this.#restarting ? 0 : this.#backoffMs
    if (this.#restarting) this.#restarting = false
    else this.#backoffMs = Math.min(this.#backoffMs * 2, MAX_BACKOFF_MS)
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null
      if (this.#life.resource === null || this.#life.detached) return
      void this.#connect()
    }, delay)
    this.#retryTimer.unref()
  }

  /** BootNotification until accepted, then every outbound call once and on its interval. */
  async #boot(client: AnyClient): Promise<void> {
    const boot = this.#outbound('call', 'BootNotification')
    const template = boot?.binding.payload ?? { chargePointVendor: 'Mimic', chargePointModel: this.#model }
    const result = await this.#send('BootNotification', template, boot?.name, client)
    if (this.#client !== client) return
    const status = typeof result?.status === 'string' ? result.status : null
    this.#bootStatus = status
    const interval = typeof result?.interval === 'number' ? result.interval : Number(result?.interval ?? 0)
    if (status !== 'Accepted') {
      // Pending or Rejected (or no answer): boot again after the interval the central system asked for.
      this.#every(Math.max(interval || 10, 1), () => void this.#boot(client), true)
      return
    }
    this.#heartbeatSeconds = Number.isFinite(interval) && interval > 0 ? interval : 0
    let heartbeatBound = false
    for (const { name, binding } of this.#bindings) {
      if (binding.direction !== 'outbound' || binding.frame_type !== 'call' || binding.action === 'BootNotification') continue
      if (binding.action === 'Heartbeat') heartbeatBound = true
      const seconds = binding.interval ?? (binding.action === 'Heartbeat' ? this.#heartbeatSeconds : 0)
      void this.#send(binding.action, binding.payload, name, client)
      if (seconds > 0) this.#every(seconds, () => void this.#send(binding.action, binding.payload, name, client))
    }
    if (!heartbeatBound && this.#heartbeatSeconds > 0) this.#every(this.#heartbeatSeconds, () => void this.#send('Heartbeat', {}, undefined, client))
  }

  /**
   * Sends a call from a payload template; its answer is written through the inbound
   * `call_result` binding of the action. Resolves with the answer, or undefined when there was
   * none (a CALLERROR, a timeout, a dropped socket: counted and logged).
   */
  async #send(action: string, template: unknown, bindingName?: string, client: AnyClient | null = this.#client): Promise<Record<string, unknown> | undefined> {
    if (!client) return undefined
    const payload = this.#fill(template) as Record<string, unknown>
    if (action === 'StatusNotification' && bindingName !== undefined) this.#lastStatus.set(bindingName, JSON.stringify(payload))
    this.#counters.calls_sent++
    const started = performance.now()
    try {
      const result = (await client.call(action, payload, { callTimeoutMs: this.#definition.call_timeout * 1000 })) as Record<string, unknown>
      const applied = this.#apply(this.#inbound('call_result', action)?.binding.payload, result, action)
      this.#traceCall('out', client, action, this.#messageIds.get(payload), payload, result, undefined, started, applied)
      return result
    } catch (error) {
      const code = (error as { rpcErrorCode?: string }).rpcErrorCode
      if (code !== undefined) this.#counters.call_errors++
      this.#fail(`ocpp ${action} got no answer`, error as Error, { action, code })
      this.#traceCall('out', client, action, this.#messageIds.get(payload), payload, undefined, code ?? (error as Error).message, started, undefined)
      return undefined
    }
  }

  // ---- central system ----

  async #listen(): Promise<Link> {
    const d = this.#definition
    const server = d.server ?? { host: '127.0.0.1', port: 9000, path: '/ocpp', subprotocol: undefined }
    const subprotocol = server.subprotocol ?? d.subprotocol
    const rpc = new RPCServer({
      protocols: [subprotocol],
      strictMode: false,
      callTimeoutMs: d.call_timeout * 1000,
      respondWithDetailedErrors: false,
      // OCPP 1.6J messages are small: a larger frame closes the socket instead of filling memory.
      wssOptions: { maxPayload: MAX_MESSAGE_BYTES },
    })
    const path = server.path.replace(/\/+$/, '')
    rpc.auth((accept, reject, handshake) => {
      if (this.#life.detached) return reject(503, 'Service Unavailable')
      if (this.#clients.size >= MAX_CHARGE_POINTS) {
        this.#counters.refused++
        return reject(503, 'Service Unavailable')
      }
      if (handshake.endpoint.replace(/\/+$/, '') !== path) return reject(404, 'Not Found')
      accept({}, subprotocol)
    })
    rpc.on('client', (client: AnyClient) => this.#accepted(client))
    const http = createServer((_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain' }).end(`OCPP central system: connect a WebSocket to ${path}/<charge point id>\n`)
    })
    http.on('upgrade', (request: IncomingMessage, socket: Socket, head: Buffer) => {
      // A detached central system is a dropped network: the connection goes without an answer.
      if (this.#life.detached) return void socket.destroy()
      void rpc.handleUpgrade(request, socket, head)
    })
    let port: number
    try {
      port = await listenOnce(
        http,
        () => http.listen({ host: server.host, port: server.port, exclusive: true }),
        () => (http.address() as AddressInfo).port,
      )
    } catch (error) {
      await rpc.close({ force: true }).catch(() => undefined)
      const problem = listenProblem(error, server.host, server.port, { label: 'OCPP', heldBy: this.#context.portHolder?.('tcp', server.port) })
      throw new ConflictError(`Cannot open the OCPP central system of '${this.name}': ${problem.message}`, [
        { path: `server.${problem.path}`, message: problem.message },
      ])
    }
    const release = this.#context.hold({ transport: 'tcp', host: server.host, port, holder: `OCPP central system '${this.name}'` })
    this.#connection = 'listening'
    this.#logger.info({ host: server.host, port, path }, 'ocpp central system listening')
    return { role: 'central_system', http, rpc, port, release }
  }

  #accepted(client: AnyClient): void {
    if (this.#life.detached || this.#life.resource === null) return dropSocket(client)
    this.#clients.add(client)
    this.#counters.connects++
    client.handle(this.#handler(client) as never)
    this.#noteMessageIds(client)
    // A charge point's repeated calls end with its connection, so reconnecting peers add none.
    const timers: NodeJS.Timeout[] = []
    client.on('close', () => {
      this.#clients.delete(client)
      for (const timer of timers) {
        clearInterval(timer)
        this.#timers.delete(timer)
      }
    })
    for (const { name, binding } of this.#bindings) {
      if (binding.direction !== 'outbound' || binding.frame_type !== 'call') continue
      void this.#send(binding.action, binding.payload, name, client)
      if ((binding.interval ?? 0) > 0) timers.push(this.#every(binding.interval!, () => void this.#send(binding.action, binding.payload, name, client)))
    }
  }

  // ---- both roles ----

  /** Answers the calls a peer sends. */
  #handler(client: AnyClient): CallHandler {
    return async ({ method, params, messageId }) => {
      const started = performance.now()
      const action = method ?? ''
      const payload = params ?? {}
      this.#counters.calls_received++
      const code = this.#definition.call_error
      if (code !== null) {
        this.#counters.call_errors++
        this.#traceCall('in', client, action, messageId, payload, undefined, code, started, undefined)
        throw createRPCError(code, `fault injected by Mimic (call_error: ${code})`, {})
      }
      const applied = this.#apply(this.#inbound('call', action)?.binding.payload, payload, action)
      const bound = this.#outbound('call_result', action)
      const reply =
        this.#definition.role === 'central_system'
          ? this.#centralAnswer(action, bound?.binding.payload)
          : this.#chargePointAnswer(client, action, payload, bound?.binding.payload)
      if (reply === undefined) {
        this.#counters.call_errors++
        this.#traceCall('in', client, action, messageId, payload, undefined, 'NotImplemented', started, applied)
        throw createRPCError('NotImplemented', `no binding answers ${action}`, {})
      }
      this.#traceCall('in', client, action, messageId, payload, reply, undefined, started, applied)
      return reply
    }
  }

  /** Keeps the message id of each call `client` sends, for the trace. */
  #noteMessageIds(client: AnyClient): void {
    if (this.#trace === undefined) return
    client.on('call', (event: { outbound?: boolean; payload?: unknown[] }) => {
      const params = event.payload?.[3]
      if (event.outbound && typeof params === 'object' && params !== null) this.#messageIds.set(params, String(event.payload![1]))
    })
  }

  /**
   * Records a call and its answer (docs/traces.md): `reply` the CALLRESULT's payload, `error` the
   * CALLERROR's code (or why no answer came). `applied` is what #apply made of the message's bound
   * fields: the writes under way (the entry is recorded once they are made, so that they join it
   * as its attributes), or why none was made. Nothing is recorded while the trace keeps nothing,
   * unless the call wrote attributes (its protocol.write event carries the entry).
   */
  #traceCall(
    direction: 'in' | 'out',
    client: AnyClient,
    action: string,
    messageId: string | undefined,
    payload: Record<string, unknown>,
    reply: Record<string, unknown> | undefined,
    error: string | undefined,
    started: number,
    applied: Promise<unknown> | string | undefined,
  ): void {
    const trace = this.#trace
    if (trace === undefined || (!trace.on && !(applied instanceof Promise))) return
    const idTagInfo = reply?.idTagInfo as { status?: unknown } | undefined
    const status = typeof reply?.status === 'string' ? reply.status : typeof idTagInfo?.status === 'string' ? idTagInfo.status : undefined
    const record = () =>
      trace.record({
        operation: action,
        direction,
        message_id: messageId,
        charge_point: client.identity,
        status,
        error: error ?? (typeof applied === 'string' ? `not applied: ${applied}` : undefined),
        payload: excerpt(payload),
        answer: reply === undefined ? undefined : excerpt(reply),
        latency: (performance.now() - started) / 1000,
      })
    if (applied instanceof Promise) void applied.then(record)
    else record()
  }

  #centralAnswer(action: string, template: unknown): Record<string, unknown> | undefined {
    const defaults = centralDefaults(action, () => ++this.#transactionCounter)
    if (template === undefined) return defaults
    const filled = this.#fill(template) as Record<string, unknown>
    // The reference library's central system writes BootNotification's interval as
    // `heartbeatInterval`; OCPP 1.6 names it `interval`, which is what charge points read.
    if (action === 'BootNotification' && 'heartbeatInterval' in filled) {
      const { heartbeatInterval, ...rest } = filled
      if (!('interval' in rest)) rest.interval = heartbeatInterval
      return { ...defaults, ...rest }
    }
    return { ...defaults, ...filled }
  }

  #chargePointAnswer(client: AnyClient, action: string, payload: Record<string, unknown>, template: unknown): Record<string, unknown> | undefined {
    const filled = template === undefined ? undefined : (this.#fill(template) as Record<string, unknown>)
    switch (action) {
      case 'RemoteStartTransaction': {
        const accepted = this.#transactionId === null
        if (accepted) {
          this.#lastIdTag = typeof payload.idTag === 'string' ? payload.idTag : null
          setImmediate(() => void this.#startTransaction(client, payload))
        }
        return { status: accepted ? 'Accepted' : 'Rejected', ...filled }
      }
      case 'RemoteStopTransaction': {
        const accepted = this.#transactionId !== null && payload.transactionId === this.#transactionId
        if (accepted) setImmediate(() => void this.#stopTransaction(client))
        return { status: accepted ? 'Accepted' : 'Rejected', ...filled }
      }
      case 'Reset':
        // The charger restarts: its connection goes and it boots again.
        setImmediate(() => {
          this.#restarting = true
          if (this.#client === client) void client.close({ code: 1000, reason: 'Reset' }).catch(() => undefined)
        })
        return { status: 'Accepted', ...filled }
      case 'ChangeConfiguration': {
        const key = String(payload.key ?? '')
        const value = String(payload.value ?? '')
        this.#configuration.set(key, value)
        if (key === 'HeartbeatInterval' && Number(value) > 0) this.#heartbeatSeconds = Number(value)
        return { status: 'Accepted', ...filled }
      }
      case 'GetConfiguration':
        return {
          configurationKey: [...this.#configuration].map(([key, value]) => ({ key, readonly: false, value })),
          ...filled,
        }
      default:
        return filled
    }
  }

  async #startTransaction(client: AnyClient, request: Record<string, unknown>): Promise<void> {
    const bound = this.#outbound('call', 'StartTransaction')
    const base = { connectorId: request.connectorId ?? 1, idTag: request.idTag ?? '', meterStart: 0, timestamp: new Date().toISOString() }
    const template = { ...base, ...(bound?.binding.payload ?? {}) }
    const result = await this.#send('StartTransaction', template, bound?.name, client)
    const id = result?.transactionId
    if (typeof id === 'number') this.#transactionId = id
  }

  async #stopTransaction(client: AnyClient): Promise<void> {
    const bound = this.#outbound('call', 'StopTransaction')
    const base = { transactionId: this.#transactionId, idTag: this.#lastIdTag ?? undefined, meterStop: 0, timestamp: new Date().toISOString() }
    await this.#send('StopTransaction', { ...base, ...(bound?.binding.payload ?? {}) }, bound?.name, client)
    this.#transactionId = null
  }

  #outbound(frame: 'call' | 'call_result', action: string): { name: string; binding: OcppBinding } | undefined {
    return this.#bindings.find((b) => b.binding.direction === 'outbound' && b.binding.frame_type === frame && b.binding.action === action)
  }

  #inbound(frame: 'call' | 'call_result', action: string): { name: string; binding: OcppBinding } | undefined {
    return this.#bindings.find((b) => b.binding.direction === 'inbound' && b.binding.frame_type === frame && b.binding.action === action)
  }

  #fill(template: unknown): unknown {
    return fillPayload(template, (attr) => {
      try {
        return this.#accessor.read(attr)
      } catch {
        return undefined
      }
    })
  }

  /**
   * Writes the bound fields of a received message to their attributes: all of them, or none when
   * one does not fit. Returns the writes under way (settled once all are made or refused), why
   * none was made, or undefined when there was nothing to write.
   */
  #apply(template: unknown, message: unknown, action: string): Promise<unknown> | string | undefined {
    if (template === undefined) return undefined
    const writes: Array<{ attribute: string; value: unknown }> = []
    for (const field of boundFields(template, message)) {
      const value = fitValue(field.value, this.#accessor.describe?.(field.attribute)?.type)
      const problem = !this.#accessor.writable(field.attribute)
        ? `attribute '${field.attribute}' is read-only`
        : (this.#accessor.valueProblem?.(field.attribute, value) ?? null)
      if (problem !== null) {
        this.#counters.errors++
        this.#warning.warn({ action, field: field.field, attribute: field.attribute, reason: problem }, 'ocpp message not applied')
        return `${field.field}: ${problem}`
      }
      writes.push({ attribute: field.attribute, value })
    }
    const made: Array<Promise<unknown>> = []
    for (const { attribute, value } of writes) {
      try {
        const pending = this.#accessor.write(attribute, value)
        if (pending instanceof Promise) made.push(pending.catch((error: unknown) => this.#fail('ocpp write failed', error as Error, { attribute })))
      } catch (error) {
        this.#fail('ocpp write failed', error as Error, { attribute })
      }
    }
    return made.length === 0 ? undefined : Promise.all(made)
  }

  #every(seconds: number, run: () => void, once = false): NodeJS.Timeout {
    const timer = once ? setTimeout(run, seconds * 1000) : setInterval(run, seconds * 1000)
    timer.unref()
    this.#timers.add(timer)
    return timer
  }

  #clearTimers(): void {
    for (const timer of this.#timers) clearInterval(timer)
    this.#timers.clear()
    if (this.#retryTimer) clearTimeout(this.#retryTimer)
    this.#retryTimer = null
  }

  #fail(message: string, error: Error, fields: Record<string, unknown> = {}): void {
    this.#counters.errors++
    this.#lastError = error?.message ?? String(error)
    this.#warning.warn({ ...fields, err: this.#lastError }, message)
  }
}

/** A payload as JSON text, cut at MAX_EXCERPT characters ('…' marks the cut). */
function excerpt(payload: unknown): string {
  const text = JSON.stringify(payload) ?? ''
  return text.length > MAX_EXCERPT ? `${text.slice(0, MAX_EXCERPT)}…` : text
}

/**
 * Ends a connection the way a pulled cable does: the socket goes without a WebSocket close
 * frame. ocpp-rpc has no call for that, so the `ws` socket it keeps is terminated directly.
 */
function dropSocket(client: AnyClient): void {
  const ws = (client as unknown as { _ws?: { terminate?: () => void } })._ws
  if (ws?.terminate) ws.terminate()
  else void client.close({ force: true }).catch(() => undefined)
}
