/**
 * The action kinds of MODEL_LANGUAGE.md section 3, each compiled once per model into an
 * {@link ActionPlan} and bound once per instance into an {@link ActionRuntime} whose `run` is
 * one step of it. docs/actions.md describes every kind with an example.
 *
 * @example
 * const plan = compileAction({ function: '$out(power)', call: 'V * I' }, 'actions[0]', context, 0)
 */
import { NotFoundError, type ErrorDetail } from '../../errors.js'
import { plainJson } from '../../definition/json-float.js'
import { typeProblem } from '../../definition/model-schema.js'
import { PyException, type PyValue } from '../expression/index.js'
import { pyRound } from '../expression/builtins.js'
import { textSeedOf } from '../expression/random-module.js'
import { fromPy, toPy } from './convert.js'
import {
  ActionEnvironment,
  describe,
  writeFailure,
  type ActionScope,
  type BindContext,
  type CompileContext,
  type ValueSource,
  isMap,
  NODE_NAME,
  NODE_NAME_RULE,
} from './compile-context.js'
import type { Fusion } from './fused.js'
import { interpolator, Noise, Pid, rampValue, sawValue, textSeed } from './signals.js'
import type { Undoable } from './runtime.js'
import { StateReader, type StateValue } from './state.js'
import { isReference, type Target } from './targets.js'

/** The kinds, in the order an entry is recognised by (`call` last: it is also a field of `function`). */
export const ACTION_KINDS = ['function', 'set', 'noise', 'ramp', 'saw', 'interpolate', 'pid', 'suspend', 'override', 'overrides', 'call'] as const
export type ActionKind = (typeof ACTION_KINDS)[number]

const COMMON = ['name', 'description', 'params', 'imports', 'enabled', 'output']

/** The fields each kind defines; any other key of an action is a named constant for its expressions. */
const FIELDS: Record<ActionKind, readonly string[]> = {
  function: ['call'],
  set: ['value'],
  noise: ['type', 'mean', 'std', 'mode', 'output_type', 'seed'],
  ramp: ['start_value', 'stop_value', 'duration', 'type', 'overshoot', 'stabilization_time', 'output_type'],
  saw: ['start_value', 'stop_value', 'period', 'type', 'output_type'],
  interpolate: ['points', 'method', 'fill_value', 'output_type'],
  pid: ['setpoint', 'input', 'feedback', 'kp', 'ki', 'kd', 'sample_time', 'output_min', 'output_max'],
  call: ['path', 'args', 'kwargs', 'stop_path', 'stop_args', 'stop_kwargs'],
  suspend: ['paths', 'targets', 'fail_on_missing'],
  override: ['fail_on_missing'],
  overrides: ['fail_on_missing'],
}

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
  /** `override`: its values written again after the conditions of each step. */
  reapply?(): void
  /** What it keeps between steps (a PID's integral, a noise generator), JSON data; undefined: nothing now. */
  state?(): StateValue | undefined
  /** Takes back what `state` gave: the problems, each with its path (and nothing changed), or nothing. */
  restore?(state: unknown, path: string): ErrorDetail[] | void
}

/**
 * Of the keys of an action read as `kind`, one that is not a field of it and looks like a kind
 * of its own: a name close to a kind's (`fnction`), or a key whose value is a target
 * (`$out(x)`, `#attr(x)`, a list of them); with the problem that names it. Undefined when there
 * is none.
 */
function misspeltKind(raw: Record<string, unknown>, kind: ActionKind): { key: string; message: string } | undefined {
  const candidates = Object.keys(raw)
    .filter((key) => key !== kind && !COMMON.includes(key) && !FIELDS[kind].includes(key) && !(ACTION_KINDS as readonly string[]).includes(key))
    .map((key) => ({ key, like: closestKind(key), target: isTargetLike(raw[key]) }))
    .filter((c) => c.like !== undefined || c.target)
  const best = candidates.find((c) => c.like !== undefined) ?? candidates[0]
  if (best === undefined) return undefined
  const why =
    best.like !== undefined
      ? `did you mean '${best.like}'?`
      : `its value ${JSON.stringify(raw[best.key])} is a target; the kinds are ${ACTION_KINDS.join(', ')}`
  return {
    key: best.key,
    message: `unknown action kind '${best.key}' (${why}); the action was read as a '${kind}' action because of its '${kind}' key`,
  }
}

/** Whether a value is written as a target: a reference such as `$out(x)`, or a list of them. */
function isTargetLike(value: unknown): boolean {
  if (typeof value === 'string') return isReference(value)
  return Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string' && isReference(v))
}

