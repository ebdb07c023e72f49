import type { Steppable } from './steppable.js'
import type { SteppedSystem } from './stepped-system.js'

/** Steps of a `run` one message to a Python worker carries unless configured otherwise. */
export const DEFAULT_STEP_BATCH = 100

/**
 * About how long one batched message may keep a worker busy: long enough to spread the round trip
 * over many steps, short enough that a request to an instance of that worker waits little, and
 * far below the worker time limit whatever the user code costs.
 */
export const BATCH_TARGET_MS = 25

/** What sizing a batch of steps looks at. */
export interface BatchFacts {
  /** Most steps the batch may have: the run's remaining steps, capped by `--step-batch`. */
  limit: number
  /** Whether a step needs the server before the next one can run (see `needsServerBetweenSteps`). */
  needsServer: boolean
  /** How many of the stepped instances call a Python `run`. */
  pythonInstances: number
  /**
   * The timing of the plan kept for exactly those instances, if one is kept: the time per step
   * its last message took (undefined until measured) and how many steps that message carried.
   */
  kept: { stepMs: number | undefined; lastBatch: number } | undefined
}

/**
 * How many of a run's remaining steps go to the Python workers in one message. Between the
 * steps of one message the server does nothing but count (clients see the values of the last
 * one), so a batch needs a system where no step depends on the server. A batch is sized by time:
 * the first step of a new set of instances goes alone and is timed, and later messages carry
 * about BATCH_TARGET_MS of work (growing at most fourfold each time), so slow user code gets
 * small batches and never holds a worker for long.
 *
 * @example
 * batchSize({ limit: 100, needsServer: false, pythonInstances: 1000, kept: { stepMs: 0.5, lastBatch: 4 } })  // 16
 */
export function batchSize(facts: BatchFacts): number {
  const { limit, needsServer, pythonInstances, kept } = facts
  if (limit <= 1 || needsServer) return 1
  if (pythonInstances === 0) return limit
  if (!kept?.stepMs) return 1
  const fits = Math.floor(BATCH_TARGET_MS / kept.stepMs)
  return Math.max(1, Math.min(limit, fits, kept.lastBatch * 4))
}

/**
 * Whether a system step must finish in the server before the next begins: a connection copies
 * values between steps, and an instance may need the server's time and values in every step.
 *
 * @example
 * if (needsServerBetweenSteps(system, stepped)) repeat = 1
 */
export function needsServerBetweenSteps<I extends Steppable>(system: SteppedSystem<I>, stepped: readonly I[]): boolean {
  return system.connections.size > 0 || stepped.some((instance) => instance.needsServerEachStep)
}
