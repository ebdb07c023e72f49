import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Client, PublishPacket } from 'aedes'
import type { Logger } from 'pino'
import { ThrottledWarning } from '../adapter-kit.js'
import type { MqttUsers } from './users-file.js'

/**
 * Who may do what on one embedded broker (docs/mqtt.md, "Access to the embedded broker"):
 *
 * - **Connecting.** With a product key, a client needs a password: the key (with any user name)
 *   or a user's password from the users file; anonymous clients are refused (CONNACK 5, not
 *   authorized), wrong credentials too (CONNACK 4). Without a key (the server is then reachable
 *   from this machine only) anonymous clients are let in, but credentials that are given must be
 *   right. Secrets are compared as SHA-256 digests in constant time.
 * - **Client ids.** An adapter's client id is its own, connected or not. An id held by a
 *   connection may be taken over (MQTT's rule that the newer connection wins) only by the same
 *   user: the same adapter, the same user of the users file, the same user name with the key, or,
 *   without a key, another anonymous client. Anyone else is refused (CONNACK 2, identifier
 *   rejected) and the connection that holds the id keeps it.
 * - **Publishing.** A topic an adapter publishes (its publish bindings, its birth and will) and
 *   does not itself read is that adapter's: only its own connection may publish there. Every
 *   other topic (a device's command topics, topics no adapter uses) is open to every client that
 *   is let in. `$SYS/` topics are the broker's.
 * - **Subscribing.** Every client that is let in may subscribe to anything, `#` included.
 * - **Retained messages** of clients other than the adapters are capped in number, in size each
 *   and in total (BrokerLimits); an adapter's own retained messages are not, since its topics are
 *   fixed by its model.
 *
 * MQTT 3.1.1 cannot refuse a single publication: a refused one closes the client's connection,
 * as the standard allows (MQTT-3.3.5-2). Every refusal is counted (BrokerStats) and logged, at
 * most one warning a second.
 *
 * @example
 * const guard = new BrokerGuard({ logger, productKey: 'k', users: new Map([['plc', 'secret']]) })
 * const seat = guard.register({ clientId: 'mimic-boiler-mqtt', publishes: ['plant/boiler/temp'], subscribes: ['plant/boiler/mode/set'] })
 * // the adapter connects with seat.credentials; aedes calls guard.authenticate and guard.authorizePublish
 * seat.unregister()
 */

/** Caps on the retained messages of clients other than the adapters. */
export interface BrokerLimits {
  /** How many topics may hold a retained message. */
  retainedMessages: number
  /** Largest retained message (payload and topic, bytes). */
  retainedMessageBytes: number
  /** All retained messages together (bytes). */
  retainedBytes: number
}

/** The caps the embedded broker runs with unless told otherwise. */
export const DEFAULT_BROKER_LIMITS: Readonly<BrokerLimits> = {
  retainedMessages: 1000,
  retainedMessageBytes: 256 * 1024,
  retainedBytes: 16 * 1024 * 1024,
}

/** What an adapter tells its broker about itself. */
export interface AdapterRegistration {
  clientId: string
  /** Full topics it publishes (bindings, birth, will). */
  publishes: readonly string[]
  /** Full topics (or filters) it subscribes to. */
  subscribes: readonly string[]
}

/** An adapter's place on the broker: the credentials it connects with. */
export interface AdapterSeat {
  readonly credentials: { username: string; password: string }
  unregister(): void
}

/** A broker's access counters, plain numbers. */
export interface BrokerStats {
  clients: number
  /** Retained messages of clients other than the adapters, and their bytes. */
  retained: number
  retained_bytes: number
  refused_connects: number
  refused_client_ids: number
  refused_publishes: number
  refused_retained: number
}

interface AdapterEntry {
  readonly clientId: string
  readonly owns: readonly string[]
}

type Identity = { kind: 'adapter'; adapter: AdapterEntry } | { kind: 'key' | 'user'; name: string } | { kind: 'anonymous' }

type AuthDone = (error: (Error & { returnCode: number }) | null, success: boolean | null) => void

const ADAPTER_USER = 'mimic-adapter'
const SYS_PREFIX = '$SYS/'
/** CONNACK return codes of MQTT 3.1.1. */
const IDENTIFIER_REJECTED = 2
const BAD_CREDENTIALS = 4
const NOT_AUTHORIZED = 5

