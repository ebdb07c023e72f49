import { AdapterLifecycle, readOnly, secondsProblem, ThrottledWarning } from '../adapter-kit.js'
import { connect, type IClientOptions, type MqttClient } from 'mqtt'
import type { Logger } from 'pino'
import type { ValidationError } from '../../errors.js'
import { MQTT_EMBEDDED, fullTopic, type MqttBinding, type MqttDefinition } from '../../definition/mqtt-schema.js'
import type { AttributeType } from '../../definition/model-schema.js'
import type { AdapterState, AdapterStats, AttributeAccessor, ProtocolAdapter } from '../adapter.js'
import type { AdapterRegistration } from './broker-guard.js'
import type { BrokerLease, EmbeddedBrokers } from './embedded-brokers.js'
import { PayloadFormat, PayloadReader, publishProblem, topicMatches, type ReadResult } from './payload.js'
import { MAX_REMAINING_LENGTH, PublishBatch, writesDirectly } from './publish-batch.js'
import { traceText, type AdapterTrace } from '../trace.js'

/**
 * How long `stop` waits for the broker to take the goodbye (DISCONNECT, and the acknowledgements
 * of QoS 1 and 2 messages in flight) before it closes the socket itself: a broker that does not
 * answer must not hold up a DELETE, a snapshot load or the server's shutdown.
 */
export const MQTT_STOP_GRACE_MS = 1000

/** What may change while the adapter runs, and its range in seconds. */
const MQTT_SETTABLE_RANGES: Record<string, [number, number]> = { publish_interval: [0, 86_400], scan_interval: [0.01, 60] }

/**
 * The `mqtt` adapter of one instance: a client of a broker (or of the embedded one) that
 * publishes bound attributes and writes attributes from the topics it subscribes to.
 *
 * The link to the broker has its own state, shown as `connection` in stats: `connecting`,
 * `connected`, `reconnecting` (the broker is down or unreachable: retried with a backoff that
 * doubles from `reconnect_period` up to `reconnect_max`), `detached`, `down` (stopped). A broker
 * that is down never fails the adapter: it keeps retrying and says so.
 *
 * Values are checked every `scan_interval`: on_change bindings publish when their value
 * changed, the others every `interval` (default `publish_interval`); every publish binding is
 * published once on each (re)connection, so a subscriber sees the current state after an outage.
 * While the link cannot take more (a broker reading slower than the adapter publishes),
 * publications wait, counted (`deferred`), and each binding's latest value goes out once it drains.
 * A received payload that does not fit the attribute's type is refused, counted (`refused`) and
 * logged; it is never applied in part: when several bindings read one message, each value is
 * checked (type, writability, the ranges of the instance's other adapters) before any is written.
 *
 * @example
 * const adapter = new MqttAdapter({ definition, accessor, logger, brokers, name: 'boiler.mqtt', instance: 'boiler' })
 * await adapter.start()
 * adapter.stats() // { state: 'RUNNING', connection: 'connected', published: 3, ... }
 * await adapter.stop()
 */

/** Options of an adapter. */
export interface MqttAdapterOptions {
  definition: MqttDefinition
  accessor: AttributeAccessor
  logger: Logger
  brokers: EmbeddedBrokers
  name?: string
  instance?: string
  /** Where each message published and received is recorded (docs/traces.md). */
  trace?: AdapterTrace | undefined
}

/** The state of the link to the broker. */
export type MqttConnection = 'down' | 'connecting' | 'connected' | 'reconnecting' | 'detached'

/** One binding with what the adapter keeps for it. */
interface LiveBinding {
  binding: MqttBinding
  name: string
  /** The full topic (prefix + topic). */
  topic: string
  /** The topic as UTF-8 bytes, for publications written directly (publish-batch.ts). */
  topicBytes: Buffer
  publishes: boolean
  subscribes: boolean
  /** Milliseconds between publications; 0: none but on change and on connect. */
  periodMs: number
  reader: PayloadReader
  /** Makes the payloads it publishes (its template split once). */
  payloads: PayloadFormat
  /** The value last published, as a key (on_change bindings only: the others never compare it). */
  lastKey: string | undefined
  /** When the next periodic publication is due (epoch ms). */
  nextDue: number
  /** The last payload published, to know our own message when a `both` binding hears it back. */
  lastPayload: string | undefined
}

