import { unmarked } from '../values/number.js'
import { attributeDeclarations, UNSERVED_PROTOCOLS, unservedProtocols } from '../definition/model-schema.js'
import { NotFoundError } from '../errors.js'
import { isRecord } from '../definition/is-record.js'
import { substituteParameters } from '../definition/parameters.js'
import { LIFECYCLE_METHODS } from '../definition/model-schema.js'
import { protocolKind, type ProtocolAdapter, type ProtocolKind } from '../protocols/index.js'
import { AdapterTrace, traceSizeProblem } from '../protocols/trace.js'
import { Component, noArguments, type MethodHandler } from '../tree/component.js'
import type { Instance } from './instance.js'
import type { Model } from './models.js'
import type { SystemServices } from './services.js'

const NO_ADAPTERS: ReadonlyMap<string, AdapterNode> = new Map()
const NO_UNSUPPORTED: ReadonlyMap<string, UnsupportedAdapterNode> = new Map()
const NO_LIST: readonly never[] = []

/**
 * The instance's protocol adapters by key: the kind's name for the first adapter of a kind, then
 * `<kind>_1`, `<kind>_2`, ... (an alias such as `modbus_tcp` is keyed under its kind's name).
 * Adapters are reached only through ProtocolAdapter and the registry (src/protocols/index.ts).
 *
 * @example
 * instance.communication.child('modbus_slave') // the AdapterNode of the first Modbus adapter
 */
export class Communication extends Component {
  readonly type = 'Communication'
  // An instance without adapters (most of a large fleet) shares these empty ones: empty Maps and
  // arrays of its own were 0.4 KiB of each instance (bench/ANALYSIS.md, benchmark 7's memory).
  readonly #adapters: ReadonlyMap<string, AdapterNode> = NO_ADAPTERS
  /** Adapters of protocols Mimic does not serve, as nodes that say so (UnsupportedAdapterNode). */
  readonly #unsupported: ReadonlyMap<string, UnsupportedAdapterNode> = NO_UNSUPPORTED
  /** The adapters that want to hear of each step (ProtocolAdapter.afterStep). */
  readonly #afterStep: readonly ProtocolAdapter[] = NO_LIST
  readonly #protocols: SystemServices['protocols']
  #names: Set<string> | undefined

  /** The protocols of the model that Mimic does not serve (`communication[2].knx_ip`), run without. */
  readonly #unserved: readonly string[] = NO_LIST
  /** ... and their kinds (`knx_ip`). */
  readonly #unservedKinds: readonly string[] = NO_LIST

