/**
 * Hooks (MODEL_LANGUAGE.md section 7): what a model does when something happens to an instance —
 * it is prepared, started, stopped, stepped or destroyed, or a client sets an attribute. A hook
 * sets an attribute (`set_attr`), runs the model's actions and conditions at once without moving
 * time (`refresh_model`), or calls a component method (`call`). Hooks are declared for the model
 * (`hooks:`) and per attribute (`attributes.<a>.hooks`, whose `on_*set` hooks fire for that
 * attribute only).
 *
 * @example
 * hooks:
 *   on_start: [{ set_attr: { attribute: $out(state), value: "'running'" } }]
 *   on_set: [refresh_model]
 */
import type { PyValue } from '../expression/index.js'
import { ActionEnvironment, describe, type BindContext, type CompileContext, type ValueSource, isMap, COMPONENT_PATH } from './compile-context.js'
import type { Target } from './targets.js'

export const HOOK_EVENTS = ['on_prepare', 'on_start', 'on_stop', 'on_run', 'on_destroy', 'on_set', 'on_internal_set', 'on_external_set'] as const
export type HookEvent = (typeof HOOK_EVENTS)[number]

/** One hook, compiled. */
type HookPlan =
  | { kind: 'set_attr'; path: string; target: Target; value: ValueSource }
  | { kind: 'refresh_model'; path: string }
  | { kind: 'call'; path: string; method: string; args: unknown[]; kwargs: Record<string, unknown> }

/** The hooks of a model: by event, and by attribute then event. */
export interface HookPlans {
  model: Map<HookEvent, HookPlan[]>
  attributes: Map<string, Map<HookEvent, HookPlan[]>>
}

const NO_SCOPE = { constants: new Map<string, PyValue>(), parameters: [] as string[], imports: {} }

/** Compiles a `hooks` block found at `at` (`hooks`, `attributes.level.hooks`). */
export function compileHooks(raw: unknown, at: string, context: CompileContext): Map<HookEvent, HookPlan[]> {
  const out = new Map<HookEvent, HookPlan[]>()
  if (raw === undefined || raw === null) return out
  if (!isMap(raw)) {
    context.problem(at, `expected a map of event -> list of hooks (${HOOK_EVENTS.join(', ')})`)
    return out
  }
  for (const [event, list] of Object.entries(raw)) {
    const where = `${at}.${event}`
    if (!(HOOK_EVENTS as readonly string[]).includes(event)) {
      context.problem(where, `unknown hook event '${event}' (expected ${HOOK_EVENTS.join(', ')})`)
      continue
    }
    const items = Array.isArray(list) ? list : [list]
    const plans: HookPlan[] = []
    items.forEach((item, i) => {
      const plan = compileHook(item, Array.isArray(list) ? `${where}[${i}]` : where, context)
      if (plan) plans.push(plan)
    })
    out.set(event as HookEvent, plans)
  }
  return out
}

function compileHook(raw: unknown, at: string, context: CompileContext): HookPlan | null {
  if (raw === 'refresh_model') return { kind: 'refresh_model', path: at }
  if (!isMap(raw) || Object.keys(raw).length !== 1) {
    context.problem(at, `a hook is {set_attr: {attribute, value}}, {call: {path, args, kwargs}} or refresh_model, got ${describe(raw)}`)
    return null
  }
  const [kind, spec] = Object.entries(raw)[0] as [string, unknown]
  if (kind === 'refresh_model') return { kind: 'refresh_model', path: at }
  if (kind === 'set_attr') {
    if (!isMap(spec)) {
      context.problem(`${at}.set_attr`, 'expected {attribute: <reference>, value: <expression>}')
      return null
    }
    for (const key of Object.keys(spec))
      if (key !== 'attribute' && key !== 'value') context.problem(`${at}.set_attr.${key}`, `unknown key '${key}' (expected attribute, value)`)
    const targets = context.targets(spec.attribute, `${at}.set_attr.attribute`)
    if (!Object.hasOwn(spec, 'value')) context.problem(`${at}.set_attr.value`, 'required')
    const value = Object.hasOwn(spec, 'value') ? context.setValue(spec.value, `${at}.set_attr.value`, NO_SCOPE) : null
    const target = targets?.[0]
    return target && value ? { kind: 'set_attr', path: at, target, value } : null
  }
  if (kind === 'call') {
    if (!isMap(spec) || typeof spec.path !== 'string' || !COMPONENT_PATH.test(spec.path.trim()) || spec.path.split('.').some((p) => p.startsWith('_'))) {
      context.problem(`${at}.call.path`, 'expected a dotted path ending in a method, such as communication.modbus_slave.detach')
      return null
    }
    for (const key of Object.keys(spec))
      if (!['path', 'args', 'kwargs'].includes(key)) context.problem(`${at}.call.${key}`, `unknown key '${key}' (expected path, args, kwargs)`)
    if (spec.args !== undefined && !Array.isArray(spec.args)) context.problem(`${at}.call.args`, 'expected a list')
    if (spec.kwargs !== undefined && !isMap(spec.kwargs)) context.problem(`${at}.call.kwargs`, 'expected a map')
    return {
      kind: 'call',
      path: at,
      method: spec.path.trim(),
      args: Array.isArray(spec.args) ? spec.args : [],
      kwargs: isMap(spec.kwargs) ? spec.kwargs : {},
    }
  }
  context.problem(`${at}.${kind}`, `unknown hook '${kind}' (expected set_attr, refresh_model, call)`)
  return null
}

