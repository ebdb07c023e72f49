import { Mutex } from 'async-mutex'

/**
 * The structure lock of a tree: structural changes (PUT and DELETE of nodes, lifecycle calls,
 * snapshot saves and loads) run one at a time under it, so that no request sees a half-built
 * system. The root makes it and gives it to each node it makes that changes structure, which
 * hands it on to its own children; no node looks for it by walking up the tree.
 *
 * @example
 * const lock = structureLock()
 * await lock.exclusive(async () => { ... })
 */
export interface StructureLock {
  /** Runs `fn` while no other structural change runs. */
  exclusive<T>(fn: () => Promise<T>): Promise<T>
}

/** A new lock: one mutex, taken in the order asked. */
export function structureLock(): StructureLock {
  const mutex = new Mutex()
  return { exclusive: (fn) => mutex.runExclusive(fn) }
}

/** The lock of a tree that has no root to share one (a node made alone, in unit tests): nothing waits. */
export const NO_LOCK: StructureLock = { exclusive: (fn) => fn() }
