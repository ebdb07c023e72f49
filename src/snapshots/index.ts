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
export { CURRENT_SCHEMA_VERSION, STATE_VERSION, STRUCTURE_SCHEMA_VERSION, snapshotFileSchema, stateShapeProblems, systemDefinitionSchema } from './schema.js'
export type { AttributeState, InstanceState, PollingState, SnapshotFile, SnapshotState, SystemDefinition, TimerState } from './schema.js'
export type {
  DeleteResult,
  FileEntry,
  InMemoryEntry,
  ListResult,
  PersistAllResult,
  SaveExtras,
  SaveOptions,
  SaveResult,
  SnapshotBackend,
  SnapshotMode,
  SnapshotRecord,
  SnapshotSelector,
  SnapshotStoreOptions,
} from './types.js'
// The object store (s3-store.ts) is not re-exported: it loads the AWS SDK, which only a server
// started with --snapshots-store needs (src/mimic.ts imports it then).
export type { S3StoreOptions, StoreEntry } from './s3-store.js'
