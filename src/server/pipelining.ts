import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Logger } from 'pino'
import { spendInTurn, turnBudgetSpent } from './turn-budget.js'

/**
 * Pipelined requests on connections node:http serves: one at a time, and a bounded number
 * waiting.
 *
 * node:http starts every pipelined request as soon as it is parsed and holds each answer until
 * the ones before it are written. A client that pipelines hundreds of requests and reads no
 * answer makes the server build and hold every one of them (a 6 MB document eighty times over),
 * and on Node 20 the answers queued behind an unread one are never released when the client
 * goes away. Here a connection's next request starts only once the answer before it has been
 * handed to the socket, so a client that does not read holds one answer at most. With
 * {@link READ_AHEAD_REQUESTS} requests waiting, the connection is read no further until they
 * have been answered; node's parser still hands over every request of the piece it has read, and
 * a connection with more than {@link MAX_WAITING_REQUESTS} waiting is closed. The waiting
 * requests of a client that went away are dropped unstarted, and a request does not start in a
 * turn of the event loop whose answering budget is spent (turn-budget.ts). RFC 9112 (9.3.2) lets
 * a server process pipelined requests one after the other.
 */

/** Requests waiting behind an unfinished one at which a connection is no longer read. */
export const READ_AHEAD_REQUESTS = 16
/**
 * Requests waiting behind an unfinished one beyond which the connection is closed. Reading stops
 * at READ_AHEAD_REQUESTS, but node's parser still hands over every request of the piece it has
 * read: up to about 2,400 of the smallest requests per 64 KiB (the fast lane hands its backlog
 * over in pieces of that size too). Well above that, so only a broken pause closes a connection.
 */
export const MAX_WAITING_REQUESTS = 32_768

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void

/** What node:http keeps on a socket it serves: the flag its own backpressure pauses reading with, and the parser. */
type HttpSocket = Socket & { _paused?: boolean; parser?: { resume(): void } | null }

/**
 * Stops reading the socket. A plain `pause()` is undone by node:http itself, synchronously, as
 * soon as it reads the next request from data already read (the lane hands a connection over
 * with up to a megabyte of it): node:http's own flag for a paused connection keeps it paused.
 */
function stopReading(socket: HttpSocket): void {
  socket._paused = true
  socket.pause()
}

/** Reads the socket again, as node:http does when its own pause ends (its socketOnDrain). */
function startReading(socket: HttpSocket): void {
  socket._paused = false
  socket.parser?.resume()
  socket.resume()
}

interface ConnectionQueue {
  busy: boolean
  /** Reading was paused here (READ_AHEAD_REQUESTS). */
  paused: boolean
  waiting: Array<[IncomingMessage, ServerResponse]>
}

/**
 * Wraps the server's `request` listeners (fastify's handler) so that each connection's requests
 * run one after the other (see the module comment).
 *
 * @example
 * const app = Fastify()
 * serveInTurn(app.server, { logger })
 */
export function serveInTurn(server: Server, opts: { logger: Pick<Logger, 'debug'> }): void {
  const listeners = server.listeners('request') as RequestListener[]
  server.removeAllListeners('request')
  const queues = new WeakMap<Socket, ConnectionQueue>()

  const start = (queue: ConnectionQueue, req: IncomingMessage, res: ServerResponse): void => {
    queue.busy = true
    let finished = false
    const next = (): void => {
      if (finished) return
      finished = true
      queue.busy = false
      const socket = req.socket
      if (socket.destroyed) {
        queue.waiting.length = 0
        return
      }
      if (queue.paused && queue.waiting.length < READ_AHEAD_REQUESTS) {
        queue.paused = false
        startReading(socket)
      }
      const following = queue.waiting.shift()
      if (following) start(queue, following[0], following[1])
    }
    const run = (): void => {
      // The client went away while this request waited for its turn.
      if (req.socket.destroyed) return next()
      if (turnBudgetSpent()) return void setImmediate(run)
      res.once('finish', next)
      res.once('close', next)
      const started = performance.now()
      for (const listener of listeners) listener.call(server, req, res)
      spendInTurn(performance.now() - started)
    }
    run()
  }

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket
    // The client is gone: nobody would read the answer.
    if (socket.destroyed) return
    let queue = queues.get(socket)
    if (queue === undefined) {
      queue = { busy: false, paused: false, waiting: [] }
      queues.set(socket, queue)
      const created = queue
      socket.once('close', () => {
        created.waiting.length = 0
      })
      // node:http ends its own pauses when the answers written so far have drained: while this
      // connection has its fill of requests waiting, it stays paused.
      socket.on('resume', () => {
        if (created.paused) stopReading(socket)
      })
    }
    if (!queue.busy) return start(queue, req, res)
    if (queue.waiting.length >= MAX_WAITING_REQUESTS) {
      opts.logger.debug({ remote: socket.remoteAddress, waiting: queue.waiting.length }, 'connection closed: too many pipelined requests waiting')
      queue.waiting.length = 0
      socket.destroy()
      return
    }
    queue.waiting.push([req, res])
    if (!queue.paused && queue.waiting.length >= READ_AHEAD_REQUESTS) {
      queue.paused = true
      stopReading(socket)
    }
  })
}
