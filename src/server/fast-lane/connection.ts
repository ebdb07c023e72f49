import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import type { Logger } from 'pino'
import { spendInTurn, turnBudgetSpent } from '../turn-budget.js'
import { byteLengthOf } from '../tree-routes.js'
import { parseRequest, type LaneRequest } from './parse.js'
import { responseHead, serializeResponse, type LaneResponse } from './response.js'

/**
 * One connection the lane reads: its requests are parsed and answered here until one is declined,
 * and from then on node:http owns the socket, starting with the bytes the lane did not take.
 *
 * Pipelined requests are answered one after the other, each started once the one before it is
 * answered, as on the connections node:http serves (pipelining.ts). A client that half-closes
 * gets the answers to the complete requests it sent, then the connection closes. Resources stay
 * bounded whatever the client does: the lane reads at most MAX_BACKLOG_BYTES ahead of its
 * answers, makes no new answer while the socket has not taken the last ones, answers a bounded
 * batch per turn of the event loop, drops what is left when the client goes away, and lets
 * attachFastLane's sweep close a connection whose client takes none of its answers for the
 * keep-alive timeout.
 */

/**
 * Decides synchronously whether to take a request, before anything runs: `undefined` declines
 * it (node:http gets the connection), otherwise the answer. It must not throw or reject: a
 * failure is logged and costs the connection.
 */
export type LaneHandler = (req: LaneRequest) => LaneResponse | Promise<LaneResponse> | undefined

/** What every connection of one lane shares. */
export interface LaneConnectionOptions {
  handler: LaneHandler
  bodyLimit: number
  logger: Pick<Logger, 'error'>
  /** The http.Server's keep-alive timeout is read for each answer: it may change while running. */
  server: Pick<Server, 'keepAliveTimeout'>
  /** Gives a socket the lane will not serve to node:http. */
  handOver(socket: Socket): void
  /** Called once when the lane is done with a connection (closed, or handed over). */
  release(connection: LaneConnection): void
}

/** Unanswered request bytes a connection may send ahead before the lane stops reading it. */
const MAX_BACKLOG_BYTES = 1 << 20
/**
 * Bytes handed over go back into the socket in pieces of this size. node:http stops reading with
 * requests waiting (pipelining.ts), but only between pieces: its parser turns every request of a
 * piece into a request and a response object at once, in one turn. 600 pipelined GETs of the API
 * docs' script (33 KB) in one piece kept `/health` waiting 75 to 520 ms on a loaded 2-core
 * machine; in pieces of 4 KiB (some 70 small requests) it waited 10 to 70 ms.
 */
const HAND_OVER_PIECE = 4 * 1024
/**
 * Requests answered in one turn of the event loop before the lane lets other connections and
 * timers run, and the answer bytes one turn may hold: a buffer full of pipelined requests for
 * large documents must not freeze the server while it answers them all.
 */
const MAX_ANSWERS_PER_TURN = 16
const MAX_OUTPUT_PER_TURN = 256 * 1024

/**
 * Connections with answers waiting to be written. Answers go out once per turn of the event
 * loop, after every ready socket has been read: the client then wakes once for a burst of
 * answers instead of once per answer, and on a small machine those wake-ups cost more than the
 * answers (benchmark 2 answered 25-60% more requests per second this way).
 */
const unflushed = new Set<LaneConnection>()

function flushAll(): void {
  for (const connection of unflushed) connection.flush()
  unflushed.clear()
}

/**
 * The lane's side of one socket: reading, answering in order, backpressure, the bounds of a
 * turn, and the hand-over to node:http.
 *
 * @example
 * server.on('connection', (socket) => new LaneConnection(socket, { handler, bodyLimit, logger, server, handOver, release }))
 */
