import type { Socket } from 'node:net'
import type { Logger } from 'pino'
import { StreamConnection } from './stream-connection.js'
import { EXCEPTION_CODES, MAX_ADU_LENGTH, MBAP_LENGTH, buildExceptionResponse, headerProblem, stampHeader, writeException } from './codec.js'
import type { ConnectionCloseReason, ConnectionRules } from './connection-rules.js'

/**
 * One Modbus TCP connection: cuts the byte stream into frames, hands each to the unit it addresses
 * and writes the answers back in request order.
 *
 * Requests run one after another per connection: while an answer is pending on an asynchronous
 * write (a Python setter), later frames wait in a bounded inbox, so a client that pipelines a
 * write and a read sees its own write. A response delay holds answers back without holding up
 * the requests behind them. A header that cannot be valid (protocol id, length field) closes the
 * connection, since the stream cannot be resynchronised. Answers known at once are written in
 * place into a 4 KiB slab, and the answers to a whole chunk of requests leave in one write. Memory
 * per connection is bounded: the partial frame is under 260 bytes, the slab is 4 KiB, and reading
 * pauses while the inbox, the delayed answers or the socket's write buffer are full.
 *
 * The connection keeps two timestamps for its listener's sweep (see listener.ts) instead of
 * timers of its own: when it last completed a request, and when the frame it is part-way through
 * began. Each costs one clock read per chunk at most, and no timer is armed per request.
 *
 * @example
 * server.on('connection', (socket) => new ModbusConnection({ socket, resolveUnit: (id) => units.get(id), logger }))
 */

/**
 * What a unit answers to one request: the length of the response ADU it wrote in place (0 for no
 * answer at all), or later, a response ADU of its own (first 7 bytes free) or null; or, while
 * faults are set (faults.ts), either of those in a ShapedAnswer that says how it leaves.
 */
export type UnitAnswer = number | Promise<Buffer | null> | ShapedAnswer

/**
 * An answer that leaves differently from the others: held back for its own delay, rewritten once
 * its header is stamped (a corrupted answer), and written in pieces, `gapMs` apart.
 */
export interface ShapedAnswer {
  readonly answer: number | Promise<Buffer | null>
  /** Milliseconds the answer is held back (instead of the unit's responseDelayMs). */
  readonly delayMs: number
  readonly rewrite: ((adu: Buffer) => Buffer) | null
  /** Pieces the answer is written in (1: whole). */
  readonly parts: number
  readonly gapMs: number
}

/** A Modbus unit (one instance's adapter) as connections see it. */
export interface ModbusUnit {
  /**
   * Answers the request PDU of `pduLength` bytes at `pduOffset` of `frame`. An answer known at
   * once is written as a response ADU at `at` of `out` (at least MAX_ADU_LENGTH bytes are free
   * there), leaving its first 7 bytes to the connection, and its length is returned. The bytes of
   * `frame` are only valid during the call.
   */
  handle(frame: Buffer, pduOffset: number, pduLength: number, out: Buffer, at: number): UnitAnswer
  /** Milliseconds every answer is held back (0 for none). */
  readonly responseDelayMs: number
  /** How long connections may idle or hold a partial frame, and how many the listener holds; defaults when absent. */
  readonly connectionRules?: ConnectionRules
  /** Told each time the unit's listener closes or refuses a connection by those rules. */
  connectionClosed?(reason: ConnectionCloseReason): void
  /** Told each time an `rtu_over_tcp` listener of the unit drops a frame whose CRC does not match. */
  crcError?(): void
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
/** Size of the buffers answers are written into: a few hundred typical answers each. */
const SLAB_BYTES = 4096

interface Slot {
  frame: Buffer | null
  ready: boolean
  timer: NodeJS.Timeout | null
  /** Pieces the frame still leaves in (1: the rest at once), `gapMs` apart: a split answer. */
  parts: number
  gapMs: number
}

/**
 * One client connection of a listener (see the module comment).
 *
 * @example
 * const connection = new ModbusConnection({ socket, resolveUnit: (id) => units.get(id), logger })
 * connection.destroy()
 */
export class ModbusConnection extends StreamConnection {
  #resolveUnit: (unitId: number) => ModbusUnit | undefined
  #partial: Buffer | null = null
  #busy = false
  #inbox: Buffer[] = []
  #outbox: Slot[] = []
  /**
   * Answers are written into a slab, one after another; the bytes between #slabStart and #slabEnd
   * are not yet sent. Sent bytes are never written again (the socket may still hold them), and a
   * nearly full slab is replaced by a new one. Node's own Buffer pool works the same way; this one
   * lets each answer be written in place, and the answers of a whole chunk leave in one write.
   */
  #slab: Buffer | null = null
  #slabStart = 0
  #slabEnd = 0

