import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import type { Logger } from 'pino'
import { LaneConnection, type LaneConnectionOptions, type LaneHandler } from './connection.js'

/**
 * The fast lane of the HTTP server: plain keep-alive HTTP/1.1 requests to the tree (a client
 * polling attributes, calling methods) are parsed and answered straight from the socket; every
 * other connection, and every request the lane does not take, is handed to node:http (and so
 * to fastify) with its bytes untouched, so it is served exactly as before. `--fast-lane off`
 * leaves it out, and node:http serves everything.
 *
 * Why by hand: node:http builds an IncomingMessage and a ServerResponse with their stream
 * machinery for every request, and on a 2-core machine that costs as much again as the
 * loopback write of the answer: a bare node:http server answers about half as many requests
 * per second as a node:net server writing the same bytes (bench/ANALYSIS.md, benchmark 2). The
 * libraries that avoid it (uWebSockets.js and the servers built on it) are not published on the
 * npm registry. The lane keeps the hand-written part small by declining anything unusual.
 *
 * - parse.ts: bytes to a request, or a refusal (anything incomplete, unusual or invalid);
 * - handler.ts: whether to take a tree request, and its answer, from the fastify route's code;
 * - response.ts: the answer's bytes, as node:http would write them;
 * - connection.ts: one socket: reading, answering in order, bounds, the hand-over to node:http.
 *
 * A connection handed over stays with node:http for the rest of its life.
 */

export { LaneConnection, type LaneConnectionOptions, type LaneHandler } from './connection.js'
export { treeLaneHandler, type TreeLaneOptions } from './handler.js'
export { parseRequest, type LaneHeaders, type LaneRequest, type ParsedRequest } from './parse.js'
export { serializeResponse, type LaneResponse } from './response.js'

/** How often idle keep-alive connections are looked for. */
const SWEEP_MS = 1000

/** The live lane: closing it ends its idle connections and the busy ones after their answer. */
export interface FastLane {
  close(): void
  /**
   * The state of the lane's connection on `socket` (LaneConnection.idleSince), or undefined when
   * the lane does not hold that socket (never took it, handed it over, or it closed).
   */
  idleSince(socket: Socket): number | 'busy' | undefined
}

/**
 * Puts the lane in front of an http.Server: its own connection listener takes every new
 * connection and calls node:http's listener for those it hands over.
 *
 * @example
 * const lane = attachFastLane(app.server, (req) => (req.url === '/ping' ? { status: 200, headers: '', body: '"pong"' } : undefined), { bodyLimit: 1 << 20, logger })
 * app.addHook('preClose', async () => lane.close())
 */
export function attachFastLane(server: Server, handler: LaneHandler, options: { bodyLimit: number; logger: Pick<Logger, 'error'> }): FastLane {
  const httpListeners = server.listeners('connection') as Array<(socket: Socket) => void>
  server.removeAllListeners('connection')
  const connections = new Map<Socket, LaneConnection>()
  let closing = false
  const connectionOptions: LaneConnectionOptions = {
    handler,
    bodyLimit: options.bodyLimit,
    logger: options.logger,
    server,
    handOver: (socket) => {
      for (const listener of httpListeners) listener.call(server, socket)
    },
    release: (connection) => connections.delete(connection.socket),
  }
  server.on('connection', (socket: Socket) => {
    if (closing) return connectionOptions.handOver(socket)
    connections.set(socket, new LaneConnection(socket, connectionOptions))
  })
  // Idle keep-alive connections are closed after the server's keep-alive timeout, as node:http
  // does. One sweep for all of them rather than a timer per socket: a socket's own timer is
  // re-armed on every read and write, a measurable share of a request here.
  const sweep = setInterval(() => {
    const idleSince = Date.now() - server.keepAliveTimeout
    for (const connection of connections.values()) connection.closeIfIdleSince(idleSince)
  }, SWEEP_MS)
  sweep.unref()
  return {
    close() {
      closing = true
      clearInterval(sweep)
      for (const connection of connections.values()) connection.closeWhenIdle()
    },
    idleSince: (socket) => connections.get(socket)?.idleSince,
  }
}
