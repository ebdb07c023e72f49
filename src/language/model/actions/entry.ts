/**
 * One action entry read and compiled: which kind it is (a misspelt kind named), the fields every
 * kind takes (`name`, `description`, `enabled`, `params`, `imports`), its named constants, then
 * its kind's own compiler (a module of this folder), and the plan that binds it to an instance.
 * The kinds come from index.ts, which lists them once.
 *
 * @example
 * const compileAction = entryCompiler(ACTION_KIND_DESCRIPTORS)
 * const plan = compileAction({ function: '$out(power)', call: 'V * I' }, 'actions[0]', context, 0)
 */
import type { PyValue } from '../../expression/index.js'
import { plainJson } from '../../../values/number.js'
import { toPy } from '../convert.js'
import { ActionEnvironment, describe, type ActionScope, type CompileContext, type ValueSource, isMap, NODE_NAME, NODE_NAME_RULE } from '../compile-context.js'
import type { Fusion } from '../fused.js'
import { isReference, type Target } from '../targets.js'
import { compileImports } from './imports.js'
import type { ActionKind } from './index.js'
import type { ActionKindDescriptor, ActionPlan } from './kind.js'

/** The fields every kind takes, each with what it means (docs/actions.md lists them). */
export const COMMON_FIELDS: Readonly<Record<string, string>> = {
  name: 'its name, the node `instances/<i>/actions/<name>`: 1 to 128 characters, no `.` or `/` (default `<kind>_<index>`, prefixed with where it sits: `conditions_1_set_0`)',
  description: 'free text',
  enabled: "false: it does not run (default true); the node's `enabled` can be set while the system runs",
  params:
    "a map of name -> value: a string is an expression evaluated each step before the action's own (plain text that names nothing known is that text), anything else a named constant",
  imports: 'the modules its expressions may use: a map of alias -> module (`{m: math}`), a module name or a list of them (docs/python-actions.md)',
  output: 'its target, in the form `{<kind>: {output: <target>, ...fields}}`',
}
const COMMON = Object.keys(COMMON_FIELDS)

/** The kinds an entry may be: their names in the order an entry is recognised by, and each kind's descriptor. */
interface Kinds {
  readonly names: readonly ActionKind[]
  readonly byKind: ReadonlyMap<ActionKind, ActionKindDescriptor<ActionKind>>
}

/** Whether `key` is a field `kind` defines. */
function isField(kinds: Kinds, kind: ActionKind, key: string): boolean {
  return Object.hasOwn((kinds.byKind.get(kind) as ActionKindDescriptor<ActionKind>).fields, key)
}

/**
 * The compiler of action entries for these kinds, listed in the order an entry is recognised by:
 * problems go to `context` (and null comes back).
 */
export function entryCompiler(
  descriptors: readonly ActionKindDescriptor<ActionKind>[],
): (raw: unknown, path: string, context: CompileContext, index: number) => ActionPlan | null {
  const kinds: Kinds = { names: descriptors.map((d) => d.kind), byKind: new Map(descriptors.map((d) => [d.kind, d])) }
  return (raw, path, context, index) => compileEntry(kinds, raw, path, context, index)
}

/** Compiles one action entry; problems go to `context` (and null comes back). */
function compileEntry(kinds: Kinds, raw: unknown, path: string, context: CompileContext, index: number): ActionPlan | null {
  if (!isMap(raw)) {
    context.problem(path, `an action is a map such as {function: $out(x), call: "..."}, got ${describe(raw)}`)
    return null
  }
  const kind = kindOf(kinds, raw)
  if (kind === null) {
    const misspelt = Object.keys(raw)
      .map((key) => ({ key, kind: closestKind(kinds, key) }))
      .find((k) => k.kind !== undefined)
    const which = misspelt ? ` '${misspelt.key}' (did you mean '${misspelt.kind}'?)` : ''
    context.problem(path, `unknown action kind${which}: one of ${kinds.names.join(', ')} is required (keys: ${Object.keys(raw).join(', ') || 'none'})`)
    return null
  }
  // Two entry shapes: {kind: target, ...fields} and {kind: {output: target, ...fields}}.
  const descriptor = kinds.byKind.get(kind) as ActionKindDescriptor<ActionKind>
  const head = raw[kind]
  const lifecycle = descriptor.lifecycle === true
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
    if (COMMON.includes(key) || isField(kinds, kind, key)) continue
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
  let fusion: Fusion | undefined
  const fuse = (value: ValueSource, targets: readonly Target[]): void => {
    // An action with expression params computes them first each step: it runs bound, not fused.
    if (params.length === 0 && parameters.length === 0) fusion = { value, targets }
  }
  const own = context.problems.length
  const make = descriptor.compile({
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
    const misspelt = misspeltKind(kinds, raw, kind)
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
 * integral float written as one (`value: 2.0`) stays a float there (src/values/number.ts).
 */
function kindFields(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).map(([key, value]) => [key, key === 'value' || key === 'call' ? value : plainJson(value)]))
}

/**
 * Of the keys of an action read as `kind`, one that is not a field of it and looks like a kind
 * of its own: a name close to a kind's (`fnction`), or a key whose value is a target
 * (`$out(x)`, `#attr(x)`, a list of them); with the problem that names it. Undefined when there
 * is none.
 */
function misspeltKind(kinds: Kinds, raw: Record<string, unknown>, kind: ActionKind): { key: string; message: string } | undefined {
  const candidates = Object.keys(raw)
    .filter((key) => key !== kind && !COMMON.includes(key) && !isField(kinds, kind, key) && !(kinds.names as readonly string[]).includes(key))
    .map((key) => ({ key, like: closestKind(kinds, key), target: isTargetLike(raw[key]) }))
    .filter((c) => c.like !== undefined || c.target)
  const best = candidates.find((c) => c.like !== undefined) ?? candidates[0]
  if (best === undefined) return undefined
  const why =
    best.like !== undefined ? `did you mean '${best.like}'?` : `its value ${JSON.stringify(raw[best.key])} is a target; the kinds are ${kinds.names.join(', ')}`
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
function closestKind(kinds: Kinds, key: string): ActionKind | undefined {
  const word = key.toLowerCase()
  const limit = word.length <= 4 ? 1 : 2
  let best: { kind: ActionKind; distance: number } | undefined
  for (const kind of kinds.names) {
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
function kindOf(kinds: Kinds, entry: Record<string, unknown>): ActionKind | null {
  for (const kind of kinds.names) if (Object.hasOwn(entry, kind)) return kind
  return null
}
