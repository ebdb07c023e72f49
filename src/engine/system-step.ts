import type { MimicError } from '../errors.js'
import { finishInstanceStep, finishWorkerStep, type InstanceSteps } from './instance-step.js'
import type { KeptPlan } from './plan-cache.js'
import type { Steppable } from './steppable.js'
import type { SteppedSystem } from './stepped-system.js'

/** One system step as the engine hands it over, its instances and plan already chosen. */
export interface SystemStep<I extends Steppable> {
  system: SteppedSystem<I>
  /** The instances this step includes, in the system's order. */
  stepped: readonly I[]
  /** The Python plan of those of them whose step calls a Python `run`; undefined when none does. */
  plan: KeptPlan<I> | undefined
  /** This step's dt; undefined: each instance timer's own. */
  dt: number | undefined
  /** Steps taken at once: more than 1 only when no step needs the server between them (batch-size.ts). */
  repeat: number
  /** Hears of an instance whose step failed, and in how many of the `repeat` steps. */
  failed: (instance: I, error: MimicError, count: number) => void
}

/**
 * One system step, in the order of MODEL_LANGUAGE.md section 4: every included instance takes
 * its step, then the connections are applied, then the adapters publish, then the system's time
 * moves on. The instances' Python `run` calls go first, all together — one message per worker,
 * all workers at once — and then each instance finishes its own step in Node. A failing
 * instance is reported and the step completes for all others.
 *
 * @example
 * await stepSystem({ system, stepped, plan, dt: undefined, repeat: 1, failed: report })
 */
export async function stepSystem<I extends Steppable>(step: SystemStep<I>): Promise<void> {
  const { system, stepped, plan, dt, repeat } = step

  // Behaviour in Python: the `run` of every instance that maps one, in one go.
  if (plan) {
    await plan.run({
      dt,
      repeat,
      refused: system.refused,
      failed: (instance, error, count) => {
        instance.stepFailed(error)
        step.failed(instance, error, count)
      },
    })
  }

  // The rest of each instance's step, as when it steps alone (instance-step.ts). Instances with
  // expressions their Python worker evaluates step together, each awaiting its own round trips.
  const steps = { dt, steps: repeat }
  let withWorker: I[] | undefined
  for (const instance of stepped) {
    if (instance.behaviour?.usesWorker) {
      ;(withWorker ??= []).push(instance)
      continue
    }
    const failure = finishInstanceStep(instance, steps)
    if (failure) {
      instance.stepFailed(failure.error)
      step.failed(instance, failure.error, failure.steps)
    }
  }
  if (withWorker) await Promise.all(withWorker.map((instance) => finishWithWorker(step, instance, steps)))

  // Connections: each `to` takes the `from` value the instance steps left.
  await system.connections.propagate()

  // Adapters publish: they read an attribute's external value when a client asks for it, so from
  // here on they serve what the steps and connections left; there is nothing to push.

  // The system's time moves on.
  for (let i = 0; i < repeat; i++) system.timer.advance(dt)
}

async function finishWithWorker<I extends Steppable>(step: SystemStep<I>, instance: I, steps: InstanceSteps): Promise<void> {
  const failure = await finishWorkerStep(instance, steps)
  if (failure) {
    instance.stepFailed(failure.error)
    step.failed(instance, failure.error, failure.steps)
  }
}
