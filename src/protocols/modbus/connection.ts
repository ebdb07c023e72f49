import type { Socket } from 'node:net'
import type { Logger } from 'pino'
import {
  EXCEPTION_CODES,
  MBAP_LENGTH,
  buildExceptionResponse,
  headerProblem,
  stampHeader,
} from './codec.js'

/**
 * One Modbus TCP connection: cuts the byte stream into frames, hands each to the unit it addresses
 * and writes the answers back in request order.
 *
 * Requests run one after another per connection: while an answer is pending on an asynchronous
 * write (a Python setter), later frames wait in a bounded inbox, so a client that pipelines a
 * write and a read sees its own write. A response delay holds answers back without holding up
 * the requests behind them. A header that cannot be valid (protocol id, length field) closes the
 * connection, since the stream cannot be resynchronised. Memory per connection is bounded: the
 * partial frame is under 260 bytes, and reading pauses while the inbox, the delayed answers or
 * the socket's write buffer are full.
 *
 * @example
 * server.on('connection', (socket) => new ModbusConnection({ socket, resolveUnit: (id) => units.get(id), logger }))
 */

/** What a unit answers to one request: a response ADU (7 header bytes left free), nothing, or later. */
export type UnitAnswer = Buffer | null | Promise<Buffer | null>

/** A Modbus unit (one instance's adapter) as connections see it. */
export interface ModbusUnit {
  /**
   * Answers the request PDU of `pduLength` bytes at `pduOffset` of `frame`. Returns a response ADU
   * whose first 7 bytes the connection fills, null to give no answer at all, or a promise of either.
   * The bytes of `frame` are only valid during the call.
   */
  handle(frame: Buffer, pduOffset: number, pduLength: number): UnitAnswer
  /** Milliseconds every answer is held back (0 for none). */
  readonly responseDelayMs: number
}

/** Options of a connection. */
export interface ModbusConnectionOptions {
  socket: Socket
  /** The unit that serves a unit id, or undefined (answered with exception 0x0B). */
  resolveUnit: (unitId: number) => ModbusUnit | undefined
  logger: Logger
  /** Called once when the connection has closed. */
  onClose?: (connection: ModbusConnection) => void
}

/** Frames waiting while an asynchronous answer is pending, before reading pauses. */
const MAX_INBOX = 64
/** Answers held back by a response delay, before reading pauses. */
const MAX_OUTBOX = 1024
/** Bytes queued in the socket, before reading pauses. */
const MAX_WRITE_BUFFER = 1 << 20

interface Slot {
  frame: Buffer | null
  ready: boolean
  timer: NodeJS.Timeout | null
}

/**
 * One client connection of a listener (see the module comment).
 *
 * @example
 * const connection = new ModbusConnection({ socket, resolveUnit: (id) => units.get(id), logger })
 * connection.destroy()
 */
export class ModbusConnection {
  readonly remote: string
  #socket: Socket
  #resolveUnit: (unitId: number) => ModbusUnit | undefined
  #logger: Logger
  #onClose: ((connection: ModbusConnection) => void) | undefined
  #partial: Buffer | null = null
  #busy = false
  #inbox: Buffer[] = []
  #outbox: Slot[] = []
  #paused = false
  #closed = false
  /** While a chunk is being answered: the answers so far, written together at its end. */
  #batch: Buffer[] | null = null

