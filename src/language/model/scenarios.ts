/**
 * Scenarios (MODEL_LANGUAGE.md section 6): named situations a model can be put in — a voltage sag,
 * a stuck sensor, a controller that answers late. Each holds overrides from its start to its stop,
 * runs its own actions and conditions after the model's with a timer of its own (time since it
 * started), ends after `duration` or on `stop()`, restores what it overrode, and may restart every
 * `period` (with a random `jitter`) up to `run_limit` times. Everything follows simulated time:
 * a test that pins the timer and steps gets the same result every time.
 *
 * @example
 * scenarios:
 *   sag: { duration: 5, overrides: { $out(v_nominal): 180.0 } }
 */
import { plainJson } from '../../values/number.js'
import type { ErrorDetail } from '../../errors.js'
import { PyRandom } from '../expression/index.js'
import { isLifecycleKind, type ActionPlan, type ActionRuntime } from './actions/index.js'
import { describe, type BindContext, type CompileContext, isMap, COMPONENT_PATH, NODE_NAME, NODE_NAME_RULE } from './compile-context.js'
import { bindGroups, compileConditions, compileList, runActions, runGroups, type BranchPlan, type BranchRuntime } from './conditions.js'
import { fromPy, toPy } from './convert.js'
import type { BehaviourHost, HostAttribute, Pins, StepFrame } from './runtime.js'
import { textSeed } from './signals.js'
import { saveActions, restoreActions, StateReader, type HeldState, type ScenarioSavedState, type StateValue } from './state.js'
import { isReference, type Target } from './targets.js'

const KEYS = ['name', 'display_name', 'description', 'enabled', 'duration', 'period', 'jitter', 'run_limit', 'overrides', 'actions', 'conditions', 'call']

/** A method call a scenario makes at its start, and another at its stop. */
interface CallSpec {
  path: string
  args: unknown[]
  kwargs: Record<string, unknown>
  stopPath: string | undefined
  stopArgs: unknown[]
  stopKwargs: Record<string, unknown>
}

/** A scenario compiled for a model. */
export interface ScenarioPlan {
  name: string
  displayName: string
  description: string | undefined
  enabled: boolean
  duration: number | undefined
  period: number | undefined
  jitter: number
  runLimit: number | undefined
  /** Values already of their attribute's type. */
  attributeOverrides: Array<{ target: Target; value: unknown }>
  pathOverrides: Array<{ path: string; value: unknown }>
  actions: ActionPlan[]
  groups: BranchPlan[][]
  call: CallSpec | undefined
}

