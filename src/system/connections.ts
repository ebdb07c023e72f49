import { ValidationError, summarize, type ErrorDetail } from '../errors.js'
import { checkConnection, connectionTypeProblem, parseAttributeRef, type AttributeRef } from '../definition/validate.js'
import type { AttributeType } from '../definition/model-schema.js'
import { Component } from '../tree/component.js'
import { KeyedContainer } from '../tree/keyed-container.js'
import type { CrossShard } from './cross-shard.js'
import type { System } from './system.js'

/**
 * A wire from one attribute to another: after every system step `to` takes the value of `from`
 * (its presented value; its internal one when written `#attr(inst.a)`/`#in(...)`). A disabled
 * connection stays in the system and carries nothing until enabled.
 */
export class Connection extends Component {
  readonly type = 'Connection'
  readonly from: string
  readonly to: string
  readonly fromRef: AttributeRef
  readonly toRef: AttributeRef
  enabled: boolean
  lastError: string | null = null
  transfers = 0
  /** On a shard linked to the others (`--nats`): the end another shard owns, else null (cross-shard.ts). */
  readonly far: 'from' | 'to' | null
  /** The NATS subject the value travels on, for a connection with a far end. */
  readonly subject: string | undefined
  readonly #connections: Connections

  constructor(name: string, parent: Connections, from: string, to: string, enabled = true, far: { end: 'from' | 'to'; subject: string } | null = null) {
    super(name, parent)
    this.from = from
    this.to = to
    this.enabled = enabled
    this.fromRef = parseAttributeRef(from) as AttributeRef
    this.toRef = parseAttributeRef(to) as AttributeRef
    this.far = far?.end ?? null
    this.subject = far?.subject
    this.#connections = parent
  }

  override properties(): Record<string, unknown> {
    const received = this.far === 'from' ? { received: this.#connections.received(this) } : {}
    const across = this.far ? { across_shards: { far_end: this.far, subject: this.subject, ...received } } : {}
    return { from: this.from, to: this.to, enabled: this.enabled, transfers: this.transfers, last_error: this.lastError, ...across }
  }

  override propertyProblem(name: string, value: unknown): string | null {
    if (name === 'enabled') return typeof value === 'boolean' ? null : 'expected true or false'
    return super.propertyProblem(name, value)
  }

  override async setProperty(name: string, value: unknown): Promise<void> {
    if (name !== 'enabled') return await super.setProperty(name, value)
    const problem = this.propertyProblem(name, value)
    if (problem) throw new ValidationError(`Connection 'enabled': ${problem}`, [{ path: 'enabled', message: problem }])
    this.enabled = value as boolean
  }
}

/**
 * The connections. `PUT` with `{"<name>": {"from": ref, "to": ref}}` creates or replaces
 * connections; references to instances or attributes that do not exist are a 422 naming them.
 */
export class Connections extends KeyedContainer<Connection> {
  readonly type = 'Connections'
  readonly #system: System
  #syncQueued = false

  constructor(system: System) {
    super('connections', system)
    this.#system = system
  }

  /** The names of the connections with an end at `attribute` of `instance`. */
  wiring(instance: string, attribute: string): string[] {
    const names: string[] = []
    for (const c of this.all()) if ([c.fromRef, c.toRef].some((end) => end.instance === instance && end.attribute === attribute)) names.push(c.name)
    return names
  }

