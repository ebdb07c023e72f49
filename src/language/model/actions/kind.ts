/**
 * What an action kind is made of ({@link ActionKindDescriptor}: its fields, when it runs, its
 * compiler and its documentation), what it compiles to ({@link ActionPlan}, once per model) and
 * binds to ({@link ActionRuntime}, once per instance), and the helpers the kinds' compilers share.
 * Each kind is one module of this folder; index.ts lists them.
 *
 * @example
 * export const setKind = defineActionKind({ kind: 'set', fields: { value: '...' }, compile(input) { ... }, doc: { ... } })
 */
import type { ErrorDetail } from '../../../errors.js'
import type { PyValue } from '../../expression/index.js'
import { pyRound } from '../../expression/builtins.js'
import { fromPy } from '../convert.js'
import type { Pins } from '../runtime.js'
import {
  describe,
  writeFailure,
  type ActionEnvironment,
  type ActionScope,
  type BindContext,
  type CompileContext,
  type ValueSource,
  isMap,
} from '../compile-context.js'
import type { Fusion } from '../fused.js'
import type { StateValue } from '../state.js'
import type { Target } from '../targets.js'
import type { ActionKind } from './index.js'

/** An action compiled for a model: shared by every instance of it. */
export interface ActionPlan {
  readonly name: string
  readonly kind: ActionKind
  /** Where it is in the model (`actions[2]`, `conditions[0].actions[1]`). */
  readonly path: string
  readonly description: string | undefined
  readonly enabled: boolean
  /** Its targets as written. */
  readonly targets: readonly string[]
  /** How faults name it: `action 'power' (actions[2])`. */
  readonly label: string
  /** What a `function` or `set` action computes and writes, when fused.ts may generate it with its neighbours. */
  readonly fusion?: Fusion
  bind(ctx: BindContext): ActionRuntime
}

/** An action bound to one instance. */
export interface ActionRuntime {
  readonly plan: ActionPlan
  enabled: boolean
  /** One step of it (for an action with worker expressions: after `runAsync` fetched their values). */
  run(): void
  /**
   * One step of an action that has expressions the Python worker evaluates: its params in order,
   * then its worker expressions' values fetched, then `run`. Undefined for an all-native action.
   */
  runAsync?(): Promise<void>
  /** Back to its first state (a PID's integral, a noise generator's seed). */
  reset(): void
  /** Lifecycle kinds (`call`, `suspend`, `override`): when the instance is prepared or started. */
  activate?(): Promise<void>
  /** ... and when it stops. */
  deactivate?(): Promise<void>
  /**
   * `override`: its values written again before the actions of each step and after its
   * conditions; with `pins`, the internal values it holds are pinned there until the step lets go.
   */
  reapply?(pins?: Pins): void
  /** What it keeps between steps (a PID's integral, a noise generator), JSON data; undefined: nothing now. */
  state?(): StateValue | undefined
  /** Takes back what `state` gave: the problems, each with its path (and nothing changed), or nothing. */
  restore?(state: unknown, path: string): ErrorDetail[] | void
}

/** What a kind's compiler gets. */
export interface KindInput {
  target: unknown
  fields: Record<string, unknown>
  fieldPath: (key: string) => string
  scope: ActionScope
  context: CompileContext
  path: string
  kind: ActionKind
  /** Where the target is written in the entry. */
  targetAt: string
  /** Says what a `function` or `set` action computes and writes (see {@link ActionPlan.fusion}). */
  fuse: (value: ValueSource, targets: readonly Target[]) => void
}

/** How a compiled action makes its runtime on an instance. */
export type RuntimeMaker = (env: ActionEnvironment, plan: ActionPlan) => ActionRuntime

/** A kind's compiler: checks its fields (problems go to the context) and returns how to make the runtime, or null. */
export type KindCompiler = (input: KindInput) => RuntimeMaker | null

/** One action kind: everything the model language knows of it. */
export interface ActionKindDescriptor<K extends string = string> {
  /** The key that makes an entry this kind: `{ramp: $out(x), ...}`. */
  readonly kind: K
  /**
   * Its own fields, each with what it means (docs/actions.md lists them); any other key of the
   * action is a named constant for its expressions.
   */
  readonly fields: Readonly<Record<string, string>>
  /**
   * A kind that holds a state while the instance is active instead of running each step: it acts
   * when the instance is prepared or started and is undone when it stops. Its key holds its whole
   * spec (there is no target), and it may not sit in a condition or a scenario.
   */
  readonly lifecycle?: true
  readonly compile: KindCompiler
  /** For docs/actions.md and the OpenAPI description of `actions`: one sentence or two, and one entry of this kind. */
  readonly doc: { readonly summary: string; readonly example: Readonly<Record<string, unknown>> }
}

/** A kind's descriptor, with its name kept as a literal type (so that index.ts can derive {@link ActionKind}). */
export function defineActionKind<const K extends string>(descriptor: ActionKindDescriptor<K>): ActionKindDescriptor<K> {
  return descriptor
}

