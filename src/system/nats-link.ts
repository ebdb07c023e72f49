import { connect, type NatsConnection } from '@nats-io/transport-node'
import type { Logger } from 'pino'
import type { ShardLink } from './cross-shard.js'

/** How long a late joiner waits for the owner's answer to its request for the last value. */
const LAST_VALUE_TIMEOUT_MS = 2000

/**
 * A ShardLink over core NATS (no JetStream): `--nats URL`. Connecting is tried once at start-up
 * (an unreachable server fails the start: the caller names the URL); a connection lost later is retried by
 * the client without end, each loss and return logged.
 *
 * @example
 * const link = await connectNats('nats://127.0.0.1:4222', logger)
 */
export async function connectNats(url: string, logger: Logger): Promise<ShardLink> {
  const nc: NatsConnection = await connect({ servers: url, name: 'mimic', reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 500, timeout: 5000 })
  const reconnected: Array<() => void> = []
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') logger.warn({ nats: url }, 'lost the connection to the NATS server: values across shards wait until it is back')
      else if (status.type === 'reconnect') {
        logger.info({ nats: url }, 'connected to the NATS server again: values across shards resume')
        for (const handler of reconnected) handler()
      }
    }
  })().catch(() => {})
  return {
    url,
    publish: (subject, data) => nc.publish(subject, data),
    subscribe: (subject, heard) => {
      const sub = nc.subscribe(subject, { callback: (err, msg) => (err ? undefined : heard(msg.string())) })
      return () => sub.unsubscribe()
    },
    serve: (subject, answer) => {
      const sub = nc.subscribe(subject, {
        callback: (err, msg) => {
          if (err || !msg.reply) return
          const text = answer()
          if (text !== undefined) msg.respond(text)
        },
      })
      return () => sub.unsubscribe()
    },
    request: async (subject) => {
      try {
        return (await nc.request(subject, '', { timeout: LAST_VALUE_TIMEOUT_MS })).string()
      } catch {
        // No responder (the owner has not started, or holds no value yet), or no answer in time.
        return undefined
      }
    },
    onReconnect: (handler) => void reconnected.push(handler),
    close: async () => {
      if (!nc.isClosed()) await nc.close()
    },
  }
}
