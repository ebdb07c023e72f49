import { BlockList } from 'node:net'
import { AdapterLifecycle, readOnly, secondsProblem, ThrottledWarning } from '../adapter-kit.js'
import type { Logger } from 'pino'
import { asciiAttributeReferences } from '../../definition/ascii-schema.js'
import { serialSettingsOf } from '../../definition/serial-schema.js'
import type { AsciiDefinition } from '../../definition/ascii-schema.js'
import type { ValidationError } from '../../errors.js'
import { SERVER_VERSION } from '../../version.js'
import type { AdapterStats, AdapterSubject, AttributeAccessor, ProtocolAdapter } from '../adapter.js'
import type { DropKind, Endpoint, LineHandler } from './endpoint.js'
import type { AsciiHub } from './hub.js'
import { Instrument, SCPI_ERRORS } from './instrument.js'
import type { InstrumentCounters } from './instrument.js'
import { splitCommands } from './patterns.js'
import { Vxi11Endpoint } from './vxi11.js'
import { traceText, type AdapterTrace } from '../trace.js'

/**
 * The `ascii` adapter of one instance: an instrument that answers text commands (SCPI and the
 * like) on a TCP or UDP port of its own, reading and writing the instance's attributes through
 * its mappings and bindings (instrument.ts), with the lifecycle, detach/attach, counters and
 * settable reply delay every adapter has.
 *
 * @example
 * const adapter = new AsciiAdapter({ hub, definition: asciiSchema.parse({ port: 0, mappings: { 'MEAS:VOLT?': 'voltage' } }), accessor, logger, name: 'dmm.ascii' })
 * await adapter.start()
 * adapter.stats() // { state: 'RUNNING', port: 40123, transport: 'tcp', requests: 0, ... }
 * await adapter.stop()
 */

/** Options of an adapter. */
export interface AsciiAdapterOptions {
  hub: AsciiHub
  definition: AsciiDefinition
  accessor: AttributeAccessor
  logger: Logger
  /** Shown in log lines, e.g. 'dmm.ascii'. */
  name?: string
  subject?: AdapterSubject
  /** Where each command and its answer is recorded (docs/traces.md). */
  trace?: AdapterTrace | undefined
}

/** One line and its reply, as the adapter node shows the latest ones. */
export interface AsciiExchange {
  /** ISO 8601 time the line arrived. */
  at: string
  client: string
  command: string
  /** The reply without terminator; null when the line had none. */
  reply: string | null
}

/** Lines and replies the adapter node shows. */
const RECENT = 20
const SETTABLE = ['response_delay', 'response_jitter'] as const

/**
 * One instance's `ascii` adapter (see the module comment).
 *
 * @example
 * adapter.detach() // clients now time out
 * adapter.attach()
 * adapter.set('response_delay', 0.2)
 */
export class AsciiAdapter implements ProtocolAdapter {
  readonly name: string
  readonly settable = SETTABLE
  readonly #hub: AsciiHub
  readonly #definition: AsciiDefinition
  readonly #logger: Logger
  readonly #instrument: Instrument
  readonly #handler: LineHandler
  /** Start, stop, detach and attach; the resource is the endpoint (port) the hub opened. */
  readonly #life: AdapterLifecycle<Endpoint>
  #ignored = 0
  #dropped = 0
  /** Clients closed by the idle timeout, closed to make room, answers too large for their sender, datagrams beyond the queue. */
  #limits = { idle_closed: 0, evicted: 0, oversized: 0, udp_dropped: 0, udp_waiting: 0 }
  #recent: AsciiExchange[] = []
  readonly #trace: AdapterTrace | undefined
  readonly #warnings = new Map<DropKind | 'oversized', ThrottledWarning>()

