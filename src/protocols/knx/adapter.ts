import type { Logger } from 'pino'
import type { ValidationError } from '../../errors.js'
import { formatGroupAddress, parseGroupAddress, type KnxBinding, type KnxDefinition } from '../../definition/knx-schema.js'
import type { AdapterState, AdapterStats, AttributeAccessor, ProtocolAdapter } from '../adapter.js'
import { AdapterLifecycle, ThrottledWarning, readOnly, secondsProblem } from '../adapter-kit.js'
import type { AdapterTrace } from '../trace.js'
import { knxCodec, type KnxCodec } from './dpt.js'
import { KnxTunnel, type KnxTelegram } from './tunnel.js'

/**
 * The `knx_ip` adapter of one instance: a KNX device on the bus, reached through a KNXnet/IP
 * tunnelling server (`router`). For each binding's group address it:
 *
 * - takes group writes into `write_attribute` (`inbound`, `bidirectional`), decoded by the
 *   binding's `dpt` or `value_codec`;
 * - answers group reads with `read_attribute` (`outbound`, `bidirectional`);
 * - sends a group write when `read_attribute`'s encoded value changes: checked every
 *   `poll_interval` seconds and after each step of the instance.
 *
 * The tunnel has its own state (`connection` in stats): `connecting`, `connected`,
 * `reconnecting` (the server did not answer: "no answer", counted in `no_answer`, retried every
 * `reconnect_period` doubling up to 60 s), `detached`, `down`. A server that does not answer
 * never fails the adapter. Detach leaves the bus (the tunnel is closed) until attach.
 *
 * @example
 * const adapter = new KnxAdapter({ definition, accessor, logger, name: 'room.knx_ip' })
 * await adapter.start()
 * adapter.stats() // { state: 'RUNNING', connection: 'connected', telegrams_sent: 0, ... }
 */
export interface KnxAdapterOptions {
  definition: KnxDefinition
  accessor: AttributeAccessor
  logger: Logger
  name?: string
  /** The adapter's traffic trace (docs/traces.md): each group telegram it took from the tunnel or sent. */
  trace?: AdapterTrace | undefined
}

type Connection = 'down' | 'connecting' | 'connected' | 'reconnecting' | 'detached'

interface LiveBinding {
  name: string
  binding: KnxBinding
  address: number
  codec: KnxCodec
  sends: boolean
  takes: boolean
  /** The encoded value last sent or received (hex), so only a change is sent. */
  lastKey: string | null
}

const MAX_BACKOFF_MS = 60_000

/** See the module comment. */
export class KnxAdapter implements ProtocolAdapter {
  readonly name: string
  readonly settable = ['poll_interval'] as const
  readonly #definition: KnxDefinition
  readonly #accessor: AttributeAccessor
  readonly #logger: Logger
  readonly #warning: ThrottledWarning
  readonly #trace: AdapterTrace | undefined
  readonly #life: AdapterLifecycle<{ started: true }>
  readonly #bindings: LiveBinding[]
  readonly #byAddress = new Map<number, LiveBinding[]>()
  #tunnel: KnxTunnel | null = null
  #connection: Connection = 'down'
  #backoffMs: number
  #retryTimer: NodeJS.Timeout | null = null
  #pollTimer: NodeJS.Timeout | null = null
  #lastError: string | null = null
  readonly #counters = { telegrams_received: 0, telegrams_sent: 0, reads_answered: 0, writes_taken: 0, refused: 0, no_answer: 0, reconnects: 0, errors: 0 }

