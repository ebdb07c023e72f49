import { ValidationError } from '../errors.js'
import type { PollingState } from '../snapshots/index.js'
import { Component, noArguments, type MethodHandler } from '../tree/component.js'
import { floatDocumentJson, floatPropertyJson } from '../values/float-properties.js'

/** Properties that are seconds: floats to a Python client even when integral (`interval: 1.0`). */
const FLOATS: ReadonlySet<string> = new Set(['interval', 'jitter'])

/** Shortest polling interval accepted, in seconds: keeps a typo from pinning a core. */
export const MIN_INTERVAL = 0.001

/**
 * Background polling settings: `start()` on the owner calls `run()` every `interval` seconds
 * (plus a random `jitter` of up to that many seconds either way, when set) while polling is
 * enabled, at most `max_iterations` times when set; `disable()` keeps `start()` from looping.
 *
 * @example
 * await polling.call('disable', { args: [], kwargs: {} })
 */
export class Polling extends Component {
  readonly type = 'Polling'
  #enabled = true
  #interval: number
  readonly #jitter: number
  readonly #maxIterations: number | undefined
  #iterations = 0
  readonly #onChange: () => void

  constructor(parent: Component, opts: { interval?: number; jitter?: number; maxIterations?: number; enabled?: boolean; onChange?: () => void } = {}) {
    super('polling', parent)
    this.#interval = opts.interval ?? 1.0
    this.#jitter = opts.jitter ?? 0
    this.#maxIterations = opts.maxIterations
    this.#enabled = opts.enabled ?? true
    this.#onChange = opts.onChange ?? (() => {})
  }

  get enabled(): boolean {
    return this.#enabled && (this.#maxIterations === undefined || this.#iterations < this.#maxIterations)
  }

  get interval(): number {
    return this.#interval
  }

  /** The wait before the next background run: the interval, moved by up to `jitter` either way. */
  nextInterval(): number {
    if (this.#jitter === 0) return this.#interval
    return Math.max(MIN_INTERVAL, this.#interval + (Math.random() * 2 - 1) * this.#jitter)
  }

  /** Counts one background run (for `max_iterations`). */
  counted(): void {
    this.#iterations++
  }

  override properties(): Record<string, unknown> {
    const props: Record<string, unknown> = { enabled: this.#enabled, interval: this.#interval }
    if (this.#jitter !== 0) props.jitter = this.#jitter
    if (this.#maxIterations !== undefined) Object.assign(props, { max_iterations: this.#maxIterations, iterations: this.#iterations })
    return props
  }

  override documentJson(): string {
    return floatDocumentJson(this, FLOATS)
  }

  override propertyJson(name: string): string | undefined {
    return floatPropertyJson(this, name, FLOATS)
  }

  override propertyProblem(name: string, value: unknown): string | null {
    if (name === 'interval')
      return typeof value !== 'number' || !Number.isFinite(value) || value < MIN_INTERVAL ? `expected a number of seconds >= ${MIN_INTERVAL}` : null
    if (name === 'enabled') return typeof value === 'boolean' ? null : 'expected true or false'
    return super.propertyProblem(name, value)
  }

  override async setProperty(name: string, value: unknown): Promise<void> {
    if (name !== 'interval' && name !== 'enabled') return await super.setProperty(name, value)
    const problem = this.propertyProblem(name, value)
    if (problem) throw new ValidationError(`Polling ${name}: ${problem}`, [{ path: name, message: problem }])
    if (name === 'interval') {
      this.#interval = value as number
      this.#onChange()
    } else this.#set(value as boolean)
  }

  /** Whether it is enabled, its interval and the runs counted (for a snapshot with state). */
  saveState(): PollingState {
    return { enabled: this.#enabled, interval: this.#interval, iterations: this.#iterations }
  }

  /** Takes back what `saveState` gave (checked by the snapshot's schema). */
  restoreState(state: PollingState): void {
    this.#enabled = state.enabled
    this.#interval = state.interval
    this.#iterations = state.iterations
    this.#onChange()
  }

  #set(enabled: boolean): void {
    this.#enabled = enabled
    if (enabled) this.#iterations = 0
    this.#onChange()
  }

  override methods(): Record<string, MethodHandler> {
    return {
      enable: noArguments(() => (this.#set(true), true)),
      disable: noArguments(() => (this.#set(false), true)),
    }
  }
}
