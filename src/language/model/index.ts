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

export { ModelBehaviour, InstanceBehaviour, compileBehaviour } from './behaviour.js'
export { ACTION_KINDS, type ActionKind, type ActionPlan, type ActionRuntime } from './actions.js'
export { ActionError, WorkerException, type BehaviourHost, type HostAttribute, type StepFrame } from './runtime.js'
export { ScenarioRuntime, type ScenarioPlan, type ScenarioState } from './scenarios.js'
export { HOOK_EVENTS, type HookEvent } from './hooks.js'
export type { BehaviourSource, WorkerExpression } from './compile-context.js'
export { toWorkerText, fromWorkerText } from './worker-values.js'
export { parseTarget, type Target } from './targets.js'
export type { ActionState, BehaviourState, HeldState, ScenarioSavedState, StateValue } from './state.js'
export { toPy, fromPy, pyToJson } from './convert.js'

const compiled = new WeakMap<ParsedModelDefinition, ModelBehaviour | ErrorDetail[]>()

function compile(model: ParsedModelDefinition): ModelBehaviour | ErrorDetail[] {
  let result = compiled.get(model)
  if (result !== undefined) return result
  const bound = new Set<string>()
  for (const value of Object.values(model.import ?? {})) {
    for (const entry of Array.isArray(value) ? value : [value]) for (const attr of Object.keys(entry.attributes ?? {})) bound.add(attr)
  }
  try {
    result = compileBehaviour(model, {
      attributes: attributeDeclarations(model),
      bound,
      parameters: model.meta_parameters === undefined ? undefined : new Set(Object.keys(model.meta_parameters)),
    })
  } catch (err) {
    if (!(err instanceof MimicError)) throw err
    result = err.details
  }
  compiled.set(model, result)
  return result
}

/** The problems of a model's behaviour, each with its path in the model (none: it compiles). */
export function modelBehaviourProblems(model: ParsedModelDefinition): ErrorDetail[] {
  const result = compile(model)
  return Array.isArray(result) ? result : []
}

/** A model's compiled behaviour (the model was validated, so it compiles). */
export function modelBehaviour(model: ParsedModelDefinition): ModelBehaviour {
  const result = compile(model)
  if (Array.isArray(result)) throw new InternalError(`model behaviour does not compile: ${result.map((d) => `${d.path}: ${d.message}`).join('; ')}`)
  return result
}
