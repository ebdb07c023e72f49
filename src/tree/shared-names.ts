/** What a keyed container needs of the map that holds its children (a `Map` is one). */
export interface ChildMap<T> extends Iterable<[string, T]> {
  readonly size: number
  get(name: string): T | undefined
  has(name: string): boolean
  set(name: string, child: T): unknown
  delete(name: string): boolean
  clear(): void
  values(): IterableIterator<T>
}

/** The position of each name in a list of names, shared by every SharedNameMap of that list. */
export type NameIndex = ReadonlyMap<string, number>

/** The index of `names`: each name's position. */
export function nameIndex(names: readonly string[]): NameIndex {
  return new Map(names.map((name, i) => [name, i]))
}

/**
 * A map from names to children for a container of which thousands of copies hold the same names
 * in the same order (the attributes of the instances of one model): the names' positions are one
 * index shared by every copy, and a copy keeps only an array of its children. A `Map` per copy was
 * 0.9 KiB of each instance of a 17-attribute model (bench/ANALYSIS.md, benchmark 7's memory).
 *
 * A copy holds the index's first names, set in the index's order; one whose names stop being
 * such a prefix (a name the index lacks or one out of order is set, or one is deleted) goes over
 * to a `Map` of its own, in the insertion order a `Map` would have kept.
 *
 * @example
 * const map = new SharedNameMap<number>(nameIndex(['a', 'b']))
 * map.set('a', 1).set('b', 2)
 * map.get('b') // 2
 */
export class SharedNameMap<T> implements ChildMap<T> {
  readonly #index: NameIndex
  /** The children of the index's first names, while this copy holds exactly those. */
  #slots: T[] | undefined = []
  /** The children once this copy's names are not a prefix of the index's. */
  #own: Map<string, T> | undefined

  constructor(index: NameIndex) {
    this.#index = index
  }

  get size(): number {
    return this.#slots !== undefined ? this.#slots.length : this.#own!.size
  }

  get(name: string): T | undefined {
    const slots = this.#slots
    if (slots === undefined) return this.#own!.get(name)
    const i = this.#index.get(name)
    return i === undefined ? undefined : slots[i]
  }

  has(name: string): boolean {
    const slots = this.#slots
    if (slots === undefined) return this.#own!.has(name)
    const i = this.#index.get(name)
    return i !== undefined && i < slots.length
  }

  set(name: string, child: T): this {
    const slots = this.#slots
    const i = slots !== undefined ? this.#index.get(name) : undefined
    if (i !== undefined && i <= slots!.length) slots![i] = child
    else this.#ownMap().set(name, child)
    return this
  }

  delete(name: string): boolean {
    return this.has(name) && this.#ownMap().delete(name)
  }

  clear(): void {
    this.#own = undefined
    this.#slots = []
  }

  values(): IterableIterator<T> {
    return this.#slots !== undefined ? this.#slots.values() : this.#own!.values()
  }

  *[Symbol.iterator](): IterableIterator<[string, T]> {
    if (this.#slots === undefined) return yield* this.#own!
    const slots = this.#slots
    for (const [name, i] of this.#index) {
      if (i >= slots.length) return
      yield [name, slots[i] as T]
    }
  }

  /** This copy's own Map, made from the shared names the first time they stop being a prefix. */
  #ownMap(): Map<string, T> {
    if (this.#own === undefined) {
      this.#own = new Map(this)
      this.#slots = undefined
    }
    return this.#own
  }
}
