import { createRequire } from 'node:module'
import pino, { type DestinationStream, type Logger } from 'pino'
import type PinoPretty from 'pino-pretty'
import type { LogBuffer } from './log-buffer.js'

/**
 * pino-pretty, loaded when a pretty log is first asked for: loading it costs a process about
 * 17 ms of CPU, which servers writing JSON (under a supervisor, in a container, in the tests) need
 * not pay. `require`, not `import()`: the logger is made synchronously.
 */
const loadPretty = (): typeof PinoPretty => createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty

/** How records are written: `pretty` lines for people, `json` lines for machines, `auto` pretty on a terminal only. */
export const LOG_FORMATS = ['pretty', 'json', 'auto'] as const

export type LogFormat = (typeof LOG_FORMATS)[number]

/** What the server's logger writes to. */
export interface ServerLoggerOptions {
  level: string
  /** The ring every record also goes to (the `logs` nodes read it), as structured records whatever the format. */
  buffer: LogBuffer
  /** Where the lines go; stdout when omitted. */
  destination?: DestinationStream
  /** `auto` (the default) writes pretty lines when the destination is a terminal, JSON lines otherwise. */
  format?: LogFormat
}

/**
 * The format `auto` stands for: pretty on a terminal, JSON into a pipe or a file, where a log
 * collector or `jq` reads it.
 *
 * @example
 * resolveLogFormat('auto', process.stdout.isTTY) // 'pretty' in a terminal, 'json' under systemd or in CI
 */
export function resolveLogFormat(format: LogFormat, isTerminal: boolean | undefined): 'pretty' | 'json' {
  return format === 'auto' ? (isTerminal ? 'pretty' : 'json') : format
}

/**
 * The server's pino logger: each record is serialized once and written both to the destination
 * (stdout: JSON lines, or pretty lines for a person) and to the log buffer. The logger's own level
 * filters; both streams take whatever passes it.
 *
 * @example
 * const buffer = new LogBuffer(10_000)
 * const logger = createServerLogger({ level: 'info', buffer, format: 'auto' })
 */
export function createServerLogger(options: ServerLoggerOptions): Logger {
  const isTerminal = options.destination ? (options.destination as { isTTY?: boolean }).isTTY : process.stdout.isTTY
  const format = resolveLogFormat(options.format ?? 'auto', isTerminal)
  const destination =
    format === 'json'
      ? (options.destination ?? pino.destination(1))
      : loadPretty()({
          destination: options.destination ?? 1,
          // Synchronous like the JSON destination: the lines before a process.exit (a forced shutdown) are not lost.
          sync: true,
          // Colours only for a terminal; pino-pretty's own test also honours NO_COLOR and FORCE_COLOR.
          ...(isTerminal ? {} : { colorize: false }),
          translateTime: 'SYS:HH:MM:ss.l',
          ignore: 'pid,hostname,service',
          singleLine: true,
        })
  const streams = pino.multistream([
    { level: 'trace', stream: destination },
    { level: 'trace', stream: options.buffer },
  ])
  return pino({ level: options.level, base: { service: 'mimic' } }, streams)
}
