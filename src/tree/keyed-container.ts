import { Component } from './component.js'
import type { ChildMap } from './shared-names.js'

/**
 * A component whose children are kept by name in insertion order: the model, instance,
 * connection and attribute containers. Lookups by name are map lookups, so a request path
 * resolves in constant time however many children there are.
 *
 * @example
 * class Lamps extends KeyedContainer<Lamp> { readonly type = 'Lamps' }
 * lamps.items.set('l1', new Lamp('l1', lamps))
 */
export abstract class KeyedContainer<T extends Component> extends Component {
  /** The children by name; subclasses add and remove through it. */
  protected readonly items: ChildMap<T>

  /** `items`: a `Map` unless the subclass gives another map (an instance's attributes: shared-names.ts). */
  constructor(name: string, parent: Component | null, items: ChildMap<T> = new Map<string, T>()) {
    super(name, parent)
    this.items = items
  }

  get(name: string): T | undefined {
    return this.items.get(name)
  }

  all(): IterableIterator<T> {
    return this.items.values()
  }

  get size(): number {
    return this.items.size
  }

  override children(): Component[] {
    return [...this.items.values()]
  }

  override child(name: string): Component | undefined {
    return this.items.get(name)
  }

  override properties(): Record<string, unknown> {
    return { count: this.items.size }
  }
}
