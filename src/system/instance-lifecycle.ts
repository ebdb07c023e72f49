/**
 * The lifecycle of an instance: its state machine (INITIALIZED, PREPARED, RUNNING, STOPPED,
 * ERROR) with the last error, the transitions prepare, start, stop, reset, the loss of its worker
 * and the resume of a saved state, its own polling loop, and the call under way that a transition
 * waits for. What a transition loads or calls in Python is the binding's (instance-python.ts).
 */

import { ConflictError, MimicError, WorkerGoneError } from '../errors.js'
import { PollLoop } from '../engine/index.js'
import type { InstanceState as SavedInstance } from '../snapshots/index.js'
import type { Instance } from './instance.js'
import { restorePythonState } from './instance-saved-state.js'
import type { SystemServices } from './services.js'

export type InstanceState = 'INITIALIZED' | 'PREPARED' | 'RUNNING' | 'STOPPED' | 'ERROR'

export class InstanceLifecycle {
  readonly #instance: Instance
  readonly #services: SystemServices
  #state: InstanceState = 'INITIALIZED'
  #lastError: string | null = null
  readonly #loop: PollLoop
  #inFlight: Promise<unknown> | undefined
  #ownLoop = false

  constructor(instance: Instance, services: SystemServices) {
    this.#instance = instance
    this.#services = services
    this.#loop = new PollLoop({
      interval: () => instance.polling.nextInterval(),
      wanted: () => this.#state === 'RUNNING' && this.#ownLoop && instance.polling.enabled,
      tick: () => this.#pollTick(),
    })
  }

  get state(): InstanceState {
    return this.#state
  }

  get lastError(): string | null {
    return this.#lastError
  }

  /** Whether it runs its own polling loop (an instance started alone, not by the system). */
  get ownLoop(): boolean {
    return this.#ownLoop
  }

  /** Its polling settings changed: the loop starts, stops or takes the new interval. */
  pollingChanged(): void {
    this.#loop.update()
  }

  /**
   * Loads the Python objects (when the model imports code) and starts the protocol adapters.
   * A second prepare reloads the code, which is how an edited .py file is picked up.
   */
  async prepare(): Promise<void> {
    const { behaviour, communication, python } = this.#instance
    this.#loop.stop()
    await this.waitIdle()
    try {
      if (this.#instance.codeDefined || this.#instance.usesWorker) await python.load()
      await communication.startAll()
      this.#state = 'PREPARED'
      this.#lastError = null
      if (python.maps('prepare')) await python.callMapped('prepare', { args: [], kwargs: {} })
      await behaviour?.activate()
      await behaviour?.fire('on_prepare')
    } catch (err) {
      this.#fail(err)
      throw err
    }
  }

  /**
   * Makes its Python objects anew from the `.py` files as they are now, as a second prepare
   * does, without running what a prepare runs (adapters, mapped `prepare`, hooks): the
   * `reload_modules` of the system. Only an instance whose objects are loaded reloads, and with
   * `within`, only when one of its files lies in those directories. Answers the files reloaded.
   */
  async reloadPython(within?: (file: string) => boolean): Promise<string[]> {
    const { python } = this.#instance
    if (!python.binding || !(this.#instance.codeDefined || this.#instance.usesWorker)) return []
    const files = (await python.entries()).map((e) => e.file)
    if (within !== undefined && !files.some(within)) return []
    this.#loop.stop()
    await this.waitIdle()
    try {
      await python.load()
    } catch (err) {
      this.#fail(err)
      throw err
    } finally {
      this.#loop.update()
    }
    return [...new Set(files)]
  }

  /**
   * Starts the instance: prepares it if needed, then (with `ownLoop`, and polling enabled)
   * calls run() every `polling.interval` seconds. The system's start drives instances from its
   * own loop instead, so connections are applied after every system step.
   */
  async start(opts: { ownLoop: boolean }): Promise<void> {
    const { behaviour, communication, python } = this.#instance
    if (this.#state === 'INITIALIZED' || this.#state === 'ERROR' || (this.#instance.codeDefined && !python.binding)) await this.prepare()
    await communication.startAll()
    if (python.maps('start')) await python.callMapped('start', { args: [], kwargs: {} })
    await behaviour?.activate()
    this.#state = 'RUNNING'
    await behaviour?.fire('on_start')
    this.#ownLoop = opts.ownLoop
    this.#loop.start()
  }

  async #pollTick(): Promise<void> {
    const instance = this.#instance
    instance.polling.counted()
    const task = instance.run().catch((err: unknown) => {
      this.#services.logger.warn({ instance: instance.name, err: (err as Error).message }, 'polling run failed')
    })
    this.#inFlight = task
    await task
    if (this.#inFlight === task) this.#inFlight = undefined
  }

  /** `task` is its call under way: a transition or a snapshot waits for it. */
  busy(task: Promise<unknown>): void {
    this.#inFlight = task
  }

  /** `task` ended (the call under way is another one when a later call started meanwhile). */
  idle(task: Promise<unknown>): void {
    if (this.#inFlight === task) this.#inFlight = undefined
  }

  /** Resolves once no call of it is under way. */
  async waitIdle(): Promise<void> {
    while (this.#inFlight) await this.#inFlight.catch(() => {})
  }

  /** Stops polling and the protocol adapters; the Python objects stay (run() still works). */
  async stop(): Promise<void> {
    const { behaviour, communication, python } = this.#instance
    this.#loop.stop()
    this.#ownLoop = false
    await this.waitIdle()
    if (python.maps('stop') && this.#state !== 'ERROR') {
      await python
        .callMapped('stop', { args: [], kwargs: {} })
        .catch((err: unknown) => this.#services.logger.warn({ instance: this.#instance.name, err: (err as Error).message }, 'stop method failed'))
    }
    await this.#deactivate()
    await behaviour?.fire('on_stop').catch((err: unknown) => this.#instance.warn('an on_stop hook failed', { err: (err as Error).message }))
    await communication.stopAll()
    if (this.#state === 'RUNNING' || this.#state === 'PREPARED') this.#state = 'STOPPED'
  }

  /** Timer back to 0, declarative attributes back to their defaults, the mapped `reset` called. */
  async reset(): Promise<void> {
    const { attributes, behaviour, python, timer } = this.#instance
    this.#loop.stop()
    this.#ownLoop = false
    await this.waitIdle()
    await this.#deactivate()
    timer.reset()
    for (const attr of attributes.all()) attr.resetValue()
    await behaviour?.reset()
    if (python.maps('reset') && this.#state !== 'ERROR') await python.callMapped('reset', { args: [], kwargs: {} })
    if (this.#state === 'RUNNING' || this.#state === 'STOPPED') this.#state = python.binding || !this.#instance.codeDefined ? 'PREPARED' : 'INITIALIZED'
  }

  /** Marks the instance as system-driven RUNNING (the system loop steps it). */
  markRunning(): void {
    if (this.#state !== 'ERROR') this.#state = 'RUNNING'
  }

  /**
   * Called when the Python worker holding this instance died or was killed. Its attributes stay
   * bound (read-only ones too): until prepare() loads the code again, a write to one is refused
   * with the ERROR (409), as a run or a method call is, instead of being kept where no code sees it.
   */
  lost(reason: string): void {
    this.#instance.python.lose()
    this.#instance.python.forgetRefused()
    this.#loop.stop()
    this.#state = 'ERROR'
    this.#lastError = reason
  }

  /**
   * Puts the instance in ERROR. What its Python objects held that attributes refused is forgotten:
   * nothing runs them until prepare() makes them anew.
   */
  #fail(err: unknown): void {
    this.#state = 'ERROR'
    this.#lastError = (err as Error).message
    this.#instance.python.forgetRefused()
    if (err instanceof WorkerGoneError || (err instanceof MimicError && err.code === 'WORKER_TIMEOUT')) this.#instance.python.lose()
  }

  /** Records a failure of a call of its Python objects (a batched step's, or its own). */
  stepFailed(err: unknown): void {
    if (err instanceof WorkerGoneError || (err instanceof MimicError && err.code === 'WORKER_TIMEOUT')) this.#fail(err)
    else this.#lastError = (err as Error).message
  }

  /** A 409 unless it may run or call Python: not in ERROR, and its objects loaded when it has any. */
  checkRunnable(): void {
    const name = this.#instance.name
    if (this.#state === 'ERROR') throw new ConflictError(`Instance '${name}' is in ERROR: ${this.#lastError ?? 'unknown error'} (call prepare() to recover)`)
    if (this.#instance.codeDefined && !this.#instance.python.binding) throw new ConflictError(`Instance '${name}' is not prepared: call prepare() first`)
  }

  /** Whether a system step should include this instance. */
  get runnable(): boolean {
    return this.#state !== 'ERROR' && (!this.#instance.codeDefined || this.#instance.python.binding !== undefined)
  }

  /** Ends what held actions hold (overrides restored, suspended components back); a failure is logged. */
  async #deactivate(): Promise<void> {
    await this.#instance.behaviour?.deactivate().catch((err: unknown) => this.#instance.warn('ending held actions failed', { err: (err as Error).message }))
  }

  /** `resume` of a state that starts nothing (`INITIALIZED`, `ERROR`): the lifecycle state and last error. */
  resumeIdle(state: SavedInstance): void {
    this.#lastError = state.last_error ?? null
    this.#state = state.state
  }

  /** Whether `resume` of this state could fail (starts Python objects, adapters or held actions). */
  static resumeStarts(state: SavedInstance): boolean {
    return state.state === 'PREPARED' || state.state === 'RUNNING' || state.state === 'STOPPED'
  }

  /**
   * Brings a staged instance to its saved lifecycle state, as it was, without running what a
   * prepare or start runs for the first time (mapped `prepare`/`start`, `on_prepare`/`on_start`
   * hooks, scenarios marked `enabled`): its Python objects are loaded and given their saved
   * states, its adapters started and its held actions made to hold again. A value its objects
   * then hold that an attribute refuses fails no part of it: it is remembered, and the next call
   * or step fails with it, as the calls and steps before the save did.
   */
  async resume(state: SavedInstance): Promise<void> {
    const instance = this.#instance
    if (!InstanceLifecycle.resumeStarts(state)) return this.resumeIdle(state)
    this.#lastError = state.last_error ?? null
    if (instance.codeDefined || instance.usesWorker) {
      const entries = await instance.python.load('none')
      if (instance.codeDefined) await restorePythonState(instance, entries, state)
    }
    if (state.state !== 'STOPPED') {
      await instance.communication.startAll()
      await instance.behaviour?.activate()
    }
    this.#state = state.state
    if (state.state === 'RUNNING' && state.own_loop) {
      this.#ownLoop = true
      this.#loop.start()
    }
  }

  /** The instance is deleted: stops its loop, what held actions hold and its adapters, and unloads its Python objects. */
  async destroy(): Promise<void> {
    const instance = this.#instance
    this.#loop.stop()
    await this.waitIdle()
    await this.#deactivate()
    await instance.behaviour?.fire('on_destroy').catch((err: unknown) => instance.warn('an on_destroy hook failed', { err: (err as Error).message }))
    await instance.communication.stopAll()
    await instance.python.unload()
    instance.behaviour?.dispose()
  }
}
