/**
 * The step of a run of `function` and `set` actions (of a model's `actions` or of one condition
 * branch), generated once per model into one JS function: each expression's generated text
 * (codegen.ts) inlined in list order; each float attribute it reads loaded once from the
 * instance's attribute by its slot into a local, which its writes keep current; each result
 * converted, checked against the protocol mappings and written in place. V8 then optimizes the
 * run as one function; bound one by one (actions/entry.ts), each action of each instance is a few
 * closures calling each other, and 10,000 instances hold 160,000 of them (bench/ANALYSIS.md,
 * benchmark 7). An instance keeps only its attributes by slot and an enabled flag per action.
 *
 * All-or-nothing holds as for bound actions: a run logs its writes in the step's undo log when
 * something after it in the step can fail; when nothing can (the run is the model's whole step),
 * it keeps the values from before in locals and puts them back itself if one of its actions fails.
 *
 * It changes nothing but speed and memory: the same values, writes and faults as the actions
 * bound one by one (test/unit/language/fused.test.ts runs both side by side on the same models).
 * Only actions whose every part it can generate are fused (native expressions without local
 * variables, no expression `params`); the others run as before, between the fused runs.
 *
 * @example
 * const steps = fuseActions(plans, slots, flags)
 * for (const step of steps) if (step instanceof FusedRun) step.run(attrs, mapped, enabled, host, frame, undo)
 */
import type { AttributeType } from '../../definition/model-schema.js'
import { Frame, HELPERS, renderInline, translateError, type ExpressionScope, type PyValue } from '../expression/index.js'
import type { ActionPlan } from './actions/index.js'
import { checkMapping, failure, slotReader, writeFailure, type ModelExpression, type ValueSource } from './compile-context.js'
import { fromPy } from './convert.js'
import type { BehaviourHost, HostAttribute, StepFrame, UndoLog } from './runtime.js'
import type { Target } from './targets.js'

/** What a `function` or `set` action computes and where it writes: enough to generate it. */
export interface Fusion {
  readonly value: ValueSource
  readonly targets: readonly Target[]
}

/** A model's attributes by slot: an instance keeps its attributes in an array in this order. */
export class AttributeSlots {
  readonly names: readonly string[]
  readonly types: readonly AttributeType[]
  readonly #index: ReadonlyMap<string, number>

  constructor(attributes: ReadonlyArray<{ name: string; type: AttributeType }>) {
    this.names = attributes.map((a) => a.name)
    this.types = attributes.map((a) => a.type)
    this.#index = new Map(this.names.map((n, i) => [n, i]))
  }

  slot(name: string): number | undefined {
    return this.#index.get(name)
  }

  /** An instance's attributes in slot order. */
  of(host: BehaviourHost): HostAttribute[] {
    return this.names.map((n) => host.attribute(n) as HostAttribute)
  }
}

/** Whether an action can be fused: a native expression without frame (or a constant), targets known. */
export function fusable(plan: ActionPlan): plan is ActionPlan & { fusion: Fusion } {
  const fusion = plan.fusion
  if (fusion === undefined) return false
  if ('constant' in fusion.value) return true
  const expression = fusion.value.expression
  return expression.worker === undefined && expression.inline !== undefined
}

/** The generated function of a run: `(attrs, mapped, enabled, host, frame, undo) => void`. */
type RunFunction = (
  attrs: readonly HostAttribute[],
  mapped: readonly number[],
  enabled: readonly number[],
  host: BehaviourHost,
  frame: StepFrame,
  undo: UndoLog | null,
) => void

/** What the fused runs of one instance read and write (see InstanceBehaviour). */
export interface FusedInstance {
  /** Its attributes by slot. */
  readonly attrs: readonly HostAttribute[]
  /** Per slot: 1 when a protocol maps the attribute (its writes are checked against the mapping). */
  readonly mapped: readonly number[]
  /** Per fused action of the model: 1 when enabled. */
  readonly enabled: number[]
  readonly host: BehaviourHost
  readonly frame: StepFrame
  /** The step's undo log, or null when a run puts back its own writes (nothing after it can fail). */
  readonly undo: UndoLog | null
}