/** Compiles a model's `scenarios` block; problems go to `context`. */
export function compileScenarios(raw: unknown, context: CompileContext): ScenarioPlan[] {
  if (raw === undefined || raw === null) return []
  if (!isMap(raw)) {
    context.problem('scenarios', 'expected a map of scenario name -> {duration, overrides, actions, ...}')
    return []
  }
  const plans: ScenarioPlan[] = []
  for (const [name, spec] of Object.entries(raw)) {
    const at = `scenarios.${name}`
    if (!NODE_NAME.test(name)) context.problem(at, `'${name}' is not a valid scenario name: ${NODE_NAME_RULE}`)
    if (!isMap(spec)) {
      context.problem(at, `a scenario is a map {duration, overrides, actions, ...}, got ${describe(spec)}`)
      continue
    }
    for (const key of Object.keys(spec)) if (!KEYS.includes(key)) context.problem(`${at}.${key}`, `unknown key '${key}' (expected ${KEYS.join(', ')})`)
    const number = (key: string, positive: boolean): number | undefined => {
      const v = plainJson(spec[key])
      if (v === undefined || v === null) return undefined
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (positive && v === 0)) {
        context.problem(`${at}.${key}`, positive ? 'expected a number > 0 (seconds)' : 'expected a number >= 0 (seconds)')
        return undefined
      }
      return v
    }
    const text = (key: string): string | undefined => {
      const v = spec[key]
      if (v === undefined) return undefined
      if (typeof v !== 'string') context.problem(`${at}.${key}`, 'expected a string')
      return typeof v === 'string' ? v : undefined
    }
    if (spec.enabled !== undefined && typeof spec.enabled !== 'boolean') context.problem(`${at}.enabled`, 'expected true or false')
    const runLimit = plainJson(spec.run_limit)
    if (runLimit !== undefined && runLimit !== null && !(Number.isSafeInteger(runLimit) && (runLimit as number) >= 1)) {
      context.problem(`${at}.run_limit`, 'expected an integer >= 1')
    }
    const attributeOverrides: ScenarioPlan['attributeOverrides'] = []
    const pathOverrides: ScenarioPlan['pathOverrides'] = []
    if (spec.overrides !== undefined) {
      if (!isMap(spec.overrides)) context.problem(`${at}.overrides`, 'expected a map of {reference, attribute or dotted path: value}')
      else {
        for (const [key, value] of Object.entries(spec.overrides)) {
          const where = `${at}.overrides.${key}`
          if (!isReference(key) && COMPONENT_PATH.test(key.trim())) pathOverrides.push({ path: key.trim().replace(/^~\.?/, '~.'), value: plainJson(value) })
          else {
            const targets = context.targets(key, where)
            const target = targets?.[0]
            if (target === undefined || target.attribute === '__timer') continue
            try {
              attributeOverrides.push({ target, value: fromPy(toPy(value, 'any'), context.types.get(target.attribute) ?? 'any') })
            } catch (err) {
              context.problem(where, `${(err as Error).message} (the value does not fit the attribute)`)
            }
          }
        }
      }
    }
    const actions = compileList(spec.actions, `${at}.actions`, context, new Map())
    for (const a of actions) {
      if (isLifecycleKind(a.kind)) {
        context.problem(a.path, `a ${a.kind} action cannot sit in a scenario: use the scenario's own overrides and call`)
      }
    }
    let groups: BranchPlan[][] = []
    if (spec.conditions !== undefined) {
      if (!Array.isArray(spec.conditions)) context.problem(`${at}.conditions`, 'expected a list of {if: <expression>, actions: [...]}')
      else groups = compileConditions(spec.conditions, `${at}.conditions`, context, false)
    }
    plans.push({
      name,
      // `name` is the reference product's spelling of the display name.
      displayName: text('display_name') ?? text('name') ?? name,
      description: text('description'),
      enabled: spec.enabled === true,
      duration: number('duration', true),
      period: number('period', true),
      jitter: number('jitter', false) ?? 0,
      runLimit: typeof runLimit === 'number' ? runLimit : undefined,
      attributeOverrides,
      pathOverrides,
      actions,
      groups,
      call: compileCall(spec.call, `${at}.call`, context),
    })
  }
  return plans
}

function compileCall(raw: unknown, at: string, context: CompileContext): CallSpec | undefined {
  if (raw === undefined || raw === null) return undefined
  if (!isMap(raw)) {
    context.problem(at, 'expected {path, args, kwargs, stop_path, stop_args, stop_kwargs}')
    return undefined
  }
  for (const key of Object.keys(raw)) {
    if (!['path', 'args', 'kwargs', 'stop_path', 'stop_args', 'stop_kwargs'].includes(key)) context.problem(`${at}.${key}`, `unknown key '${key}'`)
  }
  const path = (key: string, required: boolean): string | undefined => {
    const v = raw[key]
    if (v === undefined && !required) return undefined
    if (typeof v !== 'string' || !COMPONENT_PATH.test(v.trim()) || v.split('.').some((p) => p.startsWith('_'))) {
      context.problem(`${at}.${key}`, 'expected a dotted path ending in a method, such as communication.modbus_slave.detach')
      return undefined
    }
    return v.trim()
  }
  const list = (key: string): unknown[] => {
    const v = raw[key]
    if (v === undefined) return []
    if (!Array.isArray(v)) context.problem(`${at}.${key}`, 'expected a list')
    return Array.isArray(v) ? v : []
  }
  const map = (key: string): Record<string, unknown> => {
    const v = raw[key]
    if (v === undefined) return {}
    if (!isMap(v)) context.problem(`${at}.${key}`, 'expected a map')
    return isMap(v) ? v : {}
  }
  const start = path('path', true)
  if (start === undefined) return undefined
  return {
    path: start,
    args: list('args'),
    kwargs: map('kwargs'),
    stopPath: path('stop_path', false),
    stopArgs: list('stop_args'),
    stopKwargs: map('stop_kwargs'),
  }
}

/**
 * What an instance's scenarios hold, per attribute or path, as a stack: the scenario that took a
 * value last holds it, and when one lets go the value under it comes back — the one before all of
 * them once the last lets go — whatever order they stop in.
 *
 * @example
 * held.take('path:x', a, 1, 0); held.take('path:x', b, 2, 1)
 * held.release('path:x', a) // { write: false }: b still holds 2
 * held.release('path:x', b) // { write: true, value: 0 }
 */
export class HeldValues {
  /** Made on first use: an instance whose scenarios never hold a value (most) keeps none (0.2 KiB). */
  #map: Map<string, { base: unknown; layers: Array<{ owner: object; value: unknown }> }> | undefined

