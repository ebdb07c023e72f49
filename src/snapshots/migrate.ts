/**
 * The one place where snapshot files of older schema versions are brought up to date. Each
 * step turns version N into N + 1; `migrate` runs them in order, so supporting a new version
 * means adding one step and bumping CURRENT_SCHEMA_VERSION.
 */
import { ValidationError } from '../errors.js'
import { CURRENT_SCHEMA_VERSION } from './schema.js'

/**
 * A snapshot file as read from disk, before its shape is checked.
 *
 * @example
 * const raw = JSON.parse(text) as RawSnapshotFile
 */
export type RawSnapshotFile = Record<string, unknown>

type MigrationStep = (file: RawSnapshotFile) => RawSnapshotFile

/**
 * Steps keyed by the version they upgrade from. Version 0 is the pre-versioned format: the
 * same shape as version 1 without `schema_version`.
 */
const STEPS: ReadonlyMap<number, MigrationStep> = new Map<number, MigrationStep>([
  [0, (file) => ({ ...file, schema_version: 1 })],
  // Version 2 adds an optional `state` section (and `automatic`): a version 1 file is one without.
  [
    1,
    (file) => {
      const { state: _state, automatic: _automatic, ...rest } = file
      return { ...rest, schema_version: 2 }
    },
  ],
])

/**
 * The schema_version a raw file declares; a file without one is version 0.
 *
 * @example
 * declaredVersion({ id: 'x' }) // 0
 */
export function declaredVersion(file: RawSnapshotFile): unknown {
  return file['schema_version'] === undefined ? 0 : file['schema_version']
}

/**
 * Upgrades a raw snapshot file to CURRENT_SCHEMA_VERSION. A file from a newer Mimic is refused
 * (422) rather than guessed at; a version that is not a known integer is refused too.
 *
 * @example
 * migrate({ id: 'a', created_at: '2026-01-01T00:00:00Z', definition }) // -> { ..., schema_version: 1 }
 */
export function migrate(file: RawSnapshotFile, source = 'snapshot'): RawSnapshotFile {
  const version = declaredVersion(file)
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 0) {
    throw new ValidationError(`${source}: schema_version must be a non-negative integer`, [
      { path: 'schema_version', message: `expected a non-negative integer, got ${JSON.stringify(version)}` },
    ])
  }
  if (version > CURRENT_SCHEMA_VERSION) {
    const message =
      `${source} has schema_version ${version}, written by a newer Mimic; ` +
      `this server reads schema_version ${CURRENT_SCHEMA_VERSION} and older. Upgrade Mimic to load it.`
    throw new ValidationError(message, [{ path: 'schema_version', message }])
  }
  let current = file
  for (let v = version; v < CURRENT_SCHEMA_VERSION; v++) {
    const step = STEPS.get(v)
    if (step === undefined) {
      throw new ValidationError(`${source}: no migration from schema_version ${v}`, [
        { path: 'schema_version', message: `schema_version ${v} is no longer supported` },
      ])
    }
    current = step(current)
  }
  return current
}