/** A run of consecutive fused actions; their enabled flags are `enabled[first ...]` of an instance. */
export class FusedRun {
  readonly plans: readonly ActionPlan[]
  readonly first: number
  readonly run: RunFunction

  constructor(plans: readonly (ActionPlan & { fusion: Fusion })[], first: number, slots: AttributeSlots) {
    this.plans = plans
    this.first = first
    this.run = generate(plans, first, slots)
  }
}

/**
 * Splits a list of actions into runs of fused ones and the others, in list order. Fused actions
 * take enabled flags from `flags` on (one each); returns the steps and the next free flag.
 */
export function fuseActions(plans: readonly ActionPlan[], slots: AttributeSlots, flags: number): { steps: Array<FusedRun | ActionPlan>; flags: number } {
  const steps: Array<FusedRun | ActionPlan> = []
  let pending: Array<ActionPlan & { fusion: Fusion }> = []
  const flush = (): void => {
    if (pending.length === 0) return
    steps.push(new FusedRun(pending, flags, slots))
    flags += pending.length
    pending = []
  }
  for (const plan of plans) {
    if (fusable(plan)) pending.push(plan)
    else {
      flush()
      steps.push(plan)
    }
  }
  flush()
  return { steps, flags }
}

/**
 * The current instance of a run, for the closures an expression calls (strings, comprehensions,
 * ...): they read references through their frame's scope, which reads them from here. A run is
 * synchronous and nothing in it steps another instance, so one holder per run is enough.
 */
interface Current {
  attrs: readonly HostAttribute[]
  host: BehaviourHost | null
  frame: StepFrame
}

