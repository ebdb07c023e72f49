import type { Socket } from 'node:net'
import type { Logger } from 'pino'

/**
 * What every client connection of a Modbus TCP listener shares, whatever its framing (MBAP in
 * connection.ts, RTU frames in rtu-connection.ts): the socket's set-up, the two timestamps the
 * listener's sweep reads instead of timers per connection (listener.ts), pausing reading while
 * the connection holds too much, and the close bookkeeping. A framing supplies `onData`,
 * `answering`, `isFull` and `released`.
 *
 * @example
 * class EchoConnection extends StreamConnection { ... }
 */
export abstract class StreamConnection {
  readonly remote: string
  protected readonly socket: Socket
  protected readonly logger: Logger
  readonly #onClose: ((connection: StreamConnection) => void) | undefined
  /** True while reading is paused because the connection holds too much. */
  protected paused = false
  protected closed = false
  /** Date.now() when the last complete request arrived (when the connection opened, before any). */
  protected lastRequest = Date.now()
  /** Date.now() when the partial frame held began; 0 while there is none. */
  protected partialStart = 0

  constructor(socket: Socket, logger: Logger, what: string, onClose: ((connection: StreamConnection) => void) | undefined) {
    this.socket = socket
    this.logger = logger
    this.#onClose = onClose
    this.remote = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`
    socket.setNoDelay(true)
    socket.setKeepAlive(true, 30_000)
    socket.on('data', (chunk: Buffer) => this.onData(chunk))
    socket.on('drain', () => this.updateFlow())
    socket.on('error', (error: NodeJS.ErrnoException) => {
      this.logger.debug({ remote: this.remote, code: error.code }, `${what} error`)
    })
    socket.on('close', () => this.cleanup())
  }

  /** Date.now() of the last complete request, or of the connection's opening before any. */
  get lastRequestAt(): number {
    return this.lastRequest
  }

  /**
   * Date.now() when the frame received in part so far began; 0 when none is, and while reading
   * is paused, since the rest of the frame then waits on us, not on the client.
   */
  get partialSince(): number {
    return this.paused ? 0 : this.partialStart
  }

  /** True while the client waits for an answer of ours: such a connection is not idle. */
  abstract get answering(): boolean

  /** Closes the connection at once, dropping pending answers. */
  destroy(): void {
    this.socket.destroy()
    this.cleanup()
  }

  protected abstract onData(chunk: Buffer): void

  /** Whether anything the connection holds is full, so that reading must pause. */
  protected abstract isFull(): boolean

  /** Lets go of what the connection holds (timers, queues), once, when it closes. */
  protected abstract released(): void

  /** Pauses reading while the connection is full (see isFull); resumes when it has drained. */
  protected updateFlow(): void {
    if (this.closed) return
    const full = this.isFull()
    if (full && !this.paused) {
      this.paused = true
      this.socket.pause()
    } else if (!full && this.paused) {
      this.paused = false
      // The client gets the whole frame time again for a frame it could not finish while we did not read.
      if (this.partialStart !== 0) this.partialStart = Date.now()
      this.socket.resume()
    }
  }

  protected cleanup(): void {
    if (this.closed) return
    this.closed = true
    this.released()
    this.#onClose?.(this)
  }
}
