/**
 * Small parts every protocol adapter needs the same way: lifecycle steps that never overlap, and
 * a warning that a chatty client cannot turn into a flood of log lines.
 *
 * @example
 * const steps = new SerialSteps()
 * start(): Promise<void> { return steps.run(async () => { ... }) }
 */
import type { Logger } from 'pino'

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