/** What a started adapter holds: its client, the lease of the embedded broker, and what takes the adapter's listeners off the client. */
interface MqttLink {
  client: MqttClient
  lease: BrokerLease | null
  unlisten: () => void
}

/**
 * The definition with `{{instance}}` replaced by the instance's name in `topic_prefix`, the
 * bindings' topics, `client_id` and the will and birth messages, so one model serves many
 * instances, each on its own topics. (Binding templates fill it in when they publish.)
 */
function forInstance(d: MqttDefinition, instance: string): MqttDefinition {
  const fill = (text: string): string => text.replaceAll('{{instance}}', instance)
  const message = (m: MqttDefinition['will']) => m && { ...m, topic: fill(m.topic), payload: fill(m.payload) }
  return {
    ...d,
    topic_prefix: fill(d.topic_prefix),
    client_id: d.client_id === undefined ? undefined : fill(d.client_id),
    will: message(d.will),
    birth: message(d.birth),
    bindings: d.bindings.map((b) => ({ ...b, topic: fill(b.topic) })),
  }
}

/** See the module comment. */
export class MqttAdapter implements ProtocolAdapter {
  readonly name: string
  readonly settable = ['publish_interval', 'scan_interval'] as const
  readonly #definition: MqttDefinition
  readonly #accessor: AttributeAccessor
  readonly #logger: Logger
  readonly #brokers: EmbeddedBrokers
  readonly #instance: string
  readonly #bindings: LiveBinding[]
  /** Start, stop, detach and attach one after the other, the link held while started (adapter-kit.ts). */
  readonly #life: AdapterLifecycle<MqttLink>
  #host = ''
  #port: number | null = null
  #connection: MqttConnection = 'down'
  #backoffMs: number
  #retryTimer: NodeJS.Timeout | null = null
  #scanTimer: NodeJS.Timeout | null = null
  /** Warnings a client can cause, at most one a second. */
  readonly #warning: ThrottledWarning
  #lastError: string | null = null
  #counters = { published: 0, deferred: 0, received: 0, refused: 0, reconnects: 0, errors: 0 }
  readonly #trace: AdapterTrace | undefined
  /** QoS 0 publications of the current turn, written together at its end (#flush). */
  readonly #batch = new PublishBatch()

