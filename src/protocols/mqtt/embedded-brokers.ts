import { statSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import { Aedes } from 'aedes'
import type { Logger } from 'pino'
import { ConflictError } from '../../errors.js'
import type { HeldPort, PortHolder, ProtocolContext, ProtocolSecurity } from '../adapter.js'
import { listenProblem } from '../adapter-kit.js'
import { BrokerGuard, type AdapterRegistration, type BrokerLimits, type BrokerStats } from './broker-guard.js'
import { readMqttUsers } from './users-file.js'

/**
 * The MQTT brokers the server runs itself for adapters that say `broker: embedded`: one per
 * port, on 127.0.0.1, opened with its first adapter and closed with its last. Adapters that name
 * no port share the broker on the first free port from 1883 up; adapters that say port 0 share
 * one on a port the system chooses. This is the `mqtt` kind's shared context.
 *
 * Each broker honours the server's access settings through a BrokerGuard: with a product key,
 * clients authenticate (the key, or a user of the `--mqtt-users` file, read when a broker opens);
 * each adapter gets credentials of its own with its lease, its client id and the topics it
 * publishes are its own, and retained messages of other clients are capped.
 *
 * @example
 * const brokers = new EmbeddedBrokers({ logger, security: { productKey: 'k' } })
 * const lease = await brokers.acquire(undefined, { clientId: 'mimic-boiler-mqtt', publishes: ['boiler/temp'], subscribes: [] })
 * lease.credentials // { username: 'mimic-adapter', password: '...' }: what the adapter connects with
 * lease.stats() // { clients: 1, retained: 0, refused_connects: 0, ... }
 * await lease.release()
 * await brokers.close()
 */

/** A use of one embedded broker; release it when done. */
export interface BrokerLease {
  readonly host: string
  readonly port: number
  /** What the adapter connects with; undefined when acquired without a registration. */
  readonly credentials: { username: string; password: string } | undefined
  /** The broker's access counters. */
  stats(): BrokerStats
  release(): Promise<void>
}

interface RunningBroker {
  port: number
  users: number
  aedes: Aedes
  guard: BrokerGuard
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
  readonly #security: ProtocolSecurity
  readonly #limits: Partial<BrokerLimits>

  constructor(opts: { logger: Logger; portHolder?: PortHolder | undefined; security?: ProtocolSecurity | undefined; limits?: Partial<BrokerLimits> }) {
    this.#logger = opts.logger
    this.#portHolder = opts.portHolder
    this.#security = opts.security ?? {}
    this.#limits = opts.limits ?? {}
  }

  heldPorts(): HeldPort[] {
    return [...this.#running].map((b) => ({ transport: 'tcp', host: EMBEDDED_HOST, port: b.port, holder: 'the embedded MQTT broker' }))
  }

  /**
   * Takes a share of the broker for `port` (undefined: the shared one from 1883 up), opening it
   * first if needed. An adapter gives its registration and gets the credentials it connects with.
   * Throws ConflictError when the port cannot be had, ValidationError when the users file cannot
   * be read (naming its line).
   */
  async acquire(port: number | undefined, registration?: AdapterRegistration): Promise<BrokerLease> {
    const key = port === undefined ? 'auto' : String(port)
    let opening = this.#brokers.get(key)
    if (!opening) {
      opening = this.#open(port)
      this.#brokers.set(key, opening)
      opening.catch(() => this.#brokers.delete(key))
    }
    const broker = await opening
    broker.users++
    const seat = registration && broker.guard.register(registration)
    let released = false
    return {
      host: EMBEDDED_HOST,
      port: broker.port,
      credentials: seat?.credentials,
      stats: () => broker.guard.stats(),
      release: async () => {
        if (released) return
        released = true
        seat?.unregister()
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
    const guard = new BrokerGuard({
      logger: this.#logger,
      productKey: this.#security.productKey,
      users: this.#readUsers(),
      limits: this.#limits,
    })
    const aedes = await Aedes.createBroker({
      authenticate: (client, username, password, done) => guard.authenticate(client, username, password, done),
      authorizePublish: (client, packet, done) => guard.authorizePublish(client, packet, done),
    })
    const sockets = new Set<Socket>()
    const server = createServer((socket) => {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
      aedes.handle(socket)
    })
    try {
      const bound = await listenFrom(server, port, this.#portHolder)
      this.#logger.info({ host: EMBEDDED_HOST, port: bound }, 'embedded MQTT broker listening')
      const broker = { port: bound, users: 0, aedes, guard, server, sockets }
      this.#running.add(broker)
      return broker
    } catch (error) {
      await new Promise<void>((resolve) => aedes.close(() => resolve()))
      throw error
    }
  }

  /** The users file, read afresh for each broker that opens, so an edit counts from the next one. */
  #readUsers(): ReturnType<typeof readMqttUsers> | undefined {
    const file = this.#security.mqttUsersFile
    if (!file) return undefined
    const users = readMqttUsers(file)
    // The file holds passwords as written: readable by others, it gives them away.
    if ((statSync(file).mode & 0o077) !== 0) this.#logger.warn({ file }, 'the MQTT users file can be read by other users of this machine (chmod 600 it)')
    return users
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
