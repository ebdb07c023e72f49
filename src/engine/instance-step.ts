import type { Steppable } from './steppable.js'

/** The dt of an instance step and how many steps are taken at once. */
export interface InstanceSteps {
  /** This step's dt; undefined: the instance timer's own. */
  dt: number | undefined
  /** Steps taken at once: more than 1 only in a batched system step (see batch-size.ts). */
  steps: number
}

/**
 * One step of one instance taken alone, in the order of MODEL_LANGUAGE.md section 4: its
 * behaviour at the timer's current time, then time moves on. A step whose Python `run` fails
 * ends there, and time does not move.
 *
 * @example
 * await stepInstance(instance, 0.5)  // one round trip to its worker
 */
export async function stepInstance(instance: Steppable, dt: number): Promise<void> {
  // Behaviour, first its Python `run` mapping: one round trip.
  if (instance.stepsInPython) await instance.runPython(dt)
  finishInstanceStep(instance, { dt, steps: 1 })
}

/**
 * The rest of an instance step once its Python `run` has answered, in Node. A system step runs
 * the Python `run` of all its instances at once (system-step.ts) and then this for each, so it
 * is the same step either way; it is synchronous, so that a step of a thousand instances costs
 * no promise per instance.
 *
 * @example
 * finishInstanceStep(instance, { dt: 0.5, steps: 1 })
 */
export function finishInstanceStep(instance: Steppable, { dt, steps }: InstanceSteps): void {
  // The model's declarative behaviour belongs here, after the Python `run` and at the step's
  // time: actions in list order, then conditions, active scenarios, overrides re-applied and the
  // `on_run` hooks. An instance that has any must say `needsServerEachStep`, so that its `steps`
  // is always 1.

  // Time moves on (a pinned timer stays put) and presentation overrides end.
  for (let i = 0; i < steps; i++) instance.timer.advance(dt)
  instance.attributes.clearOverrides()
}