  constructor(options: MqttAdapterOptions) {
    this.#trace = options.trace
    this.name = options.name ?? 'mqtt'
    this.#instance = options.instance ?? this.name.split('.')[0]!
    this.#definition = forInstance(structuredClone(options.definition), this.#instance)
    this.#accessor = options.accessor
    this.#logger = options.logger.child({ adapter: this.name })
    this.#warning = new ThrottledWarning(this.#logger)
    this.#brokers = options.brokers
    this.#life = new AdapterLifecycle(this.name)
    this.#backoffMs = this.#definition.reconnect_period * 1000
    this.#bindings = this.#definition.bindings.map((binding) => {
      const topic = fullTopic(this.#definition.topic_prefix, binding.topic)
      return {
        binding,
        name: binding.name ?? binding.attribute,
        topic,
        topicBytes: Buffer.from(topic),
        publishes: binding.direction !== 'subscribe',
        subscribes: binding.direction !== 'publish',
        periodMs: 0,
        reader: PayloadReader.for(binding),
        payloads: PayloadFormat.for(binding, { instance: this.#instance, topic }),
        lastKey: undefined,
        nextDue: 0,
        lastPayload: undefined,
      }
    })
    this.#updatePeriods()
  }

  get state(): AdapterState {
    return this.#life.state
  }

  /** The link to the broker (see the module comment). */
  get connection(): MqttConnection {
    return this.#connection
  }

  /**
   * Connects to the broker (opening the embedded one first when asked) and resolves once the
   * first attempt has an outcome: connected, refused, or `connect_timeout` passed. A broker that
   * is down is not an error: the adapter runs and keeps retrying. Throws ConflictError only when
   * the embedded broker cannot open its port. Idempotent.
   */
  start(): Promise<void> {
    let firstOutcome: Promise<void> = Promise.resolve()
    const open = async (): Promise<MqttLink> => {
      const d = this.#definition
      let lease: BrokerLease | null = null
      if (d.broker === MQTT_EMBEDDED) {
        lease = await this.#brokers.acquire(d.port, this.#registration())
        this.#host = lease.host
        this.#port = lease.port
      } else {
        this.#host = d.broker
        this.#port = d.port ?? (d.tls ? 8883 : 1883)
      }
      this.#backoffMs = d.reconnect_period * 1000
      this.#connection = 'connecting'
      const client = connect(this.#clientOptions(lease))
      firstOutcome = new Promise<void>((resolve) => {
        const timer = setTimeout(done, d.connect_timeout * 1000)
        function done() {
          clearTimeout(timer)
          client.off('connect', done)
          client.off('close', done)
          resolve()
        }
        client.on('connect', done)
        client.on('close', done)
      })
      const unlisten = this.#listen(client)
      this.#scanTimer = setInterval(() => this.#scan(), d.scan_interval * 1000)
      this.#scanTimer.unref()
      return { client, lease, unlisten }
    }
    // The adapter runs from the moment its client exists (events of the first attempt count).
    return this.#life.start(open, async () => {
      await firstOutcome
      this.#logger.info({ broker: `${this.#host}:${this.#port}`, connection: this.#connection }, 'mqtt adapter started')
    })
  }

