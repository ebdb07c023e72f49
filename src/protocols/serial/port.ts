import { stat } from 'node:fs/promises'
import { SerialPortStream } from '@serialport/stream'
import type { SerialSettings } from '../../definition/serial-schema.js'
import { hangupAwareBinding } from './hangup-binding.js'

export {
  SERIAL_DEFAULTS,
  SERIAL_PARITIES,
  serialDeviceIssue,
  serialSettingsOf,
  serialSettingsSchema,
  serialSettingsShape,
} from '../../definition/serial-schema.js'
export type { SerialParity, SerialSettings } from '../../definition/serial-schema.js'

/**
 * Opens a serial line (a tty: a USB adapter, an on-board UART, a pseudo-terminal) with its
 * settings, through the `serialport` package (its native part ships prebuilt for Linux, macOS and
 * Windows, so installing it needs no compiler). Every adapter that talks over a serial line uses
 * this one function, so they fail alike: a device that does not exist, that is not a terminal, that
 * this process may not open, or that another program holds (the port is locked while open, as
 * other serial programs do) is a SerialLineError whose message names the device.
 *
 * @example
 * const line = await openSerialLine({ device: '/dev/ttyUSB0', baudrate: 9600, parity: 'none', stopbits: 1, bytesize: 8 }, {
 *   onData: (chunk) => console.log(chunk),
 * })
 * line.write(Buffer.from([1, 3, 0, 0, 0, 1, 0x84, 0x0a]))
 * await line.close()
 */

/** Why a line could not be opened: see SerialLineError.reason. */
export type SerialLineProblem = 'missing' | 'not_a_terminal' | 'denied' | 'busy' | 'failed'

/**
 * A line that could not be opened, or failed: `reason` says which way, the message names the device.
 *
 * @example
 * err instanceof SerialLineError && err.reason === 'busy'
 */
export class SerialLineError extends Error {
  readonly device: string
  readonly reason: SerialLineProblem

  constructor(device: string, reason: SerialLineProblem, detail: string) {
    super(`serial device ${device}: ${detail}`)
    this.name = 'SerialLineError'
    this.device = device
    this.reason = reason
  }
}

/** What a line tells its user. */
export interface SerialLineHandlers {
  /** Bytes as they arrive, in the chunks the operating system hands over. */
  onData: (chunk: Buffer) => void
  /** The line closed by itself (the device went away, a read failed); not called after close(). */
  onLost?: (error: SerialLineError) => void
}

/** An open line. */
export interface SerialLine {
  readonly settings: Readonly<SerialSettings>
  /** Queues bytes for sending; false when the queue is over its mark (wait for 'drain' with onDrain). */
  write: (data: Buffer) => boolean
  /** Calls `listener` once the queue has drained. */
  onDrain: (listener: () => void) => void
  /** Bytes queued and not yet handed to the operating system. */
  readonly writableLength: number
  readonly closed: boolean
  /** Closes the line; safe to call more than once. */
  close: () => Promise<void>
}

/**
 * Bits on the wire per character: a start bit, the data bits, a parity bit when there is parity,
 * the stop bits.
 *
 * @example
 * characterBits({ bytesize: 8, parity: 'even', stopbits: 1 }) // 11
 */
export function characterBits(settings: Pick<SerialSettings, 'bytesize' | 'parity' | 'stopbits'>): number {
  return 1 + settings.bytesize + (settings.parity === 'none' ? 0 : 1) + settings.stopbits
}

/**
 * Milliseconds that `characters` characters take on the line.
 *
 * @example
 * characterTimeMs({ baudrate: 9600, bytesize: 8, parity: 'none', stopbits: 1 }, 3.5) // 3.6458...
 */
export function characterTimeMs(settings: Pick<SerialSettings, 'baudrate' | 'bytesize' | 'parity' | 'stopbits'>, characters = 1): number {
  return (characters * characterBits(settings) * 1000) / settings.baudrate
}

/**
 * Opens the line and resolves once it is open; rejects with a SerialLineError naming the device.
 *
 * @example
 * const line = await openSerialLine(settings, { onData, onLost: (err) => log.warn(err.message) })
 */
export async function openSerialLine(settings: SerialSettings, handlers: SerialLineHandlers): Promise<SerialLine> {
  const device = settings.device
  await checkDevice(device)
  const port = new SerialPortStream({
    path: device,
    baudRate: settings.baudrate,
    dataBits: settings.bytesize,
    stopBits: settings.stopbits,
    parity: settings.parity,
    // An exclusive lock, so that two programs (or two lines of ours) never share a device unawares.
    lock: true,
    autoOpen: false,
    // So that a device that goes away is reported, not read forever (see hangup-binding.ts).
    binding: hangupAwareBinding,
  })
  await new Promise<void>((resolve, reject) => {
    port.open((error) => (error ? reject(openError(device, error)) : resolve()))
  })
  let closing: Promise<void> | null = null
  port.on('data', (chunk: Buffer) => handlers.onData(chunk))
  // Errors after opening end in 'close' too (with the error); 'error' must still have a listener.
  port.on('error', () => undefined)
  port.on('close', (error: Error | null) => {
    if (closing !== null) return
    closing = Promise.resolve()
    handlers.onLost?.(new SerialLineError(device, 'failed', error !== null && error !== undefined ? `closed: ${error.message}` : 'closed'))
  })
  return {
    settings: { ...settings },
    write: (data) => port.write(data),
    onDrain: (listener) => void port.once('drain', listener),
    get writableLength() {
      return port.writableLength
    },
    get closed() {
      return closing !== null
    },
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        if (!port.isOpen) return resolve()
        port.close(() => resolve())
      })
      return closing
    },
  }
}

/** Tells a missing device and a file that is no terminal apart before the native open, which only says "cannot open". */
async function checkDevice(device: string): Promise<void> {
  // COM ports on Windows are no files to look at.
  if (process.platform === 'win32') return
  let info
  try {
    info = await stat(device)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new SerialLineError(device, 'missing', 'no such device')
    if (code === 'EACCES') throw new SerialLineError(device, 'denied', 'permission denied (is this user in the dialout group?)')
    throw new SerialLineError(device, 'failed', (error as Error).message)
  }
  if (!info.isCharacterDevice()) throw new SerialLineError(device, 'not_a_terminal', 'not a serial device (not a character device)')
}

/** The native layer's errors carry no code, only a message: sort them by it. */
function openError(device: string, error: Error): SerialLineError {
  const text = error.message
  if (/lock|resource temporarily unavailable|busy/i.test(text)) return new SerialLineError(device, 'busy', 'busy: another program has it open')
  if (/permission denied|EACCES/i.test(text)) return new SerialLineError(device, 'denied', 'permission denied (is this user in the dialout group?)')
  if (/no such file/i.test(text)) return new SerialLineError(device, 'missing', 'no such device')
  if (/inappropriate ioctl|not a typewriter/i.test(text)) return new SerialLineError(device, 'not_a_terminal', 'not a serial device')
  return new SerialLineError(device, 'failed', text.replace(/^Error:?\s*/, ''))
}
