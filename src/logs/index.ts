/**
 * The server's recent log records, kept in memory for the `logs` nodes, the event stream and the
 * dashboard (docs/logs.md).
 *
 * @example
 * import { LogBuffer, createServerLogger } from './logs/index.js'
 * const buffer = new LogBuffer(10_000)
 * const logger = createServerLogger({ level: 'info', buffer })
 */
export { DEFAULT_LOG_BUFFER, LOG_LEVELS, LogBuffer, MAX_MESSAGE_CHARS, parseSince } from './log-buffer.js'
export type { LogEntry, LogLevelName, LogQuery } from './log-buffer.js'
export { createServerLogger, LOG_FORMATS, resolveLogFormat } from './logger.js'
export type { LogFormat, ServerLoggerOptions } from './logger.js'