export class LaneConnection {
  readonly #socket: Socket
  /** The socket this connection reads (the lane finds its connections by it). */
  readonly socket: Socket
  readonly #options: LaneConnectionOptions
  #buffer: Buffer | undefined
  /** Answers not yet written (see `unflushed`): `#outPieces` first, then `#out`. */
  #out = ''
  /**
   * Answers with a body in bytes (a large document kept encoded), each as its head and the
   * shared pieces of its body, written as they are: copying megabytes into the text of every
   * answer cost more than making the answer.
   */
  #outPieces: Array<string | Buffer> = []
  #outPieceBytes = 0
  #busy = false
  #closing = false
  /** The client half-closed: answer what arrived complete, then close. */
  #ended = false
  #done = false
  /** Why reading is paused: the client does not read its answers, or sends faster than they are made. */
  #waitingForDrain = false
  #backlogged = false
  /** When the connection last received a request or sent an answer (Date.now()). */
  #lastActive = Date.now()
  /** Wakes `#serve` when the socket drains or closes. */
  #wake: (() => void) | undefined
  /** The request being answered, named in the log line should answering it fail. */
  #current: LaneRequest | undefined

  constructor(socket: Socket, options: LaneConnectionOptions) {
    this.#socket = socket
    this.socket = socket
    this.#options = options
    socket.setNoDelay(true)
    socket.on('data', this.#onData)
    socket.on('error', this.#onError)
    socket.on('close', this.#onClose)
    socket.on('end', this.#onEnd)
  }

  /**
   * Closes the connection if it has been idle since `time` (one waiting for a slow answer is not
   * idle), or if its client has not taken any of its answers since then.
   */
  closeIfIdleSince(time: number): void {
    if (this.#lastActive >= time) return
    if ((!this.#busy && !this.#hasOutput()) || this.#waitingForDrain) this.#socket.destroy()
  }

  /**
   * When the connection last received a request or sent an answer (Date.now()) if it is idle now,
   * 'busy' while a request is being answered. A client that takes none of its answers counts as
   * idle: it is waiting for nothing.
   */
  get idleSince(): number | 'busy' {
    return (!this.#busy && !this.#hasOutput()) || this.#waitingForDrain ? this.#lastActive : 'busy'
  }

  /** Writes the answers waiting for this connection; reading pauses while the client lags behind. */
  flush(): void {
    if (!this.#hasOutput()) return
    const text = this.#out
    const pieces = this.#outPieces
    this.#out = ''
    if (pieces.length) {
      this.#outPieces = []
      this.#outPieceBytes = 0
    }
    const socket = this.#socket
    if (socket.destroyed) return
    let taken = true
    if (pieces.length) {
      // One writev for the heads and the bodies.
      socket.cork()
      for (const piece of pieces) taken = socket.write(piece)
      if (text) taken = socket.write(text)
      socket.uncork()
    } else taken = socket.write(text)
    if (taken) {
      this.#lastActive = Date.now()
    } else if (!this.#waitingForDrain) {
      this.#waitingForDrain = true
      this.#updateReading()
      socket.once('drain', () => {
        this.#waitingForDrain = false
        this.#lastActive = Date.now()
        this.#updateReading()
        this.#wakeUp()
      })
    }
  }

  /** Ends the connection after the answers it is owed: now if idle, else after the current one. */
  closeWhenIdle(): void {
    this.#closing = true
    if (!this.#busy) this.#end()
  }

  #hasOutput(): boolean {
    return this.#out !== '' || this.#outPieces.length > 0
  }

  #wakeUp(): void {
    const wake = this.#wake
    this.#wake = undefined
    wake?.()
  }

  #updateReading(): void {
    if (this.#done) return
    const pause = this.#waitingForDrain || this.#backlogged
    if (pause && !this.#socket.isPaused()) this.#socket.pause()
    else if (!pause && this.#socket.isPaused()) this.#socket.resume()
  }

  #end(): void {
    this.flush()
    // destroySoon: the answers written so far still reach the client, then the socket closes.
    this.#socket.destroySoon()
  }

  #onData = (chunk: Buffer): void => {
    this.#lastActive = Date.now()
    this.#buffer = this.#buffer ? Buffer.concat([this.#buffer, chunk]) : chunk
    if (!this.#busy) this.#serve().catch(this.#fail)
    else if (this.#buffer.length > MAX_BACKLOG_BYTES && !this.#backlogged) {
      // Requests pile up behind a slow answer: read no more until they are answered.
      this.#backlogged = true
      this.#updateReading()
    }
  }

  /**
   * A failure of the lane itself (the handler is not meant to throw): it costs this connection,
   * not the server, and it is logged with what the connection was doing.
   */
  #fail = (err: unknown): void => {
    const socket = this.#socket
    const request = this.#current
    this.#options.logger.error(
      { err, remote: `${socket.remoteAddress}:${socket.remotePort}`, request: request && `${request.method} ${request.url}` },
      'fast lane: answering a request failed; connection closed',
    )
    socket.destroy()
  }

  #onError = (): void => {
    this.#socket.destroy()
  }

  #onEnd = (): void => {
    this.#ended = true
    if (!this.#busy) this.#end()
  }

  #onClose = (): void => {
    this.#done = true
    // Nobody will read the answers: what is still buffered is dropped unanswered.
    this.#buffer = undefined
    this.#out = ''
    this.#outPieces = []
    this.#outPieceBytes = 0
    this.#options.release(this)
    this.#wakeUp()
  }

  /**
   * Answers the complete requests in the buffer in order, one after the other; each answer joins
   * the connection's output as soon as it is ready, and the output leaves at the end of the turn.
   * A turn answers a bounded number of requests; a socket that does not take its answers is
   * waited for before the next one is made; a client gone away stops it.
   */
  async #serve(): Promise<void> {
    this.#busy = true
    let answeredThisTurn = 0
    while (this.#buffer && this.#buffer.length > 0) {
      if (
        this.#waitingForDrain ||
        answeredThisTurn >= MAX_ANSWERS_PER_TURN ||
        this.#out.length + this.#outPieceBytes >= MAX_OUTPUT_PER_TURN ||
        turnBudgetSpent()
      ) {
        this.flush()
        await (this.#waitingForDrain ? new Promise<void>((resolve) => (this.#wake = resolve)) : new Promise<void>((resolve) => setImmediate(resolve)))
        if (this.#done) return
        answeredThisTurn = 0
        continue
      }
      const started = performance.now()
      const parsed = parseRequest(this.#buffer, this.#options.bodyLimit)
      if (parsed !== 'decline') this.#current = parsed.request
      const answer = parsed === 'decline' ? undefined : this.#options.handler(parsed.request)
      if (parsed === 'decline' || answer === undefined) {
        // After the client's FIN a socket cannot be handed over (its bytes cannot be put back),
        // and node:http would not answer either: what remains is dropped.
        if (!this.#ended) return this.#handOver()
        this.#buffer = undefined
        break
      }
      this.#buffer = parsed.length === this.#buffer.length ? undefined : this.#buffer.subarray(parsed.length)
      // An answer known at once (a read) joins the output without a trip through the microtask queue.
      const response = answer instanceof Promise ? await answer : answer
      if (this.#done) return
      if (!this.#hasOutput()) {
        if (unflushed.size === 0) setImmediate(flushAll)
        unflushed.add(this)
      }
      const body = response.body
      if (typeof body === 'string') this.#out += serializeResponse(response as LaneResponse & { body: string }, this.#options.server.keepAliveTimeout)
      else {
        const length = byteLengthOf(body)
        this.#outPieces.push(this.#out + responseHead(response, length, this.#options.server.keepAliveTimeout), ...body)
        this.#out = ''
        this.#outPieceBytes += length
      }
      this.#current = undefined
      answeredThisTurn++
      // An answer that waited for a promise was made in another turn: only synchronous work counts.
      if (!(answer instanceof Promise)) spendInTurn(performance.now() - started)
    }
    this.#busy = false
    if (this.#backlogged) {
      this.#backlogged = false
      this.#updateReading()
    }
    if (this.#closing || this.#ended) this.#end()
  }

  /** From here on node:http owns the connection, starting with the bytes the lane did not take. */
  #handOver(): void {
    const socket = this.#socket
    // The lane's answers first: node:http may answer the next request within this turn.
    this.flush()
    this.#done = true
    this.#current = undefined
    this.#options.release(this)
    socket.pause()
    socket.off('data', this.#onData)
    socket.off('error', this.#onError)
    socket.off('close', this.#onClose)
    socket.off('end', this.#onEnd)
    // Last piece first: each goes in front of the ones before it.
    const buffer = this.#buffer
    if (buffer) for (let end = buffer.length; end > 0; end -= HAND_OVER_PIECE) socket.unshift(buffer.subarray(Math.max(0, end - HAND_OVER_PIECE), end))
    this.#buffer = undefined
    this.#options.handOver(socket)
    socket.resume()
  }
}
