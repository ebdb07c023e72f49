import type { Logger } from 'pino'
import type { SerialSettings } from '../../definition/serial-schema.js'
import { openSerialLine } from '../serial/port.js'
import type { SerialLine } from '../serial/port.js'
import type { Endpoint, LineHandler } from './endpoint.js'

/**
 * The `serial` transport of an `ascii` adapter: an instrument on a serial line (RS-232, a USB
 * adapter, a pseudo-terminal), as PyVISA reaches it with `ASRL/dev/ttyUSB0::INSTR`. The line is
 * opened by src/protocols/serial/port.ts (the one place Mimic opens serial lines, shared with
 * Modbus RTU). Input is cut into lines at the terminator's last character, as on TCP; each line's
 * answer is written back with the terminator, in order. A line holding bytes that are not text,
 * or longer than `max_line_length`, is discarded and counted (`dropped`): a serial line has one
 * peer, which cannot be closed.
 *
 * @example
 * const endpoint = new SerialEndpoint({ settings: { device: '/dev/pts/3', baudrate: 9600, parity: 'none', stopbits: 1, bytesize: 8 }, logger, handler })
 * await endpoint.listen()
 * await endpoint.close()
 */
export class SerialEndpoint implements Endpoint {
  readonly transport = 'serial'
  readonly host = ''
  readonly port = 0
  readonly waiting = 0
  readonly settings: SerialSettings
  readonly #handler: LineHandler
  readonly #logger: Logger
  #line: SerialLine | null = null
  #partial = ''
  #discarding = false
  /** Answers in order: each line waits for the one before it. */
  #chain: Promise<void> = Promise.resolve()
  #queued = 0
  #closed = false

  constructor(options: { settings: SerialSettings; logger: Logger; handler: LineHandler }) {
    this.settings = options.settings
    this.#handler = options.handler
    this.#logger = options.logger
  }

  /** 1 while the line is open (its one peer), else 0. */
  get clients(): number {
    return this.#line !== null && !this.#line.closed ? 1 : 0
  }

  /** The serial device. */
  get device(): string {
    return this.settings.device
  }

  listeners(): [] {
    return []
  }

  /** Opens the line; rejects with a SerialLineError naming the device. Resolves with 0 (a line has no port). */
  async listen(): Promise<number> {
    this.#line = await openSerialLine(this.settings, {
      onData: (chunk) => this.#receive(chunk),
      onLost: (error) => this.#logger.warn({ err: error, device: this.settings.device }, 'ascii serial line lost'),
    })
    return 0
  }

  async close(): Promise<void> {
    this.#closed = true
    await this.#line?.close()
  }

  #receive(chunk: Buffer): void {
    if (this.#closed) return
    const terminator = this.#handler.terminator
    const separator = terminator[terminator.length - 1]!
    const client = this.settings.device
    const text = this.#partial + chunk.toString('latin1')
    const parts = text.split(separator)
    this.#partial = parts.pop()!
    if (this.#partial.length > this.#handler.maxLineLength) {
      this.#partial = ''
      this.#discarding = true
      this.#handler.dropped('overlong', `more than max_line_length (${this.#handler.maxLineLength}) bytes without a terminator: discarded`, client)
    }
    for (const raw of parts) {
      if (this.#discarding) {
        // The end of a line already reported as too long.
        this.#discarding = false
        continue
      }
      const bad = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.exec(raw.replace(terminator.slice(0, -1), ''))
      if (bad !== null) {
        this.#handler.dropped('binary', `binary data: byte 0x${bad[0].charCodeAt(0).toString(16).padStart(2, '0')} is not text: the line is discarded`, client)
        continue
      }
      if (raw.trim() === '') continue
      const line = Buffer.from(raw, 'latin1').toString('utf8')
      if (this.#queued >= 1000) {
        this.#handler.dropped('queue', 'more than 1000 lines wait for their answers: the line is discarded', client)
        continue
      }
      this.#queued++
      this.#chain = this.#chain.then(() => this.#answer(line, client))
    }
  }

  async #answer(text: string, client: string): Promise<void> {
    let reply: string | null = null
    try {
      reply = await this.#handler.line(text, client)
    } catch {
      reply = null
    }
    if (reply !== null) {
      const delay = this.#handler.replyDelayMs()
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay))
    }
    this.#queued--
    const line = this.#line
    if (reply === null || this.#closed || line === null || line.closed) return
    if (!line.write(Buffer.from(reply + this.#handler.terminator, 'utf8'))) await new Promise<void>((resolve) => line.onDrain(resolve))
  }
}
