import type { Logger } from 'pino'
import { characterTimeMs, openSerialLine } from '../serial/port.js'
import type { SerialLine, SerialSettings } from '../serial/port.js'
import { settleAnswer } from './answer.js'
import type { SettledAnswer } from './answer.js'
import { DEFAULT_CONNECTION_RULES } from './connection-rules.js'
import type { ConnectionRules } from './connection-rules.js'
import { BROADCAST_FUNCTIONS, MAX_RTU_FRAME, RTU_OVERHEAD, crcOk, rtuRequestLength } from './rtu.js'
import { toRtu } from './rtu-connection.js'
import { UnitListener } from './unit-listener.js'

/**
 * One serial line (`transport: serial`) and the units on it: Modbus RTU as a slave on RS-485 or
 * RS-232 speaks it. Several units with the same device share the line (multi-drop), each
 * answering its own address; the line opens with its first unit and closes with its last, and
 * every unit of a line must give it the same settings.
 *
 * Framing follows the serial line spec (Modbus over Serial Line V1.02, 2.5.1.1): a frame ends with
 * a silence of 3.5 characters (computed from the baud rate and the character format; 1.75 ms
 * above 19200 baud, as the spec fixes it there). A request whose length its function code fixes
 * and whose CRC matches is handled as soon as its last byte is in, without waiting out the
 * silence: the master waits for the answer anyway, and Node's timers fire a millisecond or more
 * late, which would slow every exchange. Everything else (a bad CRC, an unknown function code, a
 * frame cut short) is judged when the silence ends it.
 *
 * As a real slave does: a frame whose CRC does not match is dropped without an answer and counted
 * on every unit of the line (each device on the wire sees it); a frame for address 0 is a
 * broadcast, whose write every unit applies and nobody answers; a frame for an address no unit of
 * the line serves is not answered (another device's, or nobody's). Requests are handled one at a
 * time, each answered (after its delay, in its pieces) before the next, as on a half-duplex line.
 *
 * There are no connections: idle_timeout, frame_timeout and max_connections do not apply, and a
 * `disconnect` fault drops what the line holds (the frame being received, the requests waiting,
 * an answer not yet sent), as a device that resets would. A line that fails while open (a USB
 * adapter unplugged) is reopened every LINE_RETRY_MS until it opens again or its last unit leaves;
 * `problem` says what went wrong meanwhile.
 *
 * @example
 * const listener = new ModbusSerialListener({ settings, logger })
 * listener.add(1, unit)
 * await listener.listen()
 */

/** Options of a line. */
export interface ModbusSerialListenerOptions {
  settings: SerialSettings
  logger: Logger
}

/** Complete frames waiting their turn; more are dropped (a master waits for each answer, so only a flood gets here). */
const MAX_QUEUE = 64
/** How often a line that failed is tried again. */
export const LINE_RETRY_MS = 1000
/** The silence that ends a frame above 19200 baud, fixed by the spec. */
const FAST_SILENCE_MS = 1.75

/**
 * Milliseconds of silence that end a frame: 3.5 characters, or 1.75 ms above 19200 baud.
 *
 * @example
 * frameSilenceMs({ baudrate: 9600, bytesize: 8, parity: 'even', stopbits: 1 }) // 4.0104...
 * frameSilenceMs({ baudrate: 115200, bytesize: 8, parity: 'none', stopbits: 1 }) // 1.75
 */
export function frameSilenceMs(settings: Pick<SerialSettings, 'baudrate' | 'bytesize' | 'parity' | 'stopbits'>): number {
  return settings.baudrate > 19200 ? FAST_SILENCE_MS : characterTimeMs(settings, 3.5)
}

/**
 * One serial line and its units (see the module comment).
 *
 * @example
 * const listener = new ModbusSerialListener({ settings: { device: '/dev/ttyUSB0', baudrate: 9600, parity: 'none', stopbits: 1, bytesize: 8 }, logger })
 * listener.add(1, unit)
 * await listener.listen()
 * await listener.close()
 */
