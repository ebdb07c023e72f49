import { ValidationError, summarize, type ErrorDetail } from '../errors.js'
import { checkConnection, connectionTypeProblem, parseAttributeRef, type AttributeRef } from '../definition/validate.js'
import type { AttributeType } from '../definition/model-schema.js'
import { Component } from '../tree/component.js'
import { KeyedContainer } from '../tree/keyed-container.js'
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

  constructor(name: string, parent: Connections, from: string, to: string, enabled = true) {
    super(name, parent)
    this.from = from
    this.to = to
    this.enabled = enabled
    this.fromRef = parseAttributeRef(from) as AttributeRef
    this.toRef = parseAttributeRef(to) as AttributeRef
  }

  override properties(): Record<string, unknown> {
    return { from: this.from, to: this.to, enabled: this.enabled, transfers: this.transfers, last_error: this.lastError }
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

  constructor(system: System) {
    super('connections', system)
    this.#system = system
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
    this.items.set(name, new Connection(name, this, from, to, enabled))
  }

  clear(): void {
    this.items.clear()
  }

  override async deleteChild(name: string): Promise<void> {
    await this.#system.exclusive(async () => {
      if (!this.items.delete(name)) throw this.#system.notFound('connections', name)
    })
  }

  /**
   * Copies every `from` value (as presented) to its `to` attribute. Writes into Python-bound
   * attributes run concurrently; a failing connection records its error and the others go on.
   */
  async propagate(): Promise<void> {
    const pending: Promise<void>[] = []
    for (const conn of this.items.values()) {
      if (!conn.enabled) continue
      const from = this.#system.instances.get(conn.fromRef.instance)?.attributes.get(conn.fromRef.attribute)
      const to = this.#system.instances.get(conn.toRef.instance)?.attributes.get(conn.toRef.attribute)
      if (!from || !to) continue
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
        const write = to.setInternal(conn.fromRef.side === 'internal' ? from.internalValue : from.externalValue)
        pending.push(write.then(done, failed))
      } catch (err) {
        failed(err)
      }
    }
    await Promise.all(pending)
  }
}
