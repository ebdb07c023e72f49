import { ValidationError } from '../errors.js'
import { Component, type MethodHandler } from '../tree/component.js'

/** Shortest polling interval accepted, in seconds: keeps a typo from pinning a core. */
export const MIN_INTERVAL = 0.001

/**
 * Background polling settings: `start()` on the owner calls `run()` every `interval` seconds
 * while polling is enabled; `disable()` keeps `start()` from looping.
 *
 * @example
 * await polling.call('disable', { args: [], kwargs: {} })
 */
export class Polling extends Component {
  readonly type = 'Polling'
  #enabled = true
  #interval: number
  readonly #onChange: () => void

  constructor(parent: Component, opts: { interval?: number; onChange?: () => void } = {}) {
    super('polling', parent)
    this.#interval = opts.interval ?? 1.0
    this.#onChange = opts.onChange ?? (() => {})
  }

  get enabled(): boolean {
    return this.#enabled
  }

  get interval(): number {
    return this.#interval
  }

  override properties(): Record<string, unknown> {
    return { enabled: this.#enabled, interval: this.#interval }
  }

  override async setProperty(name: string, value: unknown): Promise<void> {
    if (name === 'interval') {
      if (typeof value !== 'number' || !Number.isFinite(value) || value < MIN_INTERVAL) {
        throw new ValidationError(`Polling interval must be a number of seconds >= ${MIN_INTERVAL}`, [
          { path: 'interval', message: `expected a number >= ${MIN_INTERVAL}` },
        ])
      }
      this.#interval = value
      this.#onChange()
      return
    }
    if (name === 'enabled') {
      if (typeof value !== 'boolean') throw new ValidationError('Polling enabled must be true or false', [{ path: 'enabled', message: 'expected a boolean' }])
      this.#set(value)
      return
    }
    await super.setProperty(name, value)
  }

  #set(enabled: boolean): void {
    this.#enabled = enabled
    this.#onChange()
  }

  override methods(): Record<string, MethodHandler> {
    return {
      enable: () => {
        this.#set(true)
        return true
      },
      disable: () => {
        this.#set(false)
        return true
      },
    }
  }
}