export class ModbusSerialListener extends UnitListener {
  readonly transport = 'serial' as const
  readonly settings: Readonly<SerialSettings>
  #logger: Logger
  #silenceMs: number
  #line: SerialLine | null = null
  #listening: Promise<number> | null = null
  #closing: Promise<void> | null = null
  #problem: string | null = null
  #retry: NodeJS.Timeout | null = null
  /** Bytes of the frame being received. */
  #held = Buffer.allocUnsafe(MAX_RTU_FRAME)
  #heldLength = 0
  /** More bytes arrived than a frame can hold: the frame is dropped when its silence comes. */
  #overrun = false
  #silence: NodeJS.Timeout | null = null
  #queue: Buffer[] = []
  #busy = false
  #wait: { timer: NodeJS.Timeout; resolve: () => void } | null = null
  /** Bumped by a reset (a `disconnect` fault, a reopened line): an answer of an older epoch is not sent. */
  #epoch = 0

  constructor(options: ModbusSerialListenerOptions) {
    super('', 0)
    this.settings = { ...options.settings }
    this.#logger = options.logger.child({ device: options.settings.device })
    this.#silenceMs = frameSilenceMs(options.settings)
  }

  /** The device of the line. */
  get device(): string {
    return this.settings.device
  }

  /** Always 0: a serial line has no connections. */
  get connectionCount(): number {
    return 0
  }

  /** The defaults: the connection rules do not apply to a serial line. */
  get rules(): ConnectionRules {
    return DEFAULT_CONNECTION_RULES
  }

  /** What went wrong with a line that failed while open and is being retried; null while it is fine. */
  get problem(): string | null {
    return this.#problem
  }

  /** Opens the line (once); resolves with 0 (a line has no port), rejects with a SerialLineError naming the device. */
  listen(): Promise<number> {
    this.#listening ??= this.#open().then(() => 0)
    return this.#listening
  }

  /** Drops what the line holds (see the module comment); returns 1, the line it reset. */
  dropConnections(): number {
    this.#reset()
    return 1
  }

