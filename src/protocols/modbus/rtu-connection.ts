import type { Socket } from 'node:net'
import type { Logger } from 'pino'
import { MBAP_LENGTH, stampHeader } from './codec.js'
import type { ModbusUnit } from './connection.js'
import { settleAnswer } from './answer.js'
import { StreamConnection } from './stream-connection.js'
import type { SettledAnswer } from './answer.js'
import { BROADCAST_FUNCTIONS, MAX_RTU_FRAME, RTU_OVERHEAD, appendCrc, crcOk, rtuRequestLength } from './rtu.js'

/**
 * One `rtu_over_tcp` connection: Modbus RTU frames (address, PDU, CRC-16) over a TCP stream, as a
 * serial-to-Ethernet converter passes them on. The stream has no silent interval, so a frame ends
 * where its function code says (rtu.ts); a function code of unknown length takes whatever the
 * connection holds. A frame whose CRC does not match is dropped without an answer and counted on
 * every unit of the listener (every device of a serial line sees it). A frame for address 0 is a
 * broadcast: a write is applied by every unit and nobody answers; a frame for an address no unit
 * serves is not answered either (no device on the line has it).
 *
 * Requests run one at a time, each answered (after its delay, in its pieces) before the next is
 * handled, as a half-duplex line would. Memory is bounded: the partial frame is at most
 * MAX_RTU_FRAME bytes (a longer one cannot be a request: the bytes held are dropped), and reading
 * pauses while MAX_QUEUE frames wait or the socket's write buffer is full.
 *
 * @example
 * server.on('connection', (socket) => new RtuConnection({ socket, resolveUnit, units, logger }))
 */

/** Options of a connection. */
export interface RtuConnectionOptions {
  socket: Socket
  /** The unit that serves an address, or undefined (no answer). */
  resolveUnit: (unitId: number) => ModbusUnit | undefined
  /** Every unit of the listener, for broadcasts and CRC errors. */
  units: () => Iterable<ModbusUnit>
  logger: Logger
  onClose?: (connection: RtuConnection) => void
}

/** Complete frames waiting their turn before reading pauses. */
const MAX_QUEUE = 64
/** Bytes queued in the socket before reading pauses. */
const MAX_WRITE_BUFFER = 1 << 16

/**
 * One client connection of an `rtu_over_tcp` listener (see the module comment).
 *
 * @example
 * const connection = new RtuConnection({ socket, resolveUnit: (id) => units.get(id), units: () => units.values(), logger })
 * connection.destroy()
 */
export class RtuConnection extends StreamConnection {
  #resolveUnit: (unitId: number) => ModbusUnit | undefined
  #units: () => Iterable<ModbusUnit>
  #partial: Buffer | null = null
  #queue: Buffer[] = []
  #busy = false
  #timer: NodeJS.Timeout | null = null

  constructor(options: RtuConnectionOptions) {
    super(options.socket, options.logger, 'modbus rtu connection', options.onClose as ((c: StreamConnection) => void) | undefined)
    this.#resolveUnit = options.resolveUnit
    this.#units = options.units
  }

  /** True while a request is being answered or waits its turn. */
  get answering(): boolean {
    return this.#busy || this.#queue.length > 0
  }

  protected isFull(): boolean {
    return this.#queue.length >= MAX_QUEUE || this.socket.writableLength >= MAX_WRITE_BUFFER
  }

  protected released(): void {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    this.#queue = []
    this.#partial = null
  }

