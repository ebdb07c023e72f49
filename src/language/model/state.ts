/**
 * The runtime state of an instance's declarative behaviour as a snapshot keeps it: JSON data
 * only, so a snapshot file can hold it and a later server can take it back. What each part holds
 * is written by the class that keeps it (`saveState`) and taken back by the same class
 * (`restoreState`), which checks the shape first and answers each problem with its path.
 *
 * @example
 * const saved: BehaviourState = behaviour.saveState()
 * const problems = other.restoreState(saved, 'state.instances.meter_1.behaviour') // undefined: taken
 */
import type { ErrorDetail } from '../../errors.js'
import type { ActionRuntime } from './actions/index.js'
import { isRecord } from '../../definition/is-record.js'

/** JSON data: what a state holds. */
export type StateValue = null | boolean | number | string | StateValue[] | { [key: string]: StateValue }

/**
 * An instance's behaviour: whether its held actions hold now, each named action's state, each
 * scenario's, and the values the scenarios hold (a stack per attribute or path).
 *
 * @example
 * { active: true, actions: { pid_0: { enabled: true, state: { integral: 1.5, ... } } }, scenarios: {}, held: [] }
 */
export interface BehaviourState {
  active: boolean
  actions: Record<string, ActionState>
  scenarios: Record<string, ScenarioSavedState>
  held: HeldState[]
}

/** One action: whether it is enabled, and what it keeps between steps (absent: nothing). */
export interface ActionState {
  enabled: boolean
  state?: StateValue
}

/** One scenario: its state, runs and timer, the generator of its jitter, and its own actions. */
export interface ScenarioSavedState {
  state: 'idle' | 'active' | 'finished'
  runs: number
  started_at: number
  elapsed: number
  next_start: number | null
  /** The generator of its jitter (absent when it has no jitter). */
  random?: StateValue
  /** Dotted paths whose values it took at its start. */
  paths: string[]
  actions: Record<string, ActionState>
}

/**
 * What the scenarios of an instance hold at one key (`internal:<attribute>`,
 * `external:<attribute>`, `path:<dotted path>`): the value from before all of them (absent: none
 * was set) and each holder's value, the one on top last.
 */
export interface HeldState {
  key: string
  base?: StateValue
  layers: Array<[scenario: string, value: StateValue]>
}

/**
 * Reads a state object's fields and collects what is wrong with them, each with its path.
 *
 * @example
 * const read = new StateReader(state, 'state.instances.a.behaviour.actions.pid_0.state')
 * const integral = read.number('integral')
 * if (read.problems.length) return read.problems
 */
export class StateReader {
  readonly problems: ErrorDetail[]
  readonly path: string
  readonly #object: Record<string, unknown>
  /** False when the value is not an object: that one problem is reported, not each of its fields. */
  readonly #whole: boolean
  readonly #before: number

