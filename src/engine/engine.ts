import { Mutex } from 'async-mutex'
import type { Logger } from 'pino'
import { ShuttingDownError, WorkerGoneError, summarize, type ErrorDetail } from '../errors.js'
import type { PythonPool } from '../python/index.js'
import { batchSize, DEFAULT_STEP_BATCH, needsServerBetweenSteps } from './batch-size.js'
import { combinedFault } from './combined-fault.js'
import { PlanCache } from './plan-cache.js'
import { PollLoop } from './poll-loop.js'
import type { Steppable } from './steppable.js'
import type { SteppedSystem } from './stepped-system.js'
import { stepSystem } from './system-step.js'

/** Hears of an instance that failed in `count` steps (1 unless several ran in one message). */
export type FailureSink = (instance: string, error: unknown, detail: ErrorDetail, count: number) => void

/** What one call of `Engine.step` asks for. */
export interface StepRequest<I extends Steppable> {
  /** This step's dt; undefined: each instance timer's own. */
  dt?: number
  /** Steps only the runnable instances it accepts (default: every runnable instance). */
  filter?: (instance: I) => boolean
  /** Hears of each failed instance; without it, a step with failures throws them as one fault. */
  onFailure?: FailureSink
  /** Steps in one message per worker (default 1); `run` sizes them (batch-size.ts). */
  repeat?: number
}

/** What an engine drives, and how. */
export interface EngineOptions<I extends Steppable> {
  system: SteppedSystem<I>
  /** The Python worker pool (created on first use). */
  python: () => PythonPool
  /** Most steps of a `run` one message to a Python worker may carry (1: every step alone). */
  stepBatch?: number
  logger: Logger
  /** The background loop: its period in seconds, whether it should run now, and whom a tick steps. */
  polling: { interval: () => number; wanted: () => boolean; includes: (instance: I) => boolean }
  /** Hears how long each step took, in seconds (for /metrics). */
  observeStep?: ((seconds: number) => void) | undefined
}

/** How long a `run` steps before it lets the event loop turn (see `run`). */
const RUN_SLICE_MS = 20

/**
 * Drives the system steps: when they run (one at a time, on request or every polling interval),
 * how many go to the Python workers in one message, and which step plan they reuse. What one
 * step does is system-step.ts and instance-step.ts.
 *
 * @example
 * const engine = new Engine({ system, python, logger, polling: { interval: () => 0.1, wanted: () => running, includes: () => true } })
 * await engine.run(100, 0.5)  // 100 system steps, batched where nothing needs the server in between
 */
export class Engine<I extends Steppable> {
  readonly #system: SteppedSystem<I>
  readonly #python: () => PythonPool
  readonly #stepBatch: number
  readonly #logger: Logger
  readonly #polled: (instance: I) => boolean
  readonly #loop: PollLoop
  readonly #plans = new PlanCache<I>()
  #steps = 0
  /**
   * Steps, `between` and `halt` take turns in the order they asked (async-mutex is first come,
   * first served): a save asked for during a long run gets in after the step under way, where a
   * plain "wait until no step runs" would wait for the whole run, whose next step starts at once.
   */
  readonly #turns = new Mutex()
  readonly #observeStep: ((seconds: number) => void) | undefined
  /** While a `run` is going: hears of instances lost with their worker (see `run`). */
  #lostDuringRun: ((instance: string, reason: string) => void) | undefined
  /** Why stepping ended for good (see `close`); undefined while the engine steps. */
  #closed: string | undefined

