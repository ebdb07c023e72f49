import type { Logger } from 'pino'
import { PayloadTooLargeError } from '../errors.js'
import { parseJsonKeepingFloats } from '../values/decode.js'
import type { AttributeRef } from '../definition/validate.js'

/**
 * Connections across shards (docs/scale-out.md, "Connections across shards"). The shard that
 * owns a connection's `from` instance publishes the value after each of its steps, when it
 * changed; the shard that owns the `to` instance keeps the last value it heard and writes it at
 * the connection phase of each of its steps. A shard that starts late asks the owner for the last
 * value. The transport is a ShardLink (nats-link.ts: core NATS).
 */

/** What carries values between shards. */
export interface ShardLink {
  /** Where it is connected, for messages. */
  readonly url: string
  publish(subject: string, data: string): void
  /** Hears every message on `subject`; answers how to stop. */
  subscribe(subject: string, heard: (data: string) => void): () => void
  /** Answers each request on `subject` with `answer()`, or not at all when that is undefined; answers how to stop. */
  serve(subject: string, answer: () => string | undefined): () => void
  /** The answer to one request on `subject`; undefined when nobody answers in time. */
  request(subject: string): Promise<string | undefined>
  /** `handler` runs each time the link is back after a loss. */
  onReconnect(handler: () => void): void
  close(): Promise<void>
}

/** Characters a subject token keeps as they are; every other byte of the name's UTF-8 is written `~XX`. */
const PLAIN = /^[A-Za-z0-9_-]$/

/**
 * A name as one subject token: ASCII letters, digits, `_` and `-` as they are, every other byte
 * of its UTF-8 (`.`, `*`, `>`, blanks, `~` itself, non-ASCII) as `~` and two upper-case hex
 * digits. Distinct names give distinct tokens, and a token never holds what NATS forbids.
 *
 * @example
 * subjectToken('meter_0001') // 'meter_0001'
 * subjectToken('a.b c') // 'a~2Eb~20c'
 */
