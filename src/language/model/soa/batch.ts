/**
 * The fused step: a model whose whole step is one fused run of `function` and `set` actions over
 * float attributes (fused.ts) gets one more generated function, which steps many instances in one
 * loop over the rows of the model's struct of arrays (store.ts). The expressions are the same
 * generated text as the per-instance run's (codegen.ts), so the values are the same bit for bit;
 * only where they are read from and written to changes: `column[row]` instead of an attribute
 * object, the instance's time and dt from the store's `time` and `dt` columns, where its timer
 * keeps them while it has the row; the loop moves the time on as the timer would.
 *
 * What it cannot do it leaves to the instance's own step (InstanceBehaviour.step, the reference),
 * per instance: a row whose expression raises, whose result is not a finite float, or whose
 * instance is not `ready` (an attribute holding None, an action enabled or disabled on that
 * instance alone, a write a protocol mapping must check). Such a row has written nothing (a row's
 * results are stored when its last action is done) and the loop answers its index; the engine steps that instance alone (which raises the same fault, or
 * writes what the conversion gives) and goes on with the next row.
 *
 * Per instance too: an instance with a scenario in play (active, or waiting for its period to come
 * round: it may start in this step) steps alone, its siblings in the loop.
 *
 * A model qualifies (`batchable`) when its step is that one run and nothing else (no conditions,
 * `on_run` hooks or held actions: they write elsewhere or pin values; scenarios are decided per
 * instance, above, and the other hooks run outside steps), every action writes the
 * internal value of a float attribute, and every reference reads a float attribute's internal
 * value or the instance's time or dt (no parameters, lookups or closures).
 *
 * @example
 * const batch = FusedBatch.of(model)            // undefined: the model steps per instance
 * const next = batch.step(rows, 0, n, NaN) // n: every row stepped; else the row to step alone
 */
import { InternalError } from '../../../errors.js'
import { beginStep, HELPERS, renderInline, type PyValue } from '../../expression/index.js'
import type { ActionPlan } from '../actions/index.js'
import type { ModelExpression } from '../compile-context.js'
import type { HostAttribute } from '../runtime.js'
import { type AttributeSlots, type Fusion, FusedRun } from '../fused.js'
import { SoaStore, type SoaColumn, type TimeCells } from './store.js'

/** `(rows, from, n, dt) => the first row not stepped, or n`; dt NaN: each row's own. */
type BatchFunction = (rows: Int32Array, from: number, n: number, dt: number) => number

/** What InstanceBehaviour.step would run, as far as the batch needs to know. */
export interface BatchSource {
  readonly slots: AttributeSlots
  readonly steps: ReadonlyArray<FusedRun | ActionPlan>
  readonly groups: readonly unknown[]
  readonly scenarios: readonly unknown[]
  readonly hooks: { model: ReadonlyMap<unknown, unknown>; attributes: ReadonlyMap<unknown, unknown> }
  readonly usesWorker: boolean
}

/** The struct of arrays of a model and the loop that steps its rows. */
export class FusedBatch {
  readonly store: SoaStore
  readonly run: FusedRun
  /** Each fused action's enabled flag as the model declares it: a row whose flags differ steps alone. */
  readonly defaultFlags: readonly number[]
  /** Slots the loop writes: an instance on which a protocol maps one of them steps alone (the mapping checks the value). */
  readonly written: readonly number[]
  readonly #fn: BatchFunction

  private constructor(run: FusedRun, slots: AttributeSlots) {
    this.run = run
    this.store = new SoaStore(slots.types)
    this.defaultFlags = run.plans.map((p) => (p.enabled ? 1 : 0))
    this.written = [...new Set(run.plans.flatMap((p) => (p.fusion as Fusion).targets.map((t) => slots.slot(t.attribute) as number)))]
    this.#fn = generate(run, slots, this.store, this.defaultFlags)
  }

  /** The batch of a model that qualifies (see the module comment), else undefined. */
  static of(model: BatchSource): FusedBatch | undefined {
    const [run, ...rest] = model.steps
    if (!(run instanceof FusedRun) || rest.length > 0 || model.usesWorker) return undefined
    // on_run is the only hook a step fires (behaviour.ts).
    if (model.groups.length > 0 || model.hooks.model.has('on_run')) return undefined
    if (run.first !== 0 || !run.plans.every((plan) => qualifies(plan.fusion as Fusion, model.slots))) return undefined
    return new FusedBatch(run, model.slots)
  }

  /** Changes whenever a row joins or leaves, or starts or stops being ready (engine/fused-steps.ts). */
  get version(): number {
    return this.store.version
  }

