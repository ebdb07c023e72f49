import { InternalError, MimicError } from '../errors.js'
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
  const steps = { dt, steps: 1 }
  const failure = instance.behaviour?.usesWorker ? await finishWorkerStep(instance, steps) : finishInstanceStep(instance, steps)
  if (failure) {
    instance.stepFailed(failure.error)
    throw failure.error
  }
}

/** A step that failed in its declarative behaviour, and how many of its steps it missed. */
export interface StepFailure {
  error: MimicError
  steps: number
}

/**
 * The rest of an instance step once its Python `run` has answered, in Node. A system step runs
 * the Python `run` of all its instances at once (system-step.ts) and then this for each, so it
 * is the same step either way; it is synchronous, so that a step of a thousand instances costs
 * no promise per instance.
 *
 * A step whose actions or conditions fail keeps none of their writes and ends there: time does
 * not move, and the failure comes back (with the steps missed, when several were asked for).
 *
 * @example
 * finishInstanceStep(instance, { dt: 0.5, steps: 1 }) // undefined: the step went through
 */
export function finishInstanceStep(instance: Steppable, { dt, steps }: InstanceSteps): StepFailure | undefined {
  const { timer, attributes, behaviour } = instance
  for (let i = 0; i < steps; i++) {
    // Presentation overrides last until the next step: what a client or an action presented
    // in the last one ends here.
    attributes.clearOverrides()
    // The model's declarative behaviour, at the step's time: actions in list order, then
    // conditions, then held overrides (language/model/behaviour.ts).
    if (behaviour !== undefined) {
      try {
        behaviour.step(timer.time, dt ?? timer.dt)
      } catch (err) {
        return { error: asFault(instance, err), steps: steps - i }
      }
    }
    // Time moves on (a pinned timer stays put), and the protocols that want each step's values hear of it.
    timer.advance(dt)
    instance.afterStep?.()
  }
  return undefined
}

/**
 * The same as {@link finishInstanceStep} for an instance whose behaviour has expressions its
 * Python worker evaluates (`behaviour.usesWorker`): each of them is a round trip in its turn.
 * Only such instances take this path, so an all-native step stays synchronous.
 *
 * @example
 * await finishWorkerStep(instance, { dt: 0.5, steps: 1 }) // undefined: the step went through
 */
export async function finishWorkerStep(instance: Steppable, { dt, steps }: InstanceSteps): Promise<StepFailure | undefined> {
  const { timer, attributes, behaviour } = instance
  for (let i = 0; i < steps; i++) {
    attributes.clearOverrides()
    if (behaviour !== undefined) {
      try {
        await behaviour.stepAsync(timer.time, dt ?? timer.dt)
      } catch (err) {
        return { error: asFault(instance, err), steps: steps - i }
      }
    }
    timer.advance(dt)
    instance.afterStep?.()
  }
  return undefined
}

function asFault(instance: Steppable, err: unknown): MimicError {
  return err instanceof MimicError ? err : new InternalError(`Instance '${instance.name}': step failed: ${(err as Error).message}`, [], { cause: err })
}
