/**
 * The public shapes of the snapshot store: its options, selectors and results. They are the
 * `result` documents of API.md section 4, so the tree can return them unchanged.
 */
import type { Logger } from 'pino'

export type { SystemDefinition } from './schema.js'
import type { SnapshotState, SystemDefinition } from './schema.js'

/**
 * `durable` writes every save to a file; `memory` keeps saves in memory until persisted.
 *
 * @example
 * const mode: SnapshotMode = config.snapshotsMode
 */
export type SnapshotMode = 'durable' | 'memory'

/**
 * Options of the store.
 *
 * @example
 * const options: SnapshotStoreOptions = { dir: './snapshots', mode: 'durable', serverVersion: '0.1.0' }
 */
export interface SnapshotStoreOptions {
  /** The snapshots directory: base of relative paths and home of `<id>.json` files. */
  dir: string
  mode: SnapshotMode
  /** Written into every file as `server_version`. */
  serverVersion: string
  /** Further directories clients may name with absolute paths. */
  allowedRoots?: string[]
  logger?: Logger
  /**
   * How many snapshots, and how many bytes of them, are kept in memory (default 100 and
   * 256 MiB). Copies of snapshots that have a file are dropped first (the file still answers).
   */
  memoryLimit?: { count: number; bytes: number }
  /**
   * Keep only the newest n snapshots that live in memory alone (memory mode), dropping the
   * oldest; unset, a save beyond `memoryLimit` is refused instead, so nothing is lost unasked.
   */
  memoryRetention?: number | undefined
}

/**
 * Where and how to save. No path: `<dir>/<id>.json` in durable mode, memory only in memory mode.
 *
 * @example
 * await store.save(def, { directory: 'plant-a', name: 'before-upgrade', label: 'v1' })
 */
export interface SaveOptions {
  /** The exact file (relative to the snapshots directory, or absolute inside an allowed root). */
  path?: string
  /** Directory for `name` (default: the snapshots directory). */
  directory?: string
  /** File name; `.json` is added when it has no extension. Default: `<id>.json`. */
  name?: string
  label?: string
  notes?: string
}

/**
 * What a save holds besides the structure, and who made it.
 *
 * @example
 * await store.save(definition, {}, { state, automatic: true, file: true })
 */
export interface SaveExtras {
  /**
   * The runtime state section (schema_version 2). Its values may carry `typed` marks
   * (src/values/encode.ts), so a float attribute's `25.0` is written as a float.
   */
  state?: unknown
  /** Written by the server itself (on shutdown): marked in the file, the only kind retention deletes. */
  automatic?: boolean
  /** Write `<dir>/<id>.json` even in memory mode (an automatic save must outlive the process). */
  file?: boolean
  /**
   * The snapshot's id instead of a new UUID: a fleet's coordinator (`mimic fleet save`) gives
   * every shard the same one. A save with the id of an existing snapshot replaces it.
   */
  id?: string
}

/**
 * Result of `save`.
 *
 * @example
 * { id: '3f0c…', in_memory: true, persisted_path: '/srv/snapshots/3f0c….json', created_at: '2026-01-01T00:00:00.000Z', label: '', notes: '' }
 */
export interface SaveResult {
  id: string
  in_memory: true
  /** The file written, or "" when the snapshot is kept in memory only. */
  persisted_path: string
  created_at: string
  label: string
  notes: string
  /** Present (true) when the snapshot holds runtime state. */
  state?: true
  /** Present (true) when the server saved it by itself. */
  automatic?: true
}

/**
 * An in-memory snapshot as listed.
 *
 * @example
 * { id: '3f0c…', created_at: '2026-…Z', label: '', notes: '', persisted_path: '' }
 */
export interface InMemoryEntry {
  id: string
  created_at: string
  label: string
  notes: string
  persisted_path: string
  state?: true
  automatic?: true
}

/**
 * A file under the snapshots directory as listed. When the file cannot be used, `error` says
 * why and the other fields hold whatever could be read (null when nothing).
 *
 * @example
 * { path: '/srv/snapshots/x.json', id: null, created_at: null, label: '', notes: '', schema_version: null, error: 'not valid JSON' }
 */
export interface FileEntry {
  path: string
  id: string | null
  created_at: string | null
  label: string
  notes: string
  schema_version: number | null
  /** Present (true) when the file holds runtime state. */
  state?: true
  /** Present (true) when the server saved it by itself. */
  automatic?: true
  error?: string
}

/**
 * Result of `list`: both sorted by created_at (oldest first).
 *
 * @example
 * const { in_memory, files } = await store.list()
 */
export interface ListResult {
  in_memory: InMemoryEntry[]
  files: FileEntry[]
}

/**
 * Selects one snapshot: exactly one of `id` or `path`.
 *
 * @example
 * await store.read({ id: '3f0c…' })
 * await store.read({ path: 'plant-a/before-upgrade.json' })
 */
export interface SnapshotSelector {
  id?: string
  path?: string
}

/**
 * A snapshot read back: its metadata and the structure. `schema_version` is the version the
 * file was stored with (the definition is already migrated to the current one); `path` is ""
 * for a snapshot that lives in memory only.
 *
 * @example
 * const { definition } = await store.read({ id })
 */
export interface SnapshotRecord {
  id: string
  path: string
  created_at: string
  label: string
  notes: string
  schema_version: number
  server_version: string
  definition: SystemDefinition
  /** The runtime state section, when the snapshot has one. */
  state?: SnapshotState
  /** Present (true) when the server saved it by itself. */
  automatic?: true
}

/**
 * Result of `persistAllInMemory`.
 *
 * @example
 * { persisted: [{ id: '3f0c…', path: '/srv/snapshots/3f0c….json' }] }
 */
export interface PersistAllResult {
  persisted: Array<{ id: string; path: string }>
}

/**
 * Result of `delete`.
 *
 * @example
 * { id: '3f0c…', deleted: true }
 */
export interface DeleteResult {
  id: string
  deleted: true
}

/**
 * What the server asks of a snapshot store: the file store (`SnapshotStore`, a directory) and
 * the object store (`S3SnapshotStore`, `--snapshots-store s3://bucket/prefix`) both answer it.
 *
 * @example
 * const store: SnapshotBackend = new SnapshotStore({ dir: './snapshots', mode: 'durable', serverVersion })
 */
export interface SnapshotBackend {
  /** Where the snapshots live: the snapshots directory, or `s3://bucket/prefix`. */
  readonly dir: string
  readonly mode: SnapshotMode
  save(definition: SystemDefinition, options?: SaveOptions, extras?: SaveExtras): Promise<SaveResult>
  list(): Promise<ListResult>
  read(selector: SnapshotSelector): Promise<SnapshotRecord>
  delete(selector: SnapshotSelector): Promise<DeleteResult>
  persistAllInMemory(): Promise<PersistAllResult>
  /** Deletes the oldest automatic snapshots until `keep` remain; answers where they were. */
  prune(keep: number): Promise<string[]>
  /** The newest usable snapshot by created_at, and the unusable ones passed over. */
  latest(): Promise<{ latest: FileEntry | undefined; skipped: FileEntry[] }>
}
