import type { Logger } from 'pino'
import type { z } from 'zod'
import type { ValidationError } from '../errors.js'
import type { AdapterTrace } from './trace.js'

/**
 * The one interface every protocol adapter implements, and the shape of a protocol kind in the
 * registry (src/protocols/index.ts). The system tree and the event stream see adapters only
 * through these types; what a protocol does on the wire stays in its folder.
 *
 * @example
 * const kind = protocolKind('modbus_tcp')! // the modbus_slave kind, by its alias
 * const adapter = kind.create({ settings: kind.schema.parse(raw), accessor, logger, name: 'meter.modbus_slave', context: contexts.get(kind) })
 * await adapter.start()
 * adapter.stats() // { state: 'RUNNING', port: 5020, requests: 0, errors: 0, ... }
 */

/** How an adapter reaches the attributes of its instance. */
export interface AttributeAccessor {
  /** Current presented (external) value of an attribute, synchronously. */
  read(attr: string): unknown
  /** Set the attribute's internal value; may be async (Python setter) and may throw a MimicError (e.g. read-only). */
  write(attr: string, value: unknown): void | Promise<void>
  /** False when the attribute cannot be written (e.g. bound to a getter without setter). */
  writable(attr: string): boolean
  /** Why `value` cannot be written to the attribute (its type, other adapters' ranges), or null; lets an adapter check every write of a request before applying any. */
  valueProblem?(attr: string, value: unknown): string | null
  /** The attribute's value type (`float`, `int`, `bool`, `str`, `list`, `dict`, `any`) and unit, or undefined when there is no such attribute. */
  describe?(attr: string): AttributeDescription | undefined
  /** The instance's model methods other than the lifecycle ones (`prepare`, `run`, `start`, `stop`, `reset`). */
  methods?(): string[]
  /** Calls a model method with positional arguments; rejects with a MimicError (e.g. a Python exception is a UserCodeError). */
  call?(method: string, args: unknown[]): Promise<unknown>
}

/** What an adapter may know of an attribute beyond its value. */
export interface AttributeDescription {
  type: string
  unit?: string
  description?: string
}

/**
 * What an adapter may know of its instance and model besides the attributes' values: names for
 * identity answers, and each attribute's declared type and default (for converting text to values
 * and for resets).
 *
 * @example
 * const subject: AdapterSubject = { instance: 'dmm', model: 'Multimeter', attributes: [{ name: 'voltage', type: 'float', default: 0 }] }
 */
export interface AdapterSubject {
  instance: string
  model: string
  description?: string
  attributes: ReadonlyArray<{ name: string; type: string; default: unknown }>
}

/** Lifecycle state of an adapter: 'DETACHED' is started but silent (clients time out). */
export type LifecycleState = 'STOPPED' | 'RUNNING' | 'DETACHED'

/**
 * State of an adapter: its lifecycle state, except that an adapter that is itself a client (a
 * Modbus master) names its link instead of 'RUNNING' while started: 'CONNECTED', 'RETRYING' or
 * 'FAILED'.
 */
export type AdapterState = LifecycleState | 'CONNECTED' | 'RETRYING' | 'FAILED'

/**
 * An adapter's live state and counters, plain JSON, cheap to take (the event stream samples it
 * at up to 50 Hz per client). Every adapter has `state`, `requests` and `errors`; a protocol adds
 * its own counters (numbers, strings, booleans or null only: no nested objects).
 *
 * @example
 * const s: AdapterStats = { state: 'RUNNING', port: 5020, requests: 12, errors: 1 }
 */
export interface AdapterStats {
  state: AdapterState
  requests: number
  errors: number
  [counter: string]: string | number | boolean | null
}

/**
 * One protocol adapter of one instance.
 *
 * @example
 * await adapter.start()
 * adapter.detach() // clients now time out
 * adapter.attach()
 * adapter.set('response_delay', 0.2) // throws ValidationError for a bad value
 * await adapter.stop()
 */
export interface ProtocolAdapter {
  readonly name: string
  readonly state: AdapterState
  /** Starts serving; resolves once clients can connect. Idempotent. */
  start(): Promise<void>
  /** Stops serving. Idempotent. */
  stop(): Promise<void>
  /** Keeps serving resources but stops answering; throws ConflictError when stopped. */
  detach(): void
  /** Answers again after detach; throws ConflictError when stopped. */
  attach(): void
  /** Live state and counters (see AdapterStats). */
  stats(): AdapterStats
  /** What the adapter node shows: its settings (JSON-able, may be large, e.g. a mapping). */
  settings(): Record<string, unknown>
  /** Names of the settings that may be changed while the adapter runs. */
  readonly settable: readonly string[]
  /** Changes a settable setting; throws `refusal(name, value)` when there is one. */
  set(name: string, value: unknown): void
  /**
   * The ValidationError `set(name, value)` would throw (a bad value, a name not in `settable`),
   * found without changing anything; null when it would set it. Lets several settings be checked
   * before any is set.
   */
  refusal(name: string, value: unknown): ValidationError | null
  /** Why `value` cannot be published for `attr`, or null (also when `attr` is not published). */
  valueProblem(attr: string, value: unknown): string | null
  /**
   * Called after each step of its instance, for a protocol that hands each step's values to its
   * clients (OPC UA items monitored by exception, MQTT on change): in a system step after the
   * connections, so it sees the values they wrote. Must be cheap: it runs once per instance step.
   */
  afterStep?(): void
}

