/**
 * A model's declarative behaviour: its `actions`, `conditions` and `if_chain`, compiled once per
 * model ({@link compileBehaviour}) and bound once per instance ({@link ModelBehaviour.bind}).
 * One instance step runs the actions in list order, then the conditions, then re-applies held
 * overrides; if anything raises, every write of that step is taken back (MODEL_LANGUAGE.md
 * sections 3 to 5).
 *
 * @example
 * const behaviour = compileBehaviour({ actions: [{ function: '$out(p)', call: 'v * i' }] }, source)
 * const running = behaviour.bind(host)
 * running.step(0, 0.5)
 */
import { InternalError, summarize, ValidationError, type ErrorDetail } from '../../errors.js'
import { truthy, type PyValue } from '../expression/index.js'
import { compileAction, type ActionPlan, type ActionRuntime } from './actions.js'
import {
  ActionEnvironment,
  CompileContext,
  describe,
  type BehaviourSource,
  type BindContext,
  type ValueSource,
  type WorkerExpression,
} from './compile-context.js'
import { UndoLog, type BehaviourHost, type StepFrame } from './runtime.js'

/** The behaviour keys of a model definition. */
export interface BehaviourDefinition {
  actions?: unknown
  conditions?: unknown
  if_chain?: unknown
}

/** One branch of a condition: a test (none for `else`) and the actions it runs. */
interface BranchPlan {
  test: ValueSource | null
  path: string
  actions: ActionPlan[]
}

/** The compiled behaviour of a model. */
export class ModelBehaviour {
  readonly actions: readonly ActionPlan[]
  /** Each group runs its first matching branch: one group per `if` of `conditions`, one for `if_chain`. */
  readonly groups: readonly (readonly BranchPlan[])[]
  /** `$param(...)` names used anywhere. */
  readonly usedParameters: ReadonlySet<string>
  /** The expressions the instance's Python worker evaluates (their `index` is their position here). */
  readonly workerExpressions: readonly WorkerExpression[]

  constructor(actions: ActionPlan[], groups: BranchPlan[][], usedParameters: Set<string>, workerExpressions: WorkerExpression[] = []) {
    this.actions = actions
    this.groups = groups
    this.usedParameters = usedParameters
    this.workerExpressions = workerExpressions
  }

  /** Whether a step needs the instance's Python worker (some expression is evaluated there). */
  get usesWorker(): boolean {
    return this.workerExpressions.length > 0
  }

  /** Whether there is anything to run. */
  get empty(): boolean {
    return this.actions.length === 0 && this.groups.length === 0
  }

  /** Every action, those inside conditions included, in model order. */
  allActions(): ActionPlan[] {
    return [...this.actions, ...this.groups.flatMap((g) => g.flatMap((b) => b.actions))]
  }

  /** The behaviour of one instance. */
  bind(host: BehaviourHost): InstanceBehaviour {
    return new InstanceBehaviour(this, host)
  }
}

/**
 * Compiles a model's behaviour, or throws a 422 listing every problem with its path.
 *
 * @example
 * compileBehaviour({ actions: [{ set: '$out(x)', value: 1 }] }, { attributes, bound: new Set(), parameters: undefined })
 */
export function compileBehaviour(definition: BehaviourDefinition, source: BehaviourSource): ModelBehaviour {
  const context = new CompileContext(source)
  const actions = compileList(definition.actions, 'actions', context)
  const groups: BranchPlan[][] = []
  if (definition.conditions !== undefined) {
    if (!Array.isArray(definition.conditions)) context.problem('conditions', 'expected a list of {if: <expression>, actions: [...]} (and else entries)')
    else groups.push(...compileConditions(definition.conditions, 'conditions', context, false))
  }
  if (definition.if_chain !== undefined) {
    if (!Array.isArray(definition.if_chain)) context.problem('if_chain', 'expected a list of {if: <expression>, actions: [...]} ending with an optional else')
    else groups.push(...compileConditions(definition.if_chain, 'if_chain', context, true))
  }
  if (context.problems.length > 0) throw behaviourProblems(context.problems)
  return new ModelBehaviour(actions, groups, context.usedParameters, context.workerExpressions)
}

/** Checks a model's behaviour: the problems, with their paths (none: it compiles). */
export function behaviourProblems(problems: ErrorDetail[]): ValidationError {
  return new ValidationError(summarize('Model behaviour', problems), problems)
}

