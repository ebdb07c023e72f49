import { InternalError, MimicError } from '../errors.js'
import type { Steppable } from './steppable.js'

/**
 * One step of one instance taken alone, in the order of MODEL_LANGUAGE.md section 4: its
 * behaviour at the timer's current time, then time moves on, then its adapters hear of the step.
 * No connection is applied: that is a system step's part. A step whose Python `run` fails ends
 * there, and time does not move.
 *
 * @example
 * await stepInstance(instance, 0.5)  // one round trip to its worker
 */
export async function stepInstance(instance: Steppable, dt: number): Promise<void> {
  // Behaviour, first its Python `run` mapping: one round trip.
  if (instance.stepsInPython) await instance.runPython(dt)
  const failure = instance.behaviour?.usesWorker ? await finishWorkerStep(instance, dt) : finishInstanceStep(instance, dt)
  if (failure) {
    instance.stepFailed(failure)
    throw failure
  }
  instance.afterStep?.()
}

/**
 * The rest of an instance step once its Python `run` has answered, in Node: its declarative
 * behaviour, then its time moves on. A system step runs the Python `run` of all its instances at
 * once (system-step.ts) and then this for each, so it is the same step either way; it is
 * synchronous, so that a step of a thousand instances costs no promise per instance. Its
 * adapters hear of the step later, from the caller: in a system step, after the connections.
 *
 * A step whose actions or conditions fail keeps none of their writes and ends there: time does
 * not move, and the fault comes back.
 *
 * @example
 * finishInstanceStep(instance, 0.5) // undefined: the step went through
 */
export function finishInstanceStep(instance: Steppable, dt: number | undefined): MimicError | undefined {
  const { timer, attributes, behaviour } = instance
  // Presentation overrides last until the next step: what a client or an action presented in
  // the last one ends here.
  attributes.clearOverrides()
  // The model's declarative behaviour, at the step's time: actions in list order, then
  // conditions, then held overrides (language/model/behaviour.ts).
  if (behaviour !== undefined) {
    try {
      behaviour.step(timer.time, dt ?? timer.dt)
    } catch (err) {
      return asFault(instance, err)
    }
  }
  // Time moves on (a pinned timer stays put).
  timer.advance(dt)
  return undefined
}

/**
 * The same as {@link finishInstanceStep} for an instance whose behaviour has expressions its
 * Python worker evaluates (`behaviour.usesWorker`): each of them is a round trip in its turn.
 * Only such instances take this path, so an all-native step stays synchronous.
 *
 * @example
 * await finishWorkerStep(instance, 0.5) // undefined: the step went through
 */
export async function finishWorkerStep(instance: Steppable, dt: number | undefined): Promise<MimicError | undefined> {
  const { timer, attributes, behaviour } = instance
  attributes.clearOverrides()
  if (behaviour !== undefined) {
    try {
      await behaviour.stepAsync(timer.time, dt ?? timer.dt)
    } catch (err) {
      return asFault(instance, err)
    }
  }
  timer.advance(dt)
  return undefined
}

function asFault(instance: Steppable, err: unknown): MimicError {
  return err instanceof MimicError ? err : new InternalError(`Instance '${instance.name}': step failed: ${(err as Error).message}`, [], { cause: err })
}