  constructor(options: AsciiAdapterOptions) {
    this.#trace = options.trace
    this.#hub = options.hub
    this.#definition = { ...options.definition }
    this.name = options.name ?? 'ascii'
    this.#logger = options.logger.child({ adapter: this.name })
    this.#life = new AdapterLifecycle(this.name)
    this.#instrument = new Instrument({
      definition: this.#definition,
      accessor: options.accessor,
      subject: options.subject,
      version: SERVER_VERSION,
      onError: (error) => this.#logger.debug({ error }, 'scpi error'),
    })
    const definition = this.#definition
    this.#handler = {
      line: (text, client) => this.#line(text, client),
      terminator: definition.terminator,
      maxLineLength: definition.max_line_length,
      maxConnections: definition.max_connections,
      maxConnectionsPerAddress: definition.max_connections_per_address,
      idleTimeoutMs: definition.idle_timeout * 1000,
      udp: {
        replyLimit: definition.udp_reply_limit,
        trusted: trustedPeers(definition.udp_trusted_peers),
        queuePerAddress: definition.udp_queue_per_address,
        queue: definition.udp_queue,
      },
      replyDelayMs: () => (definition.response_delay + Math.random() * definition.response_jitter) * 1000,
      dropped: (kind, reason, client) => {
        if (kind === 'idle') {
          // Closing a client that went quiet is the listener doing its job, not a warning.
          this.#limits.idle_closed++
          this.#logger.debug({ client, reason }, 'closed an idle ascii client')
          return
        }
        if (kind === 'evicted') this.#limits.evicted++
        else if (kind === 'queue') this.#limits.udp_dropped++
        else this.#dropped++
        const message = kind === 'refused' ? 'refused an ascii client' : kind === 'queue' ? 'dropped an ascii datagram' : 'closed an ascii client'
        this.#warn(kind, { client, reason }, message)
      },
      oversized: (client, bytes, limit) => {
        this.#limits.oversized++
        this.#instrument.raise(SCPI_ERRORS.tooMuchData, `an answer of ${bytes} bytes to an unproven UDP sender (at most ${limit})`)
        this.#warn('oversized', { client, bytes, limit }, 'refused an ascii answer too large for an unproven UDP sender')
      },
    }
  }

  /** 'STOPPED', 'RUNNING', or 'DETACHED' (listening but silent). */
  get state(): AdapterStats['state'] {
    return this.#life.state
  }

  /** Opens the port; resolves once clients can connect. Idempotent. Throws ConflictError (409) when the port cannot be had. */
  start(): Promise<void> {
    return this.#life.start(async () => {
      const d = this.#definition
      const endpoint = await this.#hub.open({
        transport: d.transport,
        host: d.host,
        port: d.port,
        owner: this.name,
        handler: this.#handler,
        ...(d.transport === 'serial' ? { serial: serialSettingsOf(d) } : {}),
        ...(d.transport === 'vxi11' ? { vxi11: { portmapperPort: d.portmapper_port, deviceName: d.device_name } } : {}),
      })
      const where =
        d.transport === 'serial'
          ? { device: d.device }
          : { host: d.host, port: endpoint.port, ...(endpoint instanceof Vxi11Endpoint ? { portmapper_port: endpoint.portmapperPort } : {}) }
      this.#logger.info({ transport: d.transport, ...where }, 'ascii instrument started')
      return endpoint
    })
  }

  /** Closes the port and every client. Idempotent. */
  stop(): Promise<void> {
    return this.#life.stop(async (endpoint) => {
      await this.#hub.release(endpoint)
      this.#logger.info(
        {
          transport: endpoint.transport,
          ...(endpoint.transport === 'serial' ? { device: this.#definition.device } : { host: endpoint.host, port: endpoint.port }),
        },
        'ascii instrument stopped',
      )
    })
  }

  /** Keeps the port and clients open but answers nothing and runs no command: clients time out. */
  detach(): void {
    this.#life.detach()
  }

  /** Answers again after detach. */
  attach(): void {
    this.#life.attach()
  }

  /**
   * Live state, port and counters: `requests` (commands received, each `;`-separated part),
   * `commands` and `queries` (those run, by kind), `errors` (SCPI errors raised), `clients`
   * (connected, or UDP peers heard from), `dropped` (clients closed for bad input or refused),
   * `idle_closed` (closed by idle_timeout), `evicted` (closed to make room for a new client),
   * `oversized` (UDP answers refused as too large for an unproven sender), `udp_dropped`
   * (datagrams beyond the UDP queue's bounds), `udp_waiting` (datagrams waiting for their answers).
   *
   * @example
   * adapter.stats() // { state: 'RUNNING', port: 5025, transport: 'tcp', requests: 3, errors: 0, commands: 1, queries: 2, clients: 1, dropped: 0, idle_closed: 0, evicted: 0, oversized: 0, udp_dropped: 0, udp_waiting: 0 }
   */
  stats(): AdapterStats {
    const c = this.#instrument.counters
    return {
      state: this.state,
      port: this.#definition.transport === 'serial' ? null : (this.#life.resource?.port ?? this.#definition.port ?? null),
      transport: this.#definition.transport,
      requests: c.requests + this.#ignored,
      errors: c.errors,
      commands: c.commands,
      queries: c.queries,
      clients: this.#life.resource?.clients ?? 0,
      dropped: this.#dropped,
      ...this.#limits,
      udp_waiting: this.#life.resource?.waiting ?? 0,
    }
  }

  /** What the adapter node shows: the settings (the effective port), counters, pending SCPI errors and the latest exchanges. */
  settings(): Record<string, unknown> {
    const d = this.#definition
    const { state: _state, port, ...counters } = this.stats()
    return {
      host: d.host,
      port,
      transport: d.transport,
      ...(d.transport === 'serial' ? serialSettingsOf(d) : {}),
      ...(d.transport === 'vxi11'
        ? {
            portmapper_port: this.#life.resource instanceof Vxi11Endpoint ? this.#life.resource.portmapperPort : (d.portmapper_port ?? null),
            device_name: d.device_name,
          }
        : {}),
      terminator: d.terminator,
      response_delay: d.response_delay,
      response_jitter: d.response_jitter,
      case_sensitive: d.case_sensitive,
      unknown_response: d.unknown_response ?? null,
      identity: this.#instrument.identity(),
      max_line_length: d.max_line_length,
      max_connections: d.max_connections,
      max_connections_per_address: d.max_connections_per_address,
      idle_timeout: d.idle_timeout,
      udp_reply_limit: d.udp_reply_limit,
      udp_trusted_peers: [...d.udp_trusted_peers],
      udp_queue_per_address: d.udp_queue_per_address,
      udp_queue: d.udp_queue,
      mappings: structuredClone(d.mappings ?? d.mapping ?? {}),
      bindings: structuredClone(d.bindings),
      counters,
      error_queue: [...this.#instrument.pendingErrors],
      recent: this.#recent.map((e) => ({ ...e })),
    }
  }

  /**
   * Changes `response_delay` or `response_jitter` (seconds, 0..3600) while running; anything else is refused.
   *
   * @example
   * adapter.set('response_delay', 0.5)
   */
  set(name: string, value: unknown): void {
    const refusal = this.refusal(name, value)
    if (refusal) throw refusal
    this.#definition[name as 'response_delay' | 'response_jitter'] = value as number
  }

  refusal(name: string, value: unknown): ValidationError | null {
    return name === 'response_delay' || name === 'response_jitter' ? secondsProblem(name, value, 0, 3600) : readOnly(this, name)
  }

  /** Why `value` cannot be answered for `attr` (see checkAsciiValue), or null. */
  valueProblem(attr: string, value: unknown): string | null {
    return checkAsciiValue(this.#definition, attr, value)
  }

  /** The counters of the interpreter (requests, commands, queries, errors). */
  get counters(): Readonly<InstrumentCounters> {
    return this.#instrument.counters
  }

  #line(text: string, client: string): string | null | Promise<string | null> {
    if (this.#life.detached) {
      this.#ignored += splitCommands(text).length
      return null
    }
    const result = this.#instrument.execute(text)
    const exchange: AsciiExchange = { at: new Date().toISOString(), client, command: text.trim(), reply: null }
    if (this.#recent.length >= RECENT) this.#recent.shift()
    this.#recent.push(exchange)
    if (result instanceof Promise) return result.then((reply) => ((exchange.reply = reply), this.#traced(exchange), reply))
    exchange.reply = result
    this.#traced(exchange)
    return result
  }

  /** Records a command and its answer in the trace (docs/traces.md); the attributes it set join it. */
  #traced(exchange: AsciiExchange): void {
    const trace = this.#trace
    if (trace === undefined) return
    const answer = exchange.reply === null ? null : traceText(exchange.reply)
    trace.record({ operation: 'command', direction: 'in', client: exchange.client, command: traceText(exchange.command), answer })
  }

  /** Logs at warn level at most once a second for each kind (a flood of bad clients would flood the log), else debug. */
  #warn(kind: DropKind | 'oversized', fields: Record<string, unknown>, message: string): void {
    let warning = this.#warnings.get(kind)
    if (warning === undefined) this.#warnings.set(kind, (warning = new ThrottledWarning(this.#logger)))
    warning.warn(fields, message)
  }
}

/** The operator's trusted UDP senders as a BlockList, or null for none. */
function trustedPeers(peers: readonly string[]): BlockList | null {
  if (peers.length === 0) return null
  const list = new BlockList()
  for (const peer of peers) {
    const [address, prefix] = peer.split('/') as [string, string | undefined]
    const family = address.includes(':') ? 'ipv6' : 'ipv4'
    if (prefix === undefined) list.addAddress(address, family)
    else list.addSubnet(address, Number(prefix), family)
  }
  return list
}

/**
 * Why `value` cannot be carried by an `ascii` definition for `attr`, or null: text an adapter
 * answers may not hold a line end (it would end the reply early). Null for attributes the
 * definition does not reference.
 *
 * @example
 * checkAsciiValue(definition, 'label', 'a\nb') // 'a line end inside a value would cut the reply short'
 */
export function checkAsciiValue(definition: AsciiDefinition, attr: string, value: unknown): string | null {
  if (typeof value !== 'string' || (!/[\r\n]/.test(value) && !value.includes(definition.terminator))) return null
  if (!asciiAttributeReferences(definition).some((r) => r.attribute === attr)) return null
  return 'a line end inside a value would cut the reply short'
}
