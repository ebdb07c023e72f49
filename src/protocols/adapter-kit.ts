/**
 * Small parts every protocol adapter needs the same way: lifecycle steps that never overlap, a
 * warning that a chatty client cannot turn into a flood of log lines, and the refusals of
 * settings changed while running.
 *
 * @example
 * const steps = new SerialSteps()
 * start(): Promise<void> { return steps.run(async () => { ... }) }
 */
import type { Logger } from 'pino'
import { ValidationError } from '../errors.js'
import type { HeldPort } from './adapter.js'

/**
 * The refusal of a setting that cannot be changed while the adapter runs.
 *
 * @example
 * readOnly({ name: 'boiler.modbus_slave', settable: ['response_delay'] }, 'port')
 * // ValidationError "Property 'port' of adapter 'boiler.modbus_slave' is read-only (settable: response_delay)"
 */
export function readOnly(adapter: { name: string; settable: readonly string[] }, name: string): ValidationError {
  const settable = adapter.settable.length ? ` (settable: ${adapter.settable.join(', ')})` : ''
  return new ValidationError(`Property '${name}' of adapter '${adapter.name}' is read-only${settable}`, [{ path: name, message: 'read-only' }])
}

/**
 * The refusal of a setting in seconds that is not a number from `min` to `max`, or null.
 *
 * @example
 * secondsProblem('response_delay', -1, 0, 3600) // ValidationError "'response_delay' must be a number of seconds from 0 to 3600"
 */
export function secondsProblem(name: string, value: unknown, min: number, max: number): ValidationError | null {
  if (typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max) return null
  return new ValidationError(`'${name}' must be a number of seconds from ${min} to ${max}`, [
    { path: name, message: `expected a number from ${min} to ${max}` },
  ])
}

/**
 * Runs asynchronous steps one after the other (start, stop, detach, attach of one adapter): a step
 * asked for while one runs waits for it, and a failed step does not stop the next.
 */
export class SerialSteps {
  #last: Promise<void> = Promise.resolve()

  run(step: () => Promise<void>): Promise<void> {
    const result = this.#last.then(step)
    this.#last = result.catch(() => undefined)
    return result
  }
}

/**
 * Logs at warn level at most once per interval and at debug level in between, so that a client
 * sending the same bad thing a thousand times a second leaves one warning a second.
 */
export class ThrottledWarning {
  readonly #logger: Logger
  readonly #intervalMs: number
  #last = 0

  constructor(logger: Logger, intervalMs = 1000) {
    this.#logger = logger
    this.#intervalMs = intervalMs
  }

  warn(fields: Record<string, unknown>, message: string): void {
    const now = Date.now()
    if (now - this.#last >= this.#intervalMs) {
      this.#last = now
      this.#logger.warn(fields, message)
    } else {
      this.#logger.debug(fields, message)
    }
  }
}

/**
 * Why a listener could not open `host:port`, for a fault: the words and the setting to change.
 * `servedOn` is another host on which Mimic itself already serves that port: a listener on
 * 0.0.0.0 and one on a single address cannot share a port, and "another program" would mislead.
 * `shared`: instances may share one listener (Modbus units), so the same host is a way out.
 * `heldBy` is a listener of another protocol of this server that holds the port (`servedOn`
 * wins when both are known).
 *
 * @example
 * listenProblem({ code: 'EADDRINUSE' }, '0.0.0.0', 5020, { servedOn: '127.0.0.1' })
 * // { path: 'host', message: 'port 5020 is already served by Mimic on 127.0.0.1: ...' }
 */
export function listenProblem(
  error: unknown,
  host: string,
  port: number,
  options: { label?: string; servedOn?: string | undefined; shared?: boolean; heldBy?: HeldPort | undefined } = {},
): { path: 'host' | 'port'; message: string } {
  const code = (error as NodeJS.ErrnoException).code
  const where = `${host}:${port}`
  const label = options.label ? `${options.label} port` : 'port'
  if (code === 'EADDRINUSE' && options.servedOn !== undefined) {
    const message =
      `${label} ${port} is already served by Mimic on ${options.servedOn}: a listener on ${host} cannot share it ` +
      `(0.0.0.0 takes every address); ${options.shared ? 'give both instances the same host, or another port' : 'give this one another port'}`
    return { path: 'host', message }
  }
  if (code === 'EADDRINUSE' && options.heldBy !== undefined) {
    const { holder, transport, host: theirs } = options.heldBy
    return {
      path: 'port',
      message: `${label} ${port} is already used by Mimic: ${holder} listens on it (${transport} on ${theirs}); give this one another port`,
    }
  }
  if (code === 'EADDRINUSE') return { path: 'port', message: `${label} ${where} is already in use by another program` }
  if (code === 'EACCES') return { path: 'port', message: `permission denied to listen on ${where} (ports below 1024 need privileges)` }
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return { path: 'host', message: `host ${host} is not an address of this machine` }
  return { path: 'port', message: `cannot listen on ${where}: ${(error as Error).message}` }
}
