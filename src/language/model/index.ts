/**
 * The model language above expressions: action kinds, conditions and their step
 * (MODEL_LANGUAGE.md sections 3 to 5). A model's behaviour is compiled once, when the model is
 * validated, and kept with its parsed definition; each instance binds it to its attributes.
 *
 * @example
 * const problems = modelBehaviourProblems(parsed) // [] when it compiles
 * const behaviour = modelBehaviour(parsed)        // the compiled behaviour, compiled once
 */
import { InternalError, MimicError, type ErrorDetail } from '../../errors.js'
import { attributeDeclarations, type ParsedModelDefinition } from '../../definition/model-schema.js'
import { compileBehaviour, type ModelBehaviour } from './behaviour.js'
import type { ActionImportPolicy } from './compile-context.js'

export { ModelBehaviour, InstanceBehaviour, compileBehaviour } from './behaviour.js'
export { ACTION_KINDS, type ActionKind, type ActionPlan, type ActionRuntime } from './actions/index.js'
export { ActionError, WorkerException, type BehaviourHost, type HostAttribute, type StepFrame } from './runtime.js'
export { ScenarioRuntime, type ScenarioPlan, type ScenarioState } from './scenarios.js'
export { HOOK_EVENTS, type HookEvent } from './hooks.js'
export type { ActionImportPolicy, BehaviourSource, WorkerExpression } from './compile-context.js'
export { ACTION_MODULES } from './actions/index.js'
export { toWorkerText, fromWorkerText } from './worker-values.js'
export { parseTarget, type Target } from './targets.js'
export type { ActionState, BehaviourState, HeldState, ScenarioSavedState, StateValue } from './state.js'
export { toPy, fromPy, pyToJson } from './convert.js'

type Compiled = { result: ModelBehaviour | ErrorDetail[]; imports: ActionImportPolicy | undefined }
const compiled = new WeakMap<ParsedModelDefinition, Compiled>()

/**
 * A model compiled once; again only when asked with another import policy than it was compiled
 * with. Without a policy, whatever it was compiled with last (a server validates each model with
 * its policy before it binds it).
 */
function compile(model: ParsedModelDefinition, imports?: ActionImportPolicy): ModelBehaviour | ErrorDetail[] {
  const cached = compiled.get(model)
  if (cached !== undefined && (imports === undefined || cached.imports === imports)) return cached.result
  let result: ModelBehaviour | ErrorDetail[]
  const bound = new Set<string>()
  for (const value of Object.values(model.import ?? {})) {
    for (const entry of Array.isArray(value) ? value : [value]) for (const attr of Object.keys(entry.attributes ?? {})) bound.add(attr)
  }
  try {
    result = compileBehaviour(model, {
      attributes: attributeDeclarations(model),
      bound,
      parameters: model.meta_parameters === undefined ? undefined : new Set(Object.keys(model.meta_parameters)),
      ...(imports === undefined ? {} : { imports }),
    })
  } catch (err) {
    if (!(err instanceof MimicError)) throw err
    result = err.details
  }
  compiled.set(model, { result, imports })
  return result
}

/**
 * The problems of a model's behaviour, each with its path in the model (none: it compiles).
 * `imports` says what actions may import beyond the pure modules (src/python/action-modules.ts).
 */
export function modelBehaviourProblems(model: ParsedModelDefinition, imports?: ActionImportPolicy): ErrorDetail[] {
  const result = compile(model, imports)
  return Array.isArray(result) ? result : []
}

/**
 * `modelBehaviourProblems` with an import policy, in the shape the definition checks take.
 *
 * @example
 * validateModel(definition, behaviourChecker(policy))
 */
export function behaviourChecker(imports: ActionImportPolicy | undefined): (model: ParsedModelDefinition) => ErrorDetail[] {
  return (model) => modelBehaviourProblems(model, imports)
}

/** A model's compiled behaviour (the model was validated, so it compiles). */
export function modelBehaviour(model: ParsedModelDefinition): ModelBehaviour {
  const result = compile(model)
  if (Array.isArray(result)) throw new InternalError(`model behaviour does not compile: ${result.map((d) => `${d.path}: ${d.message}`).join('; ')}`)
  return result
}
