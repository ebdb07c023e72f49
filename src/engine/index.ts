/**
 * The simulation engine: what one instance step and one system step are (instance-step.ts,
 * system-step.ts), when steps run, how many go to the Python workers in one message and which
 * step plan they reuse (engine.ts, batch-size.ts, plan-cache.ts, poll-loop.ts), and which values
 * Python holds that attributes refused (refused-values.ts). It knows no tree classes: the tree's
 * System and Instance provide `SteppedSystem` and `Steppable`.
 *
 * @example
 * import { Engine, stepInstance } from '../engine/index.js'
 * await stepInstance(instance, 0.5)
 */
export { Engine, type EngineOptions, type FailureSink, type StepRequest } from './engine.js'
export { finishInstanceStep, finishWorkerStep, stepInstance } from './instance-step.js'
export { stepSystem, type SystemStep } from './system-step.js'
export { batchSize, needsServerBetweenSteps, BATCH_TARGET_MS, DEFAULT_STEP_BATCH, type BatchFacts } from './batch-size.js'
export { KeptPlan, PlanCache, wrongTypes, type PlanRun } from './plan-cache.js'
export { PollLoop } from './poll-loop.js'
export { RefusedValues } from './refused-values.js'
export { combinedFault } from './combined-fault.js'
export type { Steppable, StepContext, TypeProblem, ValueTarget } from './steppable.js'
export type { SteppedSystem } from './stepped-system.js'