/** The kind a key is a likely misspelling of (one or two letters off, one for short keys), or undefined. */
function closestKind(key: string): ActionKind | undefined {
  const word = key.toLowerCase()
  const limit = word.length <= 4 ? 1 : 2
  let best: { kind: ActionKind; distance: number } | undefined
  for (const kind of ACTION_KINDS) {
    const distance = editDistance(word, kind)
    if (distance > 0 && distance <= limit && (best === undefined || distance < best.distance)) best = { kind, distance }
  }
  return best?.kind
}

/**
 * Letters to insert, delete, replace or swap (adjacent) to turn `a` into `b` (optimal string
 * alignment). Names of a dozen letters against eleven kinds: a small table, not worth a library.
 */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1)
    }
  }
  return d[a.length]![b.length]!
}

/** The kind an entry is, or null. */
function kindOf(entry: Record<string, unknown>): ActionKind | null {
  for (const kind of ACTION_KINDS) if (Object.hasOwn(entry, kind)) return kind
  return null
}

/**
 * Compiles one action entry; problems go to `context` (and null comes back).
 */
export function compileAction(raw: unknown, path: string, context: CompileContext, index: number): ActionPlan | null {
  if (!isMap(raw)) {
    context.problem(path, `an action is a map such as {function: $out(x), call: "..."}, got ${describe(raw)}`)
    return null
  }
  const kind = kindOf(raw)
  if (kind === null) {
    const misspelt = Object.keys(raw)
      .map((key) => ({ key, kind: closestKind(key) }))
      .find((k) => k.kind !== undefined)
    const which = misspelt ? ` '${misspelt.key}' (did you mean '${misspelt.kind}'?)` : ''
    context.problem(path, `unknown action kind${which}: one of ${ACTION_KINDS.join(', ')} is required (keys: ${Object.keys(raw).join(', ') || 'none'})`)
    return null
  }
  // Two entry shapes: {kind: target, ...fields} and {kind: {output: target, ...fields}}.
  const head = raw[kind]
  const lifecycle = kind === 'call' || kind === 'suspend' || kind === 'override' || kind === 'overrides'
  const nested = isMap(head) && !lifecycle
  const fields: Record<string, unknown> = nested ? { ...head, ...raw } : { ...raw }
  delete fields[kind]
  const target: unknown = nested ? head.output : head
  const fieldPath = (key: string): string => (nested && Object.hasOwn(head, key) ? `${path}.${kind}.${key}` : `${path}.${key}`)

  // A default name says where the action sits, so that names stay unique across the model:
  // `set_0` for actions[0], `conditions_1_set_0` for conditions[1].actions[0].
  const where = path
    .replace(/(^|\.)actions\[\d+\]$/, '')
    .replace(/[[\].]+/g, '_')
    .replace(/_$/, '')
  const fallback = `${where ? `${where}_` : ''}${kind}_${index}`
  const name = fields.name ?? fallback
  if (typeof name !== 'string' || !NODE_NAME.test(name)) context.problem(fieldPath('name'), `a name is ${NODE_NAME_RULE}`)
  if (fields.description !== undefined && typeof fields.description !== 'string') context.problem(fieldPath('description'), 'expected a string')
  if (fields.enabled !== undefined && typeof fields.enabled !== 'boolean') context.problem(fieldPath('enabled'), 'expected true or false')

  // Extra keys are named constants; `params` too, unless a string (an expression).
  const constants = new Map<string, PyValue>()
  for (const [key, value] of Object.entries(fields)) {
    if (COMMON.includes(key) || FIELDS[kind].includes(key)) continue
    if (key.startsWith('_') || !/^[A-Za-z][A-Za-z0-9_]*$/.test(key)) {
      context.problem(fieldPath(key), `'${key}' is not a field of ${kind} and not a valid constant name`)
      continue
    }
    constants.set(key, toPy(value, 'any'))
  }
  const imports = compileImports(fields.imports, fieldPath('imports'), context)
  const parameters: string[] = []
  const paramExpressions: Array<{ name: string; source: string }> = []
  if (fields.params !== undefined) {
    if (!isMap(fields.params)) context.problem(fieldPath('params'), 'expected a map of name -> value or expression')
    else {
      for (const [key, value] of Object.entries(fields.params)) {
        if (key.startsWith('_') || !/^[A-Za-z][A-Za-z0-9_]*$/.test(key)) context.problem(`${fieldPath('params')}.${key}`, `'${key}' is not a valid name`)
        else if (typeof value === 'string') {
          parameters.push(key)
          paramExpressions.push({ name: key, source: value })
        } else constants.set(key, toPy(value, 'any'))
      }
    }
  }
  // A params string that is plain text to the reference product (`"URMS,IRMS,PAC"`: no reference,
  // naming nothing known) is that text, a constant, as a `set` value is (CompileContext.plainText).
  const textScope: ActionScope = { constants, parameters, imports }
  for (const p of paramExpressions.filter((q) => context.plainText(q.source, `${fieldPath('params')}.${q.name}`, textScope))) {
    constants.set(p.name, p.source)
    parameters.splice(parameters.indexOf(p.name), 1)
    paramExpressions.splice(paramExpressions.indexOf(p), 1)
  }
  const scope: ActionScope = { constants, parameters, imports, importsPath: fieldPath('imports') }
  const params = paramExpressions.map((p) => ({ name: p.name, expression: context.expression(p.source, `${fieldPath('params')}.${p.name}`, scope) }))
  const before = context.problems.length

  const info = {
    name: typeof name === 'string' ? name : fallback,
    kind,
    path,
    description: typeof fields.description === 'string' ? fields.description : undefined,
    enabled: fields.enabled !== false,
    label: `action '${typeof name === 'string' ? name : fallback}' (${path})`,
    targets: lifecycle ? [] : (Array.isArray(target) ? target : [target]).filter((t): t is string => typeof t === 'string'),
  }
  const compile = KIND_COMPILERS[kind]
  let fusion: Fusion | undefined
  const fuse = (value: ValueSource, targets: readonly Target[]): void => {
    // An action with expression params computes them first each step: it runs bound, not fused.
    if (params.length === 0 && parameters.length === 0) fusion = { value, targets }
  }
  const own = context.problems.length
  const make = compile({
    target,
    fields: kindFields(fields),
    fieldPath,
    scope,
    context,
    path,
    kind,
    targetAt: nested ? `${path}.${kind}.output` : `${path}.${kind}`,
    fuse,
  })
  if (context.problems.length > own) {
    // The kind's own fields failed: when another key looks like a misspelt kind (`fnction` beside
    // `call`), the entry was most likely meant as that kind, so that is said first.
    const misspelt = misspeltKind(raw, kind)
    if (misspelt !== undefined) context.problems.splice(own, 0, { path: `${path}.${misspelt.key}`, message: misspelt.message })
  }
  if (make === null || context.problems.length > before || params.some((p) => p.expression === null)) return null
  const paramList = params as Array<{ name: string; expression: NonNullable<(typeof params)[number]['expression']> }>

  const plan: ActionPlan = {
    ...info,
    ...(fusion === undefined ? {} : { fusion }),
    bind(ctx) {
      const env = new ActionEnvironment(ctx, info.label)
      const values = paramList.length === 0 ? undefined : (env.params = new Map())
      const paramEvaluators = paramList.map((p) => {
        const evaluate = env.evaluator({ expression: p.expression })
        const fetch = p.expression.worker === undefined ? undefined : env.fetches.pop()
        return { name: p.name, evaluate, fetch }
      })
      const runtime = make(env, plan)
      const fetches = [...env.fetches]
      if (fetches.length > 0 || paramEvaluators.some((p) => p.fetch !== undefined)) {
        const run = runtime.run.bind(runtime)
        // Worker expressions: params in order (a worker param is fetched when its turn comes, so
        // it sees the params before it), then the kind's own worker expressions, then the step.
        runtime.runAsync = async () => {
          for (const p of paramEvaluators) {
            if (p.fetch !== undefined) await p.fetch()
            values?.set(p.name, p.evaluate())
          }
          for (const fetch of fetches) await fetch()
          run()
        }
        return runtime
      }
      if (values === undefined) return runtime
      // Params first, each step, so the action's expressions see this step's values.
      const run = runtime.run.bind(runtime)
      runtime.run = () => {
        for (const p of paramEvaluators) values.set(p.name, p.evaluate())
        run()
      }
      return runtime
    },
  }
  return plan
}