// The generated text holds only fixed snippets, numbers and indexes into the arrays passed to it;
// never text from the model (expression text comes from codegen.ts, which holds the same rule).
function generate(plans: readonly (ActionPlan & { fusion: Fusion })[], first: number, slots: AttributeSlots): RunFunction {
  const current: Current = { attrs: [], host: null, frame: { time: 0, dt: 1 } }
  const closures: unknown[][] = []
  const constants: unknown[][] = []
  const readers: Array<Array<(attrs: readonly HostAttribute[], host: BehaviourHost, frame: StepFrame) => PyValue>> = []
  const frames: Frame[] = []
  const values: PyValue[] = []
  const expressions: ModelExpression[] = []
  const lines: string[] = []
  let temps = 0
  let usesCurrent = false
  // Float slots the expressions read are held in locals (`a<slot>`), loaded once when the run
  // starts and updated by its writes; slots written keep their value from before (`b<slot>`,
  // `p<slot>` for a presentation override) to put back if the run fails and no undo log is kept.
  const cached = new Set<number>()
  const written = new Set<number>()
  const presented = new Set<number>()
  for (const plan of plans) {
    for (const target of plan.fusion.targets) {
      const slot = slots.slot(target.attribute)
      if (slot === undefined) continue
      if (target.side === 'external') presented.add(slot)
      else written.add(slot)
    }
  }

  const computes: string[] = []
  plans.forEach((plan, j) => {
    const { value } = plan.fusion
    let compute: string
    if ('constant' in value) {
      values[j] = value.constant
      compute = `v = VC[${j}]`
    } else {
      const expression = value.expression
      const inline = expression.inline as NonNullable<ModelExpression['inline']>
      expressions[j] = expression
      const reads = expression.references.map((ref) => {
        const name = ref.target.replace(/^\.+/, '')
        const slot = slots.slot(name)
        return { ref, slot, read: slotReader(ref, slot ?? 0, slot === undefined ? undefined : slots.types[slot]) }
      })
      readers[j] = reads.map((r) => r.read)
      closures[j] = [...inline.closures]
      constants[j] = [...inline.constants]
      if (inline.closures.length > 0) {
        usesCurrent = true
        const read = readers[j] as NonNullable<(typeof readers)[number]>
        const scope: ExpressionScope = {
          reference: (_ref, i) => (read[i] as (typeof read)[number])(current.attrs, current.host as BehaviourHost, current.frame),
        }
        frames[j] = new Frame(scope, [], null)
      }
      const base = temps
      temps += inline.temps
      const text = renderInline(inline, {
        reference: (i) => {
          const { ref, slot } = reads[i] as (typeof reads)[number]
          const name = ref.target.replace(/^\.+/, '')
          const path = ref.kind === 'property' || ref.kind === 'lookup'
          if (ref.kind === 'timer' || (path && name === 'timer.time')) return 'F.time'
          if (path && name === 'timer.dt') return 'F.dt'
          if ((ref.kind === 'internal' || ref.kind === 'output') && slot !== undefined && slots.types[slot] === 'float') {
            cached.add(slot)
            return `a${slot}`
          }
          return `RD[${j}][${i}](A, h, F)`
        },
        closure: (i) => `KS[${j}][${i}](FR[${j}])`,
        constant: (i) => `CS[${j}][${i}]`,
        temp: (i) => `t${base + i}`,
      })
      compute = `try { v = ${text} } catch (err) { throw X.fail(${j}, h, err) }`
    }
    computes.push(compute)
  })
  // The writes last: which slots are held in locals is known once every expression is rendered.
  plans.forEach((plan, j) => {
    const writes = plan.fusion.targets.map((target) => writeText(target, slots, cached)).join('\n        ')
    lines.push(`if (E[${first + j}] === 1) {
      ${computes[j] as string}
      try {
        ${writes}
      } catch (err) { throw X.writeFail(${j}, h, err) }
    }`)
  })

  const locals = [
    'v',
    'w',
    ...Array.from({ length: temps }, (_x, i) => `t${i}`),
    ...[...cached].map((s) => `a${s} = A[${s}].internalValue`),
    ...[...written].map((s) => `b${s} = A[${s}].internalValue`),
    ...[...presented].map((s) => `p${s} = A[${s}].presented`),
  ]
  const restore = [...[...written].map((s) => `A[${s}].setComputed(b${s})`), ...[...presented].map((s) => `A[${s}].setPresented(p${s})`)]
  const enter = usesCurrent ? 'CUR.attrs = A; CUR.host = h; CUR.frame = F' : ''
  const body = `return function fusedRun(A, M, E, h, F, U) {
  let ${locals.join(', ')}
  ${enter}
  try {
    ${lines.join('\n    ')}
  } catch (err) {
    if (U === null) { ${restore.join('; ')} }
    throw err
  }
}`
  const helpers = {
    fail: (j: number, host: BehaviourHost, err: unknown) =>
      failure(host.name, (plans[j] as ActionPlan).label, expressions[j] as ModelExpression, translateError(err)),
    writeFail: (j: number, host: BehaviourHost, err: unknown) => writeFailure(host.name, (plans[j] as ActionPlan).label, (plans[j] as ActionPlan).path, err),
    conv: (value: PyValue, type: AttributeType) => fromPy(value, type),
    check: checkMapping,
  }
  const make = new Function('KS', 'CS', 'RD', 'FR', 'VC', 'TY', 'H', 'X', 'CUR', body) as (...args: unknown[]) => RunFunction
  return make(closures, constants, readers, frames, values, slots.types, HELPERS, helpers, current)
}

/**
 * The text that writes `v` to one target: converted to its type, checked against its mappings,
 * logged for undo when there is a log (`U`), and kept in its local when the run reads it.
 */
function writeText(target: Target, slots: AttributeSlots, cached: ReadonlySet<number>): string {
  if (target.attribute === '__timer') return `h.pinTime(X.conv(v, 'float'))`
  const s = slots.slot(target.attribute) as number
  const convert =
    slots.types[s] === 'float' && target.side !== 'external' ? `w = typeof v === 'number' && v - v === 0 ? v : X.conv(v, TY[${s}])` : `w = X.conv(v, TY[${s}])`
  const check = `if (M[${s}] === 1) X.check(A[${s}], w)`
  if (target.side === 'external') return `${convert}; ${check}; if (U !== null) U.external(A[${s}]); A[${s}].setPresented({ value: w })`
  // A local is updated at write time: every later read in the run sees the new value (the held
  // one, when an override pins the attribute: runtime.ts Pins).
  const keep = cached.has(s) ? `; a${s} = A[${s}].internalValue` : ''
  return `${convert}; ${check}; if (U !== null) U.internal(A[${s}]); A[${s}].setComputed(w)${keep}`
}
