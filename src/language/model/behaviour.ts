/**
 * A model's declarative behaviour: its `actions`, `conditions`, `if_chain`, `scenarios` and
 * `hooks`, compiled once per model ({@link compileBehaviour}) and bound once per instance
 * ({@link ModelBehaviour.bind}). One instance step runs, in the order of MODEL_LANGUAGE.md section
 * 4: the held overrides (pinned, so the actions read them), the actions in list order, the
 * conditions, the active scenarios' actions and conditions, the
 * held overrides again, and the `on_run` hooks; if anything raises, every write of that step is
 * taken back.
 *
 * @example
 * const behaviour = compileBehaviour({ actions: [{ function: '$out(p)', call: 'v * i' }] }, source)
 * const running = behaviour.bind(host)
 * running.step(0, 0.5)
 */
import { InternalError, summarize, ValidationError, type ErrorDetail } from '../../errors.js'
import { beginStep, truthy } from '../expression/index.js'
import type { ActionPlan, ActionRuntime } from './actions/index.js'
import { CompileContext, type BehaviourSource, type BindContext, type WorkerExpression } from './compile-context.js'
import { bindGroups, compileConditions, compileList, runGroups, runSteps, type BranchPlan, type BranchRuntime } from './conditions.js'
import { AttributeSlots, fuseActions, FusedRun, type FusedInstance } from './fused.js'
import { BatchMember, FusedBatch } from './soa/batch.js'
import { compileHooks, InstanceHooks, type HookEvent, type HookPlans } from './hooks.js'
import { Pins, UndoLog, type BehaviourHost, type StepFrame } from './runtime.js'
import { compileScenarios, HeldValues, ScenarioRuntime, type ScenarioPlan } from './scenarios.js'
import { restoreActions, saveActions, StateReader, type BehaviourState } from './state.js'
import { isRecord } from '../../definition/is-record.js'

/** The behaviour keys of a model definition. */
export interface BehaviourDefinition {
  actions?: unknown
  /** `{actions: [...]}`: run after `actions` (the reference product's library keeps a model's noise there). */
  distortions?: unknown
  conditions?: unknown
  if_chain?: unknown
  scenarios?: unknown
  hooks?: unknown
  attributes?: Record<string, unknown>
}

/** The compiled behaviour of a model. */
export class ModelBehaviour {
  readonly actions: readonly ActionPlan[]
  /** Each group runs its first matching branch: one group per `if` of `conditions`, one for `if_chain`. */
  readonly groups: readonly (readonly BranchPlan[])[]
  readonly scenarios: readonly ScenarioPlan[]
  readonly hooks: HookPlans
  /** `$param(...)` names used anywhere. */
  readonly usedParameters: ReadonlySet<string>
  /** The expressions the instance's Python worker evaluates (their `index` is their position here). */
  readonly workerExpressions: readonly WorkerExpression[]
  /** The model's attributes by slot, as fused runs read them. */
  readonly slots: AttributeSlots
  /** `actions` as a step runs them: runs of fused actions (fused.ts) and the others. */
  readonly steps: ReadonlyArray<FusedRun | ActionPlan>
  /** The same for the actions of each branch of each group of `groups`. */
  readonly groupSteps: ReadonlyArray<ReadonlyArray<ReadonlyArray<FusedRun | ActionPlan>>>
  /** How many actions are fused (each instance keeps an enabled flag for each). */
  readonly fused: number
  /** The loop that steps many instances at once when the model qualifies (soa/batch.ts), made on first use. */
  #batch: FusedBatch | null | undefined