/**
 * An action's fields as its kind's compiler reads them: numbers plain, as settings (`duration`,
 * `std`, `points`) are read, but for `value` and `call`, whose constants are Python values: an
 * integral float written as one (`value: 2.0`) stays a float there (json-float.ts).
 */
function kindFields(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, key === 'value' || key === 'call' ? value : plainJson(value)]))
}

/**
 * The modules an action's `imports` may name without the operator's say (mirrored by
 * ALLOWED_MODULES of python/mimic_sdk/expressions.py, a test holds them together): pure modules
 * of the standard library that reach no file, process, environment variable, socket or importer.
 * Left out on purpose: `operator` (attrgetter, methodcaller), `string` (Formatter), `zoneinfo`
 * (reads files by name), and every module that runs, opens or imports something by name
 * (`timeit`, `pydoc`, `codecs`, `linecache`, `logging`, `platform`, `imp`, `posixpath`, ...).
 * Only a name's first part is checked here; the worker checks each part it walks.
 *
 * @example
 * ACTION_MODULES.has('statistics') // true
 * ACTION_MODULES.has('os')         // false
 */
export const ACTION_MODULES: ReadonlySet<string> = new Set(
  (
    'math cmath random statistics decimal fractions numbers datetime time calendar itertools functools collections heapq bisect re ' +
    'json struct binascii base64 hashlib zlib colorsys'
  ).split(' '),
)