function compileList(raw: unknown, path: string, context: CompileContext): ActionPlan[] {
  if (raw === undefined || raw === null) return []
  if (!Array.isArray(raw)) {
    context.problem(path, 'expected a list of actions')
    return []
  }
  const plans: ActionPlan[] = []
  const names = new Map<string, string>()
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

const isMap = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

function compileConditions(entries: unknown[], path: string, context: CompileContext, chain: boolean): BranchPlan[][] {
  const groups: BranchPlan[][] = []
  const scope = { constants: new Map<string, PyValue>(), parameters: [], imports: {} }
  entries.forEach((entry, i) => {
    const at = `${path}[${i}]`
    if (!isMap(entry)) return context.problem(at, `a condition is {if: <expression>, actions: [...]}, got ${describe(entry)}`)
    const key = Object.hasOwn(entry, 'if') ? 'if' : Object.hasOwn(entry, 'elif') ? 'elif' : Object.hasOwn(entry, 'else') ? 'else' : null
    if (key === null) return context.problem(at, "a condition needs 'if' (or 'elif' / 'else' after an if)")
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
      if (a.kind === 'call' || a.kind === 'suspend' || a.kind === 'override' || a.kind === 'overrides') {
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

interface BranchRuntime {
  test: (() => PyValue) | null
  /** A test the Python worker evaluates: fetches its value for `test`. */
  fetch: (() => Promise<void>) | undefined
  actions: ActionRuntime[]
}

/**
 * The behaviour of one instance: its actions bound to the instance's attributes, with their own
 * state (PID integrals, noise generators), and whether its held actions are active.
 */
export class InstanceBehaviour {
  readonly actions: readonly ActionRuntime[]
  readonly #top: ActionRuntime[]
  readonly #groups: BranchRuntime[][]
  readonly #held: ActionRuntime[]
  readonly #frame: StepFrame = { time: 0, dt: 1 }
  readonly #undo = new UndoLog()
  #active = false
  /** Whether a step needs the Python worker, and then the step under way (steps of one instance never overlap). */
  readonly usesWorker: boolean
  #stepping: Promise<void> | undefined

  constructor(model: ModelBehaviour, host: BehaviourHost) {
    this.usesWorker = model.usesWorker
    const ctx: BindContext = { host, frame: this.#frame, undo: this.#undo }
    this.#top = model.actions.map((a) => a.bind(ctx))
    this.#groups = model.groups.map((group) =>
      group.map((branch) => {
        const env = new ActionEnvironment(ctx, `condition ${branch.path}`)
        const test = branch.test && env.evaluator(branch.test)
        return { test, fetch: env.fetches[0], actions: branch.actions.map((a) => a.bind(ctx)) }
      }),
    )
    this.actions = [...this.#top, ...this.#groups.flatMap((g) => g.flatMap((b) => b.actions))]
    this.#held = this.#top.filter((a) => a.activate !== undefined)
  }

  /** The action named `name`, if any. */
  action(name: string): ActionRuntime | undefined {
    return this.actions.find((a) => a.plan.name === name)
  }

  /**
   * One step at `time` with step `dt`: actions, conditions, held overrides. All or nothing: if
   * anything raises, the writes of this step are taken back and the error is thrown.
   */
  step(time: number, dt: number): void {
    if (this.usesWorker) throw new InternalError('a behaviour with expressions of the Python worker steps with stepAsync')
    const frame = this.#frame
    frame.time = time
    frame.dt = dt
    try {
      const top = this.#top
      for (let i = 0; i < top.length; i++) {
        const action = top[i] as ActionRuntime
        if (action.enabled) action.run()
      }
      for (const group of this.#groups) {
        for (const branch of group) {
          if (branch.test !== null && !truthy(branch.test())) continue
          for (const action of branch.actions) if (action.enabled) action.run()
          break
        }
      }
      if (this.#active) for (const action of this.#held) if (action.enabled) action.reapply?.()
      this.#undo.commit()
    } catch (err) {
      this.#undo.rollback()
      throw err
    }
  }

  /**
   * The step of a behaviour that has expressions the Python worker evaluates (`usesWorker`): the
   * same order and the same all-or-nothing as `step`, each worker expression one round trip when
   * its action's turn comes, so it sees the writes of the actions before it.
   */
  async stepAsync(time: number, dt: number): Promise<void> {
    while (this.#stepping) await this.#stepping.catch(() => {})
    const task = this.#stepAsync(time, dt)
    this.#stepping = task
    try {
      await task
    } finally {
      if (this.#stepping === task) this.#stepping = undefined
    }
  }

  async #stepAsync(time: number, dt: number): Promise<void> {
    const frame = this.#frame
    frame.time = time
    frame.dt = dt
    try {
      for (const action of this.#top) {
        if (!action.enabled) continue
        if (action.runAsync) await action.runAsync()
        else action.run()
      }
      for (const group of this.#groups) {
        for (const branch of group) {
          if (branch.fetch) await branch.fetch()
          if (branch.test !== null && !truthy(branch.test())) continue
          for (const action of branch.actions) {
            if (!action.enabled) continue
            if (action.runAsync) await action.runAsync()
            else action.run()
          }
          break
        }
      }
      if (this.#active) for (const action of this.#held) if (action.enabled) action.reapply?.()
      this.#undo.commit()
    } catch (err) {
      this.#undo.rollback()
      throw err
    }
  }

  /** Whether `call`, `suspend` and `override` actions hold their state now. */
  get active(): boolean {
    return this.#active
  }

  /** Starts the held actions (`call` path, `suspend`, `override`), once until `deactivate`. */
  async activate(): Promise<void> {
    if (this.#active) return
    this.#active = true
    for (const action of this.#held) if (action.enabled) await action.activate?.()
  }

  /** Ends them: `stop_path` called, suspended components back on, overridden values restored. */
  async deactivate(): Promise<void> {
    if (!this.#active) return
    this.#active = false
    for (const action of [...this.#held].reverse()) if (action.enabled) await action.deactivate?.()
  }

  /** Back to the first state: PID integrals and noise generators start over. */
  reset(): void {
    for (const action of this.actions) action.reset()
  }
}
