import type { MqttClient } from 'mqtt'

/**
 * The QoS 0 publications of one adapter in one turn (a scan, a step, a connection), written to
 * its client's socket as one buffer of MQTT 3.1.1 PUBLISH packets (section 3.3: the fixed header
 * 0x30 with the retain bit, the remaining length, the topic with its length, the payload): the
 * bytes MQTT.js writes for the same publications, in the same order.
 *
 * Written by hand because MQTT.js writes each publish as five stream writes under a cork undone on
 * the next tick, after building an options object, a packet object and two closures, and logging
 * through `debug` ten times: with 1,000 clients offered 200,000 messages/s, that and the socket
 * writes of five chunks per message were the larger part of the server's CPU
 * (bench/ANALYSIS.md, benchmark 10). QoS 1 and 2, MQTT 5 and a client that is not plainly
 * connected keep going through `client.publish` (see `writesDirectly`).
 *
 * @example
 * const batch = new PublishBatch()
 * batch.add(Buffer.from('plant/temp'), '21.5', 4, false)
 * batch.writeTo(client.stream)
 */
export class PublishBatch {
  // Kept from turn to turn (emptied, not replaced), one entry per publication.
  readonly #topics: Buffer[] = []
  readonly #payloads: string[] = []
  readonly #sizes: number[] = []
  readonly #retains: boolean[] = []
  #bytes = 0

  /** Publications waiting. */
  get size(): number {
    return this.#topics.length
  }

  /** Adds one publication; `payloadBytes` is the payload's UTF-8 length. */
  add(topic: Buffer, payload: string, payloadBytes: number, retain: boolean): void {
    const remaining = 2 + topic.length + payloadBytes
    this.#bytes += 1 + lengthBytes(remaining) + remaining
    this.#topics.push(topic)
    this.#payloads.push(payload)
    this.#sizes.push(payloadBytes)
    this.#retains.push(retain)
  }

  /** Drops what waits (the client is gone). */
  clear(): void {
    this.#topics.length = 0
    this.#payloads.length = 0
    this.#sizes.length = 0
    this.#retains.length = 0
    this.#bytes = 0
  }

  /** Writes what waits as one buffer and empties the batch; returns what `stream.write` returned. */
  writeTo(stream: NodeJS.WritableStream): boolean {
    const out = Buffer.allocUnsafe(this.#bytes)
    let at = 0
    for (let i = 0; i < this.#topics.length; i++) {
      const topic = this.#topics[i]!
      out[at++] = this.#retains[i] ? 0x31 : 0x30
      let remaining = 2 + topic.length + this.#sizes[i]!
      do {
        const digit = remaining % 128
        remaining = Math.floor(remaining / 128)
        out[at++] = remaining > 0 ? digit | 0x80 : digit
      } while (remaining > 0)
      out.writeUInt16BE(topic.length, at)
      at += 2
      at += topic.copy(out, at)
      at += out.write(this.#payloads[i]!, at, 'utf8')
    }
    this.clear()
    return stream.write(out)
  }
}

/** What MQTT.js keeps to itself that decides whether a publish is written at once. */
interface ClientInternals {
  _storeProcessing?: boolean
  _storeProcessingQueue?: unknown[]
}

/**
 * Whether a QoS 0 publication of `client` may be written to its socket directly: the client is
 * connected over MQTT 3.1.1, not disconnecting, and MQTT.js holds no publications of its own back
 * (while it resends its stored QoS 1 and 2 messages after a reconnection, it queues new ones to
 * keep their order). Anything else goes through `client.publish`, which handles it.
 */
export function writesDirectly(client: MqttClient): boolean {
  if (!client.connected || client.disconnecting || client.options.protocolVersion === 5) return false
  const internals = client as unknown as ClientInternals
  if (internals._storeProcessing === true || (internals._storeProcessingQueue?.length ?? 0) > 0) return false
  return client.stream?.writable === true
}

/** The largest remaining length of an MQTT packet (four length bytes). */
export const MAX_REMAINING_LENGTH = 268_435_455

function lengthBytes(remaining: number): number {
  return remaining < 128 ? 1 : remaining < 16_384 ? 2 : remaining < 2_097_152 ? 3 : 4
}