  protected onData(chunk: Buffer): void {
    let buffer = chunk
    if (this.#partial !== null) {
      buffer = Buffer.concat([this.#partial, chunk])
      this.#partial = null
    }
    const end = buffer.length
    let offset = 0
    while (offset < end) {
      let total = rtuRequestLength(buffer, offset, end)
      if (total === 0) break
      // An unknown function code: the frame is what arrived (a converter forwards a frame whole).
      if (total < 0) total = end - offset
      if (total > MAX_RTU_FRAME) {
        this.logger.debug({ remote: this.remote, length: total }, 'modbus rtu: dropping bytes that cannot start a request')
        this.#crcError()
        offset = end
        break
      }
      if (end - offset < total) break
      this.#queue.push(Buffer.from(buffer.subarray(offset, offset + total)))
      offset += total
    }
    if (offset > 0) this.lastRequest = Date.now()
    if (offset < end) {
      const hadPartial = this.partialStart !== 0 && offset === 0
      this.#partial = Buffer.from(buffer.subarray(offset))
      if (!hadPartial) this.partialStart = Date.now()
    } else {
      this.partialStart = 0
    }
    this.#next()
    this.updateFlow()
  }

  /** Handles the frames queued, one at a time. */
  #next(): void {
    while (!this.#busy && !this.closed && this.#queue.length > 0) {
      const frame = this.#queue.shift()!
      const pending = this.#handle(frame)
      if (pending === null) continue
      this.#busy = true
      // Not awaited: the next frame waits on #busy, and a failed request is logged (the catch).
      void pending
        .catch((error: unknown) => this.logger.error({ err: error }, 'modbus rtu request failed'))
        .then(() => {
          this.#busy = false
          this.#next()
          this.updateFlow()
        })
    }
  }

  /** Handles one frame; a promise while it is not done, null when it was done at once. */
  #handle(frame: Buffer): Promise<void> | null {
    if (!crcOk(frame, 0, frame.length)) {
      this.#crcError()
      return null
    }
    const unitId = frame[0]!
    const pduLength = frame.length - RTU_OVERHEAD
    if (unitId === 0) {
      if (!BROADCAST_FUNCTIONS.has(frame[1]!)) return null
      const all = [...this.#units()].map((unit) => settleAnswer(unit, frame, 1, pduLength, this.logger))
      return Promise.all(all).then(() => undefined)
    }
    const unit = this.#resolveUnit(unitId)
    if (unit === undefined) return null
    return settleAnswer(unit, frame, 1, pduLength, this.logger).then((settled) => this.#answer(settled, unitId))
  }

  /** Sends an answer after its delay, in its pieces; resolves once it has left. */
  async #answer(settled: SettledAnswer, unitId: number): Promise<void> {
    if (settled.adu === null || this.closed) return
    const frame = toRtu(settled, unitId)
    if (settled.delayMs > 0) await this.#wait(settled.delayMs)
    const parts = Math.min(Math.max(1, settled.parts), frame.length)
    const size = Math.ceil(frame.length / parts)
    for (let from = 0; from < frame.length && !this.closed; from += size) {
      if (from > 0 && settled.gapMs > 0) await this.#wait(settled.gapMs)
      if (!this.closed) this.socket.write(frame.subarray(from, from + size))
    }
  }

  #wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#timer = setTimeout(() => {
        this.#timer = null
        resolve()
      }, ms)
    })
  }

  #crcError(): void {
    for (const unit of this.#units()) unit.crcError?.()
  }
}

/**
 * The RTU frame of a settled answer. A corrupted answer (a `corrupt` fault) is rewritten in its
 * MBAP form first, as on TCP (junk scrambles the PDU, the header kinds touch nothing RTU sends),
 * then leaves with its CRC inverted, so that a client always sees a frame that fails its check.
 * The serial line (serial-listener.ts) sends its answers through it too.
 *
 * @example
 * socket.write(toRtu(settled, 1))
 */
export function toRtu(settled: SettledAnswer, unitId: number): Buffer {
  let adu = settled.adu!
  if (settled.rewrite !== null) {
    stampHeader(adu, 0, adu.length, 0, unitId)
    adu = settled.rewrite(adu)
  }
  const frame = Buffer.allocUnsafe(adu.length - MBAP_LENGTH + RTU_OVERHEAD)
  frame[0] = settled.rewrite !== null ? adu[6]! : unitId
  adu.copy(frame, 1, MBAP_LENGTH)
  appendCrc(frame, 0, frame.length - 2)
  if (settled.rewrite !== null) {
    frame[frame.length - 2] = ~frame[frame.length - 2]! & 0xff
    frame[frame.length - 1] = ~frame[frame.length - 1]! & 0xff
  }
  return frame
}