  /** Says goodbye to the broker (so no last will is sent) and releases the embedded broker. Idempotent. */
  stop(): Promise<void> {
    return this.#life.stop(async ({ client, lease, unlisten }) => {
      this.#clearTimers()
      // No event of the old client may reach the adapter once it is let go (a late `connect`
      // would subscribe on a client that is gone).
      unlisten()
      this.#connection = 'down'
      await closeClient(client, this.#logger)
      await lease?.release()
      this.#logger.info('mqtt adapter stopped')
    })
  }

  /**
   * Drops the link without a goodbye and stays away until attach, as a device whose network went
   * down: the broker notices, publishes the last will, and subscribers stop hearing from it.
   */
  detach(): void {
    const wasDetached = this.#life.detached
    this.#life.detach() // ConflictError while stopped
    if (wasDetached) return
    this.#connection = 'detached'
    if (this.#retryTimer) clearTimeout(this.#retryTimer)
    this.#retryTimer = null
    this.#life.resource?.client.stream?.destroy()
  }

  /** Connects again after detach. */
  attach(): void {
    const wasDetached = this.#life.detached
    this.#life.attach() // ConflictError while stopped
    if (!wasDetached) return
    this.#backoffMs = this.#definition.reconnect_period * 1000
    this.#reconnect()
  }

  stats(): AdapterStats {
    const c = this.#counters
    const broker = this.#life.resource?.lease?.stats()
    return {
      state: this.state,
      requests: c.published + c.received,
      errors: c.errors,
      connection: this.#connection,
      broker: this.#port === null ? null : `${this.#host}:${this.#port}`,
      port: this.#port,
      published: c.published,
      deferred: c.deferred,
      received: c.received,
      refused: c.refused,
      reconnects: c.reconnects,
      ...(broker && {
        broker_clients: broker.clients,
        broker_retained: broker.retained,
        broker_retained_bytes: broker.retained_bytes,
        broker_refused_connects: broker.refused_connects,
        broker_refused_client_ids: broker.refused_client_ids,
        broker_refused_publishes: broker.refused_publishes,
        broker_refused_retained: broker.refused_retained,
      }),
    }
  }

  settings(): Record<string, unknown> {
    const d = this.#definition
    return {
      broker: d.broker,
      host: this.#host || (d.broker === MQTT_EMBEDDED ? '127.0.0.1' : d.broker),
      port: this.#port ?? d.port ?? null,
      tls: d.tls,
      tls_verify: d.tls_verify,
      username: d.username ?? null,
      password: d.password === undefined ? null : '********',
      client_id: this.#clientId(),
      keepalive: d.keepalive,
      clean: d.clean,
      topic_prefix: d.topic_prefix,
      default_qos: d.default_qos,
      default_retain: d.default_retain,
      publish_interval: d.publish_interval,
      scan_interval: d.scan_interval,
      reconnect_period: d.reconnect_period,
      reconnect_max: d.reconnect_max,
      connect_timeout: d.connect_timeout,
      will: d.will ? structuredClone(d.will) : null,
      birth: d.birth ? structuredClone(d.birth) : null,
      bindings: structuredClone(d.bindings),
      connection: this.#connection,
      last_error: this.#lastError,
      counters: { ...this.#counters },
      // The access counters of the embedded broker this adapter uses (shared by its adapters).
      embedded_broker: this.#life.resource?.lease?.stats() ?? null,
    }
  }

  /**
   * Changes `publish_interval` (seconds, 0..86400) or `scan_interval` (seconds, 0.01..60) while running.
   *
   * @example
   * adapter.set('publish_interval', 5)
   */
  set(name: string, value: unknown): void {
    const refusal = this.refusal(name, value)
    if (refusal) throw refusal
    ;(this.#definition as Record<string, unknown>)[name] = value
    this.#updatePeriods()
    if (name === 'scan_interval' && this.#scanTimer) {
      clearInterval(this.#scanTimer)
      this.#scanTimer = setInterval(() => this.#scan(), (value as number) * 1000)
      this.#scanTimer.unref()
    }
  }

  refusal(name: string, value: unknown): ValidationError | null {
    const range = MQTT_SETTABLE_RANGES[name]
    if (range === undefined) return readOnly(this, name)
    return secondsProblem(name, value, ...range)
  }

  valueProblem(attr: string, value: unknown): string | null {
    return checkPublishedValue(this.#definition, attr, value)
  }

  #clientId(): string {
    return this.#definition.client_id ?? `mimic-${this.name.replace(/\./g, '-')}`
  }

  /** What the embedded broker must know of this adapter: its client id and its topics. */
  #registration(): AdapterRegistration {
    const d = this.#definition
    const publishes = this.#bindings.filter((b) => b.publishes).map((b) => b.topic)
    for (const m of [d.will, d.birth]) if (m) publishes.push(m.topic)
    return { clientId: this.#clientId(), publishes, subscribes: this.#bindings.filter((b) => b.subscribes).map((b) => b.topic) }
  }

  /** Takes the client's events, each checked to come from the adapter's current client; returns what takes them off. */
  #listen(client: MqttClient): () => void {
    const current = () => this.#life.resource?.client === client
    const onConnect = () => current() && this.#connected(client)
    const onClose = () => current() && this.#closed()
    const onError = (error: Error) => current() && this.#linkError(error)
    const onMessage = (topic: string, payload: Buffer) => current() && this.#message(topic, payload)
    client.on('connect', onConnect)
    client.on('close', onClose)
    client.on('error', onError)
    client.on('message', onMessage)
    return () => {
      client.off('connect', onConnect)
      client.off('close', onClose)
      client.off('error', onError)
      client.off('message', onMessage)
      // An error after the adapter let go (a socket reset while closing) has nobody to tell.
      client.on('error', ignore)
    }
  }

  #clientOptions(lease: BrokerLease | null): IClientOptions {
    const d = this.#definition
    // The embedded broker knows the adapter by the credentials of its lease, whatever the model says.
    const credentials = lease?.credentials
    const toMessage = (m: NonNullable<MqttDefinition['will']>) => ({ topic: m.topic, payload: Buffer.from(m.payload), qos: m.qos, retain: m.retain })
    return {
      host: this.#host,
      port: this.#port!,
      protocol: d.tls ? 'mqtts' : 'mqtt',
      rejectUnauthorized: d.tls_verify,
      clientId: this.#clientId(),
      username: credentials?.username ?? d.username,
      password: credentials?.password ?? d.password,
      keepalive: d.keepalive,
      clean: d.clean,
      // Reconnects are the adapter's (with a backoff); MQTT.js would retry at a fixed period.
      reconnectPeriod: 0,
      connectTimeout: d.connect_timeout * 1000,
      queueQoSZero: false,
      will: d.will && toMessage(d.will),
    }
  }

  #connected(client: MqttClient): void {
    this.#connection = 'connected'
    this.#backoffMs = this.#definition.reconnect_period * 1000
    this.#lastError = null
    const filters = new Map<string, 0 | 1 | 2>()
    for (const b of this.#bindings) {
      if (b.subscribes) filters.set(b.topic, Math.max(filters.get(b.topic) ?? 0, b.binding.qos) as 0 | 1 | 2)
    }
    if (filters.size > 0) {
      client.subscribe(Object.fromEntries([...filters].map(([topic, qos]) => [topic, { qos }])), (error) => {
        if (error) this.#fail('mqtt subscribe failed', error)
      })
    }
    const birth = this.#definition.birth
    if (birth)
      client.publish(birth.topic, birth.payload, { qos: birth.qos, retain: birth.retain }, (error) => error && this.#fail('mqtt birth message failed', error))
    for (const b of this.#bindings) if (b.publishes) this.#publish(b)
    this.#flush()
  }

  #closed(): void {
    if (this.#life.state !== 'RUNNING') return
    if (this.#connection === 'connected') this.#logger.warn({ broker: `${this.#host}:${this.#port}` }, 'mqtt broker connection lost: reconnecting')
    this.#connection = 'reconnecting'
    if (this.#retryTimer) return
    const delay = this.#backoffMs
    this.#backoffMs = Math.min(this.#backoffMs * 2, this.#definition.reconnect_max * 1000)
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null
      if (this.#life.state !== 'RUNNING') return
      this.#counters.reconnects++
      this.#reconnect()
    }, delay)
    this.#retryTimer.unref()
  }

  #reconnect(): void {
    const client = this.#life.resource?.client
    if (!client) return
    if (this.#connection !== 'reconnecting') this.#connection = 'connecting'
    // The stores go along, so QoS 1 and 2 messages still unacknowledged are sent again.
    client.reconnect({ incomingStore: client.incomingStore, outgoingStore: client.outgoingStore })
  }

  #linkError(error: Error): void {
    this.#lastError = error.message
    this.#counters.errors++
    this.#warning.warn({ err: error.message, broker: `${this.#host}:${this.#port}` }, 'mqtt broker connection failed')
  }

  #scan(): void {
    if (this.#connection !== 'connected' || this.#life.detached) return
    const now = Date.now()
    // A periodic publication goes out at the scan nearest its time and the next is due a period
    // after that time, not after the scan: so an interval keeps its rate whatever the scans'
    // phase and jitter (a scan a millisecond early would otherwise put it off a whole scan).
    const slack = (this.#definition.scan_interval * 1000) / 2
    // A link that cannot take more (the broker reads slower than the adapter publishes) makes
    // publications wait, still due, instead of piling up in the server: the latest value of each
    // goes out once the link drains, as after an outage.
    const backedUp = this.#life.resource?.client.stream?.writableNeedDrain === true
    for (const b of this.#bindings) {
      if (!b.publishes) continue
      const dueAt = b.nextDue
      const due = b.periodMs > 0 && now >= dueAt - slack
      if (!due && !(b.binding.on_change && valueKey(this.#read(b)) !== b.lastKey)) continue
      if (backedUp) {
        this.#counters.deferred++
        continue
      }
      this.#publish(b, now)
      // Behind by a period or more (a stalled process): start the schedule again from now.
      if (due && now - dueAt < b.periodMs) b.nextDue = dueAt + b.periodMs
    }
    this.#flush()
  }

  /**
   * After each step of the instance: `on_change` bindings whose value the step changed publish it
   * at once, so subscribers hear every step of a run of several steps, not only the last.
   * Periodic publications keep to their schedule (#scan).
   */
  afterStep(): void {
    if (this.#connection !== 'connected' || this.#life.detached) return
    const backedUp = this.#life.resource?.client.stream?.writableNeedDrain === true
    for (const b of this.#bindings) {
      if (!b.publishes || !b.binding.on_change || valueKey(this.#read(b)) === b.lastKey) continue
      if (backedUp) this.#counters.deferred++
      else this.#publish(b)
    }
    this.#flush()
  }

  #read(b: LiveBinding): unknown {
    try {
      return this.#accessor.read(b.binding.attribute)
    } catch {
      return undefined
    }
  }

  /** Publishes one binding's value (`now`: the scan's time, when a scan publishes it): a QoS 0 one joins the turn's batch (#flush writes it), others go through MQTT.js. */
  #publish(b: LiveBinding, now = Date.now()): void {
    const client = this.#life.resource?.client
    if (!client) return
    const value = this.#read(b)
    if (b.binding.on_change) b.lastKey = valueKey(value)
    b.nextDue = now + b.periodMs
    const problem = publishProblem(value)
    if (problem !== null) {
      this.#counters.errors++
      this.#warning.warn({ binding: b.name, attribute: b.binding.attribute, reason: problem }, 'mqtt value not published')
      return
    }
    const type = this.#accessor.describe?.(b.binding.attribute)?.type as AttributeType | undefined
    const payload = b.payloads.format(value, type)
    const size = Buffer.byteLength(payload)
    b.lastPayload = payload
    this.#counters.published++
    if (this.#trace?.on === true) this.#trace.recordPublish(b.topic, size, payload)
    if (b.binding.qos === 0 && b.topicBytes.length <= 0xffff && 2 + b.topicBytes.length + size <= MAX_REMAINING_LENGTH && writesDirectly(client)) {
      this.#batch.add(b.topicBytes, payload, size, b.binding.retain)
      return
    }
    this.#flush() // what waits goes first, so that publications keep their order
    client.publish(b.topic, payload, { qos: b.binding.qos, retain: b.binding.retain }, (error) => {
      if (error && this.#life.resource !== null) this.#fail('mqtt publish failed', error, { binding: b.name })
    })
  }

  /** Writes the turn's QoS 0 publications to the client's socket as one buffer (publish-batch.ts). */
  #flush(): void {
    if (this.#batch.size === 0) return
    const stream = this.#life.resource?.client.stream
    if (stream) this.#batch.writeTo(stream as NodeJS.WritableStream)
    else this.#batch.clear()
  }

  #message(topic: string, raw: Buffer): void {
    if (this.#life.detached) return
    const payload = raw.toString('utf8')
    // A `both` binding hears its own publication back: that is not a write.
    const readers = this.#bindings.filter(
      (b) => b.subscribes && topicMatches(b.topic, topic) && !(b.publishes && topic === b.topic && payload === b.lastPayload),
    )
    if (readers.length === 0) return
    this.#counters.received++
    // Several bindings may read one message (one topic, each its value out of the payload): every
    // value is checked before any is written, so a message is applied whole or not at all.
    const writes: Array<{ b: LiveBinding; value: unknown }> = []
    const entry = { operation: 'message', direction: 'in' as const, topic, size: raw.length, payload: traceText(payload) }
    for (const b of readers) {
      const checked = this.#check(b, payload)
      if ('problem' in checked) return (this.#trace?.record({ ...entry, error: checked.problem }), this.#refuse(b, topic, payload, checked.problem))
      writes.push({ b, value: checked.value })
    }
    const pendings: Array<Promise<void>> = []
    for (const { b, value } of writes) {
      try {
        const pending = this.#accessor.write(b.binding.attribute, value)
        if (pending instanceof Promise) pendings.push(pending.catch((error: unknown) => this.#refuse(b, topic, payload, (error as Error).message)))
      } catch (error) {
        this.#refuse(b, topic, payload, (error as Error).message)
      }
    }
    // Recorded once the writes are taken, so that the attributes they set are the entry's (and its protocol.write event's).
    const trace = this.#trace
    if (trace !== undefined) void Promise.all(pendings).then(() => trace.record(entry))
  }

  /** The value `payload` gives the binding's attribute, or why it cannot be written there. */
  #check(b: LiveBinding, payload: string): ReadResult {
    const attr = b.binding.attribute
    const type = this.#accessor.describe?.(attr)?.type ?? inferType(this.#read(b))
    const result = b.reader.read(payload, type)
    if ('problem' in result) return result
    if (!this.#accessor.writable(attr)) return { problem: `attribute '${attr}' is read-only` }
    const problem = this.#accessor.valueProblem?.(attr, result.value) ?? null
    return problem === null ? result : { problem }
  }

  #refuse(b: LiveBinding, topic: string, payload: string, reason: string): void {
    this.#counters.refused++
    this.#counters.errors++
    const shown = payload.length > 200 ? `${payload.slice(0, 200)}...` : payload
    this.#warning.warn({ binding: b.name, attribute: b.binding.attribute, topic, payload: shown, reason }, 'mqtt payload refused')
  }

  #fail(message: string, error: Error, fields: Record<string, unknown> = {}): void {
    this.#counters.errors++
    this.#lastError = error.message
    this.#warning.warn({ ...fields, err: error.message }, message)
  }

  #updatePeriods(): void {
    for (const b of this.#bindings) {
      const seconds = b.binding.interval ?? (b.binding.on_change ? 0 : this.#definition.publish_interval)
      b.periodMs = seconds * 1000
    }
  }

  #clearTimers(): void {
    if (this.#retryTimer) clearTimeout(this.#retryTimer)
    if (this.#scanTimer) clearInterval(this.#scanTimer)
    this.#retryTimer = null
    this.#scanTimer = null
  }
}

/**
 * Why `value` cannot be published for attribute `attr`, or null (also when no binding publishes it).
 *
 * @example
 * checkPublishedValue(definition, 'temp', NaN) // 'NaN cannot be published (not a finite number)'
 */
export function checkPublishedValue(definition: MqttDefinition, attr: string, value: unknown): string | null {
  for (const binding of definition.bindings) {
    if (binding.attribute === attr && binding.direction !== 'subscribe') return publishProblem(value)
  }
  return null
}

function ignore(): void {}

/**
 * Ends a client: a connected one says goodbye (DISCONNECT, after its QoS 1 and 2 messages in
 * flight are acknowledged), one that is not is closed at once; after MQTT_STOP_GRACE_MS the
 * socket is closed whatever the broker does. Never rejects.
 */
async function closeClient(client: MqttClient, logger: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const ended = client.endAsync(!client.connected).then(
    () => true,
    () => true,
  )
  const graceOver = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), MQTT_STOP_GRACE_MS)))
  const inTime = await Promise.race([ended, graceOver])
  clearTimeout(timer)
  if (inTime) return
  logger.warn({ graceMs: MQTT_STOP_GRACE_MS }, 'mqtt broker did not take the goodbye in time: connection closed')
  // end() is already under way, so a second end(true) would do nothing: close the socket itself.
  client.stream?.destroy()
}

/** A value as a key that changes when the value does (lists and dicts by content). */
function valueKey(value: unknown): string {
  return typeof value === 'string' ? `s${value}` : `j${JSON.stringify(value)}`
}

function inferType(value: unknown): string {
  if (typeof value === 'number') return 'float'
  if (typeof value === 'boolean') return 'bool'
  if (typeof value === 'string') return 'str'
  return 'any'
}