  constructor(options: KnxAdapterOptions) {
    this.name = options.name ?? 'knx_ip'
    this.#definition = structuredClone(options.definition)
    this.#accessor = options.accessor
    this.#logger = options.logger.child({ adapter: this.name })
    this.#warning = new ThrottledWarning(this.#logger)
    this.#trace = options.trace
    this.#life = new AdapterLifecycle(this.name)
    this.#backoffMs = this.#definition.reconnect_period * 1000
    this.#bindings = this.#definition.bindings.map((binding, i) => {
      const live: LiveBinding = {
        name: binding.name ?? `binding_${i}`,
        binding,
        address: parseGroupAddress(binding.group_address)!,
        codec: knxCodec(binding)!,
        sends: binding.direction !== 'inbound',
        takes: binding.direction !== 'outbound',
        lastKey: null,
      }
      const list = this.#byAddress.get(live.address) ?? []
      list.push(live)
      this.#byAddress.set(live.address, list)
      return live
    })
  }

  get state(): AdapterState {
    return this.#life.state
  }

  /** Opens the tunnel; resolves once the first attempt has an outcome (a server that does not answer is retried, not an error). */
  start(): Promise<void> {
    return this.#life.start(async () => {
      this.#backoffMs = this.#definition.reconnect_period * 1000
      // The values at start are the device's state, not changes to announce.
      for (const b of this.#bindings) if (b.sends) b.lastKey = this.#encodedKey(b)
      this.#startPolling()
      await this.#connect()
      return { started: true as const }
    })
  }

  stop(): Promise<void> {
    return this.#life.stop(async () => {
      this.#clearTimers()
      this.#connection = 'down'
      const tunnel = this.#tunnel
      this.#tunnel = null
      await tunnel?.close()
    })
  }

  /** Leaves the bus: the tunnel is closed and nothing is answered or sent until attach. */
  detach(): void {
    this.#life.detach()
    this.#connection = 'detached'
    if (this.#retryTimer) clearTimeout(this.#retryTimer)
    this.#retryTimer = null
    const tunnel = this.#tunnel
    this.#tunnel = null
    void tunnel?.close()
  }

  attach(): void {
    const was = this.#life.detached
    this.#life.attach()
    if (!was) return
    this.#backoffMs = this.#definition.reconnect_period * 1000
    void this.#connect()
  }

  stats(): AdapterStats {
    const c = this.#counters
    return {
      state: this.state,
      requests: c.telegrams_received + c.telegrams_sent,
      errors: c.errors,
      connection: this.#connection,
      router: `${this.#definition.router.host}:${this.#definition.router.port}`,
      individual_address: this.#tunnel?.individualAddress ?? null,
      telegrams_received: c.telegrams_received,
      telegrams_sent: c.telegrams_sent,
      reads_answered: c.reads_answered,
      writes_taken: c.writes_taken,
      refused: c.refused,
      no_answer: c.no_answer,
      reconnects: c.reconnects,
    }
  }

  settings(): Record<string, unknown> {
    const d = this.#definition
    return {
      router: { ...d.router },
      host: d.router.host,
      port: d.router.port,
      poll_interval: d.poll_interval,
      connect_timeout: d.connect_timeout,
      reconnect_period: d.reconnect_period,
      bindings: this.#bindings.map((b) => ({
        ...structuredClone(b.binding),
        name: b.name,
        group_address: formatGroupAddress(b.address),
        codec: b.codec.label,
      })),
      connection: this.#connection,
      individual_address: this.#tunnel?.individualAddress ?? null,
      last_error: this.#lastError,
      counters: { ...this.#counters },
    }
  }

  /** `poll_interval`: seconds between checks for changed values (0.01 to 3600). */
  set(name: string, value: unknown): void {
    const refusal = this.refusal(name, value)
    if (refusal) throw refusal
    this.#definition.poll_interval = value as number
    if (this.#pollTimer) this.#startPolling()
  }

  refusal(name: string, value: unknown): ValidationError | null {
    if (name !== 'poll_interval') return readOnly(this, name)
    return secondsProblem(name, value, 0.01, 3600)
  }

  valueProblem(attr: string, value: unknown): string | null {
    return checkKnxValue(this.#definition, attr, value)
  }

  /** After a step: a sent attribute whose encoded value changed goes on the bus at once. */
  afterStep(): void {
    this.#scan()
  }

  async #connect(): Promise<void> {
    const d = this.#definition
    this.#connection = this.#counters.no_answer > 0 || this.#counters.reconnects > 0 ? 'reconnecting' : 'connecting'
    const tunnel = new KnxTunnel({ host: d.router.host, port: d.router.port, routeBack: d.router.route_back, timeoutMs: d.connect_timeout * 1000 })
    this.#tunnel = tunnel
    tunnel.on('telegram', (telegram: KnxTelegram) => this.#tunnel === tunnel && this.#telegram(telegram))
    tunnel.on('lost', (reason: string) => this.#tunnel === tunnel && this.#lost(reason))
    let ok = false
    try {
      ok = await tunnel.connect()
    } catch (error) {
      this.#lastError = (error as Error).message
    }
    if (this.#tunnel !== tunnel) {
      await tunnel.close()
      return
    }
    if (!ok) {
      this.#counters.no_answer++
      this.#counters.errors++
      this.#lastError ??= `no answer from the KNXnet/IP tunnelling server ${d.router.host}:${d.router.port}`
      this.#warning.warn({ router: `${d.router.host}:${d.router.port}`, err: this.#lastError }, 'knx tunnel not opened: retrying')
      this.#tunnel = null
      await tunnel.close()
      this.#retry()
      return
    }
    this.#connection = 'connected'
    this.#lastError = null
    this.#backoffMs = d.reconnect_period * 1000
    this.#logger.info({ router: `${d.router.host}:${d.router.port}`, channel: tunnel.channel, address: tunnel.individualAddress }, 'knx tunnel connected')
  }

  #lost(reason: string): void {
    this.#tunnel = null
    this.#lastError = reason
    this.#counters.errors++
    this.#warning.warn({ reason }, 'knx tunnel lost: reconnecting')
    this.#retry()
  }

  #retry(): void {
    if (this.#life.resource === null && this.#connection === 'down') return
    if (this.#life.detached) return
    this.#connection = 'reconnecting'
    const delay = this.#backoffMs
    this.#backoffMs = Math.min(this.#backoffMs * 2, MAX_BACKOFF_MS)
    if (this.#retryTimer) clearTimeout(this.#retryTimer)
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null
      if (this.#connection === 'down' || this.#life.detached) return
      this.#counters.reconnects++
      void this.#connect()
    }, delay)
    this.#retryTimer.unref()
  }

  #telegram(telegram: KnxTelegram): void {
    if (this.#life.detached) return
    const bindings = this.#byAddress.get(telegram.destination)
    if (bindings === undefined) return
    this.#counters.telegrams_received++
    if (telegram.service === 'read') {
      const reader = bindings.find((b) => b.sends)
      if (this.#trace?.on) this.#traceIn(telegram, reader ?? bindings[0]!, undefined, reader ? undefined : 'no binding answers reads of this group address')
      if (reader) void this.#send(reader, 'response')
      return
    }
    if (telegram.service !== 'write') return
    for (const b of bindings) {
      if (!b.takes) continue
      const attr = b.binding.write_attribute!
      let value: unknown
      try {
        value = fitValue(b.codec.decode(telegram.data), this.#accessor.describe?.(attr)?.type)
      } catch (error) {
        this.#refuse(b, telegram, (error as Error).message)
        continue
      }
      const problem = !this.#accessor.writable(attr) ? `attribute '${attr}' is read-only` : (this.#accessor.valueProblem?.(attr, value) ?? null)
      if (problem !== null) {
        this.#refuse(b, telegram, problem, value)
        continue
      }
      // A bidirectional binding that writes what it sends takes the bus's value as sent, so it is not echoed.
      if (b.sends && b.binding.read_attribute === attr) b.lastKey = telegram.data.toString('hex')
      this.#counters.writes_taken++
      try {
        const pending = this.#accessor.write(attr, value)
        // Traced once the attribute took it, in that turn: the write joins the entry as its attributes.
        if (pending instanceof Promise)
          pending.then(
            () => this.#traceIn(telegram, b, value, undefined),
            (error: unknown) => this.#refuse(b, telegram, (error as Error).message, value),
          )
        else this.#traceIn(telegram, b, value, undefined)
      } catch (error) {
        this.#refuse(b, telegram, (error as Error).message, value)
      }
    }
  }

  /** Records a group telegram of the bus for binding `b` (`value`: as decoded, `error`: why it was not taken). */
  #traceIn(telegram: KnxTelegram, b: LiveBinding, value: unknown, error: string | undefined): void {
    this.#trace?.record({
      operation: telegram.service === 'read' ? 'group_read' : 'group_write',
      direction: 'in',
      group_address: formatGroupAddress(telegram.destination),
      source: formatIndividualAddress(telegram.source),
      dpt: b.codec.label,
      data: telegram.service === 'read' ? undefined : telegram.data.toString('hex'),
      value,
      attribute: telegram.service === 'read' ? b.binding.read_attribute : b.binding.write_attribute,
      error,
    })
  }

  #scan(): void {
    if (this.#connection !== 'connected' || this.#life.detached) return
    for (const b of this.#bindings) {
      if (!b.sends) continue
      const key = this.#encodedKey(b)
      if (key === null || key === b.lastKey) continue
      b.lastKey = key
      void this.#send(b, 'write')
    }
  }

  async #send(b: LiveBinding, service: 'write' | 'response'): Promise<void> {
    const tunnel = this.#tunnel
    if (tunnel === null || !tunnel.connected) return
    let encoded: { small: boolean; data: Buffer }
    try {
      encoded = b.codec.encode(this.#read(b.binding.read_attribute!))
    } catch (error) {
      this.#counters.errors++
      this.#warning.warn({ binding: b.name, err: (error as Error).message }, 'knx value not sent')
      return
    }
    this.#counters.telegrams_sent++
    if (service === 'response') this.#counters.reads_answered++
    const started = performance.now()
    const acknowledged = await tunnel.send(service, b.address, encoded)
    if (this.#trace?.on) {
      let value: unknown
      try {
        value = b.codec.decode(encoded.data)
      } catch {
        value = null
      }
      this.#trace.record({
        operation: service === 'response' ? 'group_response' : 'group_write',
        direction: 'out',
        group_address: formatGroupAddress(b.address),
        dpt: b.codec.label,
        data: encoded.data.toString('hex'),
        value,
        attribute: b.binding.read_attribute,
        error: acknowledged ? undefined : 'not acknowledged by the tunnelling server',
        // Until the tunnelling server acknowledged the telegram.
        latency: (performance.now() - started) / 1000,
      })
    }
  }

  #encodedKey(b: LiveBinding): string | null {
    try {
      return b.codec.encode(this.#read(b.binding.read_attribute!)).data.toString('hex')
    } catch {
      return null
    }
  }

  #read(attr: string): unknown {
    try {
      return this.#accessor.read(attr)
    } catch {
      return undefined
    }
  }

  #refuse(b: LiveBinding, telegram: KnxTelegram, reason: string, value?: unknown): void {
    this.#counters.refused++
    this.#counters.errors++
    if (this.#trace?.on) this.#traceIn(telegram, b, value, reason)
    this.#warning.warn(
      { binding: b.name, group_address: formatGroupAddress(telegram.destination), data: telegram.data.toString('hex'), reason },
      'knx group write refused',
    )
  }

  #startPolling(): void {
    if (this.#pollTimer) clearInterval(this.#pollTimer)
    this.#pollTimer = setInterval(() => this.#scan(), this.#definition.poll_interval * 1000)
    this.#pollTimer.unref()
  }

  #clearTimers(): void {
    if (this.#pollTimer) clearInterval(this.#pollTimer)
    if (this.#retryTimer) clearTimeout(this.#retryTimer)
    this.#pollTimer = null
    this.#retryTimer = null
  }
}

