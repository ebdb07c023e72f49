/**
 * The lifecycle of a system: its state machine (INITIALIZED, PREPARED, RUNNING, STOPPED), the
 * transitions prepare, start, stop and reset of every instance (each tried, the failures answered
 * together), and the system loop the engine runs while it is RUNNING. What one instance does in
 * a transition is its own lifecycle's (instance-lifecycle.ts).
 */

import { ConflictError, summarize, type ErrorDetail } from '../errors.js'
import { combinedFault, type Engine } from '../engine/index.js'
import type { Instance } from './instance.js'
import type { System } from './system.js'

export type SystemState = 'INITIALIZED' | 'PREPARED' | 'RUNNING' | 'STOPPED'

export class SystemLifecycle {
  readonly #system: System
  readonly #engine: Engine<Instance>
  #state: SystemState = 'INITIALIZED'

  constructor(system: System, engine: Engine<Instance>) {
    this.#system = system
    this.#engine = engine
  }

  get state(): SystemState {
    return this.#state
  }

  /** Prepares every instance; failures are collected and reported together after all were tried. */
  async prepare(): Promise<void> {
    const failures: ErrorDetail[] = []
    const errors: unknown[] = []
    for (const instance of this.#system.instances.all()) {
      await instance.lifecycle.prepare().catch((err: unknown) => {
        errors.push(err)
        failures.push({ path: `instances.${instance.name}`, message: (err as Error).message })
      })
    }
    this.#state = 'PREPARED'
    if (failures.length) throw combinedFault(errors, summarize('prepare', failures), failures)
  }

  /**
   * Starts every instance and the system loop that steps them every `polling.interval` seconds.
   * Every instance is tried; those that started stay started and the loop runs (it skips an
   * instance in ERROR). Then, when any failed to start or is left in ERROR, the call answers
   * their failures in one fault, one detail per instance at `instances.<name>`, as prepare does.
   */
  async start(): Promise<void> {
    const failures: ErrorDetail[] = []
    const errors: unknown[] = []
    for (const instance of this.#system.instances.all()) {
      let failed = false
      await instance.lifecycle.start({ ownLoop: false }).catch((err: unknown) => {
        failed = true
        errors.push(err)
        failures.push({ path: `instances.${instance.name}`, message: (err as Error).message })
        this.#system.services.logger.warn({ instance: instance.name, err: (err as Error).message }, 'instance failed to start')
      })
      instance.lifecycle.markRunning()
      if (!failed && instance.state === 'ERROR') {
        const message = `Instance '${instance.name}' is in ERROR: ${instance.lastError ?? 'unknown error'}`
        errors.push(new ConflictError(message))
        failures.push({ path: `instances.${instance.name}`, message })
      }
    }
    this.#state = 'RUNNING'
    this.#engine.startPolling()
    if (failures.length) throw combinedFault(errors, summarize('start', failures), failures)
  }

  /** Stops the system loop and every instance. */
  async stop(): Promise<void> {
    await this.halt()
    for (const instance of this.#system.instances.all()) await instance.lifecycle.stop()
    this.#state = 'STOPPED'
  }

  /** Stops the system loop (a system RUNNING is STOPPED); the instances are left as they are. */
  async halt(): Promise<void> {
    this.#state = this.#state === 'RUNNING' ? 'STOPPED' : this.#state
    await this.#engine.halt()
  }

  /** Resets every instance and the system timer. */
  async reset(): Promise<void> {
    await this.halt()
    for (const instance of this.#system.instances.all()) await instance.lifecycle.reset()
    this.#system.timer.reset()
    this.#engine.resetCount()
    this.#state = this.#state === 'STOPPED' ? 'PREPARED' : this.#state
  }

  /** A new structure was put in place: INITIALIZED, its steps counted from 0. */
  restarted(): void {
    this.#engine.resetCount()
    this.#state = 'INITIALIZED'
  }

  /** A loaded state brought the instances back: the system takes its saved state, and its loop runs when that is RUNNING. */
  resumed(state: SystemState): void {
    this.#state = state
    if (this.#state === 'RUNNING') this.#engine.startPolling()
  }
}
