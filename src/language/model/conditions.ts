/**
 * Lists of actions and condition chains, compiled and bound: what a model's `actions`,
 * `conditions` and `if_chain` are made of, and a scenario's too.
 */
import type { PyValue } from '../expression/index.js'
import { truthy } from '../expression/index.js'
import { compileAction, isLifecycleKind, type ActionPlan, type ActionRuntime } from './actions/index.js'
import { ActionEnvironment, describe, type BindContext, type CompileContext, type ValueSource, isMap } from './compile-context.js'
import { FusedRun, type FusedInstance } from './fused.js'

/** One branch of a condition: a test (none for `else`) and the actions it runs. */
export interface BranchPlan {
  test: ValueSource | null
  path: string
  actions: ActionPlan[]
}

/** A branch bound to one instance. */
export interface BranchRuntime {
  test: (() => PyValue) | null
  /** A test the Python worker evaluates: fetches its value for `test`. */
  fetch: (() => Promise<void>) | undefined
  /** Its actions as a step runs them: bound ones, and runs of fused ones (fused.ts) when the model has them. */
  steps: Array<ActionRuntime | FusedRun>
}

/**
 * Compiles a list of actions. Names are unique within `names`: by default the model's, so that
 * every action of an instance is a node of its own; a scenario passes its own.
 */
export function compileList(raw: unknown, path: string, context: CompileContext, names: Map<string, string> = context.actionNames): ActionPlan[] {
  if (raw === undefined || raw === null) return []
  if (!Array.isArray(raw)) {
    context.problem(path, 'expected a list of actions')
    return []
  }
  const plans: ActionPlan[] = []
  raw.forEach((entry, i) => {
    const plan = compileAction(entry, `${path}[${i}]`, context, i)
    if (!plan) return
    const previous = names.get(plan.name)
    if (previous) context.problem(`${path}[${i}].name`, `duplicate action name '${plan.name}' (also ${previous})`)
    names.set(plan.name, `${path}[${i}]`)
    plans.push(plan)
  })
  return plans
}

export function compileConditions(entries: unknown[], path: string, context: CompileContext, chain: boolean): BranchPlan[][] {
  const groups: BranchPlan[][] = []
  const scope = { constants: new Map<string, PyValue>(), parameters: [], imports: {} }
  entries.forEach((entry, i) => {
    const at = `${path}[${i}]`
    if (!isMap(entry)) return context.problem(at, `a condition is {if: <expression>, actions: [...]}, got ${describe(entry)}`)
    const key = Object.hasOwn(entry, 'if') ? 'if' : Object.hasOwn(entry, 'elif') ? 'elif' : Object.hasOwn(entry, 'else') ? 'else' : null
    if (key === null) return context.problem(at, "a condition needs 'if' (or 'elif' / 'else' after an if)")
    const branches = ['if', 'elif', 'else'].filter((k) => Object.hasOwn(entry, k))
    if (branches.length > 1) {
      // One entry is one branch: an else beside an if would never run, so it is refused, not dropped.
      context.problem(at, `one condition entry is one branch, but this one has ${branches.join(' and ')}: write each as an entry of its own`)
    }
    for (const k of Object.keys(entry)) {
      if (!['if', 'elif', 'else', 'actions', 'name', 'description'].includes(k))
        context.problem(`${at}.${k}`, `unknown key '${k}' (expected if, elif, else, actions)`)
    }
    // `else: [actions]` and `else: null` with `actions: [...]` beside it are both accepted.
    const inline = key === 'else' && Array.isArray(entry.else)
    const actionsRaw = inline ? entry.else : entry.actions
    const actionsPath = inline ? `${at}.else` : `${at}.actions`
    if (actionsRaw === undefined) context.problem(actionsPath, 'required: the actions to run when it matches')
    const actions = compileList(actionsRaw, actionsPath, context)
    for (const a of actions) {
      if (isLifecycleKind(a.kind)) {
        context.problem(a.path, `a ${a.kind} action holds a state from start to stop and cannot sit inside a condition (use a scenario)`)
      }
    }
    let test: ValueSource | null = null
    if (key !== 'else') test = context.value(entry[key], `${at}.${key}`, scope)
    const branch: BranchPlan = { test, path: at, actions }
    const current = groups[groups.length - 1]
    if (key === 'if' && !(chain && current !== undefined)) groups.push([branch])
    else if (current === undefined) context.problem(at, `'${key}' must follow an 'if'`)
    else if (current[current.length - 1]?.test === null) context.problem(at, `nothing can follow an 'else' in the same chain`)
    else current.push(branch)
  })
  return groups
}

/**
 * Binds condition groups to an instance; `steps` gives each branch's actions as the model runs
 * them (per group, per branch: fused runs and plans), else every action is bound.
 */
export function bindGroups(
  groups: readonly (readonly BranchPlan[])[],
  ctx: BindContext,
  steps?: ReadonlyArray<ReadonlyArray<ReadonlyArray<FusedRun | ActionPlan>>>,
): BranchRuntime[][] {
  return groups.map((group, g) =>
    group.map((branch, b) => {
      const env = new ActionEnvironment(ctx, `condition ${branch.path}`)
      const test = branch.test && env.evaluator(branch.test)
      const plans = steps?.[g]?.[b] ?? branch.actions
      return { test, fetch: env.fetches[0], steps: plans.map((p) => (p instanceof FusedRun ? p : p.bind(ctx))) }
    }),
  )
}

/** Runs actions in order (the enabled ones). */
export function runActions(actions: readonly ActionRuntime[]): void {
  for (let i = 0; i < actions.length; i++) {
    const action = actions[i] as ActionRuntime
    if (action.enabled) action.run()
  }
}

/** Runs steps in order: the enabled bound actions, and fused runs on `fused` (their instance). */
export function runSteps(steps: ReadonlyArray<ActionRuntime | FusedRun>, fused: FusedInstance | undefined): void {
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i] as ActionRuntime | FusedRun
    if (step instanceof FusedRun) {
      const f = fused as FusedInstance
      step.run(f.attrs, f.mapped, f.enabled, f.host, f.frame, f.undo)
    } else if (step.enabled) step.run()
  }
}

/** Runs each group's first matching branch. */
export function runGroups(groups: readonly BranchRuntime[][], fused?: FusedInstance): void {
  for (const group of groups) {
    for (const branch of group) {
      if (branch.test !== null && !truthy(branch.test())) continue
      runSteps(branch.steps, fused)
      break
    }
  }
}
