import { ValidationError, type ErrorDetail } from '../errors.js'
import { Component, noArguments, type CallArgs, type MethodHandler } from '../tree/component.js'
import type { System } from './system.js'

const SAVE_KEYS = ['path', 'directory', 'name', 'label', 'notes', 'id'] as const
const SELECT_KEYS = ['id', 'path'] as const

/**
 * The `snapshots` component: save, list, load, persist and delete the system. A save holds the
 * structure, and with `include_state=true` the runtime state too; a load restores whatever the
 * snapshot holds. Saves and loads take the structure lock, so they never interleave with other
 * structural changes; a load validates the snapshot completely before the active system is touched.
 *
 * @example
 * await system.snapshots.call('save', { args: [], kwargs: { label: 'before', include_state: true } })
 */
export class SnapshotsNode extends Component {
  readonly type = 'Snapshots'
  readonly #system: System

  constructor(system: System) {
    super('snapshots', system)
    this.#system = system
  }

  override properties(): Record<string, unknown> {
    const store = this.#system.services.snapshots
    return { directory: store.dir, mode: store.mode }
  }

  override methods(): Record<string, MethodHandler> {
    const store = this.#system.services.snapshots
    return {
      save: (call) => {
        const includeState = takeFlag(call, 'include_state', 'save')
        const { id, ...opts } = pick(call, SAVE_KEYS, 'save', ['include_state'])
        // `id`: a fleet's coordinator (`mimic fleet save`) gives every shard the same one.
        return this.#system.exclusive(() => this.#system.saveSnapshot(opts, { includeState, ...(id !== undefined ? { id } : {}) }))
      },
      list: noArguments(() => store.list()),
      load: (call) => {
        const selector = pick(call, SELECT_KEYS, 'load')
        return this.#system.exclusive(async () => {
          const snapshot = await store.read(selector)
          const counts = await this.#system.loadSnapshot(snapshot)
          this.#system.services.logger.info({ id: snapshot.id, path: snapshot.path, ...counts }, 'snapshot loaded')
          return { id: snapshot.id, loaded: true, ...counts }
        })
      },
      persist_all_in_memory: noArguments(() => this.#system.exclusive(() => store.persistAllInMemory())),
      delete: (call) => {
        const selector = pick(call, SELECT_KEYS, 'delete')
        return this.#system.exclusive(() => store.delete(selector))
      },
    }
  }
}

/** A boolean kwarg (absent or null: false); anything else is a 422 with its path. */
function takeFlag(call: CallArgs, key: string, method: string): boolean {
  const value = call.kwargs[key]
  if (value === undefined || value === null) return false
  if (typeof value !== 'boolean') {
    const details: ErrorDetail[] = [{ path: `kwargs.${key}`, message: 'expected true or false' }]
    throw new ValidationError(`Invalid arguments for ${method}: kwargs.${key}: expected true or false`, details)
  }
  return value
}

/** Takes the known string kwargs of a snapshot method; anything else is a 422 with its path. */
function pick<K extends string>(call: CallArgs, keys: readonly K[], method: string, others: readonly string[] = []): Partial<Record<K, string>> {
  const out: Partial<Record<K, string>> = {}
  const details = []
  const known = [...keys, ...others]
  if (call.args.length) details.push({ path: 'args', message: `${method} takes keyword arguments only` })
  for (const [key, value] of Object.entries(call.kwargs)) {
    if (others.includes(key)) continue
    if (!(keys as readonly string[]).includes(key)) details.push({ path: `kwargs.${key}`, message: `unknown argument (${method} takes ${known.join(', ')})` })
    else if (value === null || value === undefined) continue
    else if (typeof value !== 'string') details.push({ path: `kwargs.${key}`, message: 'expected a string' })
    else out[key as K] = value
  }
  if (details.length) throw new ValidationError(`Invalid arguments for ${method}: ${details.map((d) => `${d.path}: ${d.message}`).join('; ')}`, details)
  return out
}
