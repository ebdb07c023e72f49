import type { Logger } from 'pino'
import type { HeldPort, PortHolder, ProtocolContext, ProtocolKind, ProtocolSecurity } from './adapter.js'
import { asciiKind } from './ascii/kind.js'
import { bacnetKind } from './bacnet/kind.js'
import { httpEndpointKind } from './http-endpoint/kind.js'
import { modbusMasterKind } from './modbus-master/kind.js'
import { modbusSlaveKind } from './modbus/kind.js'
import { knxKind } from './knx/kind.js'
import { mqttKind } from './mqtt/kind.js'
import { ocppKind } from './ocpp/kind.js'
import { opcuaServerKind } from './opcua/kind.js'
import { TrafficJournal } from './trace.js'

export type {
  AdapterCreateOptions,
  KindDeclaration,
  KindRuntime,
  AdapterState,
  AdapterStats,
  AdapterSubject,
  AttributeDescription,
  AttributeAccessor,
  ProtocolAdapter,
  ProtocolContext,
  ProtocolKind,
  ProtocolSecurity,
} from './adapter.js'

/**
 * The registry of protocol kinds. Adding a protocol is one folder under src/protocols/ and one
 * line here (docs/protocols.md).
 *
 * @example
 * protocolKind('modbus_tcp')?.name // 'modbus_slave'
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each kind has its own settings and context types
const KINDS: ReadonlyArray<ProtocolKind<any, any>> = [
  modbusSlaveKind,
  asciiKind,
  mqttKind,
  opcuaServerKind,
  modbusMasterKind,
  ocppKind,
  httpEndpointKind,
  bacnetKind,
  knxKind,
]

const BY_NAME = new Map<string, ProtocolKind>()
for (const kind of KINDS) {
  BY_NAME.set(kind.name, kind)
  for (const alias of kind.aliases) BY_NAME.set(alias, kind)
}

/**
 * The kind a model names under `communication` (by its name or an alias), or undefined.
 *
 * @example
 * protocolKind('modbus_slave') === protocolKind('modbus_tcp') // true
 */
export function protocolKind(name: string): ProtocolKind | undefined {
  return BY_NAME.get(name)
}

/**
 * Every registered kind.
 *
 * @example
 * protocolKinds().map((k) => k.name) // ['modbus_slave']
 */
export function protocolKinds(): readonly ProtocolKind[] {
  return KINDS
}

/**
 * Loads the protocol code of the kinds named (by name or alias; other names are ignored), each
 * once per process. Runs before a definition's defaults are checked against its mappings and
 * before its adapters are made (lazy-kind.ts): a server whose models use only Modbus never loads
 * node-opcua.
 *
 * @example
 * await loadProtocolKinds(['modbus_tcp', 'opcua_server'])
 */
export async function loadProtocolKinds(names: Iterable<string>): Promise<void> {
  const kinds = new Set<ProtocolKind>()
  for (const name of names) {
    const kind = BY_NAME.get(name)
    if (kind) kinds.add(kind)
  }
  await Promise.all([...kinds].map((kind) => kind.load()))
}

/**
 * The shared contexts of the protocol kinds, each made on first use, all closed together.
 *
 * @example
 * const contexts = new ProtocolContexts({ logger })
 * contexts.get(protocolKind('modbus_slave')!) // the Modbus listeners' hub
 * await contexts.close()
 */
export class ProtocolContexts {
  readonly #logger: Logger
  readonly #security: ProtocolSecurity
  readonly #contexts = new Map<string, ProtocolContext>()
  /** The listeners already logged (see `announceListeners`), by kind, transport, host and port. */
  readonly #announced = new Set<string>()
  /** The `protocol.write` events of every adapter, for the event stream (trace.ts). */
  readonly traffic = new TrafficJournal()

  constructor(opts: { logger: Logger; security?: ProtocolSecurity }) {
    this.#logger = opts.logger
    this.#security = opts.security ?? {}
  }

  /** Every kind's check of the access settings (see `ProtocolKind.checkSecurity`); throws the first problem. */
  checkSecurity(): void {
    for (const kind of KINDS) kind.checkSecurity?.(this.#security)
  }

  get(kind: ProtocolKind): ProtocolContext {
    let context = this.#contexts.get(kind.name)
    if (!context) {
      const portHolder: PortHolder = (transport, port) => this.#holder(kind.name, transport, port)
      context = kind.createContext({ logger: this.#logger.child({ component: kind.name }), portHolder, security: this.#security })
      this.#contexts.set(kind.name, context)
    }
    return context
  }

  /** The listener of a kind other than `asking` that holds `port` on `transport`. */
  #holder(asking: string, transport: 'tcp' | 'udp', port: number): HeldPort | undefined {
    for (const [name, context] of this.#contexts) {
      if (name === asking) continue
      const held = context.heldPorts?.().find((p) => p.transport === transport && p.port === port)
      if (held) return held
    }
    return undefined
  }

  /** Every listener the protocol adapters hold now, with its kind: what `GET /health` shows. */
  listeners(): Array<HeldPort & { kind: string }> {
    const all: Array<HeldPort & { kind: string }> = []
    for (const [kind, context] of this.#contexts) for (const held of context.heldPorts?.() ?? []) all.push({ kind, ...held })
    return all
  }

  /**
   * Logs at info, once, each listener opened since the last call: its kind, transport, address and
   * holder. An omitted port is the first free one from a kind's default (5020 for Modbus), so the
   * log says which; a listener closed and opened again is logged again.
   */
  announceListeners(): void {
    const now = new Set<string>()
    for (const l of this.listeners()) {
      const key = `${l.kind} ${l.transport} ${l.host} ${l.port}`
      now.add(key)
      if (this.#announced.has(key)) continue
      const host = l.host.includes(':') ? `[${l.host}]` : l.host
      this.#logger.info(
        { kind: l.kind, transport: l.transport, host: l.host, port: l.port, holder: l.holder },
        `listening on ${l.transport} ${host}:${l.port}: ${l.holder}`,
      )
    }
    this.#announced.clear()
    for (const key of now) this.#announced.add(key)
  }

  async close(): Promise<void> {
    for (const context of this.#contexts.values()) await context.close().catch(() => {})
  }
}