/** See the module comment. */
export class BrokerGuard {
  readonly #productKey: Buffer | null
  readonly #users: ReadonlyMap<string, Buffer>
  readonly #limits: BrokerLimits
  readonly #warning: ThrottledWarning
  /** Adapters by the digest of their password. */
  readonly #adapters = new Map<string, AdapterEntry>()
  /** Topic -> the adapters that alone may publish it. */
  readonly #owners = new Map<string, Set<AdapterEntry>>()
  /** Client id -> the adapters it belongs to. */
  readonly #reservedIds = new Map<string, Set<AdapterEntry>>()
  readonly #identities = new WeakMap<Client, Identity>()
  /** Client id -> the connection that holds it now. */
  readonly #holders = new Map<string, Client>()
  /** Topic -> bytes of the retained message a client other than an adapter left there. */
  readonly #retained = new Map<string, number>()
  #retainedBytes = 0
  readonly #counts = { refused_connects: 0, refused_client_ids: 0, refused_publishes: 0, refused_retained: 0 }
  #clients = 0

  constructor(opts: { logger: Logger; productKey?: string | undefined; users?: MqttUsers | undefined; limits?: Partial<BrokerLimits> }) {
    this.#productKey = opts.productKey ? digest(opts.productKey) : null
    this.#users = new Map([...(opts.users ?? new Map<string, string>())].map(([user, password]) => [user, digest(password)]))
    this.#limits = { ...DEFAULT_BROKER_LIMITS, ...opts.limits }
    this.#warning = new ThrottledWarning(opts.logger)
  }