  constructor(options: ModbusConnectionOptions) {
    this.#socket = options.socket
    this.#resolveUnit = options.resolveUnit
    this.#logger = options.logger
    this.#onClose = options.onClose
    this.remote = `${options.socket.remoteAddress ?? '?'}:${options.socket.remotePort ?? '?'}`
    const socket = options.socket
    socket.setNoDelay(true)
    socket.setKeepAlive(true, 30_000)
    socket.on('data', (chunk: Buffer) => this.#onData(chunk))
    socket.on('drain', () => this.#updateFlow())
    socket.on('error', (error: NodeJS.ErrnoException) => {
      this.#logger.debug({ remote: this.remote, code: error.code }, 'modbus connection error')
    })
    socket.on('close', () => this.#cleanup())
  }

  /** Closes the connection at once, dropping pending answers. */
  destroy(): void {
    this.#socket.destroy()
    this.#cleanup()
  }

  #onData(chunk: Buffer): void {
    let buffer = chunk
    if (this.#partial !== null) {
      buffer = Buffer.concat([this.#partial, chunk])
      this.#partial = null
    }
    const end = buffer.length
    let offset = 0
    // The answers to every request of one chunk (a pipelining client sends several) leave in one
    // write of one buffer: each socket write costs far more than copying a few bytes.
    const batch: Buffer[] = []
    this.#batch = batch
    while (end - offset >= 6) {
      const problem = headerProblem(buffer, offset)
      if (problem !== null) {
        this.#batch = null
        this.#logger.debug({ remote: this.remote, problem }, 'closing modbus connection: bad frame header')
        this.destroy()
        return
      }
      const total = 6 + ((buffer[offset + 4]! << 8) | buffer[offset + 5]!)
      if (end - offset < total) break
      if (this.#busy) this.#inbox.push(Buffer.from(buffer.subarray(offset, offset + total)))
      else this.#execute(buffer, offset, total)
      offset += total
      if (this.#closed) {
        this.#batch = null
        return
      }
    }
    this.#batch = null
    if (batch.length === 1) this.#socket.write(batch[0]!)
    else if (batch.length > 1) this.#socket.write(Buffer.concat(batch))
    // Copied so that a 64 KiB chunk is not kept alive for a few trailing bytes.
    if (offset < end) this.#partial = Buffer.from(buffer.subarray(offset))
    this.#updateFlow()
  }

  #execute(frame: Buffer, offset: number, total: number): void {
    const transactionId = (frame[offset]! << 8) | frame[offset + 1]!
    const unitId = frame[offset + 6]!
    const unit = this.#resolveUnit(unitId)
    if (unit === undefined) {
      const fc = frame[offset + MBAP_LENGTH]!
      this.#emit(buildExceptionResponse(fc, EXCEPTION_CODES.GATEWAY_TARGET_FAILED), transactionId, unitId, 0)
      return
    }
    let answer: UnitAnswer
    try {
      answer = unit.handle(frame, offset + MBAP_LENGTH, total - MBAP_LENGTH)
    } catch (error) {
      this.#logger.error({ err: error }, 'modbus unit failed to answer')
      answer = buildExceptionResponse(frame[offset + MBAP_LENGTH]!, EXCEPTION_CODES.SERVER_DEVICE_FAILURE)
    }
    if (answer === null) return
    if (!(answer instanceof Promise)) {
      this.#emit(answer, transactionId, unitId, unit.responseDelayMs)
      return
    }
    this.#busy = true
    const fc = frame[offset + MBAP_LENGTH]!
    const slot: Slot = { frame: null, ready: false, timer: null }
    this.#outbox.push(slot)
    answer
      .catch((error: unknown) => {
        this.#logger.error({ err: error }, 'modbus unit failed to answer')
        return buildExceptionResponse(fc, EXCEPTION_CODES.SERVER_DEVICE_FAILURE)
      })
      .then((response) => {
        if (this.#closed) return
        if (response !== null) stampHeader(response, transactionId, unitId)
        slot.frame = response
        this.#release(slot, unit.responseDelayMs)
        this.#busy = false
        this.#socket.cork()
        this.#drainInbox()
        this.#flush()
        this.#socket.uncork()
        this.#updateFlow()
      })
  }

  #drainInbox(): void {
    while (!this.#busy && this.#inbox.length > 0 && !this.#closed) {
      const frame = this.#inbox.shift()!
      this.#execute(frame, 0, frame.length)
    }
  }

  #emit(response: Buffer, transactionId: number, unitId: number, delayMs: number): void {
    stampHeader(response, transactionId, unitId)
    if (delayMs <= 0 && this.#outbox.length === 0) {
      this.#write(response)
      return
    }
    const slot: Slot = { frame: response, ready: false, timer: null }
    this.#outbox.push(slot)
    this.#release(slot, delayMs)
  }

  /** Marks a slot ready, now or after the delay, and writes whatever is ready at the head. */
  #release(slot: Slot, delayMs: number): void {
    if (delayMs <= 0) {
      slot.ready = true
      this.#flush()
      return
    }
    slot.timer = setTimeout(() => {
      slot.timer = null
      slot.ready = true
      this.#flush()
      this.#updateFlow()
    }, delayMs)
  }

  #flush(): void {
    const outbox = this.#outbox
    while (outbox.length > 0 && outbox[0]!.ready) {
      const slot = outbox.shift()!
      if (slot.frame !== null && !this.#closed) this.#write(slot.frame)
    }
  }

  /** Writes an answer, or adds it to the batch of the chunk being answered (keeping the order). */
  #write(frame: Buffer): void {
    if (this.#batch !== null) this.#batch.push(frame)
    else this.#socket.write(frame)
  }

  /** Pauses reading while anything this connection holds is full; resumes when it has drained. */
  #updateFlow(): void {
    if (this.#closed) return
    const full =
      this.#inbox.length >= MAX_INBOX ||
      this.#outbox.length >= MAX_OUTBOX ||
      this.#socket.writableLength >= MAX_WRITE_BUFFER
    if (full && !this.#paused) {
      this.#paused = true
      this.#socket.pause()
    } else if (!full && this.#paused) {
      this.#paused = false
      this.#socket.resume()
    }
  }

  #cleanup(): void {
    if (this.#closed) return
    this.#closed = true
    for (const slot of this.#outbox) if (slot.timer !== null) clearTimeout(slot.timer)
    this.#outbox = []
    this.#inbox = []
    this.#partial = null
    this.#onClose?.(this)
  }
}