  constructor(value: unknown, path: string, problems: ErrorDetail[] = []) {
    this.path = path
    this.problems = problems
    this.#before = problems.length
    this.#whole = isRecord(value)
    this.#object = isRecord(value) ? value : {}
    if (!this.#whole) this.problems.push({ path, message: `expected an object, got ${kind(value)}` })
  }

  /** Whether no problem was found in this object (so far). */
  get ok(): boolean {
    return this.problems.length === this.#before
  }

  #fail(key: string, message: string): void {
    if (this.#whole) this.problems.push({ path: `${this.path}.${key}`, message })
  }

  has(key: string): boolean {
    return Object.hasOwn(this.#object, key)
  }

  raw(key: string): unknown {
    return this.#object[key]
  }

  number(key: string, opts: { nullable?: false; integer?: boolean; min?: number }): number
  number(key: string, opts: { nullable: true; integer?: boolean; min?: number }): number | null
  number(key: string, opts: { nullable?: boolean; integer?: boolean; min?: number } = {}): number | null {
    const value = this.#object[key]
    if (value === null && opts.nullable) return null
    const fits =
      typeof value === 'number' && Number.isFinite(value) && (!opts.integer || Number.isInteger(value)) && (opts.min === undefined || value >= opts.min)
    if (!fits) {
      const what = `${opts.integer ? 'an integer' : 'a finite number'}${opts.min === undefined ? '' : ` >= ${opts.min}`}${opts.nullable ? ' or null' : ''}`
      this.#fail(key, `expected ${what}, got ${kind(value)}`)
      return 0
    }
    return value
  }

  boolean(key: string): boolean {
    const value = this.#object[key]
    if (typeof value !== 'boolean') {
      this.#fail(key, `expected true or false, got ${kind(value)}`)
      return false
    }
    return value
  }

  choice<T extends string>(key: string, allowed: readonly T[]): T {
    const value = this.#object[key]
    if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
      this.#fail(key, `expected one of ${allowed.join(', ')}, got ${kind(value)}`)
      return allowed[0] as T
    }
    return value as T
  }

  /** A map of name -> object (an empty map when absent and `optional`). */
  map(key: string, optional = false): Record<string, unknown> {
    const value = this.#object[key]
    if (value === undefined && optional) return {}
    if (!isRecord(value)) {
      this.#fail(key, `expected an object, got ${kind(value)}`)
      return {}
    }
    return value
  }

  list(key: string, optional = false): unknown[] {
    const value = this.#object[key]
    if (value === undefined && optional) return []
    if (!Array.isArray(value)) {
      this.#fail(key, `expected a list, got ${kind(value)}`)
      return []
    }
    return value
  }

  problem(key: string, message: string): void {
    if (this.#whole) this.problems.push({ path: key === '' ? this.path : `${this.path}.${key}`, message })
  }
}

/**
 * The state of each named action: whether it is enabled and what it keeps.
 *
 * @example
 * saveActions(behaviour.actions) // { pid_0: { enabled: true, state: { integral: 0.5, ... } }, set_1: { enabled: true } }
 */
export function saveActions(actions: readonly ActionRuntime[]): Record<string, ActionState> {
  const out: Record<string, ActionState> = {}
  for (const action of actions) {
    const kept = action.state?.()
    out[action.plan.name] = kept === undefined ? { enabled: action.enabled } : { enabled: action.enabled, state: kept }
  }
  return out
}

/**
 * Takes back what `saveActions` gave, by name: all of it, or (on a problem) none of it. An action
 * the saved map leaves out keeps its state; a name no action has is a problem.
 *
 * @example
 * const problems = restoreActions(actions, saved, 'state.instances.a.behaviour.actions')
 */
export function restoreActions(actions: readonly ActionRuntime[], saved: Record<string, unknown>, path: string): ErrorDetail[] | void {
  const byName = new Map(actions.map((a) => [a.plan.name, a]))
  const problems: ErrorDetail[] = []
  const taken: Array<{ action: ActionRuntime; enabled: boolean; state: unknown }> = []
  for (const [name, value] of Object.entries(saved)) {
    const action = byName.get(name)
    if (action === undefined) {
      problems.push({ path: `${path}.${name}`, message: `no action of that name (actions: ${[...byName.keys()].join(', ') || 'none'})` })
      continue
    }
    const read = new StateReader(value, `${path}.${name}`, problems)
    const enabled = read.boolean('enabled')
    if (read.has('state') && action.restore === undefined) read.problem('state', `a ${action.plan.kind} action keeps no state`)
    taken.push({ action, enabled, state: read.has('state') ? read.raw('state') : undefined })
  }
  // Every restore is tried, so that every problem is reported; on any, all is taken back.
  const before = saveActions(actions)
  for (const { action, state } of taken) {
    if (state === undefined) continue
    const failed = action.restore?.(state, `${path}.${action.plan.name}.state`)
    if (failed) problems.push(...failed)
  }
  if (problems.length) {
    // Back to what they held: an action whose restore went through takes its own state again.
    for (const { action } of taken) action.restore?.(before[action.plan.name]?.state ?? null, path)
    return problems
  }
  for (const { action, enabled } of taken) action.enabled = enabled
}

/** How a value is named in a problem: its JSON kind and, when short, the value. */
export function kind(value: unknown): string {
  if (value === undefined) return 'nothing'
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'a list'
  if (typeof value === 'object') return 'an object'
  const text = JSON.stringify(value)
  return `${typeof value} ${text.length > 40 ? `${text.slice(0, 37)}...` : text}`
}
