import type { Steppable, TypeProblem, ValueTarget } from './steppable.js'

/**
 * The values the Python objects of a system's instances hold that their attributes refused (a
 * `str` in a `float` attribute, see `ValueTarget.setCached`). A worker sends a value only when it
 * changed since it last sent it, so after the answer that carried such a value Python goes on
 * holding it unseen while the attribute keeps its last good value: each refusal is remembered
 * here until an answer carries another value for that attribute, and every call and step in
 * between fails with it again. `size` is how many instances hold one, so a step where none does
 * looks at none.
 *
 * @example
 * const problem = refused.take(instance, attribute, 'hot')  // "attribute 'level' (float): ..."
 * refused.problems(instance)  // [{ attribute: 'level', problem: "attribute 'level' (float): ..." }] until Python reports another level
 */
export class RefusedValues {
  readonly #byOwner = new Map<Steppable, Map<string, string>>()

  /** How many instances hold a refused value. */
  get size(): number {
    return this.#byOwner.size
  }

  /**
   * Takes a value Python reported for one of `owner`'s bound attributes into `target`, and notes
   * whether the attribute refused it (see `note`). Answers the problem, or null.
   */
  take(owner: Steppable, target: ValueTarget, value: unknown): string | null {
    const problem = target.setCached(value)
    this.note(owner, target.name, problem)
    return problem
  }

  /**
   * Notes what became of a value Python reported for `attribute`: refused for `problem` (in
   * place of an earlier refusal), or taken (null), which ends an earlier one. Costs a look at
   * `size` for a value taken while no instance holds a refused one.
   */
  note(owner: Steppable, attribute: string, problem: string | null): void {
    if (problem !== null) {
      let marks = this.#byOwner.get(owner)
      if (marks === undefined) this.#byOwner.set(owner, (marks = new Map()))
      marks.set(attribute, problem)
    } else if (this.#byOwner.size !== 0) {
      const marks = this.#byOwner.get(owner)
      if (marks?.delete(attribute) && marks.size === 0) this.#byOwner.delete(owner)
    }
  }

  /** The refused values `owner`'s Python objects still hold, in the order they were first refused; undefined when none. */
  problems(owner: Steppable): TypeProblem[] | undefined {
    const marks = this.#byOwner.get(owner)
    if (marks === undefined) return undefined
    return [...marks].map(([attribute, problem]) => ({ attribute, problem }))
  }

  /** Forgets every refusal of `owner`: its Python objects are made anew or gone (prepare, ERROR, delete). */
  forget(owner: Steppable): void {
    this.#byOwner.delete(owner)
  }
}
