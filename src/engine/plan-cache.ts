import { UserCodeError, type MimicError } from '../errors.js'
import type { PythonPool, StepPlan } from '../python/index.js'
import type { RefusedValues } from './refused-values.js'
import type { Steppable, TypeProblem, ValueTarget } from './steppable.js'

/** One run of a kept plan: the step's dt, how many steps in the one message, and who hears of failures. */
export interface PlanRun<I extends Steppable> {
  dt: number | undefined
  repeat: number
  /** The system's refused values: those Python reports are taken in and remembered there, and every owner still holding one fails. */
  refused: RefusedValues
  /** `count`: in how many of the `repeat` steps the instance failed. */
  failed: (instance: I, error: MimicError, count: number) => void
}

/**
 * The Python step plan of one set of instances (those whose step calls a Python `run`), kept
 * between steps: while it is kept the workers hold their part, so a step costs one short message
 * per worker, and each bound attribute is looked up once, not once per step.
 *
 * @example
 * const kept = new KeptPlan(pool, owners)
 * await kept.run({ dt: 0.1, repeat: 1, failed: (instance, error) => report(instance, error) })
 */
export class KeptPlan<I extends Steppable> {
  readonly pool: PythonPool
  readonly owners: readonly I[]
  readonly #plan: StepPlan
  /** The bound attributes of each owner by their position in its answers. */
  readonly #targets: Array<Array<ValueTarget | undefined>> = []
  /** How long the workers took per step of this plan, as last measured; sizes the next batch. */
  stepMs: number | undefined
  /** Steps in the last message: a batch grows at most fourfold from one message to the next. */
  lastBatch = 1

  constructor(pool: PythonPool, owners: readonly I[]) {
    this.pool = pool
    this.owners = owners
    this.#plan = pool.plan(
      owners.map((owner) => owner.name),
      'run',
    )
  }

  /** Whether this is the plan of exactly these instances, in this order, on this pool. */
  isFor(pool: PythonPool, owners: readonly I[]): boolean {
    return this.pool === pool && this.owners.length === owners.length && this.owners.every((owner, i) => owner === owners[i])
  }

  /**
   * Runs `repeat` steps of every owner's Python `run` in one message per worker, and times them.
   * An owner whose Python objects hold a value its attribute refused fails, whether this message
   * or an earlier answer carried it (refused-values.ts), unless its step raised: then it fails
   * with that, and the refusal stays for the next step.
   */
  async run({ dt, repeat, refused, failed }: PlanRun<I>): Promise<void> {
    const owners = this.owners
    const targets = this.#targets
    const started = performance.now()
    // By owner, allocated only when there is something to note: how many values this message
    // refused, what its MimicComponent's declarative writes could not set, and whether it raised.
    let fresh: Map<number, number> | undefined
    let declaredProblems: Map<number, TypeProblem[]> | undefined
    let raised: Set<number> | undefined
    await this.pool.runPlan(
      this.#plan,
      { context: (index) => owners[index]!.stepContext(dt), repeat },
      {
        // Values go straight into the attribute caches as the answers are decoded. An instance
        // never loses or replaces an attribute, so each one is looked up once per plan.
        value: (index, name, value, position) => {
          const row = (targets[index] ??= [])
          let attr = row[position]
          if (attr?.name !== name) attr = row[position] = owners[index]!.attributes.get(name)
          const problem = attr?.setCached(value) ?? null
          if (problem !== null) {
            refused.note(owners[index]!, name, problem)
            ;(fresh ??= new Map()).set(index, (fresh.get(index) ?? 0) + 1)
          } else if (refused.size !== 0) refused.note(owners[index]!, name, null)
        },
        done: (index, _result, declared) => {
          const problems = owners[index]!.applyDeclarative(declared)
          if (problems.length > 0) (declaredProblems ??= new Map()).set(index, problems)
        },
        fail: (index, error, count) => {
          ;(raised ??= new Set()).add(index)
          failed(owners[index]!, error, count ?? 1)
        },
      },
    )
    this.stepMs = (performance.now() - started) / repeat
    this.lastBatch = repeat
    // Nothing to look at in the usual step: no instance of the system holds a refused value.
    if (refused.size === 0 && declaredProblems === undefined) return
    for (let index = 0; index < owners.length; index++) {
      if (raised?.has(index)) continue
      const owner = owners[index]!
      const held = refused.size === 0 ? undefined : refused.problems(owner)
      const declared = declaredProblems?.get(index)
      if (held === undefined && declared === undefined) continue
      // The server sees Python's values after the last step of a message only: a value refused
      // in this message counts as one failed step, one held through all of it as all of them.
      const count = held !== undefined && (fresh?.get(index) ?? 0) < held.length ? repeat : 1
      failed(owner, wrongTypes(owner.name, [...(held ?? []), ...(declared ?? [])]), count)
    }
  }
}

/**
 * The step plan of the instances that stepped last. A step of the same instances reuses it; a
 * step of any other set (an instance added, removed, rebuilt, failed or filtered out) or on a
 * new pool replaces it.
 *
 * @example
 * const plan = plans.kept(pool, owners) ?? plans.renew(pool, owners)
 */
export class PlanCache<I extends Steppable> {
  #last: KeptPlan<I> | undefined

  /** The plan kept for exactly these instances on this pool, if there is one. */
  kept(pool: PythonPool, owners: readonly I[]): KeptPlan<I> | undefined {
    return this.#last?.isFor(pool, owners) ? this.#last : undefined
  }

  /** A new plan for these instances, kept from now on in place of the last one. */
  renew(pool: PythonPool, owners: readonly I[]): KeptPlan<I> {
    this.#last = new KeptPlan(pool, owners)
    return this.#last
  }
}

/**
 * The fault of Python code that left attributes with values of another type (a `str` in a
 * `float` attribute): the values were not taken, and each problem is a detail.
 *
 * @example
 * wrongTypes('pump', [{ attribute: 'speed', problem: "attribute 'speed' (float): expected a finite number (float), got string" }])
 */
export function wrongTypes(instance: string, problems: readonly TypeProblem[]): UserCodeError {
  const details = problems.map(({ attribute, problem }) => ({ path: `instances.${instance}.attributes.${attribute}`, message: problem }))
  const what = problems.length === 1 ? 'a value' : 'values'
  return new UserCodeError(`Python code of instance '${instance}' left ${what} of the wrong type: ${problems.map((p) => p.problem).join('; ')}`, details)
}