  /** Makes a place for an adapter: its client id and the topics it alone publishes. */
  register(registration: AdapterRegistration): AdapterSeat {
    const reads = new Set(registration.subscribes)
    const entry: AdapterEntry = { clientId: registration.clientId, owns: [...new Set(registration.publishes)].filter((t) => !reads.has(t)) }
    const password = randomBytes(24).toString('base64url')
    const key = digest(password).toString('hex')
    this.#adapters.set(key, entry)
    addTo(this.#reservedIds, entry.clientId, entry)
    for (const topic of entry.owns) addTo(this.#owners, topic, entry)
    let registered = true
    return {
      credentials: { username: ADAPTER_USER, password },
      unregister: () => {
        if (!registered) return
        registered = false
        this.#adapters.delete(key)
        removeFrom(this.#reservedIds, entry.clientId, entry)
        for (const topic of entry.owns) removeFrom(this.#owners, topic, entry)
      },
    }
  }

  /** aedes' `authenticate`: credentials first, then the client id. */
  authenticate(client: Client, username: string | undefined, password: Buffer | undefined, done: AuthDone): void {
    const identity = this.#identify(username, password)
    if (typeof identity === 'number') {
      this.#counts.refused_connects++
      const reason = identity === NOT_AUTHORIZED ? 'no credentials' : 'wrong user name or password'
      this.#warning.warn({ clientId: client.id, username, reason }, 'embedded MQTT broker refused a connection')
      return done(refusal(identity, reason), null)
    }
    const problem = this.#idProblem(client.id, identity)
    if (problem !== null) {
      this.#counts.refused_connects++
      this.#counts.refused_client_ids++
      this.#warning.warn({ clientId: client.id, username, reason: problem }, 'embedded MQTT broker refused a connection')
      return done(refusal(IDENTIFIER_REJECTED, problem), null)
    }
    this.#identities.set(client, identity)
    this.#hold(client)
    done(null, true)
  }

  /** aedes' `authorizePublish`: the topic's owner, then the retained caps. */
  authorizePublish(client: Client | null, packet: PublishPacket, done: (error?: Error | null) => void): void {
    if (packet.topic.startsWith(SYS_PREFIX)) return done(new Error(`${SYS_PREFIX} topics are the broker's`))
    // The broker's own messages (none today) have no client.
    if (client === null) return done(null)
    const identity = this.#identities.get(client)
    const adapter = identity?.kind === 'adapter' ? identity.adapter : undefined
    const owners = this.#owners.get(packet.topic)
    if (owners && !(adapter && owners.has(adapter))) {
      this.#counts.refused_publishes++
      this.#warning.warn({ clientId: client.id, topic: packet.topic }, "embedded MQTT broker refused a publication to a device's own topic")
      return done(new Error(`topic ${packet.topic} is published by a simulated device only`))
    }
    if (packet.retain) {
      const problem = this.#retain(packet, adapter !== undefined)
      if (problem !== null) {
        this.#counts.refused_retained++
        this.#warning.warn({ clientId: client.id, topic: packet.topic, reason: problem }, 'embedded MQTT broker refused a retained message')
        return done(new Error(problem))
      }
    }
    done(null)
  }

  stats(): BrokerStats {
    return { clients: this.#clients, retained: this.#retained.size, retained_bytes: this.#retainedBytes, ...this.#counts }
  }

  /** Who the credentials make the client, or the CONNACK code that refuses it. */
  #identify(username: string | undefined, password: Buffer | undefined): Identity | number {
    if (password === undefined) {
      // Without a key anyone on this machine may connect; a user name alone proves nothing.
      if (this.#productKey === null && (username === undefined || !this.#users.has(username))) return { kind: 'anonymous' }
      return this.#productKey === null ? BAD_CREDENTIALS : NOT_AUTHORIZED
    }
    const given = createHash('sha256').update(password).digest()
    const adapter = this.#adapters.get(given.toString('hex'))
    if (adapter) return { kind: 'adapter', adapter }
    if (this.#productKey && timingSafeEqual(given, this.#productKey)) return { kind: 'key', name: username ?? '' }
    // A user that does not exist costs the same comparison as one that does.
    const expected = (username !== undefined && this.#users.get(username)) || UNKNOWN_USER
    if (timingSafeEqual(given, expected) && expected !== UNKNOWN_USER) return { kind: 'user', name: username! }
    return BAD_CREDENTIALS
  }

  /** Why `identity` may not use `clientId`, or null. */
  #idProblem(clientId: string, identity: Identity): string | null {
    const reserved = this.#reservedIds.get(clientId)
    if (reserved && !(identity.kind === 'adapter' && reserved.has(identity.adapter))) return `client id ${clientId} belongs to a simulated device`
    const holder = this.#holders.get(clientId)
    if (holder && !holder.closed && !sameUser(this.#identities.get(holder), identity)) return `client id ${clientId} is in use by another user`
    return null
  }

  /** Marks `client` as holding its id until its connection closes. */
  #hold(client: Client): void {
    const id = client.id
    this.#holders.set(id, client)
    this.#clients++
    client.conn.once('close', () => {
      this.#clients--
      if (this.#holders.get(id) === client) this.#holders.delete(id)
    })
  }

  /** Books a retained message; why it is over a cap, or null. */
  #retain(packet: PublishPacket, byAdapter: boolean): string | null {
    const topic = packet.topic
    const payloadBytes = typeof packet.payload === 'string' ? Buffer.byteLength(packet.payload) : packet.payload.length
    const previous = this.#retained.get(topic) ?? 0
    // An empty payload clears the topic's retained message; an adapter's replaces it with one not capped.
    if (payloadBytes === 0 || byAdapter) {
      this.#retained.delete(topic)
      this.#retainedBytes -= previous
      return null
    }
    const bytes = payloadBytes + Buffer.byteLength(topic)
    const limits = this.#limits
    if (bytes > limits.retainedMessageBytes) return `a retained message of ${bytes} bytes is over the limit of ${limits.retainedMessageBytes}`
    const count = this.#retained.size + (this.#retained.has(topic) ? 0 : 1)
    if (count > limits.retainedMessages) return `the broker already holds ${limits.retainedMessages} retained messages, its limit`
    const total = this.#retainedBytes - previous + bytes
    if (total > limits.retainedBytes) return `retained messages would take ${total} bytes, over the limit of ${limits.retainedBytes}`
    this.#retained.set(topic, bytes)
    this.#retainedBytes = total
    return null
  }
}

const UNKNOWN_USER = randomBytes(32)

function digest(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest()
}

function refusal(returnCode: number, message: string): Error & { returnCode: number } {
  return Object.assign(new Error(message), { returnCode })
}

function sameUser(a: Identity | undefined, b: Identity): boolean {
  if (a === undefined || a.kind !== b.kind) return false
  if (a.kind === 'adapter') return a.adapter === (b as typeof a).adapter
  if (a.kind === 'anonymous') return true
  return a.name === (b as typeof a).name
}

function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  let set = map.get(key)
  if (!set) map.set(key, (set = new Set()))
  set.add(value)
}

function removeFrom<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key)
  if (!set) return
  set.delete(value)
  if (set.size === 0) map.delete(key)
}