/** How the operator allows more, said in every refusal. */
const HOW_TO_ALLOW =
  'actions may import pure modules of the standard library (docs/python-actions.md) and helper files under the extension directories; ' +
  'the operator may trust more modules with --action-modules (MIMIC_ACTION_MODULES)'

function compileImports(raw: unknown, path: string, context: CompileContext): Record<string, string> {
  if (raw === undefined) return {}
  const out: Record<string, string> = {}
  const add = (alias: string, module: unknown, at: string): void => {
    if (typeof module !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/.test(module)) {
      return context.problem(at, 'expected a module name such as math, numpy or extensions.helpers.step')
    }
    if (alias.startsWith('_') || !/^[A-Za-z][A-Za-z0-9_]*$/.test(alias)) return context.problem(at, `'${alias}' is not a valid name`)
    const parts = module.split('.')
    if (parts.some((p) => p.startsWith('_'))) return context.problem(at, `'${module}': names starting with '_' are not allowed`)
    // A refused module still names its alias, so the expressions using it get no second problem.
    if (!context.importAllowed(module, ACTION_MODULES)) context.problem(at, `'${module}' may not be imported by an action: ${HOW_TO_ALLOW}`)
    out[alias] = module
  }
  if (typeof raw === 'string') add(raw.split('.').pop() ?? raw, raw, path)
  else if (Array.isArray(raw))
    raw.forEach((m, i) =>
      typeof m === 'string' ? add(m.split('.').pop() ?? m, m, `${path}[${i}]`) : context.problem(`${path}[${i}]`, 'expected a module name'),
    )
  else if (isMap(raw)) for (const [alias, module] of Object.entries(raw)) add(alias, module, `${path}.${alias}`)
  else context.problem(path, 'expected a map of alias -> module ({m: math}), a module name or a list of them')
  return out
}