  /**
   * Steps rows[from] to rows[n - 1] and moves each row's time on by its dt (or by `dt` for every
   * row; NaN: each row's own), as the instance's step and its timer would; answers n, or the index
   * of the row its instance must step alone (its time unmoved).
   */
  step(rows: Int32Array, from: number, n: number, dt: number): number {
    return this.#fn(rows, from, n, dt)
  }
}

function isTimeRef(kind: string, name: string): 'time' | 'dt' | undefined {
  const path = kind === 'property' || kind === 'lookup'
  if (kind === 'timer' || (path && name === 'timer.time')) return 'time'
  if (path && name === 'timer.dt') return 'dt'
  return undefined
}

function qualifies(fusion: Fusion, slots: AttributeSlots): boolean {
  for (const target of fusion.targets) {
    const slot = slots.slot(target.attribute)
    if (target.side !== 'internal' || slot === undefined || slots.types[slot] !== 'float') return false
  }
  const value = fusion.value
  if ('constant' in value) return true
  const expression = value.expression
  const inline = expression.inline
  if (expression.worker !== undefined || inline === undefined || inline.closures.length > 0) return false
  return expression.references.every((ref) => {
    const name = ref.target.replace(/^\.+/, '')
    if (isTimeRef(ref.kind, name) !== undefined) return true
    const slot = slots.slot(name)
    return (ref.kind === 'internal' || ref.kind === 'output') && slot !== undefined && slots.types[slot] === 'float'
  })
}

/** Thrown inside the loop for a result the loop does not convert: the row steps alone. */
const ALONE = Symbol('step alone')

// The generated text holds only fixed snippets, numbers and indexes into the arrays passed to it;
// never text from the model (expression text comes from codegen.ts, which holds the same rule).
function generate(run: FusedRun, slots: AttributeSlots, store: SoaStore, flags: readonly number[]): BatchFunction {
  const constants: unknown[][] = []
  const values: PyValue[] = []
  const used = new Set<number>()
  const written = new Set<number>()
  /**
   * Slots an action reads before any action of the row has written them: only those are loaded.
   * Every action assigns its targets whatever it computes, so the others are set before they are
   * read or stored; a load left out would leave a local unset, and the row would raise and step alone.
   */
  const readFirst = new Set<number>()
  /** The constants the expressions use, each read from CS once, before the loop. */
  const hoisted = new Set<string>()
  let temps = 0
  const lines: string[] = []
  run.plans.forEach((plan, j) => {
    if (flags[j] !== 1) return
    const { value, targets } = plan.fusion as Fusion
    let compute: string
    if ('constant' in value) {
      values[j] = value.constant
      compute = `v = VC[${j}]`
    } else {
      const expression = value.expression as ModelExpression
      const inline = expression.inline as NonNullable<ModelExpression['inline']>
      constants[j] = [...inline.constants]
      const base = temps
      temps += inline.temps
      const text = renderInline(inline, {
        reference: (i) => {
          const ref = expression.references[i] as (typeof expression.references)[number]
          const name = ref.target.replace(/^\.+/, '')
          const time = isTimeRef(ref.kind, name)
          if (time !== undefined) return time === 'time' ? 'ft' : 'fd'
          const slot = slots.slot(name) as number
          used.add(slot)
          if (!written.has(slot)) readFirst.add(slot)
          return `a${slot}`
        },
        closure: () => {
          throw new InternalError('a batched expression has no closures (batchable checks it)')
        },
        constant: (i) => {
          hoisted.add(`k${j}_${i} = CS[${j}][${i}]`)
          return `k${j}_${i}`
        },
        temp: (i) => `t${base + i}`,
      })
      compute = `v = ${text}`
    }
    const writes = targets.map((target) => {
      const s = slots.slot(target.attribute) as number
      used.add(s)
      written.add(s)
      return `a${s} = v`
    })
    // A float attribute takes a finite number as it is (fused.ts writeText); anything else goes
    // through the conversion, which the instance's own step does.
    lines.push(`${compute}\n      if (typeof v !== 'number' || v - v !== 0) throw ALONE\n      ${writes.join('; ')}`)
  })
  const slotsUsed = [...used]
  // Results stay in locals until the row's last action is done and are stored then: a row that
  // raises has written nothing, and the handler needs no value from before (values it needed would
  // be kept boxed, a heap number per write).
  const locals = ['v', 'r = 0', 'ft', 'fd', ...Array.from({ length: temps }, (_x, i) => `t${i}`), ...slotsUsed.map((s) => `a${s}`)]
  // The row's time moves on after its writes, as its timer's advance would (a timer the loop
  // cannot advance so, pinned or with other settings, holds its row out: system/timer.ts).
  const body = `return function fusedBatch(R, from, n, dt) {
  ${slotsUsed.map((s) => `const c${s} = COL[${s}].values`).join('\n  ')}
  const tc = TIME.values, dc = DT.values, own = dt !== dt
  ${hoisted.size > 0 ? `const ${[...hoisted].join(', ')}` : ''}
  let ${locals.join(', ')}
  let k = from
  try {
    for (; k < n; k++) {
      r = R[k]
      ft = tc[r]
      fd = own ? dc[r] : dt
      BEGIN()
      ${[...readFirst].map((s) => `a${s} = c${s}[r]`).join('; ')}
      ${lines.join('\n      ')}
      ${[...written].map((s) => `c${s}[r] = a${s}`).join('; ')}
      tc[r] = ft + fd
    }
  } catch {
    return k
  }
  return n
}`
  const make = new Function('CS', 'VC', 'COL', 'TIME', 'DT', 'H', 'ALONE', 'BEGIN', body) as (...args: unknown[]) => BatchFunction
  return make(constants, values, store.columns, store.time, store.dt, HELPERS, ALONE, beginStep)
}

