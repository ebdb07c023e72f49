import type { FusedRow } from './fused-steps.js'

/**
 * What the engine needs from an instance to step it. The tree's Instance implements it; the
 * engine knows no tree classes, so it can be read (and tested) as the definition of a step alone.
 *
 * @example
 * const owners = [...instances].filter((i: Steppable) => i.runnable && i.stepsInPython)
 */
export interface Steppable {
  readonly name: string
  /** Whether a system step includes it now: not in ERROR, and its Python objects loaded if it has any. */
  readonly runnable: boolean
  /** Whether its step calls a Python `run`. */
  readonly stepsInPython: boolean
  /**
   * Whether its step needs the server between one step and the next (a MimicComponent reads the
   * server's time and values in every `run`): then its steps are never batched.
   */
  readonly needsServerEachStep: boolean
  readonly timer: { readonly time: number; readonly dt: number; advance(dt?: number): void }
  /**
   * Its declarative behaviour (actions, conditions), if any: one step at `time` with step `dt`,
   * all or nothing (it throws, and keeps none of the step's writes, when something fails).
   * With `usesWorker` some expressions are evaluated by its Python worker: then it steps with
   * `stepAsync`, and `step` is never called.
   */
  readonly behaviour?:
    | {
        readonly usesWorker: boolean
        step(time: number, dt: number): void
        stepAsync(time: number, dt: number): Promise<void>
        /** Its row in its model's struct of arrays, when its model steps in one loop (fused-steps.ts). */
        readonly fused?: FusedRow | undefined
      }
    | undefined
  readonly attributes: {
    /** Where a value reported by its Python objects lands. */
    get(name: string): ValueTarget | undefined
    /** Ends every presentation override (`external_value`): what a step does. */
    clearOverrides(): void
    /** Hears of the first override since the last `clearOverrides` (set while the instance steps in its model's loop). */
    onOverride?: ((attributes: { clearOverrides(): void }) => void) | undefined
  }
  /** What its Python `run` sees: its time, the step's dt and, for a MimicComponent, its declarative values. */
  stepContext(dt?: number): StepContext
  /** Its Python `run` alone: one round trip, the values it reports taken in. */
  runPython(dt: number): Promise<void>
  /** Takes the declarative values a MimicComponent wrote through `self.attributes` in a system step; answers the values not taken. */
  applyDeclarative(values: Record<string, unknown> | undefined): TypeProblem[]
  /** Hears of a failure of its Python `run` in a system step. */
  stepFailed(error: unknown): void
  /**
   * After each of its steps, once the step is whole (its time moved on and, in a system step, the
   * connections applied): tells its protocol adapters that want each step's values. Set or not
   * once, when the instance is made: the engine lists the instances that have it with the fused
   * step's plan (fused-steps.ts `hearing`).
   */
  afterStep?(): void
}

/**
 * What a MimicComponent sees in a step: its own time, dt and declarative values.
 *
 * @example
 * const context: StepContext = { time: 1.5, dt: 0.5, attributes: { setpoint: 20 } }
 */
export interface StepContext {
  time: number
  dt: number
  attributes?: Record<string, unknown>
}

/**
 * An attribute as the engine writes it: a value its Python object reported goes into the cache.
 *
 * @example
 * instance.attributes.get('temperature')?.setCached(21.5)
 */
export interface ValueTarget {
  readonly name: string
  /** Takes the value, or answers why its type cannot hold it (the value is not taken). */
  setCached(value: unknown): string | null
}

/** A value an attribute did not take from Python, and why (see `ValueTarget.setCached`). */
export interface TypeProblem {
  attribute: string
  problem: string
}
