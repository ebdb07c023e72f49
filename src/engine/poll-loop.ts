/**
 * The background loop behind `start()`: calls `tick` every `interval()` seconds at a fixed rate
 * (the next tick is due one interval after the previous one started, so the time a tick takes
 * does not stretch the period) for as long as `wanted()` holds. Ticks never overlap.
 *
 * @example
 * const loop = new PollLoop({ interval: () => 0.1, wanted: () => running, tick: () => step() })
 * loop.start()
 */
export class PollLoop {
  readonly #interval: () => number
  readonly #wanted: () => boolean
  readonly #tick: () => Promise<void>
  #timer: NodeJS.Timeout | undefined
  #last = 0

  constructor(opts: { interval: () => number; wanted: () => boolean; tick: () => Promise<void> }) {
    this.#interval = opts.interval
    this.#wanted = opts.wanted
    this.#tick = opts.tick
  }

  /** Starts counting from now (the first tick comes one interval later). */
  start(): void {
    this.#last = performance.now()
    this.update()
  }

  /** Arms the next tick when the loop is wanted and not armed; disarms it when not wanted. */
  update(): void {
    if (!this.#wanted()) {
      this.stop()
      return
    }
    if (this.#timer) return
    const due = this.#last + this.#interval() * 1000
    this.#timer = setTimeout(() => void this.#run(), Math.max(0, due - performance.now()))
  }

  /** Disarms the next tick; a tick already running finishes. */
  stop(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = undefined
  }

  async #run(): Promise<void> {
    this.#timer = undefined
    this.#last = performance.now()
    await this.#tick()
    this.update()
  }
}
