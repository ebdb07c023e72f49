import pino, { type DestinationStream, type Logger } from 'pino'
import type { LogBuffer } from './log-buffer.js'

/** What the server's logger writes to. */
export interface ServerLoggerOptions {
  level: string
  /** The ring every record also goes to (the `logs` nodes read it). */
  buffer: LogBuffer
  /** Where the JSON lines go; stdout when omitted. */
  destination?: DestinationStream
}

/**
 * The server's pino logger: each record is serialized once and written both to the destination
 * (stdout: JSON lines, as before) and to the log buffer. The logger's own level filters; both
 * streams take whatever passes it.
 *
 * @example
 * const buffer = new LogBuffer(10_000)
 * const logger = createServerLogger({ level: 'info', buffer })
 */
export function createServerLogger(options: ServerLoggerOptions): Logger {
  const destination = options.destination ?? pino.destination(1)
  const streams = pino.multistream([
    { level: 'trace', stream: destination },
    { level: 'trace', stream: options.buffer },
  ])
  return pino({ level: options.level, base: { service: 'mimic' } }, streams)
}
