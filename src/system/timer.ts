import { ValidationError } from '../errors.js'
import { Component, type MethodHandler } from '../tree/component.js'

/**
 * Simulated time of an instance (or of the whole system). Each run advances `time` by `dt`;
 * setting `time` pins it, so every later run sees exactly that time until it is set again or
 * `reset()` unpins it — the way to step a model deterministically from a test.
 *
 * @example
 * timer.setProperty('time', 1.5) // pinned: run() keeps time at 1.5
 */
export class Timer extends Component {
  readonly type = 'Timer'
  #time = 0
  #dt: number
  #pinned = false
  readonly #defaultDt: number

  constructor(parent: Component, dt = 1.0) {
    super('timer', parent)
    this.#dt = dt
    this.#defaultDt = dt
  }

  get time(): number {
    return this.#time
  }

  get dt(): number {
    return this.#dt
  }

  get pinned(): boolean {
    return this.#pinned
  }

  /** Moves time on after a step (unless pinned); `dt` overrides the timer's own step once. */
  advance(dt = this.#dt): void {
    if (!this.#pinned) this.#time += dt
  }

  override properties(): Record<string, unknown> {
    return { time: this.#time, dt: this.#dt, pinned: this.#pinned }
  }

  override async setProperty(name: string, value: unknown): Promise<void> {
    if (name === 'time' || name === 'dt') {
      if (typeof value !== 'number' || !Number.isFinite(value))
        throw new ValidationError(`Timer '${name}' must be a finite number`, [{ path: name, message: 'expected a finite number' }])
      if (name === 'dt' && value <= 0) throw new ValidationError("Timer 'dt' must be greater than 0", [{ path: 'dt', message: 'must be > 0' }])
      if (name === 'time') {
        this.#time = value
        this.#pinned = true
      } else this.#dt = value
      return
    }
    if (name === 'pinned') {
      if (typeof value !== 'boolean') throw new ValidationError("Timer 'pinned' must be true or false", [{ path: 'pinned', message: 'expected a boolean' }])
      this.#pinned = value
      return
    }
    await super.setProperty(name, value)
  }

  /** Back to time 0, unpinned, with the original dt. */
  reset(): void {
    this.#time = 0
    this.#dt = this.#defaultDt
    this.#pinned = false
  }

  override methods(): Record<string, MethodHandler> {
    return {
      reset: () => {
        this.reset()
        return true
      },
    }
  }
}