  constructor(options: EngineOptions<I>) {
    this.#system = options.system
    this.#python = options.python
    this.#stepBatch = options.stepBatch ?? DEFAULT_STEP_BATCH
    this.#observeStep = options.observeStep
    this.#logger = options.logger
    this.#polled = options.polling.includes
    this.#loop = new PollLoop({
      interval: options.polling.interval,
      wanted: () => this.#closed === undefined && options.polling.wanted(),
      tick: () => this.#pollTick(),
    })
  }

  /** System steps taken since the start or the last `resetCount`. */
  get steps(): number {
    return this.#steps
  }

  resetCount(): void {
    this.#steps = 0
  }

  /**
   * `steps` system steps. Runs every step even when some instances fail in some of them (faults
   * stay local): the failures are thrown once per instance at the end, with how many steps failed.
   * A run under way when the engine is closed (`close`) ends after the step under way — a step is
   * never cut in half, so the steps taken are kept — and throws a 503 saying how many steps it took.
   */
  async run(steps: number, dt: number | undefined): Promise<void> {
    let done = 0
    // Each instance's failures: how many steps, and where the last failed ones end.
    const failed = new Map<string, { error: unknown; detail: ErrorDetail; count: number; end: number }>()
    const onFailure: FailureSink = (instance, error, detail, count) => {
      const seen = failed.get(instance)
      if (seen) {
        seen.count += count
        seen.end = done + count
      } else failed.set(instance, { error, detail, count, end: done + count })
    }
    // A worker that dies takes its instances out of the steps that follow: they are reported as
    // failed in every step they missed, after the step that failed when it died (if one did).
    const lost = new Map<string, { reason: string; at: number }>()
    this.#lostDuringRun = (instance, reason) => {
      if (!lost.has(instance)) lost.set(instance, { reason, at: done })
    }
    try {
      let sliceStart = performance.now()
      while (done < steps && this.#closed === undefined) {
        const repeat = this.#batchSize(steps - done)
        await this.step({ dt, onFailure, repeat })
        done += repeat
        // Steps that need no Python never wait for I/O, so awaiting them never lets the event
        // loop turn: every RUN_SLICE_MS the run gives way, and requests (a /health, a read, a
        // signal) are answered during a long run instead of after it.
        if (performance.now() - sliceStart >= RUN_SLICE_MS) {
          await new Promise((resolve) => setImmediate(resolve))
          sliceStart = performance.now()
        }
      }
    } finally {
      this.#lostDuringRun = undefined
    }
    for (const [instance, { reason, at }] of lost) {
      const seen = failed.get(instance)
      const missed = done - Math.max(at, seen?.end ?? at)
      if (missed <= 0) continue
      if (seen) seen.count += missed
      else {
        const error = new WorkerGoneError(reason, [{ path: 'import', message: reason }])
        failed.set(instance, { error, detail: { path: `instances.${instance}`, message: error.message }, count: missed, end: done })
      }
    }
    const details = [...failed.values()].map(({ detail, count }) => ({
      ...detail,
      message: steps > 1 ? `${detail.message} (failed in ${count} of ${done === steps ? steps : `the ${done} taken`} steps)` : detail.message,
    }))
    if (done < steps) throw this.#stopped(steps, done, details)
    if (!failed.size) return
    throw combinedFault(
      [...failed.values()].map((f) => f.error),
      summarize(`run of ${steps} step${steps === 1 ? '' : 's'}`, details),
      details,
    )
  }

  /** The fault of a run the closing engine stopped after `done` of its `steps`; the failures of its instances follow. */
  #stopped(steps: number, done: number, failures: ErrorDetail[]): ShuttingDownError {
    const why = this.#closed ?? 'stepping has ended'
    const of = `${steps} step${steps === 1 ? '' : 's'}`
    const message = done === 0 ? `run of ${of} refused: ${why}` : `run of ${of} stopped after ${done} step${done === 1 ? '' : 's'}: ${why}`
    return new ShuttingDownError(failures.length ? `${message}; ${summarize('in the steps taken', failures)}` : message, [
      { path: 'kwargs.steps', message: `${done} of ${of} taken: ${why}`, steps_done: done },
      ...failures,
    ])
  }

  /** How many of a run's remaining steps go to the Python workers in the next message. */
  #batchSize(remaining: number): number {
    const limit = Math.min(remaining, this.#stepBatch)
    if (limit <= 1) return 1
    const { stepped, owners } = this.#participants(undefined)
    const kept = owners.length ? this.#plans.kept(this.#python(), owners) : undefined
    return batchSize({ limit, needsServer: needsServerBetweenSteps(this.#system, stepped), pythonInstances: owners.length, kept })
  }

  /**
   * One system step (or `repeat` in one message per worker). Steps never overlap: a step asked
   * for while one runs waits for it. Errors of single instances are collected; the step
   * completes for all others.
   */
  async step(request: StepRequest<I> = {}): Promise<void> {
    await this.#turns.runExclusive(() => this.#step(request))
  }

  async #step(request: StepRequest<I>): Promise<void> {
    const { dt, filter, onFailure, repeat = 1 } = request
    const { stepped, owners } = this.#participants(filter)
    const pool = owners.length ? this.#python() : undefined
    const kept = pool && this.#plans.kept(pool, owners)
    if (repeat > 1 && ((pool && !kept) || needsServerBetweenSteps(this.#system, stepped))) {
      // The system changed since the batch was sized: one step at a time after all.
      for (let i = 0; i < repeat; i++) await this.#step({ ...request, repeat: 1 })
      return
    }
    const failures: ErrorDetail[] = []
    const errors: unknown[] = []
    const began = this.#observeStep && performance.now()
    await stepSystem({
      system: this.#system,
      stepped,
      plan: pool && (kept ?? this.#plans.renew(pool, owners)),
      dt,
      repeat,
      failed: (instance, error, count) => {
        errors.push(error)
        const detail = { ...(error.details[0] ?? {}), path: `instances.${instance.name}`, message: error.message }
        failures.push(detail)
        onFailure?.(instance.name, error, detail, count)
      },
    })
    this.#steps += repeat
    if (began !== undefined) this.#observeStep?.((performance.now() - began) / 1000)
    if (failures.length && !onFailure) throw combinedFault(errors, summarize(`Step ${this.#steps}`, failures), failures)
  }

  /** The instances a step includes, and those of them whose Python `run` it calls. */
  #participants(filter: ((instance: I) => boolean) | undefined): { stepped: I[]; owners: I[] } {
    const stepped: I[] = []
    const owners: I[] = []
    for (const instance of this.#system.instances.all()) {
      if (!instance.runnable || (filter && !filter(instance))) continue
      stepped.push(instance)
      if (instance.stepsInPython) owners.push(instance)
    }
    return { stepped, owners }
  }

  /**
   * Runs `fn` between two system steps: after the step under way, and before any other starts
   * (a snapshot with state reads every instance at one moment).
   */
  async between<T>(fn: () => Promise<T>): Promise<T> {
    return await this.#turns.runExclusive(fn)
  }

  /** Starts the background loop: a step of the polled instances every polling interval. */
  startPolling(): void {
    this.#loop.start()
  }

  /** Re-reads the polling settings (interval, whether the loop is wanted). */
  pollingChanged(): void {
    this.#loop.update()
  }

  async #pollTick(): Promise<void> {
    await this.step({ filter: this.#polled }).catch((err: unknown) => {
      this.#logger.warn({ err: (err as Error).message }, 'system step failed')
    })
  }

  /**
   * Ends stepping for good (server shutdown): the background loop stops, a `run` under way ends
   * after its step under way and answers a 503 that gives `reason`, and later runs are refused
   * the same way. `between` and `halt` still work, so the state after the last step can be saved.
   * The first reason given stays.
   */
  close(reason: string): void {
    this.#closed ??= reason
    this.#loop.stop()
  }

  /** Stops the background loop and waits for the step under way, if any. */
  async halt(): Promise<void> {
    this.#loop.stop()
    await this.#turns.runExclusive(async () => {})
  }

  /** Hears of instances lost with their Python worker (a `run` under way counts their missed steps). */
  instancesLost(names: readonly string[], reason: string): void {
    if (!this.#lostDuringRun) return
    for (const name of names) this.#lostDuringRun(name, reason)
  }
}