  constructor(parts: {
    actions: ActionPlan[]
    groups: BranchPlan[][]
    scenarios: ScenarioPlan[]
    hooks: HookPlans
    usedParameters: Set<string>
    workerExpressions: WorkerExpression[]
    slots: AttributeSlots
    fuse: boolean
  }) {
    this.actions = parts.actions
    this.groups = parts.groups
    this.scenarios = parts.scenarios
    this.hooks = parts.hooks
    this.usedParameters = parts.usedParameters
    this.workerExpressions = parts.workerExpressions
    this.slots = parts.slots
    // A step with worker expressions awaits each action in turn (stepAsync): nothing is fused then.
    const fuse = parts.fuse && !this.usesWorker
    let flags = 0
    const split = (plans: readonly ActionPlan[]): ReadonlyArray<FusedRun | ActionPlan> => {
      if (!fuse) return plans
      const fused = fuseActions(plans, this.slots, flags)
      flags = fused.flags
      return fused.steps
    }
    this.steps = split(this.actions)
    this.groupSteps = this.groups.map((group) => group.map((branch) => split(branch.actions)))
    this.fused = flags
  }

  /** Whether a step needs the instance's Python worker (some expression is evaluated there). */
  get usesWorker(): boolean {
    return this.workerExpressions.length > 0
  }

  /** Whether there is anything to run. */
  get empty(): boolean {
    return (
      this.actions.length === 0 && this.groups.length === 0 && this.scenarios.length === 0 && this.hooks.model.size === 0 && this.hooks.attributes.size === 0
    )
  }