/** What a kind's compiler gets. */
interface KindInput {
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

/** A kind's compiler: checks its fields and returns how to make the runtime on an instance. */
type KindCompiler = (input: KindInput) => ((env: ActionEnvironment, plan: ActionPlan) => ActionRuntime) | null

function choice<T extends string>(input: KindInput, key: string, allowed: readonly T[], fallback: T): T {
  const raw = input.fields[key]
  if (raw === undefined) return fallback
  if (typeof raw === 'string' && (allowed as readonly string[]).includes(raw)) return raw as T
  input.context.problem(input.fieldPath(key), `expected one of ${allowed.join(', ')}`)
  return fallback
}

/** Writes a result to every target of an action, each converted to its attribute's type. */
function targetWriter(env: ActionEnvironment, targets: readonly Target[], label: string, path: string): (value: PyValue) => void {
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
function valueAction(
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
function outputType(input: KindInput): (v: number) => PyValue {
  const type = choice(input, 'output_type', ['float', 'int'] as const, 'float')
  return type === 'int' ? (v) => pyRound(v) : (v) => v
}

/** A value as a float, as Python's float() would take it (a str or None is Python's error). */
function asNumber(value: PyValue): number {
  if (typeof value === 'number') return value
  if (typeof value === 'bigint' || typeof value === 'boolean') return Number(value)
  return fromPy(value, 'float') as number
}

const KIND_COMPILERS: Record<ActionKind, KindCompiler> = {
  function(input) {
    const { context, fields, fieldPath, scope } = input
    const targets = context.targets(input.target, targetPath(input))
    if (fields.call === undefined) context.problem(fieldPath('call'), 'required: the expression whose value the targets take')
    const call = fields.call === undefined ? null : context.value(fields.call, fieldPath('call'), scope)
    if (!targets || !call) return null
    input.fuse(call, targets)
    return (env, plan) => valueAction(plan, env, targets, env.evaluator(call))
  },

  set(input) {
    const { context, fields, fieldPath, scope } = input
    const targets = context.targets(input.target, targetPath(input))
    if (!Object.hasOwn(fields, 'value')) context.problem(fieldPath('value'), 'required')
    const value = Object.hasOwn(fields, 'value') ? context.setValue(fields.value, fieldPath('value'), scope) : null
    if (!targets || !value) return null
    input.fuse(value, targets)
    return (env, plan) => valueAction(plan, env, targets, env.evaluator(value))
  },

  noise(input) {
    const { context, fields, fieldPath, scope } = input
    const targets = context.targets(input.target, targetPath(input))
    const type = choice(input, 'type', ['white', 'pink', 'brownian'] as const, 'white')
    const mode = choice(input, 'mode', ['additive', 'proportional'] as const, 'additive')
    const mean = constantNumber(input, 'mean', 0)
    const std = constantNumber(input, 'std', 1)
    if (std < 0) context.problem(fieldPath('std'), 'must be >= 0')
    const out = outputType(input)
    let seed: bigint | undefined
    if (fields.seed !== undefined && fields.seed !== null) {
      if (typeof fields.seed === 'number' && Number.isSafeInteger(fields.seed)) seed = BigInt(fields.seed)
      // A str seeds as random.seed(text) does in CPython, so the numbers are Python's.
      else if (typeof fields.seed === 'string') seed = textSeedOf(fields.seed)
      else context.problem(fieldPath('seed'), 'expected an integer or a string')
    }
    void scope
    if (!targets) return null
    const first = targets[0] as Target
    return (env, plan) => {
      const noise = new Noise({ type, mean, std, seed: seed ?? textSeed(`${env.ctx.host.name}/${plan.name}`) })
      const attr = first.attribute === '__timer' ? undefined : env.ctx.host.attribute(first.attribute)
      // The value the noise rides on: the target's value, unless it still holds what this action
      // wrote last step (nothing else wrote it since): then the clean value under that noise.
      let lastBase = 0
      let lastWritten: unknown = Symbol('none')
      // A failed step takes back what this step wrote, so also what it remembers of the write.
      let baseBefore = lastBase
      let writtenBefore = lastWritten
      const undoable: Undoable = {
        undo: () => {
          lastBase = baseBefore
          lastWritten = writtenBefore
        },
      }
      const read = (): number => {
        if (attr === undefined) return env.ctx.frame.time
        const current = first.side === 'external' ? attr.externalValue : attr.internalValue
        if (current === lastWritten) return lastBase
        return asNumber(toPy(current, attr.valueType))
      }
      const write = targetWriter(env, targets, plan.label, plan.path)
      const runtime: ActionRuntime = {
        plan,
        enabled: plan.enabled,
        run() {
          const base = read()
          const n = noise.sample()
          const value = out(mode === 'proportional' ? base * (1 + n) : base + n)
          write(value)
          baseBefore = lastBase
          writtenBefore = lastWritten
          env.ctx.undo.state(undoable)
          lastBase = base
          lastWritten = attr === undefined ? undefined : first.side === 'external' ? attr.externalValue : attr.internalValue
        },
        reset() {
          noise.reset()
          lastWritten = Symbol('none')
        },
        state() {
          const state: Record<string, StateValue> = { noise: noise.saveState(), last_base: lastBase }
          if (typeof lastWritten !== 'symbol') state.last_written = lastWritten as StateValue
          return state
        },
        restore(state, path) {
          const read = new StateReader(state, path)
          const base = read.number('last_base', {})
          if (!read.ok) return read.problems
          const problems = noise.restoreState(read.raw('noise'), `${path}.noise`)
          if (problems) return problems
          lastBase = base
          lastWritten = read.has('last_written') ? read.raw('last_written') : Symbol('none')
        },
      }
      return runtime
    }
  },

  ramp(input) {
    const { context, fieldPath } = input
    const targets = context.targets(input.target, targetPath(input))
    const start = context.number(input.fields.start_value, fieldPath('start_value'), 0, input.scope)
    const stop = context.number(input.fields.stop_value, fieldPath('stop_value'), undefined, input.scope)
    const duration = context.number(input.fields.duration, fieldPath('duration'), undefined, input.scope)
    const type = choice(input, 'type', ['linear', 'spline', 'overshoot'] as const, 'linear')
    // The reference product's guides give `overshoot: 5` (percent of the span) with `type:
    // overshoot`; it documents no default, so the guides' value is it. Its settling time, when not
    // given, is half the ramp's duration (the reference product's curve, signals.ts).
    const overshoot = constantNumber(input, 'overshoot', type === 'overshoot' ? 5 : 0)
    const stabilization = input.fields.stabilization_time === undefined && type === 'overshoot' ? undefined : constantNumber(input, 'stabilization_time', 0)
    if (stabilization !== undefined && stabilization < 0) context.problem(fieldPath('stabilization_time'), 'must be >= 0')
    const out = outputType(input)
    if (!targets || !start || !stop || !duration) return null
    return (env, plan) => {
      const [s0, s1, d] = [env.evaluator(start), env.evaluator(stop), env.evaluator(duration)]
      return valueAction(plan, env, targets, () => {
        const length = asNumber(d())
        return out(
          rampValue(
            {
              start: asNumber(s0()),
              stop: asNumber(s1()),
              duration: length > 0 ? length : Number.MIN_VALUE,
              type,
              overshoot,
              stabilization: stabilization ?? Math.max(0, length) / 2,
            },
            env.ctx.frame.time,
          ),
        )
      })
    }
  },

  saw(input) {
    const { context, fieldPath } = input
    const targets = context.targets(input.target, targetPath(input))
    const start = context.number(input.fields.start_value, fieldPath('start_value'), 0, input.scope)
    const stop = context.number(input.fields.stop_value, fieldPath('stop_value'), undefined, input.scope)
    const period = context.number(input.fields.period, fieldPath('period'), undefined, input.scope)
    if (period && 'constant' in period && !(asNumber(period.constant) > 0)) context.problem(fieldPath('period'), 'must be > 0')
    const type = choice(input, 'type', ['regular', 'reverse'] as const, 'regular')
    const out = outputType(input)
    if (!targets || !start || !stop || !period) return null
    return (env, plan) => {
      const [s0, s1, p] = [env.evaluator(start), env.evaluator(stop), env.evaluator(period)]
      return valueAction(plan, env, targets, () => {
        const length = asNumber(p())
        if (!(length > 0)) throw new PyException('ValueError', `saw period must be > 0, got ${length}`)
        return out(sawValue({ start: asNumber(s0()), stop: asNumber(s1()), period: length, type }, env.ctx.frame.time))
      })
    }
  },

  interpolate(input) {
    const { context, fields, fieldPath } = input
    const targets = context.targets(input.target, targetPath(input))
    const method = choice(input, 'method', ['linear', 'step', 'spline'] as const, 'linear')
    const points: Array<[number, number]> = []
    if (!Array.isArray(fields.points) || fields.points.length === 0) context.problem(fieldPath('points'), 'required: a list of [time, value] pairs')
    else {
      fields.points.forEach((p, i) => {
        if (!Array.isArray(p) || p.length !== 2 || !p.every((x) => typeof x === 'number' && Number.isFinite(x))) {
          return context.problem(`${fieldPath('points')}[${i}]`, 'expected [time, value], two finite numbers')
        }
        const last = points[points.length - 1]
        if (last !== undefined && (p[0] as number) <= last[0]) return context.problem(`${fieldPath('points')}[${i}]`, 'times must increase strictly')
        points.push([p[0] as number, p[1] as number])
      })
    }
    let fill: 'extrapolate' | number = 'extrapolate'
    if (fields.fill_value !== undefined && fields.fill_value !== 'extrapolate') {
      if (typeof fields.fill_value === 'number' && Number.isFinite(fields.fill_value)) fill = fields.fill_value
      else context.problem(fieldPath('fill_value'), "expected 'extrapolate' or a number")
    }
    const out = outputType(input)
    if (!targets || points.length === 0) return null
    const at = interpolator({ points, method, fill })
    return (env, plan) => valueAction(plan, env, targets, () => out(at(env.ctx.frame.time)))
  },

  pid(input) {
    const { context, fields, fieldPath, scope } = input
    const targets = context.targets(input.target, targetPath(input))
    if (fields.setpoint === undefined) context.problem(fieldPath('setpoint'), 'required')
    const feedbackKey = fields.input !== undefined ? 'input' : 'feedback'
    if (fields[feedbackKey] === undefined) context.problem(fieldPath('input'), 'required (or its alias feedback)')
    const setpoint = fields.setpoint === undefined ? null : context.number(fields.setpoint, fieldPath('setpoint'), undefined, scope)
    const feedback = fields[feedbackKey] === undefined ? null : context.number(fields[feedbackKey], fieldPath(feedbackKey), undefined, scope)
    const kp = constantNumber(input, 'kp', 1)
    const ki = constantNumber(input, 'ki', 0)
    const kd = constantNumber(input, 'kd', 0)
    const sampleTime = constantNumber(input, 'sample_time', 0)
    const min = constantNumber(input, 'output_min', -Infinity)
    const max = constantNumber(input, 'output_max', Infinity)
    if (sampleTime < 0) context.problem(fieldPath('sample_time'), 'must be >= 0')
    if (min > max) context.problem(fieldPath('output_min'), 'must not be above output_max')
    if (!targets || !setpoint || !feedback) return null
    return (env, plan) => {
      const pid = new Pid({ kp, ki, kd, sampleTime, min, max })
      const [sp, pv] = [env.evaluator(setpoint), env.evaluator(feedback)]
      const frame = env.ctx.frame
      return valueAction(
        plan,
        env,
        targets,
        () => {
          // A failed step takes back the integral and the memory of this update with its writes.
          pid.remember()
          env.ctx.undo.state(pid)
          return pid.update(asNumber(sp()), asNumber(pv()), frame.time, frame.dt)
        },
        () => pid.reset(),
        { state: () => pid.saveState(), restore: (state, path) => pid.restoreState(state, path) },
      )
    }
  },

  call(input) {
    const { context, fields, fieldPath } = input
    const spec: Record<string, unknown> = isMap(input.target) ? { ...input.target, ...fields } : { ...fields, path: input.target }
    const at = (key: string): string =>
      isMap(input.target) && Object.hasOwn(input.target, key) ? `${input.path}.call.${key}` : key === 'path' ? `${input.path}.call` : fieldPath(key)
    const path = pathField(context, spec.path, at('path'), true)
    const stopPath = pathField(context, spec.stop_path, at('stop_path'), false)
    const args = listField(context, spec.args, at('args'))
    const kwargs = mapField(context, spec.kwargs, at('kwargs'))
    const stopArgs = listField(context, spec.stop_args, at('stop_args'))
    const stopKwargs = mapField(context, spec.stop_kwargs, at('stop_kwargs'))
    if (path === null) return null
    return (env, plan) => {
      const host = env.ctx.host
      return {
        plan,
        enabled: plan.enabled,
        run() {},
        reset() {},
        async activate() {
          await host.callPath(path, args, kwargs)
        },
        async deactivate() {
          if (stopPath !== null && stopPath !== undefined) await host.callPath(stopPath, stopArgs, stopKwargs)
        },
      }
    }
  },

  suspend(input) {
    const { context, fields } = input
    const raw = isMap(input.target) ? (input.target.paths ?? input.target.targets) : (input.target ?? fields.paths ?? fields.targets)
    const base = isMap(input.target) ? `${input.path}.suspend.${input.target.paths !== undefined ? 'paths' : 'targets'}` : `${input.path}.suspend`
    const failOnMissing = booleanField(input, 'fail_on_missing', false)
    const list = typeof raw === 'string' ? [raw] : raw
    if (!Array.isArray(list) || list.length === 0) {
      context.problem(base, 'expected a dotted path or a list of them (communication.modbus_slave, actions.noise_0, ...)')
      return null
    }
    const paths: string[] = []
    list.forEach((p, i) => {
      const checked = pathField(context, p, Array.isArray(raw) ? `${base}[${i}]` : base, true)
      if (checked) paths.push(checked)
    })
    if (paths.length !== list.length) return null
    return (env, plan) => {
      const host = env.ctx.host
      let restore: Array<() => Promise<void>> = []
      // Per path, the `enabled` it had before it was suspended (null: suspended by a method), for a
      // snapshot; and what a restored snapshot says it had, for the next activation.
      let befores: StateValue[] = []
      let restored: StateValue[] | undefined
      return {
        plan,
        enabled: plan.enabled,
        run() {},
        reset() {},
        async activate() {
          const given = restored
          restored = undefined
          befores = []
          for (const [i, path] of paths.entries()) {
            const was = await host.readPath(`${path}.enabled`)
            const undo = await host.suspendPath(path)
            if (undo && typeof was?.value === 'boolean') {
              const back = typeof given?.[i] === 'boolean' ? (given[i] as boolean) : was.value
              befores.push(back)
              restore.push(() => host.writePath(`${path}.enabled`, back))
            } else if (undo) {
              befores.push(null)
              restore.push(undo)
            } else if (failOnMissing)
              throw new NotFoundError(`action '${plan.name}': '${path}' names nothing on instance '${host.name}'`, [
                { path: plan.path, message: `'${path}' not found` },
              ])
            else {
              befores.push(null)
              host.warn(`suspend: '${path}' names nothing`, { action: plan.name })
            }
          }
        },
        async deactivate() {
          const undo = restore.reverse()
          restore = []
          befores = []
          for (const fn of undo) await fn()
        },
        state() {
          return restore.length > 0 ? { before: befores } : undefined
        },
        restore(state, path) {
          if (state === null) return void (restored = undefined)
          const read = new StateReader(state, path)
          const list = read.list('before')
          if (read.ok && (list.length !== paths.length || !list.every((b) => b === null || typeof b === 'boolean')))
            read.problem('before', `expected ${paths.length} values, each true, false or null`)
          if (!read.ok) return read.problems
          restored = list as StateValue[]
        },
      }
    }
  },

  override: compileOverride,
  overrides: compileOverride,
}

function compileOverride(input: KindInput): ((env: ActionEnvironment, plan: ActionPlan) => ActionRuntime) | null {
  const { context } = input
  const failOnMissing = booleanField(input, 'fail_on_missing', false)
  if (!isMap(input.target) || Object.keys(input.target).length === 0) {
    context.problem(`${input.path}.${input.kind}`, 'expected a map of {reference or dotted path: value}')
    return null
  }
  const attributeOverrides: Array<{ target: Target; value: unknown }> = []
  const pathOverrides: Array<{ path: string; value: unknown }> = []
  for (const [key, value] of Object.entries(input.target)) {
    const at = `${input.path}.${input.kind}.${key}`
    if (isReference(key) || !key.includes('.')) {
      const targets = context.targets(key, at)
      if (targets) attributeOverrides.push({ target: targets[0] as Target, value })
    } else {
      const path = pathField(context, key, at, true)
      // A dotted path names a setting (`timer.dt`), which takes plain JSON.
      if (path) pathOverrides.push({ path, value: plainJson(value) })
    }
  }
  return (env, plan) => {
    const host = env.ctx.host
    const label = plan.label
    const held = attributeOverrides.map(({ target, value }) => ({ target, value: toPy(value, 'any'), write: env.writer(target) }))
    let saved: Array<() => Promise<void> | void> = []
    let active = false
    // What the attributes held before it took them ({value} of an external override, or none),
    // for a snapshot; and what a restored snapshot says they held, for the next activation.
    let befores: StateValue[] = []
    let restored: StateValue[] | undefined
    const apply = (): void => {
      for (const h of held) {
        try {
          h.write(h.value)
        } catch (err) {
          throw writeFailure(host.name, label, plan.path, err)
        }
      }
    }
    return {
      plan,
      enabled: plan.enabled,
      run() {},
      reset() {},
      reapply() {
        if (active) apply()
      },
      async activate() {
        const given = restored
        restored = undefined
        befores = []
        held.forEach(({ target }, i) => {
          const attr = host.attribute(target.attribute)
          if (!attr) return void befores.push(null)
          if (target.side === 'external') {
            const presented = given ? (given[i] as { value: unknown } | null) : attr.presented
            const was = presented ?? undefined
            befores.push((was ?? null) as StateValue)
            saved.push(() => attr.setPresented(was))
          } else {
            const was = given ? given[i] : attr.internalValue
            befores.push(was as StateValue)
            saved.push(() => attr.setComputed(was))
          }
        })
        apply()
        env.ctx.undo.commit()
        for (const { path, value } of pathOverrides) {
          const before = await host.readPath(path)
          if (before === undefined) {
            if (failOnMissing)
              throw new NotFoundError(`action '${plan.name}': '${path}' names nothing on instance '${host.name}'`, [
                { path: plan.path, message: `'${path}' not found` },
              ])
            host.warn(`override: '${path}' names nothing`, { action: plan.name })
            continue
          }
          await host.writePath(path, value)
          saved.push(() => host.writePath(path, before.value))
        }
        active = true
      },
      state() {
        return active ? { before: befores } : undefined
      },
      restore(state, path) {
        // null: what a behaviour gives back when it takes a failed restore back.
        if (state === null) return void (restored = undefined)
        const read = new StateReader(state, path)
        const list = read.list('before')
        if (read.ok && list.length !== held.length)
          read.problem('before', `expected ${held.length} values (one per attribute it overrides), got ${list.length}`)
        else
          held.forEach(({ target }, i) => {
            const attr = host.attribute(target.attribute)
            const value = list[i]
            if (!attr) return
            const problem =
              target.side === 'internal'
                ? typeProblem(attr.valueType, value)
                : value === null || (typeof value === 'object' && !Array.isArray(value) && Object.hasOwn(value, 'value'))
                  ? null
                  : 'expected {"value": ...} (the external value it replaced) or null'
            if (problem !== null) read.problem(`before.${i}`, problem)
          })
        if (!read.ok) return read.problems
        restored = list as StateValue[]
      },
      async deactivate() {
        active = false
        const undo = saved.reverse()
        saved = []
        for (const fn of undo) await fn()
      },
    }
  }
}

function targetPath(input: KindInput): string {
  return input.targetAt
}

function constantNumber(input: KindInput, key: string, fallback: number): number {
  const raw = input.fields[key]
  if (raw === undefined || raw === null) return fallback
  if (typeof raw === 'number' && !Number.isNaN(raw)) return raw
  input.context.problem(input.fieldPath(key), `expected a number, got ${describe(raw)}`)
  return fallback
}

function booleanField(input: KindInput, key: string, fallback: boolean): boolean {
  const raw = input.fields[key]
  if (raw === undefined) return fallback
  if (typeof raw === 'boolean') return raw
  input.context.problem(input.fieldPath(key), 'expected true or false')
  return fallback
}

/** A dotted component path (`communication.modbus_slave.detach`, `~.polling`), or null after a problem. */
function pathField(context: CompileContext, raw: unknown, path: string, required: true): string | null
function pathField(context: CompileContext, raw: unknown, path: string, required: false): string | null | undefined
function pathField(context: CompileContext, raw: unknown, path: string, required: boolean): string | null | undefined {
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

function listField(context: CompileContext, raw: unknown, path: string): unknown[] {
  if (raw === undefined || raw === null) return []
  if (Array.isArray(raw)) return raw
  context.problem(path, 'expected a list')
  return []
}

function mapField(context: CompileContext, raw: unknown, path: string): Record<string, unknown> {
  if (raw === undefined || raw === null) return {}
  if (isMap(raw)) return raw
  context.problem(path, 'expected a map')
  return {}
}