/** Where the target is written in the entry. */
export function targetPath(input: KindInput): string {
  return input.targetAt
}

/** A field that is one of a few words, or `fallback` when absent. */
export function choice<T extends string>(input: KindInput, key: string, allowed: readonly T[], fallback: T): T {
  const raw = input.fields[key]
  if (raw === undefined) return fallback
  if (typeof raw === 'string' && (allowed as readonly string[]).includes(raw)) return raw as T
  input.context.problem(input.fieldPath(key), `expected one of ${allowed.join(', ')}`)
  return fallback
}

/** A field that is a number as written (not an expression), or `fallback` when absent. */
export function constantNumber(input: KindInput, key: string, fallback: number): number {
  const raw = input.fields[key]
  if (raw === undefined || raw === null) return fallback
  if (typeof raw === 'number' && !Number.isNaN(raw)) return raw
  input.context.problem(input.fieldPath(key), `expected a number, got ${describe(raw)}`)
  return fallback
}

export function booleanField(input: KindInput, key: string, fallback: boolean): boolean {
  const raw = input.fields[key]
  if (raw === undefined) return fallback
  if (typeof raw === 'boolean') return raw
  input.context.problem(input.fieldPath(key), 'expected true or false')
  return fallback
}

/** A dotted component path (`communication.modbus_slave.detach`, `~.polling`), or null after a problem. */
export function pathField(context: CompileContext, raw: unknown, path: string, required: true): string | null
export function pathField(context: CompileContext, raw: unknown, path: string, required: false): string | null | undefined
export function pathField(context: CompileContext, raw: unknown, path: string, required: boolean): string | null | undefined {
  if (raw === undefined || raw === null) {
    if (required) context.problem(path, 'required: a dotted path such as communication.modbus_slave.detach')
    return required ? null : undefined
  }
  if (typeof raw !== 'string' || !/^(~\.|\.+)?[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$/.test(raw.trim())) {
    context.problem(path, `expected a dotted path such as communication.modbus_slave.detach, got ${describe(raw)}`)
    return null
  }
  const text = raw.trim().replace(/^\.+/, '')
  if (text.split('.').some((part) => part.startsWith('_'))) {
    context.problem(path, 'path parts starting with _ are not allowed')
    return null
  }
  return text
}

export function listField(context: CompileContext, raw: unknown, path: string): unknown[] {
  if (raw === undefined || raw === null) return []
  if (Array.isArray(raw)) return raw
  context.problem(path, 'expected a list')
  return []
}

export function mapField(context: CompileContext, raw: unknown, path: string): Record<string, unknown> {
  if (raw === undefined || raw === null) return {}
  if (isMap(raw)) return raw
  context.problem(path, 'expected a map')
  return {}
}

/** Writes a result to every target of an action, each converted to its attribute's type. */
export function targetWriter(env: ActionEnvironment, targets: readonly Target[], label: string, path: string): (value: PyValue) => void {
  const writers = targets.map((t) => env.writer(t))
  const host = env.ctx.host
  if (writers.length === 1) {
    const write = writers[0] as (value: PyValue) => void
    return (value) => {
      try {
        write(value)
      } catch (err) {
        throw writeFailure(host.name, label, path, err)
      }
    }
  }
  return (value) => {
    try {
      for (const write of writers) write(value)
    } catch (err) {
      throw writeFailure(host.name, label, path, err)
    }
  }
}

const NOTHING = (): void => {}

/** A runtime for an action that computes a value each step and writes it to its targets. */
export function valueAction(
  plan: ActionPlan,
  env: ActionEnvironment,
  targets: readonly Target[],
  compute: () => PyValue,
  reset: () => void = NOTHING,
  kept?: { state(): StateValue; restore(state: unknown, path: string): ErrorDetail[] | void },
): ActionRuntime {
  const label = plan.label
  const host = env.ctx.host
  const writers = targets.map((t) => env.writer(t))
  const single = writers.length === 1 ? (writers[0] as (value: PyValue) => void) : undefined
  return {
    plan,
    enabled: plan.enabled,
    run: () => {
      let value: PyValue
      try {
        value = compute()
        if (single !== undefined) single(value)
        else for (const write of writers) write(value)
      } catch (err) {
        throw writeFailure(host.name, label, plan.path, err)
      }
    },
    reset,
    ...(kept === undefined ? {} : { state: () => kept.state(), restore: (state: unknown, path: string) => kept.restore(state, path) }),
  }
}

/** `output_type`: float (default) or int (rounded half to even, as Python's round). */
export function outputType(input: KindInput): (v: number) => PyValue {
  const type = choice(input, 'output_type', ['float', 'int'] as const, 'float')
  return type === 'int' ? (v) => pyRound(v) : (v) => v
}

/** A value as a float, as Python's float() would take it (a str or None is Python's error). */
export function asNumber(value: PyValue): number {
  if (typeof value === 'number') return value
  if (typeof value === 'bigint' || typeof value === 'boolean') return Number(value)
  return fromPy(value, 'float') as number
}