  override async put(body: Record<string, unknown>): Promise<void> {
    await this.#system.exclusive(async () => {
      const live = (instance: string) => this.#system.instances.get(instance)
      const details = this.check(
        body,
        (instance) => {
          const inst = live(instance)
          // An instance another shard owns is not known here: the connection is accepted and skipped.
          return inst ? new Set([...inst.attributes.all()].map((a) => a.name)) : this.#system.owns(instance) ? undefined : null
        },
        (ref) => live(ref.instance)?.attributes.get(ref.attribute)?.valueType,
      )
      if (details.length) throw new ValidationError(summarize('Connections', details), details)
      this.apply(body)
    })
  }

  /**
   * The problems of the connections of a PUT (paths inside the body), checked against the
   * attributes the instances will have (`attrsOf`, undefined for an instance there will not be)
   * and their types (`typeOf`). Changes nothing.
   */
  check(
    body: Record<string, unknown>,
    attrsOf: (instance: string) => Set<string> | null | undefined,
    typeOf: (ref: AttributeRef) => AttributeType | undefined,
  ): ErrorDetail[] {
    const details: ErrorDetail[] = []
    for (const [name, conn] of Object.entries(body)) {
      const problems = checkConnection(name, conn, attrsOf)
      if (problems.length) details.push(...problems)
      else {
        // A connection whose ends have types no value fits both of (a str into a float) can never carry anything.
        const { from, to } = conn as { from: string; to: string }
        const problem = connectionTypeProblem(from, to, typeOf)
        if (problem !== null) details.push({ path: `${name}.to`, message: problem })
      }
    }
    if (Object.keys(body).length === 0) details.push({ path: '', message: 'empty body: PUT {"<name>": {"from": ..., "to": ...}}' })
    return details
  }

  /** Adds or replaces the connections `check` accepted; on a shard, not one with an end on another shard (logged). */
  apply(body: Record<string, unknown>): void {
    for (const [name, conn] of Object.entries(body) as [string, { from: string; to: string; enabled?: boolean }][])
      if (this.#system.keepsConnection(name, conn.from, conn.to)) this.add(name, conn.from, conn.to, conn.enabled !== false)
  }

  /** Adds a checked connection. */
  add(name: string, from: string, to: string, enabled = true): void {
    this.items.set(name, new Connection(name, this, from, to, enabled, this.#system.farEnd(from, to)))
    this.#changed()
  }

  /** How many values a connection whose `from` is on another shard has taken from there (messages and answers to a late join). */
  received(conn: Connection): number {
    return this.#system.crossShard?.heard(conn).received ?? 0
  }

  clear(): void {
    this.items.clear()
    this.#changed()
  }

  /** On a linked shard: the subscriptions follow the connections, once a batch of changes is done. */
  #changed(): void {
    const cross = this.#system.crossShard
    if (!cross || this.#syncQueued) return
    this.#syncQueued = true
    queueMicrotask(() => {
      this.#syncQueued = false
      cross.sync(this.items.values())
    })
  }

  override async deleteChild(name: string): Promise<void> {
    await this.#system.exclusive(async () => {
      if (!this.items.delete(name)) throw this.#system.notFound('connections', name)
      this.#changed()
    })
  }

  /**
   * Copies every `from` value (as presented) to its `to` attribute. Writes into Python-bound
   * attributes run concurrently; a failing connection records its error and the others go on.
   * On a shard linked to the others, a connection whose `from` is on another shard writes the
   * last value heard from it (none before the first), and once all are written the values of
   * connections whose `to` is on another shard are published (when they changed).
   */
  async propagate(): Promise<void> {
    const pending: Promise<void>[] = []
    const cross = this.#system.crossShard
    let outgoing: Connection[] | undefined
    for (const conn of this.items.values()) {
      if (!conn.enabled) continue
      if (conn.far === 'to') {
        ;(outgoing ??= []).push(conn)
        continue
      }
      let value: unknown
      if (conn.far === 'from') {
        const heard = cross?.heard(conn)
        if (!heard?.has) continue
        value = heard.value
      } else {
        const from = this.#system.instances.get(conn.fromRef.instance)?.attributes.get(conn.fromRef.attribute)
        if (!from) continue
        value = conn.fromRef.side === 'internal' ? from.internalValue : from.externalValue
      }
      const to = this.#system.instances.get(conn.toRef.instance)?.attributes.get(conn.toRef.attribute)
      if (!to) continue
      const done = (): void => {
        conn.transfers++
        conn.lastError = null
      }
      const failed = (err: unknown): void => {
        const message = (err as Error).message
        // Logged when it starts failing or fails another way, not at every step.
        if (conn.lastError !== message)
          this.#system.services.logger.warn({ connection: conn.name, from: conn.from, to: conn.to, err: message }, 'connection failed to carry its value')
        conn.lastError = message
      }
      try {
        const write = to.setInternal(value)
        pending.push(write.then(done, failed))
      } catch (err) {
        failed(err)
      }
    }
    await Promise.all(pending)
    if (outgoing && cross) for (const conn of outgoing) this.#publish(cross, conn)
  }

  /** Hands the `from` value of a connection whose `to` is on another shard to the link. */
  #publish(cross: CrossShard, conn: Connection): void {
    try {
      if (cross.publish(conn)) conn.transfers++
      conn.lastError = null
    } catch (err) {
      const message = (err as Error).message
      if (conn.lastError !== message)
        this.#system.services.logger.warn({ connection: conn.name, from: conn.from, to: conn.to, err: message }, 'connection failed to carry its value')
      conn.lastError = message
    }
  }
}