  constructor(options: ModbusConnectionOptions) {
    super(options.socket, options.logger, 'modbus connection', options.onClose as ((c: StreamConnection) => void) | undefined)
    this.#resolveUnit = options.resolveUnit
  }

  /** True while the client waits for an answer of ours (a Python write, a response delay): such a connection is not idle. */
  get answering(): boolean {
    return this.#busy || this.#outbox.length > 0
  }

  protected isFull(): boolean {
    return this.#inbox.length >= MAX_INBOX || this.#outbox.length >= MAX_OUTBOX || this.socket.writableLength >= MAX_WRITE_BUFFER
  }

  protected released(): void {
    for (const slot of this.#outbox) if (slot.timer !== null) clearTimeout(slot.timer)
    this.#outbox = []
    this.#inbox = []
    this.#partial = null
    this.#slab = null
  }

  protected onData(chunk: Buffer): void {
    let buffer = chunk
    const partial = this.#partial
    if (partial !== null) {
      buffer = Buffer.concat([partial, chunk])
      this.#partial = null
    }
    const end = buffer.length
    let offset = 0
    while (end - offset >= 6) {
      const problem = headerProblem(buffer, offset)
      if (problem !== null) {
        this.logger.debug({ remote: this.remote, problem }, 'closing modbus connection: bad frame header')
        this.destroy()
        return
      }
      const total = 6 + ((buffer[offset + 4]! << 8) | buffer[offset + 5]!)
      if (end - offset < total) break
      if (this.#busy) this.#inbox.push(Buffer.from(buffer.subarray(offset, offset + total)))
      else this.#execute(buffer, offset, total)
      offset += total
      if (this.closed) return
    }
    // The answers to every request of the chunk (a pipelining client sends several) leave in one
    // write: each socket write costs far more than the answers themselves.
    this.#send()
    if (offset > 0) this.lastRequest = Date.now()
    if (offset < end) {
      // Copied so that a 64 KiB chunk is not kept alive for a few trailing bytes.
      this.#partial = Buffer.from(buffer.subarray(offset))
      // A frame spread over several chunks keeps the time of its first bytes.
      if (offset > 0 || partial === null) this.partialStart = offset > 0 ? this.lastRequest : Date.now()
    } else {
      this.partialStart = 0
    }
    this.updateFlow()
  }

  #execute(frame: Buffer, offset: number, total: number): void {
    const transactionId = (frame[offset]! << 8) | frame[offset + 1]!
    const unitId = frame[offset + 6]!
    const fc = frame[offset + MBAP_LENGTH]!
    const unit = this.#resolveUnit(unitId)
    const out = this.#room()
    const at = this.#slabEnd
    let answer: UnitAnswer
    if (unit === undefined) {
      answer = writeException(out, at, fc, EXCEPTION_CODES.GATEWAY_TARGET_FAILED)
    } else {
      try {
        answer = unit.handle(frame, offset + MBAP_LENGTH, total - MBAP_LENGTH, out, at)
      } catch (error) {
        this.logger.error({ err: error }, 'modbus unit failed to answer')
        answer = writeException(out, at, fc, EXCEPTION_CODES.SERVER_DEVICE_FAILURE)
      }
    }
    const delayMs = unit === undefined ? 0 : unit.responseDelayMs
    if (typeof answer === 'number') {
      if (answer === 0) return
      stampHeader(out, at, answer, transactionId, unitId)
      if (delayMs <= 0 && this.#outbox.length === 0) {
        this.#slabEnd = at + answer
        return
      }
      // Held back, or behind an answer still pending: it needs bytes of its own until its turn.
      this.#hold(Buffer.from(out.subarray(at, at + answer)), delayMs)
      return
    }
    if (answer instanceof Promise) {
      this.#await(answer, null, fc, transactionId, unitId, delayMs)
      return
    }
    const inner = answer.answer
    if (typeof inner !== 'number') {
      this.#await(inner, answer, fc, transactionId, unitId, answer.delayMs)
      return
    }
    if (inner === 0) return
    stampHeader(out, at, inner, transactionId, unitId)
    this.#holdShaped(Buffer.from(out.subarray(at, at + inner)), answer)
  }

  /** Keeps the answer's place in the outbox until `pending` settles. */
  #await(pending: Promise<Buffer | null>, shape: ShapedAnswer | null, fc: number, transactionId: number, unitId: number, delayMs: number): void {
    this.#busy = true
    const slot: Slot = { frame: null, ready: false, timer: null, parts: 1, gapMs: 0 }
    this.#outbox.push(slot)
    // Not awaited: the answer takes its slot in the outbox when it is ready, while the connection
    // reads on; a unit that fails answers SERVER_DEVICE_FAILURE (the catch).
    void pending
      .catch((error: unknown) => {
        this.logger.error({ err: error }, 'modbus unit failed to answer')
        return buildExceptionResponse(fc, EXCEPTION_CODES.SERVER_DEVICE_FAILURE)
      })
      .then((response) => {
        if (this.closed) return
        if (response !== null) stampHeader(response, 0, response.length, transactionId, unitId)
        slot.frame = response !== null && shape !== null && shape.rewrite !== null ? shape.rewrite(response) : response
        if (shape !== null) {
          slot.parts = shape.parts
          slot.gapMs = shape.gapMs
        }
        this.#busy = false
        this.#release(slot, delayMs)
        this.#drainInbox()
        this.#flush()
        this.#send()
        this.updateFlow()
      })
  }