/** A hook bound to an instance: its synchronous part, and the call it starts, if any. */
type HookRuntime = () => Promise<unknown> | void

/** The hooks of an instance whose model has none: shared, never written to. */
const NO_EVENTS: ReadonlyMap<HookEvent, HookRuntime[]> = new Map()
const NO_ATTRIBUTES: ReadonlyMap<string, ReadonlyMap<HookEvent, HookRuntime[]>> = new Map()

/**
 * The hooks of one instance. `fire` runs the hooks of an event in order: attribute writes and
 * refreshes at once, method calls awaited one after the other.
 */
export class InstanceHooks {
  readonly #model: ReadonlyMap<HookEvent, HookRuntime[]>
  readonly #attributes: ReadonlyMap<string, ReadonlyMap<HookEvent, HookRuntime[]>>

  constructor(plans: HookPlans, ctx: BindContext, refresh: () => void) {
    const bind = (events: Map<HookEvent, HookPlan[]>): ReadonlyMap<HookEvent, HookRuntime[]> =>
      events.size === 0 ? NO_EVENTS : new Map([...events].map(([event, list]) => [event, list.map((plan) => bindHook(plan, ctx, refresh))]))
    this.#model = bind(plans.model)
    // A model without hooks shares one empty map: two per instance were 0.37 KiB of each.
    this.#attributes = plans.attributes.size === 0 ? NO_ATTRIBUTES : new Map([...plans.attributes].map(([attr, events]) => [attr, bind(events)]))
  }

  /** Whether any hook listens to `event` (for attribute events: on that attribute or the model). */
  has(event: HookEvent, attribute?: string): boolean {
    return (this.#model.get(event)?.length ?? 0) > 0 || (attribute !== undefined && (this.#attributes.get(attribute)?.get(event)?.length ?? 0) > 0)
  }

  /**
   * Runs the hooks of `event`: the model's, then (for the set events) the attribute's. Resolves
   * when the calls among them are done; the synchronous ones have run when it returns.
   */
  fire(event: HookEvent, attribute?: string): Promise<void> | undefined {
    const list = [...(this.#model.get(event) ?? []), ...(attribute === undefined ? [] : (this.#attributes.get(attribute)?.get(event) ?? []))]
    let chain: Promise<unknown> | undefined
    for (const hook of list) {
      if (chain === undefined) {
        const result = hook()
        if (result !== undefined) chain = result
      } else chain = chain.then(() => hook())
    }
    return chain?.then(() => undefined)
  }
}

function bindHook(plan: HookPlan, ctx: BindContext, refresh: () => void): HookRuntime {
  const env = new ActionEnvironment(ctx, `hook ${plan.path}`)
  switch (plan.kind) {
    case 'set_attr': {
      const evaluate = env.evaluator(plan.value)
      const write = env.writer(plan.target)
      return () => write(evaluate())
    }
    case 'refresh_model':
      return refresh
    case 'call':
      return () => ctx.host.callPath(plan.method, plan.args, plan.kwargs)
  }
}