export function subjectToken(name: string): string {
  let out = ''
  for (const byte of Buffer.from(name, 'utf8')) {
    const c = String.fromCharCode(byte)
    out += PLAIN.test(c) ? c : `~${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out === '' ? '~' : out
}

/**
 * The subject a `from` end's value is published on: `<prefix>.value.<instance>.<attribute>`
 * (the presented value), `<prefix>.internal.<instance>.<attribute>` (`#attr(...)`, the internal one).
 *
 * @example
 * valueSubject('mimic', { instance: 'meter_7', attribute: 'power', side: 'external' }) // 'mimic.value.meter_7.power'
 */
export function valueSubject(prefix: string, ref: AttributeRef): string {
  return `${prefix}.${ref.side === 'internal' ? 'internal' : 'value'}.${subjectToken(ref.instance)}.${subjectToken(ref.attribute)}`
}

/** Where the owner answers a late joiner with the current value: `<prefix>.last.` and the value subject's tail. */
export function lastValueSubject(prefix: string, ref: AttributeRef): string {
  return `${prefix}.last.${valueSubject(prefix, ref).slice(prefix.length + 1)}`
}

/** What the cross-shard part needs of a connection. */
export interface FarConnection {
  readonly name: string
  readonly fromRef: AttributeRef
  readonly toRef: AttributeRef
  /** Which end another shard owns. */
  readonly far: 'from' | 'to' | null
  enabled: boolean
}

/** The value of an attribute and its type, as a JSON text; undefined when the instance or attribute is not here. */
export type ReadValue = (ref: AttributeRef) => string | undefined

interface Heard {
  stop: () => void
  /** Where the owner answers with the last value. */
  last: string
  /** Messages heard, so a late answer to a request does not overwrite a newer value. */
  messages: number
  /** Values taken: messages and answers to requests for the last value. */
  received: number
  has: boolean
  value: unknown
}

/** The connections of one shard that reach another one, carried over a ShardLink. */
export class CrossShard {
  readonly link: ShardLink
  readonly prefix: string
  readonly #maxBytes: number
  readonly #logger: Logger
  readonly #read: ReadValue
  readonly #heard = new Map<string, Heard>()
  readonly #served = new Map<string, () => void>()
  /** The text last published on each subject. */
  readonly #published = new Map<string, string>()
  readonly #tooLarge = new Set<string>()

  constructor(opts: { link: ShardLink; prefix: string; maxValueBytes: number; logger: Logger; read: ReadValue }) {
    this.link = opts.link
    this.prefix = opts.prefix
    this.#maxBytes = opts.maxValueBytes
    this.#logger = opts.logger
    this.#read = opts.read
    this.link.onReconnect(() => {
      // Whatever changed while the link was down: published again, and asked for again.
      this.#published.clear()
      for (const [subject, heard] of this.#heard) this.#askLast(subject, heard)
    })
  }

  /** Subscribes to the values this shard's connections read from other shards and serves the ones they read from it; stops the rest. */
  sync(connections: Iterable<FarConnection>): void {
    const hear = new Map<string, AttributeRef>()
    const serve = new Map<string, AttributeRef>()
    for (const conn of connections) {
      if (conn.far === 'from') hear.set(valueSubject(this.prefix, conn.fromRef), conn.fromRef)
      else if (conn.far === 'to') serve.set(valueSubject(this.prefix, conn.fromRef), conn.fromRef)
    }
    for (const [subject, heard] of this.#heard)
      if (!hear.has(subject)) {
        heard.stop()
        this.#heard.delete(subject)
      }
    for (const [subject, stop] of this.#served)
      if (!serve.has(subject)) {
        stop()
        this.#served.delete(subject)
        this.#published.delete(subject)
      }
    for (const [subject, ref] of hear) {
      if (this.#heard.has(subject)) continue
      const heard: Heard = { stop: () => {}, last: lastValueSubject(this.prefix, ref), messages: 0, received: 0, has: false, value: undefined }
      heard.stop = this.link.subscribe(subject, (text) => {
        heard.messages++
        this.#take(subject, heard, text)
      })
      this.#heard.set(subject, heard)
      this.#askLast(subject, heard)
    }
    for (const [subject, ref] of serve) {
      if (this.#served.has(subject)) continue
      this.#served.set(
        subject,
        this.link.serve(lastValueSubject(this.prefix, ref), () => this.#read(ref)),
      )
    }
  }

  /** The last value heard for a connection whose `from` is on another shard; `has` false while none was. */
  heard(conn: FarConnection): { has: boolean; value: unknown; received: number } {
    return this.#heard.get(valueSubject(this.prefix, conn.fromRef)) ?? { has: false, value: undefined, received: 0 }
  }

  /**
   * Publishes the `from` value of an enabled connection whose `to` is on another shard, when it
   * changed since its last publication. Answers whether it was published; throws when the value
   * is larger than --max-value-bytes.
   */
  publish(conn: FarConnection): boolean {
    const subject = valueSubject(this.prefix, conn.fromRef)
    const text = this.#read(conn.fromRef)
    if (text === undefined || this.#published.get(subject) === text) return false
    if (Buffer.byteLength(text) > this.#maxBytes)
      throw new PayloadTooLargeError(`the value is larger than --max-value-bytes (${this.#maxBytes} bytes): not published`)
    this.link.publish(subject, text)
    this.#published.set(subject, text)
    return true
  }

  async close(): Promise<void> {
    for (const heard of this.#heard.values()) heard.stop()
    for (const stop of this.#served.values()) stop()
    this.#heard.clear()
    this.#served.clear()
    await this.link.close()
  }

  #askLast(subject: string, heard: Heard): void {
    const before = heard.messages
    void this.link.request(heard.last).then((text) => {
      // A value published since the request was sent is newer than the answer.
      if (text !== undefined && heard.messages === before && this.#heard.get(subject) === heard) this.#take(subject, heard, text)
    })
  }

  #take(subject: string, heard: Heard, text: string): void {
    if (Buffer.byteLength(text) > this.#maxBytes) {
      if (!this.#tooLarge.has(subject))
        this.#logger.warn({ subject, bytes: Buffer.byteLength(text) }, 'a value from another shard is larger than --max-value-bytes: dropped')
      this.#tooLarge.add(subject)
      return
    }
    try {
      heard.value = parseJsonKeepingFloats(text)
      heard.has = true
      heard.received++
    } catch (err) {
      this.#logger.warn({ subject, err: (err as Error).message }, 'a value from another shard is not JSON: dropped')
    }
  }
}