/**
 * Why `value` cannot be sent for attribute `attr` (not a number for a numeric codec), or null.
 *
 * @example
 * checkKnxValue(definition, 'temp', 'warm') // "'warm' cannot be sent as 9.001"
 */
export function checkKnxValue(definition: KnxDefinition, attr: string, value: unknown): string | null {
  for (const binding of definition.bindings) {
    if (binding.direction === 'inbound' || binding.read_attribute !== attr) continue
    const codec = knxCodec(binding)
    try {
      codec?.encode(value)
    } catch {
      return `${JSON.stringify(value)} cannot be sent as ${codec?.label}`
    }
  }
  return null
}

/** An individual address as KNX writes it: `1.1.5`. */
function formatIndividualAddress(address: number): string {
  return `${address >> 12}.${(address >> 8) & 0x0f}.${address & 0xff}`
}

/** A decoded value as the attribute's type takes it: booleans 0/1 for `int`/`float`, numbers as text for `str`. */
function fitValue(value: unknown, type: string | undefined): unknown {
  if ((type === 'int' || type === 'float') && typeof value === 'boolean') return value ? 1 : 0
  if (type === 'int' && typeof value === 'number') return Math.round(value)
  if (type === 'bool' && typeof value === 'number') return value !== 0
  if (type === 'str' && typeof value !== 'string') return String(value)
  return value
}
