import { createServer, type Server, type Socket } from 'node:net'
import { Aedes } from 'aedes'
import type { Logger } from 'pino'
import { ConflictError } from '../../errors.js'
import type { HeldPort, PortHolder, ProtocolContext } from '../adapter.js'
import { listenProblem } from '../adapter-kit.js'

/**
 * The MQTT brokers the server runs itself for adapters that say `broker: embedded`: one per
 * port, on 127.0.0.1, opened with its first adapter and closed with its last. Adapters that name
 * no port share the broker on the first free port from 1883 up; adapters that say port 0 share
 * one on a port the system chooses. This is the `mqtt` kind's shared context.
 *
 * @example
 * const brokers = new EmbeddedBrokers({ logger })
 * const lease = await brokers.acquire(undefined) // { port: 1883, release }
 * await lease.release()
 * await brokers.close()
 */

/** A use of one embedded broker; release it when done. */
export interface BrokerLease {
  readonly host: string
  readonly port: number
  release(): Promise<void>
}

interface RunningBroker {
  port: number
  users: number
  aedes: Aedes
  server: Server
  sockets: Set<Socket>
}

const EMBEDDED_HOST = '127.0.0.1'
const FIRST_AUTO_PORT = 1883

/** See the module comment. */
export class EmbeddedBrokers implements ProtocolContext {
  readonly #logger: Logger
  /** By key: the port as written, 'auto' when omitted. Holds brokers still opening, so they are joined. */
  readonly #brokers = new Map<string, Promise<RunningBroker>>()
  /** The brokers listening now. */
  readonly #running = new Set<RunningBroker>()
  readonly #portHolder: PortHolder | undefined

  constructor(opts: { logger: Logger; portHolder?: PortHolder }) {
    this.#logger = opts.logger
    this.#portHolder = opts.portHolder
  }

  heldPorts(): HeldPort[] {
    return [...this.#running].map((b) => ({ transport: 'tcp', host: EMBEDDED_HOST, port: b.port, holder: 'the embedded MQTT broker' }))
  }

  /** Takes a share of the broker for `port` (undefined: the shared one from 1883 up), opening it first if needed. */
  async acquire(port: number | undefined): Promise<BrokerLease> {
    const key = port === undefined ? 'auto' : String(port)
    let opening = this.#brokers.get(key)
    if (!opening) {
      opening = this.#open(port)
      this.#brokers.set(key, opening)
      opening.catch(() => this.#brokers.delete(key))
    }
    const broker = await opening
    broker.users++
    let released = false
    return {
      host: EMBEDDED_HOST,
      port: broker.port,
      release: async () => {
        if (released) return
        released = true
        if (--broker.users > 0) return
        this.#brokers.delete(key)
        this.#running.delete(broker)
        await closeBroker(broker)
        this.#logger.info({ port: broker.port }, 'embedded MQTT broker closed')
      },
    }
  }

  async close(): Promise<void> {
    const all = [...this.#brokers.values()]
    this.#brokers.clear()
    this.#running.clear()
    for (const opening of all) await opening.then(closeBroker, () => undefined)
  }

  async #open(port: number | undefined): Promise<RunningBroker> {
    const aedes = await Aedes.createBroker()
    const sockets = new Set<Socket>()
    const server = createServer((socket) => {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
      aedes.handle(socket)
    })
    try {
      const bound = await listenFrom(server, port, this.#portHolder)
      this.#logger.info({ host: EMBEDDED_HOST, port: bound }, 'embedded MQTT broker listening')
      const broker = { port: bound, users: 0, aedes, server, sockets }
      this.#running.add(broker)
      return broker
    } catch (error) {
      await new Promise<void>((resolve) => aedes.close(() => resolve()))
      throw error
    }
  }
}

/** Listens on `port`, or on the first free port from 1883 up when it is undefined; resolves to the port. */
async function listenFrom(server: Server, port: number | undefined, portHolder: PortHolder | undefined): Promise<number> {
  let candidate = port ?? FIRST_AUTO_PORT
  for (;;) {
    try {
      return await listen(server, candidate)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (port === undefined && code === 'EADDRINUSE' && candidate < 65535) {
        candidate++
        continue
      }
      const problem = listenProblem(error, EMBEDDED_HOST, candidate, { heldBy: portHolder?.('tcp', candidate) })
      throw new ConflictError(`Cannot open the embedded MQTT broker: ${problem.message}`, [problem])
    }
  }
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const failed = (error: Error) => {
      server.off('listening', ready)
      reject(error)
    }
    const ready = () => {
      server.off('error', failed)
      resolve((server.address() as { port: number }).port)
    }
    server.once('error', failed)
    server.once('listening', ready)
    server.listen(port, EMBEDDED_HOST)
  })
}

async function closeBroker(broker: RunningBroker): Promise<void> {
  const closed = new Promise<void>((resolve) => broker.server.close(() => resolve()))
  for (const socket of broker.sockets) socket.destroy()
  await closed
  await new Promise<void>((resolve) => broker.aedes.close(() => resolve()))
}