  /** Closes the line; safe to call more than once. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      if (this.#retry !== null) clearTimeout(this.#retry)
      this.#retry = null
      this.#reset()
      if (this.#listening !== null) await this.#listening.catch(() => undefined)
      await this.#line?.close()
      this.#line = null
    })()
    return this.#closing
  }

  async #open(): Promise<void> {
    const line = await openSerialLine(this.settings, {
      onData: (chunk) => this.#onData(chunk),
      onLost: (error) => this.#lost(error.message),
    })
    if (this.#closing !== null) {
      await line.close()
      return
    }
    this.#line = line
  }

  #lost(message: string): void {
    if (this.#closing !== null) return
    this.#line = null
    this.#reset()
    if (this.#problem === null) this.#logger.warn({ problem: message }, 'modbus serial line lost; retrying')
    this.#problem = message
    this.#retry = setTimeout(() => {
      this.#retry = null
      if (this.#closing !== null) return
      this.#open().then(
        () => {
          if (this.#line === null) return
          this.#logger.info('modbus serial line open again')
          this.#problem = null
        },
        (error: unknown) => this.#lost((error as Error).message),
      )
    }, LINE_RETRY_MS)
    this.#retry.unref()
  }

  #reset(): void {
    this.#epoch++
    if (this.#silence !== null) clearTimeout(this.#silence)
    this.#silence = null
    this.#heldLength = 0
    this.#overrun = false
    this.#queue = []
    if (this.#wait !== null) {
      clearTimeout(this.#wait.timer)
      this.#wait.resolve()
      this.#wait = null
    }
  }

  #onData(chunk: Buffer): void {
    if (this.#closing !== null) return
    if (this.#silence !== null) clearTimeout(this.#silence)
    this.#silence = null
    if (this.#overrun || this.#heldLength + chunk.length > MAX_RTU_FRAME) {
      this.#overrun = true
      this.#heldLength = 0
    } else {
      chunk.copy(this.#held, this.#heldLength)
      this.#heldLength += chunk.length
      this.#takeComplete()
    }
    if (this.#heldLength > 0 || this.#overrun) this.#silence = setTimeout(() => this.#endFrame(), this.#silenceMs)
  }

  /** Takes the complete requests the held bytes begin with (see the module comment). */
  #takeComplete(): void {
    let offset = 0
    while (offset < this.#heldLength) {
      const length = rtuRequestLength(this.#held, offset, this.#heldLength)
      if (length <= 0 || offset + length > this.#heldLength || !crcOk(this.#held, offset, length)) break
      this.#enqueue(Buffer.from(this.#held.subarray(offset, offset + length)))
      offset += length
    }
    if (offset === 0) return
    this.#held.copy(this.#held, 0, offset, this.#heldLength)
    this.#heldLength -= offset
  }

  /** The silence ended a frame: what is held is one, good or bad. */
  #endFrame(): void {
    this.#silence = null
    if (this.#overrun) {
      this.#logger.debug('modbus serial: dropped a frame longer than any request')
      this.#overrun = false
      this.#heldLength = 0
      this.#crcError()
      return
    }
    if (this.#heldLength === 0) return
    const frame = Buffer.from(this.#held.subarray(0, this.#heldLength))
    this.#heldLength = 0
    this.#enqueue(frame)
  }

  #enqueue(frame: Buffer): void {
    if (this.#queue.length >= MAX_QUEUE) {
      this.#logger.debug('modbus serial: dropped a frame, too many waiting')
      return
    }
    this.#queue.push(frame)
    this.#next()
  }

  #next(): void {
    while (!this.#busy && this.#closing === null && this.#queue.length > 0) {
      const pending = this.#handle(this.#queue.shift()!)
      if (pending === null) continue
      this.#busy = true
      // Not awaited: the next frame waits on #busy, and a failed request is logged (the catch).
      void pending
        .catch((error: unknown) => this.#logger.error({ err: error }, 'modbus serial request failed'))
        .then(() => {
          this.#busy = false
          this.#next()
        })
    }
  }

  /** Handles one frame; a promise while it is not done, null when it was done at once. */
  #handle(frame: Buffer): Promise<void> | null {
    if (frame.length < 4 || !crcOk(frame, 0, frame.length)) {
      this.#crcError()
      return null
    }
    const unitId = frame[0]!
    const pduLength = frame.length - RTU_OVERHEAD
    if (unitId === 0) {
      if (!BROADCAST_FUNCTIONS.has(frame[1]!)) return null
      const all = [...this.units.values()].map((unit) => settleAnswer(unit, frame, 1, pduLength, this.#logger))
      return Promise.all(all).then(() => undefined)
    }
    // Only the unit registered under the address: on a line, 255 is some device's address like any other.
    const unit = this.units.get(unitId)
    if (unit === undefined) return null
    const epoch = this.#epoch
    return settleAnswer(unit, frame, 1, pduLength, this.#logger).then((settled) => this.#answer(settled, unitId, epoch))
  }

  /** Sends an answer after its delay, in its pieces; resolves once it has been handed over. */
  async #answer(settled: SettledAnswer, unitId: number, epoch: number): Promise<void> {
    if (settled.adu === null) return
    const frame = toRtu(settled, unitId)
    if (settled.delayMs > 0) await this.#pause(settled.delayMs)
    const parts = Math.min(Math.max(1, settled.parts), frame.length)
    const size = Math.ceil(frame.length / parts)
    for (let from = 0; from < frame.length; from += size) {
      if (from > 0 && settled.gapMs > 0) await this.#pause(settled.gapMs)
      if (epoch !== this.#epoch || this.#line === null || this.#closing !== null) return
      this.#line.write(frame.subarray(from, from + size))
    }
  }

  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#wait = {
        timer: setTimeout(() => {
          this.#wait = null
          resolve()
        }, ms),
        resolve,
      }
    })
  }

  #crcError(): void {
    for (const unit of this.units.values()) unit.crcError?.()
  }
}