  #entries(): Map<string, { base: unknown; layers: Array<{ owner: object; value: unknown }> }> {
    return (this.#map ??= new Map())
  }

  /** `owner` holds `value` at `key` from now; the first holder records `current` as what to come back to. */
  take(key: string, owner: object, value: unknown, current: unknown): void {
    let entry = this.#entries().get(key)
    if (entry === undefined) this.#entries().set(key, (entry = { base: current, layers: [] }))
    entry.layers = entry.layers.filter((l) => l.owner !== owner)
    entry.layers.push({ owner, value })
  }

  /** Whether `owner` holds the value at `key` now (it is on top). */
  holds(key: string, owner: object): boolean {
    const layers = this.#entries().get(key)?.layers
    return layers !== undefined && layers[layers.length - 1]?.owner === owner
  }

  /** `owner` lets go of `key`: what to write now, if anything (the value under it, or the base). */
  release(key: string, owner: object): { write: boolean; value?: unknown } {
    const entry = this.#entries().get(key)
    if (entry === undefined) return { write: false }
    const wasTop = entry.layers[entry.layers.length - 1]?.owner === owner
    entry.layers = entry.layers.filter((l) => l.owner !== owner)
    const top = entry.layers[entry.layers.length - 1]
    if (top === undefined) {
      this.#entries().delete(key)
      return { write: true, value: entry.base }
    }
    return wasTop ? { write: true, value: top.value } : { write: false }
  }

  /** Every held key with its base and holders, each holder by `nameOf` (for a snapshot). */
  saveState(nameOf: (owner: object) => string): HeldState[] {
    return [...this.#entries()].map(([key, { base, layers }]) => {
      const out: HeldState = { key, layers: layers.map((l) => [nameOf(l.owner), l.value as StateValue]) }
      if (base !== undefined) out.base = base as StateValue
      return out
    })
  }

  /** Replaces what is held with a saved list, each holder found by name; on a problem nothing changes. */
  restoreState(list: unknown[], ownerOf: (name: string) => object | undefined, path: string): ErrorDetail[] | void {
    const problems: ErrorDetail[] = []
    const entries = new Map<string, { base: unknown; layers: Array<{ owner: object; value: unknown }> }>()
    list.forEach((item, i) => {
      const read = new StateReader(item, `${path}[${i}]`, problems)
      const key = read.raw('key')
      if (typeof key !== 'string' || !/^(internal|external|path):./.test(key))
        read.problem('key', 'expected internal:<attribute>, external:<attribute> or path:<dotted path>')
      const layers: Array<{ owner: object; value: unknown }> = []
      read.list('layers').forEach((layer, j) => {
        const pair = Array.isArray(layer) && layer.length === 2 ? (layer as [unknown, unknown]) : undefined
        const owner = typeof pair?.[0] === 'string' ? ownerOf(pair[0]) : undefined
        if (pair === undefined || owner === undefined) read.problem(`layers[${j}]`, 'expected [<scenario of this model>, value]')
        else layers.push({ owner, value: pair[1] })
      })
      if (typeof key === 'string') entries.set(key, { base: read.raw('base'), layers })
    })
    if (problems.length) return problems
    this.#entries().clear()
    for (const [key, entry] of entries) this.#entries().set(key, entry)
  }
}

/** A scenario's state as its node shows it. */
export type ScenarioState = 'idle' | 'active' | 'finished'

/**
 * A scenario on one instance: its state, its own timer and the values it overrode.
 */
export class ScenarioRuntime {
  readonly plan: ScenarioPlan
  #state: ScenarioState = 'idle'
  #runs = 0
  #startedAt = 0
  #elapsed = 0
  #nextStart: number | undefined
  readonly #frame: StepFrame = { time: 0, dt: 1 }
  readonly #host: BehaviourHost
  readonly #actions: ActionRuntime[]
  readonly #groups: BranchRuntime[][]
  readonly #writes: Array<{ attr: HostAttribute; side: 'internal' | 'external'; value: unknown }>
  readonly #random: PyRandom
  readonly #held: HeldValues
  /** Paths it took at its last start (some may have named nothing). */
  #takenPaths: string[] = []
  /** Restored while active: its path overrides and call are made again when the instance is next activated. */
  #resume = false
  /** The asynchronous part of the last start or stop (dotted-path overrides, calls). */
  #pending: Promise<void> = Promise.resolve()

