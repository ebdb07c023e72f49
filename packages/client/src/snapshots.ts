import { MimicNode } from './node.js'
import type { Transport } from './transport.js'
import type {
  SnapshotDeleteResult,
  SnapshotList,
  SnapshotLoadResult,
  SnapshotPersistResult,
  SnapshotSaveOptions,
  SnapshotSaveResult,
  SnapshotTarget,
} from './types.js'

/**
 * The system's snapshots (`sim.snapshots`): save the structure (models, instances, connections),
 * and with `include_state: true` the runtime state too; list what exists; load one back in place
 * of the active system.
 *
 * @example
 * const { id } = await sim.snapshots.save({ label: 'before' })
 * await sim.instances.delete('s1')
 * await sim.snapshots.load({ id })      // s1 is back, freshly INITIALIZED
 * const half = await sim.snapshots.save({ include_state: true })
 * await sim.snapshots.load({ id: half.id })  // every value, timer and scenario as it was
 * const { in_memory, files } = await sim.snapshots.list()
 */
export class SnapshotsHandle {
  /** The `snapshots` node itself (properties `directory`, `mode`). */
  readonly node: MimicNode

  constructor(transport: Transport) {
    this.node = new MimicNode(transport, ['snapshots'])
  }

  /** Saves the structure (and with `include_state: true` the runtime state); in durable mode also writes a file (`persisted_path`). */
  async save(options: SnapshotSaveOptions = {}): Promise<SnapshotSaveResult> {
    return await this.node.call<SnapshotSaveResult>('save', { ...options })
  }

  /** Snapshots held in memory and snapshot files in the snapshots directory. */
  async list(): Promise<SnapshotList> {
    return await this.node.call<SnapshotList>('list')
  }

  /** Replaces the active system with a snapshot's structure, and its runtime state when it has one (404 `File not found` when unknown). */
  async load(target: SnapshotTarget): Promise<SnapshotLoadResult> {
    return await this.node.call<SnapshotLoadResult>('load', { ...target })
  }

  /** Writes every snapshot that exists only in memory to a file. */
  async persistAllInMemory(): Promise<SnapshotPersistResult> {
    return await this.node.call<SnapshotPersistResult>('persist_all_in_memory')
  }

  /** Deletes a snapshot from memory and its file. */
  async delete(target: SnapshotTarget): Promise<SnapshotDeleteResult> {
    return await this.node.call<SnapshotDeleteResult>('delete', { ...target })
  }
}