/**
 * An instance's row in its model's struct of arrays: its float attributes keep their numbers in
 * the model's columns from the moment it joins until `release`.
 */
export class BatchMember implements TimeCells {
  readonly stepper: FusedBatch
  readonly row: number
  readonly #attrs: readonly HostAttribute[]
  readonly #enabled: readonly number[]
  /** Whether a scenario of the instance is in play now (then it steps alone); undefined when its model has none. */
  readonly #inPlay: (() => boolean) | undefined
  /** Whether a scenario was in play when last told (`playChanged`; counted in the store's `holds`). */
  #playing = false
  /** Whether its enabled flags differ from the model's now (counted in the store's `holds`). */
  #flagsDiffer = false
  #released = false

  constructor(batch: FusedBatch, attrs: readonly HostAttribute[], mapped: readonly number[], enabled: readonly number[], inPlay?: () => boolean) {
    this.stepper = batch
    this.row = batch.store.allocate()
    this.#attrs = attrs
    this.#enabled = enabled
    this.#inPlay = inPlay
    // A protocol maps an attribute the loop writes: the mapping must check each value.
    if (batch.written.some((s) => mapped[s] === 1)) batch.store.countHold(this.row, 1)
    this.flagsChanged()
    this.playChanged()
    const columns = batch.store.columns
    attrs.forEach((attr, slot) => {
      const column = columns[slot]
      if (column !== undefined) attr.attachColumn?.(column, this.row)
    })
  }

  /**
   * Whether the loop may step the instance now; else it takes its own step. Every reason not to is
   * counted in one array the loop's model keeps, and each change of them changes the store's
   * `version`, so that the engine asks again only then (engine/fused-steps.ts).
   */
  ready(): boolean {
    return this.stepper.store.holds[this.row] === 0 && !this.#released
  }

  /** A scenario of the instance may have started or stopped being in play (scenarios.ts tells of every change). */
  playChanged(): void {
    const inPlay = this.#inPlay
    if (this.#released || inPlay === undefined) return
    const playing = inPlay()
    if (playing !== this.#playing) this.stepper.store.countHold(this.row, playing ? 1 : -1)
    this.#playing = playing
  }

  /** An action was enabled or disabled on this instance (or its state restored): the loop runs the model's flags only. */
  flagsChanged(): void {
    if (this.#released) return
    const flags = this.stepper.defaultFlags
    const enabled = this.#enabled
    let differ = false
    for (let i = 0; i < flags.length; i++) if (enabled[i] !== flags[i]) differ = true
    if (differ !== this.#flagsDiffer) this.stepper.store.countHold(this.row, differ ? 1 : -1)
    this.#flagsDiffer = differ
  }

  /** The instance's time (TimeCells): the timer keeps it here while the instance has the row. */
  get time(): SoaColumn {
    return this.stepper.store.time
  }

  /** The instance's dt (TimeCells). */
  get dt(): SoaColumn {
    return this.stepper.store.dt
  }

  /** Its timer cannot be advanced by the loop now (+1), or can again (-1). */
  hold(change: number): void {
    if (!this.#released) this.stepper.store.countHold(this.row, change)
  }

  /** Gives the row back (its timer was detached first); the attributes keep their numbers themselves again. */
  release(): void {
    if (this.#released) return
    this.#released = true
    const columns = this.stepper.store.columns
    this.#attrs.forEach((attr, slot) => {
      if (columns[slot] !== undefined) attr.attachColumn?.(undefined, 0)
    })
    this.stepper.store.release(this.row)
  }
}