  constructor(plan: ScenarioPlan, ctx: BindContext, held: HeldValues) {
    this.plan = plan
    this.#held = held
    this.#host = ctx.host
    // The scenario's actions see its own timer: time since it started.
    const own: BindContext = { host: ctx.host, frame: this.#frame, undo: ctx.undo }
    this.#actions = plan.actions.map((a) => a.bind(own))
    this.#groups = bindGroups(plan.groups, own)
    this.#writes = plan.attributeOverrides.flatMap(({ target, value }) => {
      const attr = ctx.host.attribute(target.attribute)
      return attr ? [{ attr, side: target.side, value }] : []
    })
    this.#random = new PyRandom(textSeed(`${ctx.host.name}/scenarios/${plan.name}`))
  }

  get state(): ScenarioState {
    return this.#state
  }

  get runs(): number {
    return this.#runs
  }

  /** Hears of every change of `inPlay` (an instance in its model's loop steps alone while it is in play: soa/batch.ts). */
  playChanged: (() => void) | undefined = undefined

  /** Whether it has a part in the instance's next step: active, or its period may start it. */
  get inPlay(): boolean {
    return this.#state === 'active' || this.#nextStart !== undefined
  }

  get elapsed(): number {
    return this.#elapsed
  }

  /** Settles once the asynchronous part of the last start or stop is done. */
  get settled(): Promise<void> {
    return this.#pending
  }

  /** Starts it at instance time `time` (again, if it was active: a restart). */
  start(time: number): Promise<void> {
    // A restart: the end's promise is #pending, which the start below waits on before it goes on.
    if (this.#state === 'active') void this.#end()
    this.#state = 'active'
    this.#runs++
    this.#startedAt = time
    this.#elapsed = 0
    const { period, jitter, runLimit } = this.plan
    this.#nextStart =
      period !== undefined && (runLimit === undefined || this.#runs < runLimit)
        ? time + period + (jitter > 0 ? (this.#random.random() * 2 - 1) * jitter : 0)
        : undefined
    this.playChanged?.()
    for (const w of this.#writes) this.#held.take(heldKey(w), this, w.value, w.side === 'external' ? w.attr.presented : w.attr.internalValue)
    this.#hold()
    const host = this.#host
    const plan = this.plan
    const previous = this.#pending
    this.#pending = (async () => {
      await previous.catch(() => {})
      this.#takenPaths = []
      for (const { path, value } of plan.pathOverrides) {
        const before = await host.readPath(path)
        if (before === undefined) {
          host.warn(`scenario '${plan.name}': '${path}' names nothing`, { scenario: plan.name })
          continue
        }
        this.#held.take(`path:${path}`, this, value, before.value)
        this.#takenPaths.push(path)
        await host.writePath(path, value)
      }
      if (plan.call) await host.callPath(plan.call.path, plan.call.args, plan.call.kwargs)
    })()
    return this.#pending
  }

  /** Stops it: overridden values restored (what its actions wrote stays), `stop_path` called. */
  stop(): Promise<void> {
    if (this.#state !== 'active') return this.#pending
    return this.#end()
  }

  #end(): Promise<void> {
    const more = this.#nextStart !== undefined
    this.#state = more ? 'idle' : 'finished'
    this.playChanged?.()
    for (const w of this.#writes) {
      const back = this.#held.release(heldKey(w), this)
      if (!back.write) continue
      if (w.side === 'external') w.attr.setPresented(back.value as { value: unknown } | undefined)
      else {
        // Ended inside a step (its duration was up): the value it pinned is let go first.
        w.attr.pin?.(undefined)
        w.attr.setComputed(back.value)
      }
    }
    const host = this.#host
    const call = this.plan.call
    const previous = this.#pending
    this.#pending = (async () => {
      await previous.catch(() => {})
      for (const path of this.#takenPaths.reverse()) {
        const back = this.#held.release(`path:${path}`, this)
        if (back.write) await host.writePath(path, back.value)
      }
      this.#takenPaths = []
      if (call?.stopPath) await host.callPath(call.stopPath, call.stopArgs, call.stopKwargs)
    })()
    return this.#pending
  }

  /** Writes the held attribute overrides again (after the actions of a step). */
  #hold(): void {
    for (const w of this.#writes) {
      if (!this.#held.holds(heldKey(w), this)) continue
      if (w.side === 'external') w.attr.setPresented({ value: w.value })
      else w.attr.setComputed(w.value)
    }
  }

  /**
   * Its part of an instance step at instance time `time`: it ends when its duration is up, starts
   * when its period comes round, and while active runs its actions and conditions on its own timer.
   */
  step(time: number, dt: number): void {
    if (this.#state === 'active' && this.plan.duration !== undefined && time - this.#startedAt >= this.plan.duration) this.#background(this.#end())
    if (this.#state !== 'active' && this.#nextStart !== undefined && time >= this.#nextStart) this.#background(this.start(time))
    if (this.#state !== 'active') return
    this.#elapsed = time - this.#startedAt
    this.#frame.time = this.#elapsed
    this.#frame.dt = dt
    runActions(this.#actions)
    runGroups(this.#groups)
  }

  /**
   * Before and after every step's actions: held values written again; with `pins` (before), the
   * internal ones are pinned until the step lets go, so the model's actions read them.
   */
  reapply(pins?: Pins): void {
    if (this.#state !== 'active') return
    this.#hold()
    if (pins === undefined) return
    for (const w of this.#writes) if (w.side === 'internal' && this.#held.holds(heldKey(w), this)) pins.pin(w.attr, w.value)
  }

  /** Back to idle, never run (instance reset); what it holds is restored first. */
  async reset(): Promise<void> {
    await this.stop()
    this.#state = 'idle'
    this.#runs = 0
    this.#elapsed = 0
    this.#nextStart = undefined
    this.playChanged?.()
    for (const a of this.#actions) a.reset()
    this.#random.seed(textSeed(`${this.#host.name}/scenarios/${this.plan.name}`))
  }

  #background(task: Promise<void>): void {
    task.catch((err: unknown) => this.#host.warn(`scenario '${this.plan.name}' failed`, { scenario: this.plan.name, err: (err as Error).message }))
  }

  /** Its state, timer, runs, the generator of its jitter and its own actions' state (for a snapshot). */
  saveState(): ScenarioSavedState {
    return {
      state: this.#state,
      runs: this.#runs,
      started_at: this.#startedAt,
      elapsed: this.#elapsed,
      next_start: this.#nextStart ?? null,
      // Its generator only draws the jitter of its restarts.
      ...(this.plan.jitter > 0 ? { random: { ...this.#random.getState() } } : {}),
      paths: [...this.#takenPaths],
      actions: saveActions(this.#actions),
    }
  }

  /**
   * Takes back what `saveState` gave. The values it holds come back with the instance's held
   * values; a scenario that was active makes its dotted-path overrides and its `call` again when
   * the instance is next activated (`resume`), since they live outside the instance's values. On
   * a problem nothing changes and the problems come back.
   */
  restoreState(state: unknown, path: string): ErrorDetail[] | void {
    const read = new StateReader(state, path)
    const status = read.choice('state', ['idle', 'active', 'finished'] as const)
    const runs = read.number('runs', { integer: true, min: 0 })
    const startedAt = read.number('started_at', {})
    const elapsed = read.number('elapsed', {})
    const nextStart = read.number('next_start', { nullable: true })
    const paths = read.list('paths', true)
    if (!paths.every((p) => typeof p === 'string' && this.plan.pathOverrides.some((o) => o.path === p)))
      read.problem('paths', "expected the scenario's own override paths")
    const actions = read.map('actions', true)
    if (!read.ok) return read.problems
    const random = new PyRandom(0n)
    const problem = read.has('random') ? random.setState(read.raw('random')) : undefined
    if (problem !== undefined) return [{ path: `${path}.random`, message: problem }]
    const problems = restoreActions(this.#actions, actions, `${path}.actions`)
    if (problems) return problems
    this.#state = status
    this.#runs = runs
    this.#startedAt = startedAt
    this.#elapsed = elapsed
    this.#nextStart = nextStart ?? undefined
    this.playChanged?.()
    if (read.has('random')) this.#random.setState(random.getState())
    this.#takenPaths = paths as string[]
    this.#resume = status === 'active'
  }

  /** After a restore of an active scenario: its dotted-path overrides (those it holds on top) and its `call` made again. */
  resume(): Promise<void> {
    if (!this.#resume) return this.#pending
    this.#resume = false
    const host = this.#host
    const plan = this.plan
    const previous = this.#pending
    this.#pending = (async () => {
      await previous.catch(() => {})
      for (const path of this.#takenPaths) {
        const override = plan.pathOverrides.find((o) => o.path === path)
        if (override !== undefined && this.#held.holds(`path:${path}`, this)) await host.writePath(path, override.value)
      }
      if (plan.call) await host.callPath(plan.call.path, plan.call.args, plan.call.kwargs)
    })()
    return this.#pending
  }
}

/** The key under which an attribute override is held: the attribute and which of its values. */
function heldKey(w: { attr: HostAttribute; side: 'internal' | 'external' }): string {
  return `${w.side}:${w.attr.name}`
}
