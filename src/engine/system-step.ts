import type { MimicError } from '../errors.js'
import { FusedSteps } from './fused-steps.js'
import { finishInstanceStep, finishWorkerStep } from './instance-step.js'
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
 * its step, then the connections are applied, then the adapters hear of the step (so what they
 * publish is what the connections left), then the system's time moves on. The instances' Python
 * `run` calls go first, all together — one message per worker, all workers at once — and then
 * each instance finishes its own step in Node. A failing instance is reported and the step
 * completes for all others.
 *
 * With `repeat` > 1 the Python `run` calls of all those steps go in that one message, and the
 * rest of the order above is kept step by step; an instance whose declarative step fails takes
 * no further steps of the batch and is reported as failing in each of them.
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

  if (repeat > 1 && countsStepsOnly(system, stepped)) {
    stepEachAlone(step)
    return
  }

  let live = stepped
  for (let i = 0; i < repeat; i++) {
    // The rest of each instance's step, as when it steps alone (instance-step.ts).
    live = await finishSteps(step, live, repeat - i)
    // Connections: each `to` takes the `from` value the instance steps left.
    await system.connections.propagate()
    // Adapters publish: those that hand each step's values on (MQTT on change, OPC UA items
    // monitored by exception) hear of it now; the others read an attribute when a client asks.
    // Those that want it, listed with the fused step's plan (fused-steps.ts): no read of each instance.
    for (const instance of fusedSteps(system).hearing(live)) instance.afterStep?.()
    // The system's time moves on.
    system.timer.advance(dt)
  }
}

/**
 * Whether, in Node, each step of `stepped` only moves the instances' time on and ends their
 * presentation overrides: no instance has declarative behaviour (which could read another
 * instance's values, as they stand between two steps) or an adapter that hears each step, and
 * there is no connection. Then each instance can take all the steps of a batch in turn, with
 * the same result as the steps taken one after the other across all instances.
 */
function countsStepsOnly<I extends Steppable>(system: SteppedSystem<I>, stepped: readonly I[]): boolean {
  if (system.connections.size > 0) return false
  for (let i = 0; i < stepped.length; i++) {
    const instance = stepped[i] as I
    if (instance.behaviour !== undefined || instance.afterStep !== undefined) return false
  }
  return true
}

/**
 * The Node part of a batch's steps when it only counts them (`countsStepsOnly`), instance by
 * instance: what a batch of Python-backed instances costs the server is then a tight loop per
 * instance, not a pass over all of them per step (which took twice the main thread's time in
 * benchmark 1, bench/ANALYSIS.md). Without declarative behaviour a step does not fail in Node;
 * should one, it is reported as a step of the other path is.
 */
function stepEachAlone<I extends Steppable>(step: SystemStep<I>): void {
  const { system, stepped, dt, repeat } = step
  for (let k = 0; k < stepped.length; k++) {
    const instance = stepped[k] as I
    for (let i = 0; i < repeat; i++) {
      const error = finishInstanceStep(instance, dt)
      if (error) {
        instance.stepFailed(error)
        step.failed(instance, error, repeat - i)
        break
      }
    }
  }
  for (let i = 0; i < repeat; i++) system.timer.advance(dt)
}

/**
 * The Node part of one step of each of `live`; answers those whose step went through (`live`
 * itself when all did). A failed one is reported as failing in the `left` steps of the batch.
 * Instances with expressions their Python worker evaluates step together, each awaiting its own
 * round trips.
 */
async function finishSteps<I extends Steppable>(step: SystemStep<I>, live: readonly I[], left: number): Promise<readonly I[]> {
  const failed = new Set<I>()
  const fail = (instance: I, error: MimicError): void => {
    instance.stepFailed(error)
    step.failed(instance, error, left)
    failed.add(instance)
  }
  const alone = (instance: I): void => {
    const error = finishInstanceStep(instance, step.dt)
    if (error) fail(instance, error)
  }
  // Instances of a model that steps in one loop take it (fused-steps.ts); the loop runs before
  // the next instance with behaviour of its own steps, so the order of steps holds.
  const withWorker = fusedSteps(step.system).run(live, step.dt, alone)
  if (withWorker.length > 0) {
    await Promise.all(
      withWorker.map(async (instance) => {
        const error = await finishWorkerStep(instance, step.dt)
        if (error) fail(instance, error)
      }),
    )
  }
  return failed.size === 0 ? live : live.filter((instance) => !failed.has(instance))
}

const gathered = new WeakMap<object, FusedSteps<Steppable>>()

/** The gathering of a system's fused steps, kept from step to step (a system's steps never overlap). */
function fusedSteps<I extends Steppable>(system: SteppedSystem<I>): FusedSteps<I> {
  let fused = gathered.get(system)
  if (fused === undefined) gathered.set(system, (fused = new FusedSteps<Steppable>()))
  return fused as FusedSteps<I>
}
