/**
 * The snapshot store: the public surface of `src/snapshots`.
 *
 * @example
 * import { SnapshotStore, type SaveResult } from './snapshots/index.js'
 */
export { SnapshotStore } from './store.js'
export { writeFileAtomic, isTempFile } from './atomic-write.js'
export { migrate } from './migrate.js'
export { parseSnapshot } from './parse-snapshot.js'
export { CURRENT_SCHEMA_VERSION, snapshotFileSchema, systemDefinitionSchema } from './schema.js'
export type { SnapshotFile, SystemDefinition } from './schema.js'
export type {
  DeleteResult,
  FileEntry,
  InMemoryEntry,
  ListResult,
  PersistAllResult,
  SaveOptions,
  SaveResult,
  SnapshotMode,
  SnapshotRecord,
  SnapshotSelector,
  SnapshotStoreOptions,
} from './types.js'
