import type { Steppable } from './steppable.js'

/** How an instance step is taken: alone, or as part of a system step. */
export interface InstanceStepOptions {
  /** This step's dt; undefined: the instance timer's own. */
  dt?: number
  /** Steps taken at once: more than 1 only in a batched system step (see batch-size.ts). */
  steps?: number
  /**
   * True inside a system step, which has already run the Python `run` of every instance at once,
   * one message per worker (system-step.ts).
   */
  pythonRan?: boolean
}

/**
 * One step of one instance, in the order of MODEL_LANGUAGE.md section 4: its behaviour at the
 * timer's current time, then time moves on. Taken alone, a step whose Python `run` fails ends
 * there and time does not move; in a system step the failure is reported and the step goes on.
 *
 * @example
 * await stepInstance(instance, { dt: 0.5 })  // alone: one round trip to its worker
 */
export async function stepInstance(instance: Steppable, options: InstanceStepOptions = {}): Promise<void> {
  const { dt, steps = 1, pythonRan = false } = options

  // Behaviour, first its Python `run` mapping: one round trip when the instance steps alone.
  if (!pythonRan && instance.stepsInPython) await instance.runPython(dt ?? instance.timer.dt)

  // The model's declarative behaviour belongs here, after the Python `run` and at the step's
  // time: actions in list order, then conditions, active scenarios, overrides re-applied and the
  // `on_run` hooks. An instance that has any must say `needsServerEachStep`, so that its `steps`
  // is always 1.

  // Time moves on (a pinned timer stays put) and presentation overrides end.
  for (let i = 0; i < steps; i++) instance.timer.advance(dt)
  instance.attributes.clearOverrides()
}
