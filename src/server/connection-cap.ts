import { readFileSync } from 'node:fs'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { RefusalLog } from './refusal-log.js'

/**
 * Caps on the HTTP connections a server holds: in total and per client address.
 *
 * Without them about 20,000 idle sockets filled the process's descriptor table, and HTTP,
 * Modbus and the text instruments stopped answering (a snapshot save failed with EMFILE) until
 * they were released. Now:
 *
 * - a new connection from an address that already holds `maxConnectionsPerAddress` is closed at
 *   once;
 * - at the total cap, the connection idle the longest (no request under way: a keep-alive
 *   connection between requests, or one that has sent nothing yet) is closed to make room, so a
 *   real client still gets through while others hold thousands of idle sockets; only when
 *   every connection is busy is the new one closed;
 * - the total stays below the process's descriptor limit (the soft RLIMIT_NOFILE) less a
 *   reserve for files, Python workers' pipes and protocol sockets.
 *
 * Every refusal and eviction is counted; refusals are logged at a sampled rate (refusal-log.ts).
 */

/** Descriptors kept for everything but HTTP connections: at least this many, or a quarter of the limit. */
export const MIN_DESCRIPTOR_RESERVE = 128
/** The smallest total cap, however low the descriptor limit. */
export const MIN_CONNECTIONS = 16

/** What the cap needs. */
export interface ConnectionCapOptions {
  /** `--max-connections`. */
  maxConnections: number
  /** `--max-connections-per-address`. */
  maxConnectionsPerAddress: number
  /** Where refusals are counted and logged. */
  refusals: Pick<RefusalLog, 'note'>
  /**
   * How idle a connection the fast lane holds is (FastLane.idleSince); undefined for a socket
   * it does not hold, whose requests node:http serves and this module follows itself.
   */
  laneIdleSince?: (socket: Socket) => number | 'busy' | undefined
  /** The soft descriptor limit; read from /proc/self/limits when not given (undefined: unknown). */
  descriptorLimit?: number
}

/** Counters of the cap, for `/health`. */
export interface ConnectionStats {
  open: number
  /** The total cap in force: `--max-connections`, or less under a low descriptor limit. */
  limit: number
  per_address_limit: number
  /** New connections closed at once: their address held its share, or every connection was busy. */
  refused: number
  /** Idle connections closed to make room for a new one. */
  evicted: number
}

interface Tracked {
  address: string
  /** Requests node:http is answering on it (started, not yet closed). */
  inFlight: number
  /** When it was opened or last finished a request (Date.now()). */
  lastActive: number
}

/**
 * Puts the caps in front of every other `connection` listener of `server` (node:http's, the
 * fast lane's): call it after those are attached.
 *
 * @example
 * const cap = capConnections(app.server, { maxConnections: 1024, maxConnectionsPerAddress: 256, refusals, laneIdleSince: lane.idleSince })
 * cap.stats() // { open: 3, limit: 1024, per_address_limit: 256, refused: 0, evicted: 0 }
 */
export function capConnections(server: Server, options: ConnectionCapOptions): { stats(): ConnectionStats } {
  const limit = totalLimit(options.maxConnections, options.descriptorLimit ?? softDescriptorLimit())
  const perAddress = options.maxConnectionsPerAddress
  const tracked = new Map<Socket, Tracked>()
  const perAddressCount = new Map<string, number>()
  let refused = 0
  let evicted = 0

  const listeners = server.listeners('connection') as Array<(socket: Socket) => void>
  server.removeAllListeners('connection')

  const idleSince = (socket: Socket, entry: Tracked): number | 'busy' => {
    const lane = options.laneIdleSince?.(socket)
    if (lane !== undefined) return lane
    return entry.inFlight > 0 ? 'busy' : entry.lastActive
  }

  /** Closes the connection idle the longest; false when every one is busy. */
  const evictIdlest = (): boolean => {
    let oldest: Socket | undefined
    let oldestSince = Number.POSITIVE_INFINITY
    for (const [socket, entry] of tracked) {
      const since = idleSince(socket, entry)
      if (since !== 'busy' && since < oldestSince) {
        oldest = socket
        oldestSince = since
      }
    }
    if (oldest === undefined) return false
    forget(oldest)
    oldest.destroy()
    evicted++
    return true
  }

  const forget = (socket: Socket): void => {
    const entry = tracked.get(socket)
    if (!entry) return
    tracked.delete(socket)
    const left = (perAddressCount.get(entry.address) ?? 1) - 1
    if (left > 0) perAddressCount.set(entry.address, left)
    else perAddressCount.delete(entry.address)
  }

  const refuse = (socket: Socket, address: string, why: string): void => {
    refused++
    options.refusals.note('connection_refused', { remote: address, open: tracked.size }, `HTTP connection refused: ${why}`)
    socket.destroy()
  }

  server.on('connection', (socket: Socket) => {
    const address = normalAddress(socket.remoteAddress)
    const fromAddress = perAddressCount.get(address) ?? 0
    if (fromAddress >= perAddress) return refuse(socket, address, `${fromAddress} open from ${address} (--max-connections-per-address)`)
    if (tracked.size >= limit && !evictIdlest()) return refuse(socket, address, `${tracked.size} open, all busy (--max-connections)`)
    tracked.set(socket, { address, inFlight: 0, lastActive: Date.now() })
    perAddressCount.set(address, fromAddress + 1)
    socket.once('close', () => forget(socket))
    for (const listener of listeners) listener.call(server, socket)
  })

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const entry = tracked.get(req.socket)
    if (!entry) return
    entry.inFlight++
    res.once('close', () => {
      entry.inFlight--
      entry.lastActive = Date.now()
    })
  })

  return {
    stats: () => ({ open: tracked.size, limit, per_address_limit: perAddress, refused, evicted }),
  }
}

/**
 * The total cap: `--max-connections`, but below the descriptor limit less a reserve (a quarter
 * of the limit, at least MIN_DESCRIPTOR_RESERVE), and never under MIN_CONNECTIONS.
 *
 * @example
 * totalLimit(1024, 1024) // 768
 * totalLimit(1024, 1_048_576) // 1024
 */
export function totalLimit(maxConnections: number, descriptorLimit: number | undefined): number {
  if (descriptorLimit === undefined || !Number.isFinite(descriptorLimit)) return maxConnections
  const reserve = Math.max(MIN_DESCRIPTOR_RESERVE, Math.floor(descriptorLimit / 4))
  return Math.min(maxConnections, Math.max(MIN_CONNECTIONS, descriptorLimit - reserve))
}

/**
 * The soft limit on open descriptors (`ulimit -n`) from /proc/self/limits: Node has no API for
 * it. Undefined where that file does not exist (not Linux) or says `unlimited`.
 *
 * @example
 * softDescriptorLimit() // 1048576 in a typical container
 */
export function softDescriptorLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    const value = line ? Number(line[1]) : Number.NaN
    return Number.isSafeInteger(value) && value > 0 ? value : undefined
  } catch {
    return undefined
  }
}

/** One key per client: an IPv4 address reached over IPv6 (`::ffff:10.0.0.9`) is that IPv4 address. */
function normalAddress(address: string | undefined): string {
  if (address === undefined) return 'unknown'
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address
}