/** What a kind's factory gets for one adapter. */
export interface AdapterCreateOptions<Settings, Context> {
  /** The adapter's settings, parsed by the kind's schema. */
  settings: Settings
  accessor: AttributeAccessor
  logger: Logger
  /** Shown in log lines, e.g. 'meter.modbus_slave'. */
  name: string
  /** The instance's name, e.g. 'meter' (protocols that name things after it, such as an OPC UA folder). */
  instance?: string
  /** The kind's shared per-server context (e.g. listeners shared by adapters on one port). */
  context: Context
  /** The instance and model the adapter serves. */
  subject?: AdapterSubject
  /** The adapter's traffic trace (trace.ts): an adapter that knows its exchanges records each there. */
  trace?: AdapterTrace
}

/** What a kind's shared context must offer: closing it when the server stops. */
export interface ProtocolContext {
  close(): Promise<void>
  /** The ports its listeners hold, so that another kind refused one of them can say who has it. */
  heldPorts?(): HeldPort[]
}

/** A port one of Mimic's listeners holds, and who holds it, in words for a fault. */
export interface HeldPort {
  transport: 'tcp' | 'udp'
  host: string
  port: number
  /** e.g. `the Modbus server of units 1, 2`, `text instrument adapter 'dmm.ascii'`. */
  holder: string
}

/**
 * Which listener of another protocol kind in this server holds `port`, if any: a kind whose
 * listener cannot open a port asks it before blaming "another program".
 */
export type PortHolder = (transport: 'tcp' | 'udp', port: number) => HeldPort | undefined

/** What a kind's context is made with. */
export interface ContextOptions {
  logger: Logger
  portHolder?: PortHolder
  /** What the server's operator decided about access, for the protocols that can authenticate. */
  security?: ProtocolSecurity
}

/**
 * Access settings of the server that protocols honour where their protocol can (docs/security.md).
 *
 * @example
 * const security: ProtocolSecurity = { productKey: 'k', mqttUsersFile: '/etc/mimic/mqtt-users', pkiRoot: '/var/lib/mimic/pki' }
 */
export interface ProtocolSecurity {
  /** The server's product key; when set, protocols that authenticate require credentials. */
  productKey?: string | undefined
  /** A file of `user:password` lines the embedded MQTT broker accepts besides the product key. */
  mqttUsersFile?: string | undefined
  /** The directory OPC UA certificate stores live in; a model's `pki_dir` names a folder inside it. */
  pkiRoot?: string | undefined
}

/**
 * A protocol kind: how a model names it under `communication`, the schema of its settings and
 * the factory of its adapters. A kind's protocol code (its library: node-opcua alone costs about
 * 1.6 s of CPU to load) is loaded by `load()`, only when a definition names the kind: the
 * registry's `loadProtocolKinds` runs before a definition's defaults are checked against its
 * mappings and before its adapters are made, so a server loads only the protocols its models use.
 * `valueProblem`, `createContext` and `create` need the loaded code (see lazy-kind.ts).
 *
 * @example
 * const kind = lazyKind({ name: 'modbus_slave', aliases: ['modbus_tcp'], nodeType: 'ModbusSlave', schema }, async () => runtime)
 * await kind.load()
 * kind.create({ settings, accessor, logger, name: 'meter.modbus_slave', context: kind.createContext({ logger }) })
 */
export interface ProtocolKind<Settings = unknown, Context extends ProtocolContext = ProtocolContext> extends KindDeclaration<Settings> {
  /** Loads the kind's protocol code, once per process (later calls share the first). */
  load(): Promise<void>
  /** Whether its protocol code is loaded. */
  readonly loaded: boolean
  /** The shared context of this kind, made once per server. */
  createContext(opts: ContextOptions): Context
  /** Why `value` cannot be published for `attr` under `settings`, or null: lets a model's defaults be checked before any adapter exists. */
  valueProblem(settings: Settings, attr: string, value: unknown): string | null
  create(opts: AdapterCreateOptions<Settings, Context>): ProtocolAdapter
}

/** What a kind says of itself without its protocol code: names, node type, settings schema, access checks. */
export interface KindDeclaration<Settings = unknown> {
  /** The canonical name, also the key of the first adapter node of this kind. */
  readonly name: string
  /** Other names a model may use; the adapter is keyed under `name`. */
  readonly aliases: readonly string[]
  /** The `type` of the adapter's tree node. */
  readonly nodeType: string
  /** The settings' schema (it lives under src/definition/, so that models validate without protocol code). */
  readonly schema: z.ZodType<Settings>
  /**
   * Checks the server's access settings this kind reads (a users file, say) when the server
   * starts, so that a bad one stops the start instead of the first adapter that needs it.
   */
  checkSecurity?(security: ProtocolSecurity): void
}

/** The part of a kind that needs its protocol code, as its `load` gives it (lazy-kind.ts). */
export type KindRuntime<Settings, Context extends ProtocolContext> = Pick<ProtocolKind<Settings, Context>, 'createContext' | 'valueProblem' | 'create'>