  /** The model's fused step (soa/batch.ts), or undefined when its step is not one loop's work. */
  get batch(): FusedBatch | undefined {
    if (this.#batch === undefined) this.#batch = FusedBatch.of(this) ?? null
    return this.#batch ?? undefined
  }

  /**
   * The behaviour of one instance. With `fused`, an instance of a model that qualifies keeps its
   * float attributes in the model's struct of arrays and steps in its loop (soa/batch.ts).
   */
  bind(host: BehaviourHost, options: { fused?: boolean } = {}): InstanceBehaviour {
    return new InstanceBehaviour(this, host, options.fused === true)
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
  if (isRecord(definition.distortions)) actions.push(...compileList(definition.distortions.actions, 'distortions.actions', context))
  const groups: BranchPlan[][] = []
  if (definition.conditions !== undefined) {
    if (!Array.isArray(definition.conditions)) context.problem('conditions', 'expected a list of {if: <expression>, actions: [...]} (and else entries)')
    else groups.push(...compileConditions(definition.conditions, 'conditions', context, false))
  }
  if (definition.if_chain !== undefined) {
    if (!Array.isArray(definition.if_chain)) context.problem('if_chain', 'expected a list of {if: <expression>, actions: [...]} ending with an optional else')
    else groups.push(...compileConditions(definition.if_chain, 'if_chain', context, true))
  }
  // Scenarios and hooks run inside the synchronous part of a step: their expressions are native.
  const workerBefore = context.workerExpressions.length
  const scenarios = compileScenarios(definition.scenarios, context)
  const hooks: HookPlans = { model: compileHooks(definition.hooks, 'hooks', context), attributes: new Map() }
  for (const [name, spec] of Object.entries(definition.attributes ?? {})) {
    const attrHooks = isRecord(spec) ? spec.hooks : undefined
    if (attrHooks !== undefined) hooks.attributes.set(name, compileHooks(attrHooks, `attributes.${name}.hooks`, context))
  }
  for (const worker of context.workerExpressions.slice(workerBefore)) {
    context.problem(
      worker.path,
      'expressions of scenarios and hooks are evaluated natively, and this one needs the Python worker ' +
        '(an import other than math, random, time and datetime, a set, or a method the engine does not serve)',
    )
  }
  if (context.problems.length > 0) throw behaviourProblems(context.problems)
  const slots = new AttributeSlots(source.attributes)
  return new ModelBehaviour({
    actions,
    groups,
    scenarios,
    hooks,
    usedParameters: context.usedParameters,
    workerExpressions: context.workerExpressions,
    slots,
    fuse: source.fuse !== false,
  })
}

/** Checks a model's behaviour: the problems, with their paths (none: it compiles). */
export function behaviourProblems(problems: ErrorDetail[]): ValidationError {
  return new ValidationError(summarize('Model behaviour', problems), problems)
}

/** Flags of attributes none of which a protocol maps, one array per length for every instance (never written). */
const UNMAPPED: number[][] = []
function unmapped(length: number): readonly number[] {
  return (UNMAPPED[length] ??= new Array<number>(length).fill(0))
}

/**
 * The behaviour of one instance: its actions bound to the instance's attributes, with their own
 * state (PID integrals, noise generators), its scenarios and hooks, and whether its held actions
 * are active.
 */
export class InstanceBehaviour {
  readonly scenarios: readonly ScenarioRuntime[]
  readonly hooks: InstanceHooks
  readonly #model: ModelBehaviour
  /** The model's `actions` as a step runs them: fused runs, and the others bound to this instance. */
  readonly #top: Array<FusedRun | ActionRuntime>
  readonly #groups: BranchRuntime[][]
  readonly #held: ActionRuntime[]
  readonly #host: BehaviourHost
  readonly #frame: StepFrame = { time: 0, dt: 1 }
  readonly #undo = new UndoLog()
  readonly #onRun: boolean
  /**
   * What fused runs work on. Its undo log is none (null) when the model's step is one fused run
   * and nothing else (no conditions, scenarios or hooks): the run then puts back its own writes
   * when it fails, and nothing after it can.
   */
  readonly #fused: FusedInstance
  #actions: readonly ActionRuntime[] | undefined
  #active = false
  readonly #heldValues = new HeldValues()
  /** The attributes pinned at held values while a step runs. */
  readonly #pins = new Pins()
  /** Set by `restoreState`: whether the held actions were active when the state was saved (the next `activate` resumes). */
  #restored: { active: boolean } | undefined
  /** Whether a step needs the Python worker, and then the step under way (steps of one instance never overlap). */
  readonly usesWorker: boolean
  #stepping: Promise<void> | undefined

  /** Its row in the model's struct of arrays when it steps in the model's loop (soa/batch.ts). */
  readonly fused: BatchMember | undefined

  constructor(model: ModelBehaviour, host: BehaviourHost, fused = false) {
    this.#model = model
    this.#host = host
    this.usesWorker = model.usesWorker
    const ctx: BindContext = { host, frame: this.#frame, undo: this.#undo }
    this.#top = model.steps.map((step) => (step instanceof FusedRun ? step : step.bind(ctx)))
    this.#groups = bindGroups(model.groups, ctx, model.groupSteps)
    this.#held = this.#top.filter((a): a is ActionRuntime => !(a instanceof FusedRun) && a.activate !== undefined)
    this.scenarios = model.scenarios.map((s) => new ScenarioRuntime(s, ctx, this.#heldValues))
    // refresh_model runs the actions again and holds what is held over them, as a step does.
    this.hooks = new InstanceHooks(model.hooks, ctx, () => {
      this.#reapplyHeld(this.#pins)
      try {
        this.#runModel()
        this.#reapplyHeld()
      } finally {
        this.#pins.release()
      }
    })
    this.#onRun = this.hooks.has('on_run')
    const enabled: number[] = []
    for (const steps of [model.steps, ...model.groupSteps.flat()]) {
      for (const step of steps) if (step instanceof FusedRun) for (const plan of step.plans) enabled.push(plan.enabled ? 1 : 0)
    }
    const attrs = model.fused > 0 ? model.slots.of(host) : []
    const alone = this.#top.length === 1 && this.#top[0] instanceof FusedRun && model.groups.length === 0 && model.scenarios.length === 0
    const undo = alone && model.hooks.model.size === 0 && model.hooks.attributes.size === 0 ? null : this.#undo
    const mapped = attrs.map((a) => (a.mapped ? 1 : 0))
    this.#fused = { attrs, mapped: mapped.includes(1) ? mapped : unmapped(mapped.length), enabled, host, frame: this.#frame, undo }
    const batch = fused ? model.batch : undefined
    this.fused =
      batch && host.attachTime !== undefined && attrs.every((a) => a.attachColumn !== undefined)
        ? new BatchMember(batch, attrs, this.#fused.mapped, enabled, this.scenarios.length > 0 ? () => this.#scenarioInPlay() : undefined)
        : undefined
    if (this.fused !== undefined) for (const scenario of this.scenarios) scenario.playChanged = () => this.fused?.playChanged()
    // The timer's time and dt go into the row too: the loop advances them (soa/store.ts TimeCells).
    if (this.fused !== undefined) host.attachTime?.(this.fused)
  }

  /** Whether one of its scenarios has a part in the next step (then it steps alone, not in its model's loop). */
  #scenarioInPlay(): boolean {
    const scenarios = this.scenarios
    for (let i = 0; i < scenarios.length; i++) if ((scenarios[i] as ScenarioRuntime).inPlay) return true
    return false
  }

  /** The instance is gone: its row goes back to the model's struct of arrays, its attributes keep their values. */
  dispose(): void {
    if (this.fused === undefined) return
    this.#host.attachTime?.(undefined)
    this.fused.release()
  }

  /** Every action of the instance (top level, then those of conditions), made on first use for the fused ones. */
  get actions(): readonly ActionRuntime[] {
    this.#actions ??= this.#every((run, plan, flag) => this.#fusedAction(run, plan, flag))
    return this.#actions
  }

  /** Every action in model order: the bound ones as they are, each fused one as `view` makes it. */
  #every(view: (run: FusedRun, plan: ActionPlan, flag: number) => ActionRuntime): ActionRuntime[] {
    const each = (steps: ReadonlyArray<FusedRun | ActionRuntime>): ActionRuntime[] =>
      steps.flatMap((step) => (step instanceof FusedRun ? step.plans.map((plan, i) => view(step, plan, step.first + i)) : [step]))
    return [...each(this.#top), ...this.#groups.flatMap((g) => g.flatMap((b) => each(b.steps)))]
  }

  /** A fused action seen alone: its enabled flag, and a run of it by itself. */
  #fusedAction(run: FusedRun, plan: ActionPlan, flag: number): ActionRuntime {
    const fused = this.#fused
    return flagView(
      plan,
      fused.enabled,
      flag,
      () => this.fused?.flagsChanged(),
      () => {
        const only = fused.enabled.map((_x, i) => (i === flag ? 1 : 0))
        run.run(fused.attrs, fused.mapped, only, fused.host, fused.frame, this.#undo)
      },
    )
  }

  /** The number of actions (top level and of conditions). */
  get actionCount(): number {
    return this.#model.actions.length + this.#model.groups.reduce((n, g) => n + g.reduce((m, b) => m + b.actions.length, 0), 0)
  }

  /** The action named `name`, if any. */
  action(name: string): ActionRuntime | undefined {
    return this.actions.find((a) => a.plan.name === name)
  }

  /** The scenario named `name`, if any. */
  scenario(name: string): ScenarioRuntime | undefined {
    return this.scenarios.find((s) => s.plan.name === name)
  }

  /** The model's own actions and conditions at the frame's time. */
  #runModel(): void {
    runSteps(this.#top, this.#fused)
    runGroups(this.#groups, this.#fused)
  }

  /**
   * Held values (override actions, active scenarios' overrides) written again: before the actions
   * of a step, with `pins`, which pins the internal ones so that every action and condition of the
   * step reads them (and a write to them keeps the held value); after the actions, over what they
   * wrote (the external ones, which a step's start cleared, and a scenario started in the step).
   */
  #reapplyHeld(pins?: Pins): void {
    if (this.#active) for (const action of this.#held) if (action.enabled) action.reapply?.(pins)
    const scenarios = this.scenarios
    for (let i = 0; i < scenarios.length; i++) (scenarios[i] as ScenarioRuntime).reapply(pins)
  }

  /**
   * One step at `time` with step `dt`: actions, conditions, active scenarios, held overrides,
   * `on_run` hooks. All or nothing: if anything raises, the writes of this step are taken back and
   * the error is thrown.
   */
  step(time: number, dt: number): void {
    if (this.usesWorker) throw new InternalError('a behaviour with expressions of the Python worker steps with stepAsync')
    const frame = this.#frame
    frame.time = time
    frame.dt = dt
    // The memory budget of expressions is each instance step's own (loop-budget.ts).
    beginStep()
    try {
      this.#reapplyHeld(this.#pins)
      this.#runModel()
      const scenarios = this.scenarios
      for (let i = 0; i < scenarios.length; i++) (scenarios[i] as ScenarioRuntime).step(time, dt)
      this.#reapplyHeld()
      this.#pins.release()
      if (this.#onRun) this.#background(this.hooks.fire('on_run'))
      this.#undo.commit()
    } catch (err) {
      this.#pins.release()
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
    beginStep()
    try {
      this.#reapplyHeld(this.#pins)
      // Nothing is fused in a behaviour with worker expressions: every step is a bound action.
      for (const action of this.#top as ActionRuntime[]) {
        if (!action.enabled) continue
        if (action.runAsync) await action.runAsync()
        else action.run()
      }
      for (const group of this.#groups) {
        for (const branch of group) {
          if (branch.fetch) await branch.fetch()
          if (branch.test !== null && !truthy(branch.test())) continue
          for (const action of branch.steps as ActionRuntime[]) {
            if (!action.enabled) continue
            if (action.runAsync) await action.runAsync()
            else action.run()
          }
          break
        }
      }
      for (const scenario of this.scenarios) scenario.step(time, dt)
      this.#reapplyHeld()
      this.#pins.release()
      if (this.#onRun) this.#background(this.hooks.fire('on_run'))
      this.#undo.commit()
    } catch (err) {
      this.#pins.release()
      this.#undo.rollback()
      throw err
    }
  }

  /**
   * Runs the hooks of a lifecycle or attribute event at the instance's current time; their writes
   * are kept (there is no step to take back). Resolves when their calls are done.
   */
  async fire(event: HookEvent, attribute?: string): Promise<void> {
    if (!this.hooks.has(event, attribute)) return
    this.#frame.time = this.#host.time
    this.#frame.dt = this.#host.dt
    try {
      const pending = this.hooks.fire(event, attribute)
      this.#undo.commit()
      await pending
    } catch (err) {
      this.#undo.commit()
      throw err
    }
  }

  /** Whether `call`, `suspend` and `override` actions hold their state now. */
  get active(): boolean {
    return this.#active
  }

  /**
   * Starts the held actions (`call` path, `suspend`, `override`), once until `deactivate`, and
   * the scenarios marked `enabled`.
   */
  async activate(): Promise<void> {
    if (this.#active) return
    this.#active = true
    const restored = this.#restored
    this.#restored = undefined
    for (const action of this.#held) if (action.enabled) await action.activate?.()
    for (const scenario of this.scenarios) {
      // After a restore: scenarios that were active take their paths again; none starts anew if
      // the state was saved active (it holds them as they were).
      if (restored !== undefined && scenario.state === 'active') await scenario.resume()
      else if (!restored?.active && scenario.plan.enabled && scenario.state !== 'active') await scenario.start(this.#host.time)
    }
  }

  /** Ends them: scenarios stopped, `stop_path` called, suspended components back on, overridden values restored. */
  async deactivate(): Promise<void> {
    this.#restored = undefined
    for (const scenario of this.scenarios) await scenario.stop()
    if (!this.#active) return
    this.#active = false
    for (const action of [...this.#held].reverse()) if (action.enabled) await action.deactivate?.()
  }

  /** Back to the first state: PID integrals and noise generators start over, scenarios unrun. */
  async reset(): Promise<void> {
    this.#restored = undefined
    // Fused actions (function, set) keep no state: only the bound ones have something to reset.
    for (const step of this.#top) if (!(step instanceof FusedRun)) step.reset()
    for (const group of this.#groups) for (const branch of group) for (const step of branch.steps) if (!(step instanceof FusedRun)) step.reset()
    for (const scenario of this.scenarios) await scenario.reset()
  }

  #background(task: Promise<void> | undefined): void {
    task?.catch((err: unknown) => this.#host.warn('an on_run hook failed', { err: (err as Error).message }))
  }

  /**
   * What it keeps between steps, as JSON data (for a snapshot): whether its held actions hold,
   * each named action's state (a PID's integral, a noise generator's whole state), each
   * scenario's state, timer and runs, and the values the scenarios hold.
   */
  saveState(): BehaviourState {
    const scenarios: BehaviourState['scenarios'] = {}
    for (const scenario of this.scenarios) scenarios[scenario.plan.name] = scenario.saveState()
    return {
      active: this.#active,
      actions: saveActions(this.#stateViews()),
      scenarios,
      held: this.#heldValues.saveState((owner) => (owner as ScenarioRuntime).plan.name),
    }
  }

  /**
   * Takes back what `saveState` gave (on a behaviour that is not active: a new instance's). The
   * problems come back, each with its path under `path`, and then nothing changed. Held actions
   * that were active hold again at the next `activate`, which then starts no scenario anew;
   * scenarios that were active make their dotted-path overrides and calls again then too.
   */
  restoreState(state: BehaviourState, path: string): ErrorDetail[] | void {
    const read = new StateReader(state, path)
    const active = read.boolean('active')
    const actions = read.map('actions', true)
    const scenarios = read.map('scenarios', true)
    const held = read.list('held', true)
    for (const name of Object.keys(scenarios)) {
      if (this.scenario(name) === undefined)
        read.problem(`scenarios.${name}`, `no scenario of that name (scenarios: ${this.scenarios.map((s) => s.plan.name).join(', ') || 'none'})`)
    }
    // Every part is tried, so that every problem is reported; on any, all is taken back.
    const before = this.saveState()
    const problems = [...read.problems, ...this.#take(actions, scenarios, held, path)]
    if (problems.length) {
      this.#take(before.actions, before.scenarios, before.held, path)
      return problems
    }
    this.#restored = { active }
  }

  /**
   * Every action as a snapshot sees it: a bound action as it is; a fused one (function, set), which
   * keeps nothing between steps but its enabled flag, as a view of that flag made for the snapshot
   * alone, so that ten thousand saved instances keep no object per fused action.
   */
  #stateViews(): ActionRuntime[] {
    if (this.#actions !== undefined) return [...this.#actions]
    const flags = this.#fused.enabled
    return this.#every((_run, plan, flag) => flagView(plan, flags, flag, () => this.fused?.flagsChanged()))
  }

  #take(actions: Record<string, unknown>, scenarios: Record<string, unknown>, held: unknown[], path: string): ErrorDetail[] {
    const problems: ErrorDetail[] = []
    problems.push(...(restoreActions(this.#stateViews(), actions, `${path}.actions`) ?? []))
    for (const [name, saved] of Object.entries(scenarios)) problems.push(...(this.scenario(name)?.restoreState(saved, `${path}.scenarios.${name}`) ?? []))
    problems.push(...(this.#heldValues.restoreState(held, (name) => this.scenario(name), `${path}.held`) ?? []))
    return problems
  }
}

/**
 * A fused action's enabled flag as an action; `run` runs it alone (nothing by default: a
 * snapshot's view); `changed` hears of a flag set (the fused step's row, soa/batch.ts).
 */
function flagView(plan: ActionPlan, flags: number[], flag: number, changed: () => void, run: () => void = () => {}): ActionRuntime {
  return {
    plan,
    get enabled() {
      return flags[flag] === 1
    },
    set enabled(on: boolean) {
      flags[flag] = on ? 1 : 0
      changed()
    },
    run,
    reset: () => {},
  }
}