  constructor(instance: Instance, model: Model, services: SystemServices, parameters: Record<string, unknown> = {}) {
    super('communication', instance)
    this.#protocols = services.protocols
    const entries = communicationEntries(model.parsed.communication)
    if (entries.length === 0) return
    const counts = new Map<string, number>()
    const unserved = unservedProtocols(model.parsed)
    this.#unserved = unserved.map((u) => u.path)
    this.#unservedKinds = [...new Set(unserved.map((u) => u.kind))]
    const adapters = (this.#adapters = new Map<string, AdapterNode>())
    const unsupported = (this.#unsupported = new Map<string, UnsupportedAdapterNode>())
    for (const entry of entries) {
      const written = Object.keys(entry)[0]!
      if (UNSERVED_PROTOCOLS.has(written)) {
        const n = counts.get(written) ?? 0
        counts.set(written, n + 1)
        const key = n === 0 ? written : `${written}_${n}`
        unsupported.set(key, new UnsupportedAdapterNode({ name: key, parent: this, kind: written, settings: substituteParameters(entry[written], parameters) }))
        continue
      }
      const kind = protocolKind(written)
      // The model schema refuses unknown kinds; this only guards a definition that skipped it.
      if (!kind) throw new NotFoundError(`Unknown adapter kind '${written}'`)
      const n = counts.get(kind.name) ?? 0
      counts.set(kind.name, n + 1)
      const key = n === 0 ? kind.name : `${kind.name}_${n}`
      adapters.set(
        key,
        new AdapterNode({ name: key, parent: this, instance, kind, settings: kind.schema.parse(substituteParameters(entry[written], parameters)), services }),
      )
    }
    const afterStep = [...adapters.values()].filter((node) => node.adapter.afterStep !== undefined).map((node) => node.adapter)
    if (afterStep.length > 0) this.#afterStep = afterStep
  }

  /** Whether an adapter wants to hear of each step (the list is made once, with the adapters). */
  get hearsSteps(): boolean {
    return this.#afterStep.length > 0
  }

  /** Tells the adapters that want it that a step of the instance is done. */
  afterStep(): void {
    const adapters = this.#afterStep
    for (let i = 0; i < adapters.length; i++) (adapters[i] as ProtocolAdapter).afterStep?.()
  }

  override children(): Component[] {
    return [...this.#adapters.values(), ...this.#unsupported.values()]
  }

  /** The adapters Mimic serves (not those of protocols it runs without). */
  adapterNodes(): IterableIterator<AdapterNode> {
    return this.#adapters.values()
  }

  /** `unserved`, when the model declares protocols Mimic does not serve: where each is declared. */
  override properties(): Record<string, unknown> {
    return this.#unserved.length > 0 ? { unserved: [...this.#unserved] } : {}
  }

  override child(name: string): Component | undefined {
    return this.#adapters.get(name) ?? this.#unsupported.get(name)
  }

  /** The adapters of protocols Mimic does not serve, keyed as in the tree. */
  unsupported(): Iterable<UnsupportedAdapterNode> {
    return this.#unsupported.values()
  }

  /**
   * The protocol Mimic does not serve that an adapter name of the reference product stands for:
   * its kind (`knx_ip`), or the kind and a suffix (`lwm2m_client` for `lwm2m`). Undefined for a
   * name Mimic serves or a name of nothing.
   */
  unservedKind(name: string): string | undefined {
    if (this.#adapters.has(name)) return undefined
    return this.#unservedKinds.find((kind) => name === kind || name.startsWith(`${kind}_`))
  }

  /** The adapter nodes, keyed as in the tree. */
  adapters(): Iterable<AdapterNode> {
    return this.#adapters.values()
  }

  async startAll(): Promise<void> {
    const started: AdapterNode[] = []
    try {
      for (const node of this.#adapters.values()) {
        await node.adapter.start()
        started.push(node)
      }
    } catch (err) {
      for (const node of started) await node.adapter.stop().catch(() => {})
      throw err
    }
    if (started.length) this.#protocols.announceListeners()
  }

  async stopAll(): Promise<void> {
    for (const node of this.#adapters.values()) await node.adapter.stop().catch(() => {})
  }

  /**
   * Whether any adapter's settings name `attr` (as a key or in a string, references included):
   * a superset of what adapters publish, so that behaviour can skip value checks for the rest.
   */
  mentions(attr: string): boolean {
    if (this.#adapters.size === 0) return false
    if (this.#names === undefined) {
      this.#names = new Set()
      const walk = (v: unknown): void => {
        if (typeof v === 'string') for (const word of v.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) this.#names!.add(word)
        else if (Array.isArray(v)) v.forEach(walk)
        else if (v !== null && typeof v === 'object') {
          for (const [k, x] of Object.entries(v)) {
            walk(k)
            walk(x)
          }
        }
      }
      for (const node of this.#adapters.values()) walk(node.adapter.settings())
    }
    return this.#names.has(attr)
  }

  valueProblem(attr: string, value: unknown): string | null {
    for (const node of this.#adapters.values()) {
      const problem = node.adapter.valueProblem(attr, value)
      if (problem) return `${node.name}: ${problem}`
    }
    return null
  }

  override async destroy(): Promise<void> {
    await this.stopAll()
  }
}

/**
 * `communication` as a list of single-entry maps, whether the model gave a list or one map
 * (`communication: {modbus_slave: {...}}`).
 *
 * @example
 * communicationEntries({ modbus_slave: { mapping: {} } }) // [{ modbus_slave: { mapping: {} } }]
 */
export function communicationEntries(communication: Record<string, unknown> | Array<Record<string, unknown>> | undefined): Array<Record<string, unknown>> {
  if (communication === undefined) return []
  return Array.isArray(communication) ? communication : [communication]
}

/**
 * The protocol names (`modbus_tcp`, `opcua_server`, ...) the `communication` of each definition
 * uses, read leniently: the definitions may not be validated yet (anything not shaped like
 * `communication` gives no name), so that their kinds' code can be loaded before they are checked.
 *
 * @example
 * protocolNames([{ communication: [{ modbus_tcp: { port: 502 } }] }]) // Set { 'modbus_tcp' }
 */
export function protocolNames(definitions: Iterable<unknown>): Set<string> {
  const names = new Set<string>()
  for (const definition of definitions) {
    if (!isRecord(definition)) continue
    const communication = definition.communication
    if (!isRecord(communication) && !Array.isArray(communication)) continue
    for (const entry of communicationEntries(communication as Record<string, unknown>))
      if (isRecord(entry)) for (const name of Object.keys(entry)) names.add(name)
  }
  return names
}

/** The reserved attribute of every instance, its time: adapters publish it read-only (`#attr(__timer)`). */
const TIMER = '__timer'

/**
 * A protocol adapter as a tree node: its settings, state and counters (properties), the settable
 * ones writable with PUT/PATCH, and its lifecycle methods.
 *
 * @example
 * await node.call('detach', { args: [], kwargs: {} })
 * await node.setProperty('response_delay', 0.5)
 */
export class AdapterNode extends Component {
  readonly type: string
  readonly adapter: ProtocolAdapter
  readonly kind: ProtocolKind
  /** What its clients asked and got (docs/traces.md): `tail`, `trace_size`. */
  readonly trace: AdapterTrace

  readonly #protocols: SystemServices['protocols']

  constructor(opts: { name: string; parent: Communication; instance: Instance; kind: ProtocolKind; settings: unknown; services: SystemServices }) {
    super(opts.name, opts.parent)
    const { instance, kind } = opts
    this.#protocols = opts.services.protocols
    this.kind = kind
    this.type = kind.nodeType
    const trace = (this.trace = new AdapterTrace({ instance: instance.name, adapter: opts.name, kind: kind.name, journal: opts.services.protocols.traffic }))
    this.adapter = kind.create({
      trace,
      settings: opts.settings,
      context: opts.services.protocols.get(kind),
      // Tagged with the instance, so its records show in the instance's logs and filters.
      logger: opts.services.logger.child({ instance: instance.name }),
      name: `${instance.name}.${opts.name}`,
      subject: {
        instance: instance.name,
        model: instance.model.parsed.name ?? instance.model.name,
        description: instance.model.parsed.description,
        attributes: attributeDeclarations(instance.model.parsed).map((a) => ({ name: a.name, type: a.type, default: a.default })),
      },
      instance: instance.name,
      accessor: {
        // An `any` attribute holding an integral float holds it marked (src/values/number.ts): adapters
        // read the number. Marks inside lists and dicts stay, so JSON payloads keep `2.0`.
        read: (attr) => {
          const target = instance.attributes.get(attr)
          return target === undefined && attr === TIMER ? instance.timer.time : unmarked(target?.externalValue)
        },
        write: (attr, value) => {
          const target = instance.attributes.get(attr)
          if (!target) throw new NotFoundError(`Attribute '${attr}' not found`)
          const result = target.setInternal(value)
          // Traced once taken: a value the attribute refuses is no write.
          result.then(
            () => trace.attributeWritten(attr, value),
            () => {},
          )
          return result
        },
        writable: (attr) => instance.attributes.get(attr)?.writable ?? false,
        valueProblem: (attr, value) => {
          if (attr === TIMER && instance.attributes.get(attr) === undefined) return "'__timer' is the instance time and read-only"
          const target = instance.attributes.get(attr)
          return target ? target.valueProblem(value) : `attribute '${attr}' not found`
        },
        describe: (attr) => {
          if (attr === TIMER && instance.attributes.get(attr) === undefined) return { type: 'float', unit: 's', description: 'the instance time' }
          const target = instance.attributes.get(attr)
          return target && { type: target.valueType, unit: target.unit, description: target.description }
        },
        methods: () => Object.keys(instance.methods()).filter((m) => !LIFECYCLE_METHODS.has(m)),
        // A float result of a Python method comes marked (src/values/number.ts); adapters take the number.
        call: async (method, args) => unmarked(await instance.call(method, { args, kwargs: {} })),
      },
    })
  }

  override get state(): string {
    return this.adapter.state
  }

  override properties(): Record<string, unknown> {
    return { ...this.adapter.settings(), trace_size: this.trace.size, traced: this.trace.recorded }
  }

  /** A settable setting is checked by the adapter; `trace_size` by the trace; the others are read-only. */
  override propertyProblem(name: string, value: unknown): string | null {
    if (name === TRACE_SIZE) return traceSizeProblem(value)
    return this.adapter.settable.includes(name) ? (this.adapter.refusal(name, value)?.message ?? null) : super.propertyProblem(name, value)
  }

  override async setProperty(name: string, value: unknown): Promise<void> {
    if (name === TRACE_SIZE) this.trace.size = value as number
    else if (this.adapter.settable.includes(name)) this.adapter.set(name, value)
    else await super.setProperty(name, value)
  }

  override methods(): Record<string, MethodHandler> {
    return {
      start: noArguments(async () => {
        await this.adapter.start()
        this.#protocols.announceListeners()
        return true
      }),
      stop: noArguments(async () => (await this.adapter.stop(), true)),
      detach: noArguments(() => (this.adapter.detach(), true)),
      attach: noArguments(() => (this.adapter.attach(), true)),
      tail: (call) => this.trace.tail(call),
      clear_trace: noArguments(() => ({ cleared: this.trace.clear() })),
    }
  }
}

/** The adapter property that sizes its trace ring (docs/traces.md). */
const TRACE_SIZE = 'trace_size'

/**
 * What the reference product's adapters of protocols Mimic does not serve answer to an
 * expression before (or without) talking to anyone: their documented runtime properties with
 * their defaults. The reference documents none of their values, so each is false, 0 or '' by
 * its meaning (a state, a count, a text).
 */
const UNSUPPORTED_DEFAULTS: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {
  lwm2m: { registered: false, request_counter: 0, registration_id: '' },
  ocpp: { connected: false, boot_accepted: false, transaction_id: 0, message_count: 0 },
  ble: { advertising: false, connected: false, connection_count: 0 },
  matter: { commissioned: false, paired: false },
  bacnet: { running: false, request_count: 0 },
  knx_ip: { connected: false, telegram_count: 0 },
  http_endpoint: { running: false, request_count: 0 },
}

/** A property name that reads as a count or an amount of time: 0; any other unknown name is a state: false. */
const NUMERIC_NAME = /(count|counter|total|errors|requests|messages|port|interval|timeout|lifetime|_s|_ms|seconds)$/

/**
 * An adapter of a protocol Mimic does not serve (`knx_ip`, `lwm2m`, ...): the model loads and
 * runs without it, and this node says so plainly (`state: UNSUPPORTED`, `kind`). Its settings
 * are readable as the model gave them, and an expression that reads one of its runtime
 * properties (`$attr(communication.lwm2m.registered)`) gets the reference product's default
 * (`property`), so no step fails for the want of a protocol. Its lifecycle methods do nothing.
 *
 * @example
 * node.state // 'UNSUPPORTED'
 * node.property('registered') // false
 */
export class UnsupportedAdapterNode extends Component {
  readonly type = 'UnsupportedAdapter'
  readonly kind: string
  readonly #settings: Record<string, unknown>

  constructor(opts: { name: string; parent: Communication; kind: string; settings: unknown }) {
    super(opts.name, opts.parent)
    this.kind = opts.kind
    this.#settings = isRecord(opts.settings) ? opts.settings : {}
  }

  override get state(): string {
    return 'UNSUPPORTED'
  }

  override properties(): Record<string, unknown> {
    return {
      ...UNSUPPORTED_DEFAULTS[this.kind],
      ...this.#settings,
      kind: this.kind,
      supported: false,
      detail: `Mimic does not serve the ${this.kind} protocol: the model runs without it (mimic serve --strict-protocols refuses such models)`,
    }
  }

  /**
   * A property as an expression reads it: a setting or documented default, else false, or 0 for
   * a name that reads as a count or a time.
   */
  property(name: string): unknown {
    const props = this.properties()
    if (Object.hasOwn(props, name)) return props[name]
    return NUMERIC_NAME.test(name) ? 0 : false
  }

  override methods(): Record<string, MethodHandler> {
    const nothing = noArguments(() => true)
    return { start: nothing, stop: nothing, detach: nothing, attach: nothing }
  }
}