  /** Queues a shaped answer (see ShapedAnswer) behind the pending ones. */
  #holdShaped(response: Buffer, shape: ShapedAnswer): void {
    const slot: Slot = { frame: shape.rewrite === null ? response : shape.rewrite(response), ready: false, timer: null, parts: shape.parts, gapMs: shape.gapMs }
    this.#outbox.push(slot)
    this.#release(slot, shape.delayMs)
  }

  #drainInbox(): void {
    while (!this.#busy && this.#inbox.length > 0 && !this.closed) {
      const frame = this.#inbox.shift()!
      this.#execute(frame, 0, frame.length)
    }
  }

  /** Queues an answer behind the pending ones, ready now or after the delay. */
  #hold(response: Buffer, delayMs: number): void {
    const slot: Slot = { frame: response, ready: false, timer: null, parts: 1, gapMs: 0 }
    this.#outbox.push(slot)
    this.#release(slot, delayMs)
  }

  /** Marks a slot ready, now or after the delay, and moves whatever is ready at the head out. */
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
      this.#send()
      this.updateFlow()
    }, delayMs)
  }

  /** Appends the ready answers at the head of the outbox to the unsent answers, in order. */
  #flush(): void {
    const outbox = this.#outbox
    while (outbox.length > 0 && outbox[0]!.ready) {
      const slot = outbox[0]!
      const frame = slot.frame
      if (slot.parts > 1 && frame !== null && frame.length > 1 && !this.closed) {
        this.#splitOff(slot, frame)
        if (!slot.ready) return
        continue
      }
      outbox.shift()
      if (frame === null || this.closed) continue
      const slab = this.#room()
      frame.copy(slab, this.#slabEnd)
      this.#slabEnd += frame.length
    }
  }

  /**
   * Sends the first piece of a split answer in a write of its own; the rest waits in the slot,
   * gapMs longer (at once for a gap of 0, still in a write of its own).
   */
  #splitOff(slot: Slot, frame: Buffer): void {
    const size = Math.ceil(frame.length / slot.parts)
    this.#send()
    const slab = this.#room()
    frame.copy(slab, this.#slabEnd, 0, size)
    this.#slabEnd += size
    this.#send()
    slot.frame = frame.subarray(size)
    slot.parts--
    if (slot.gapMs <= 0) return
    slot.ready = false
    slot.timer = setTimeout(() => {
      slot.timer = null
      slot.ready = true
      this.#flush()
      this.#send()
      this.updateFlow()
    }, slot.gapMs)
  }

  /** The slab, with room for one more answer at #slabEnd (a full one is sent and replaced). */
  #room(): Buffer {
    const slab = this.#slab
    if (slab !== null && slab.length - this.#slabEnd >= MAX_ADU_LENGTH) return slab
    this.#send()
    this.#slabStart = this.#slabEnd = 0
    return (this.#slab = Buffer.allocUnsafe(SLAB_BYTES))
  }

  /** Writes the answers not yet sent, in one write. */
  #send(): void {
    if (this.#slabEnd === this.#slabStart || this.closed) return
    this.socket.write(this.#slab!.subarray(this.#slabStart, this.#slabEnd))
    this.#slabStart = this.#slabEnd
  }
}
