/**
 * The snapshot store: saves the structure of a system to memory and/or files, lists, reads,
 * persists and deletes snapshots. It knows nothing about HTTP or the live system: the caller
 * hands it a definition on save and gets one back on read.
 *
 * Files are written with 1-space indentation: snapshots are meant to be read, diffed and kept
 * in version control by people, and one line per instance keeps diffs small; compared with no
 * indentation it costs a few percent of size and time (a 10,000-instance system serializes in
 * under 10 ms either way, see test/unit/snapshots/large-system.test.ts).
 *
 * The default of a `float` attribute is written as a float (`25.0`, src/values/encode.ts):
 * parsed JSON has lost the `.0`, and the attribute's type brings it back.
 */
import { issueMessage } from '../definition/zod-issue.js'
import { randomUUID } from 'node:crypto'
import { mkdir, realpath, stat, unlink } from 'node:fs/promises'
import { dirname, extname, join, resolve } from 'node:path'
import { Mutex } from 'async-mutex'
import type { Logger } from 'pino'
import { typedModelDefinition } from '../values/definitions.js'
import { typedJson } from '../values/encode.js'
import { ConflictError, ForbiddenError, NotFoundError, summarize, ValidationError, type ErrorDetail } from '../errors.js'
import { writeFileAtomic } from './atomic-write.js'
import { errnoCode, toMimicError } from './fs-error.js'
import {
  checkSnapshot,
  decodeSnapshot,
  headerOf,
  looksLikeSnapshot,
  parseSnapshot,
  parseSnapshotJson,
  peekHeader,
  type ParsedSnapshot,
} from './parse-snapshot.js'
import type { RawSnapshotFile } from './migrate.js'
import { canonicalPath, checkName, checkPathText, checkSnapshotId, isWithin, resolveInside } from './safe-path.js'
import { readRegularFile } from './read-regular.js'
import { scanJsonFiles } from './scan.js'
import { CURRENT_SCHEMA_VERSION, STRUCTURE_SCHEMA_VERSION, systemDefinitionSchema, type SnapshotFile, type SystemDefinition } from './schema.js'
import type {
  DeleteResult,
  SaveExtras,
  FileEntry,
  InMemoryEntry,
  ListResult,
  PersistAllResult,
  SaveOptions,
  SaveResult,
  SnapshotBackend,
  SnapshotMode,
  SnapshotRecord,
  SnapshotSelector,
  SnapshotStoreOptions,
} from './types.js'

/** An in-memory snapshot keeps its serialized text: immutable, and ready to write as is. */
interface MemoryEntry extends InMemoryEntry {
  text: string
  schema_version: number
}

/** In-memory snapshots kept at most, by count and by bytes of their text. */
const DEFAULT_MEMORY_LIMIT = { count: 100, bytes: 256 * 1024 * 1024 }

/** Unusable paths remembered so that each is logged once; beyond this many, each listing logs again. */
const MAX_WARNED = 1000

export type Selection = { id: string; path?: undefined } | { path: string; id?: undefined }

/**
 * Saves, lists, reads, persists and deletes snapshots of a system's structure.
 *
 * @example
 * const store = new SnapshotStore({ dir: './snapshots', mode: 'durable', serverVersion: '0.1.0' })
 * const { id } = await store.save({ models: { M: {} }, instances: [{ a: 'M' }], connections: {} })
 * const { definition } = await store.read({ id })
 */
export class SnapshotStore implements SnapshotBackend {
  readonly #dir: string
  readonly #mode: SnapshotMode
  readonly #serverVersion: string
  readonly #roots: string[]
  readonly #logger: Logger | undefined
  readonly #memory = new Map<string, MemoryEntry>()
  readonly #writes = new Mutex()
  readonly #warned = new Set<string>()
  readonly #memoryLimit: { count: number; bytes: number }
  readonly #memoryRetention: number | undefined

  constructor(options: SnapshotStoreOptions) {
    this.#dir = resolve(options.dir)
    this.#mode = options.mode
    this.#serverVersion = options.serverVersion
    this.#roots = [this.#dir, ...(options.allowedRoots ?? []).map((root) => resolve(root))]
    this.#logger = options.logger
    this.#memoryLimit = options.memoryLimit ?? DEFAULT_MEMORY_LIMIT
    this.#memoryRetention = options.memoryRetention
  }

  /** The snapshots directory (absolute, as configured). */
  get dir(): string {
    return this.#dir
  }

  /** `durable` or `memory`. */
  get mode(): SnapshotMode {
    return this.#mode
  }

  /**
   * Saves a definition. Without a target it is kept in memory and, in durable mode, written to
   * `<dir>/<id>.json`; an explicit `path` or `directory`/`name` always writes that file.
   *
   * @example
   * await store.save(definition, { directory: 'plant-a', name: 'nightly', label: 'before upgrade' })
   */
  async save(definition: SystemDefinition, options?: SaveOptions, extras: SaveExtras = {}): Promise<SaveResult> {
    const opts = options ?? {}
    checkDefinition(definition)
    const label = optionalText(opts.label, 'label')
    const notes = optionalText(opts.notes, 'notes')
    const withState = extras.state !== undefined
    const automatic = extras.automatic === true
    const given = extras.id === undefined ? undefined : checkSnapshotId(extras.id, 'id')
    return this.#writes.runExclusive(async () => {
      const id = given ?? randomUUID()
      const created_at = new Date().toISOString()
      // Structure only is written as version 1, which older builds read too.
      const schema_version = withState || automatic ? CURRENT_SCHEMA_VERSION : STRUCTURE_SCHEMA_VERSION
      const file: SnapshotFile = {
        schema_version,
        id,
        created_at,
        label,
        notes,
        server_version: this.#serverVersion,
        ...(automatic ? { automatic: true } : {}),
        // Structure only: whatever else the caller's object carries is not part of a snapshot.
        definition: {
          models: definition.models,
          instances: definition.instances,
          connections: definition.connections,
        },
      }
      if (withState) (file as { state?: unknown }).state = extras.state
      const text = serialize(file)
      let target = await this.#saveTarget(id, opts)
      if (target === '' && extras.file) target = await this.#defaultTarget(id)
      if (target === '') this.#roomInMemory(text.length)
      if (target !== '') await this.#writeSnapshot(target, text)
      const marks = { ...(withState ? { state: true as const } : {}), ...(automatic ? { automatic: true as const } : {}) }
      // A save under a given id that exists replaces it, and counts as the newest.
      this.#memory.delete(id)
      this.#memory.set(id, { id, created_at, label, notes, persisted_path: target, text, schema_version, ...marks })
      this.#trimMemory(id)
      this.#logger?.info({ snapshot: id, path: target || undefined, state: withState, automatic }, 'snapshot saved')
      return { id, in_memory: true, persisted_path: target, created_at, label, notes, ...marks }
    })
  }

  /**
   * Deletes the oldest automatic snapshot files under the snapshots directory (and their
   * in-memory copies) until `keep` remain, newest by created_at kept. Only files the server
   * marked `automatic` are ever deleted: a snapshot saved by a user is never touched. Answers
   * the paths deleted.
   *
   * @example
   * await store.prune(5) // ['/srv/snapshots/3f0c….json']
   */
  async prune(keep: number): Promise<string[]> {
    return this.#writes.runExclusive(async () => {
      const { files } = await this.list()
      const automatic = files.filter((f) => f.automatic === true && f.error === undefined)
      const doomed = automatic.slice(0, Math.max(0, automatic.length - keep))
      const deleted: string[] = []
      for (const entry of doomed) {
        // Read again: only a file that still is this automatic snapshot goes.
        if ((await fileIdAt(entry.path)) !== entry.id) continue
        await removeFile(entry.path)
        if (entry.id !== null) this.#memory.delete(entry.id)
        deleted.push(entry.path)
      }
      if (deleted.length) this.#logger?.info({ deleted, keep }, 'automatic snapshots beyond the retention deleted')
      return deleted
    })
  }

  /**
   * The newest snapshot file under the snapshots directory by created_at, automatic or saved by
   * hand, skipping files that cannot be used (`skipped` names them and why); undefined when none.
   *
   * @example
   * const { latest } = await store.latest() // latest?.path: '/srv/snapshots/3f0c….json'
   */
  async latest(): Promise<{ latest: FileEntry | undefined; skipped: FileEntry[] }> {
    const { files } = await this.list()
    const usable = files.filter((f) => f.error === undefined && f.created_at !== null)
    return { latest: usable[usable.length - 1], skipped: files.filter((f) => f.error !== undefined) }
  }

  /**
   * The in-memory snapshots and every `*.json` file under the snapshots directory, each sorted
   * by created_at. A file that cannot be used is listed with `error`.
   *
   * @example
   * const { files } = await store.list()
   * const broken = files.filter((f) => f.error)
   */
  async list(): Promise<ListResult> {
    const in_memory = inMemoryListing(this.#memory.values())
    const root = await canonicalPath(this.#dir)
    const scan = await scanJsonFiles(root)
    const files: FileEntry[] = []
    for (const path of scan.files) files.push(await this.#describeFile(path))
    for (const { path, error } of scan.unreadable) {
      this.#warnOnce(path, error)
      files.push({ path, id: null, created_at: null, label: '', notes: '', schema_version: null, error })
    }
    files.sort(byCreatedAt)
    return { in_memory, files }
  }

  /**
   * Reads one snapshot. By id: the in-memory one, else the file under the snapshots directory
   * whose content carries that id. By path: that file. Missing -> 404 `File not found`;
   * corrupt, foreign or newer -> 422.
   *
   * @example
   * const record = await store.read({ path: 'plant-a/nightly.json' })
   */
  async read(selector: SnapshotSelector): Promise<SnapshotRecord> {
    const selection = checkSelector(selector)
    if (selection.id !== undefined) {
      const entry = this.#memory.get(selection.id)
      if (entry !== undefined) {
        const file = parseSnapshotJson(entry.text) as SnapshotFile
        return toRecord({ file, storedVersion: entry.schema_version }, entry.persisted_path)
      }
      const found = await this.#locateById(selection.id)
      if (found === undefined) throw await this.#notFound(selection.id)
      // The file was parsed once, to find it; a file that is not JSON says why here.
      if (found.decoded instanceof ValidationError) throw found.decoded
      return toRecord(checkSnapshot(found.decoded, found.path), found.path)
    }
    const path = await resolveInside(selection.path, { base: this.#dir, roots: this.#roots, field: 'path' })
    return toRecord(parseSnapshot(await readText(path), path), path)
  }

  /**
   * Writes every in-memory snapshot that has no file yet to `<dir>/<id>.json`.
   *
   * @example
   * const { persisted } = await store.persistAllInMemory()
   */
  async persistAllInMemory(): Promise<PersistAllResult> {
    return this.#writes.runExclusive(async () => {
      const persisted: PersistAllResult['persisted'] = []
      for (const entry of this.#memory.values()) {
        if (entry.persisted_path !== '') continue
        const path = await this.#defaultTarget(entry.id)
        await this.#writeSnapshot(path, entry.text)
        entry.persisted_path = path
        persisted.push({ id: entry.id, path })
      }
      this.#logger?.info({ count: persisted.length }, 'in-memory snapshots persisted')
      return { persisted }
    })
  }

  /**
   * Deletes a snapshot from memory and its file. A file that is not a Mimic snapshot is never
   * deleted (409).
   *
   * @example
   * await store.delete({ id })
   */
  async delete(selector: SnapshotSelector): Promise<DeleteResult> {
    const selection = checkSelector(selector)
    return this.#writes.runExclusive(async () => {
      if (selection.id !== undefined) return this.#deleteById(selection.id)
      return this.#deleteByPath(selection.path)
    })
  }

  async #deleteById(id: string): Promise<DeleteResult> {
    const entry = this.#memory.get(id)
    let path = entry?.persisted_path ?? ''
    if (path === '') {
      const found = await this.#locateById(id)
      if (found === undefined && entry === undefined) throw await this.#notFound(id)
      if (found !== undefined && idOf(found.decoded) === id) path = found.path
      else if (entry === undefined && found !== undefined) {
        throw new ConflictError(`Refusing to delete ${found.path}: it is not a Mimic snapshot`, [
          { path: 'id', message: `${found.path} is not a Mimic snapshot` },
        ])
      }
    }
    this.#memory.delete(id)
    // Only a file that still carries this id is ours to remove; anything else now at that
    // path was put there by someone else.
    if (path !== '' && (await fileIdAt(path)) === id) await removeFile(path)
    this.#logger?.info({ snapshot: id, path: path || undefined }, 'snapshot deleted')
    return { id, deleted: true }
  }

  async #deleteByPath(given: string): Promise<DeleteResult> {
    const path = await resolveInside(given, { base: this.#dir, roots: this.#roots, field: 'path' })
    const text = await readText(path)
    if (!looksLikeSnapshot(text)) {
      throw new ConflictError(`Refusing to delete ${path}: it is not a Mimic snapshot`, [{ path: 'path', message: 'not a Mimic snapshot' }])
    }
    const id = peekHeader(text).id ?? ''
    await removeFile(path)
    for (const entry of this.#memory.values()) {
      if (entry.id === id || entry.persisted_path === path) this.#memory.delete(entry.id)
    }
    this.#logger?.info({ snapshot: id, path }, 'snapshot deleted')
    return { id, deleted: true }
  }

  /** The file a save goes to, or "" to keep the snapshot in memory only. */
  async #saveTarget(id: string, opts: SaveOptions): Promise<string> {
    // Clients that send `null` for an argument they did not give mean "not given".
    const path = opts.path ?? undefined
    const directory = opts.directory ?? undefined
    const name = opts.name ?? undefined
    if (path !== undefined) {
      if (directory !== undefined || name !== undefined) {
        throw new ValidationError('Give either path, or directory and/or name, not both', [
          { path: 'path', message: 'not allowed together with directory/name' },
        ])
      }
      return resolveInside(checkPathText(path, 'path'), { base: this.#dir, roots: this.#roots, field: 'path' })
    }
    if (directory !== undefined || name !== undefined) {
      const base = directory === undefined ? '.' : checkPathText(directory, 'directory')
      let fileName = name === undefined ? `${id}.json` : checkName(name, 'name')
      if (extname(fileName) === '') fileName += '.json'
      const given = join(base, fileName)
      // Checked on the directory first so a 403 names the kwarg the client got wrong.
      await resolveInside(base, { base: this.#dir, roots: this.#roots, field: 'directory' })
      return resolveInside(given, { base: this.#dir, roots: this.#roots, field: 'name' })
    }
    return this.#mode === 'durable' ? this.#defaultTarget(id) : ''
  }

  async #defaultTarget(id: string): Promise<string> {
    return join(await canonicalPath(this.#dir), `${id}.json`)
  }

  /** Writes a snapshot file, refusing to replace anything that is not a snapshot. */
  async #writeSnapshot(path: string, text: string): Promise<void> {
    await refuseForeignTarget(path)
    try {
      await mkdir(dirname(path), { recursive: true })
    } catch (err) {
      throw toMimicError(err, { action: 'create directory for', path })
    }
    await writeFileAtomic(path, text)
    // Another in-memory snapshot whose file was just overwritten no longer has a file.
    for (const entry of this.#memory.values()) {
      if (entry.persisted_path === path) entry.persisted_path = ''
    }
  }

  /**
   * Refuses a memory-only save the memory cannot hold when the operator has not asked to drop
   * old ones (`memoryRetention`): a 409 that says how to make room, before anything is kept.
   */
  #roomInMemory(size: number): void {
    if (this.#memoryRetention !== undefined) return
    const only = [...this.#memory.values()].filter((e) => e.persisted_path === '')
    const bytes = only.reduce((sum, e) => sum + e.text.length, 0)
    const { count, bytes: maxBytes } = this.#memoryLimit
    if (only.length + 1 <= count && bytes + size <= maxBytes) return
    const message =
      `${only.length} snapshots (${bytes} bytes) are kept in memory only, the most this server holds (${count} snapshots, ${maxBytes} bytes): ` +
      'persist them (persist_all_in_memory), delete some, or start the server with --snapshots-retention N to drop the oldest'
    throw new ConflictError(message, [{ path: 'snapshots', message: 'in-memory snapshots full' }])
  }

  /**
   * Keeps the in-memory copies within their limits, `keep` (just saved) aside: first the copies
   * of snapshots that have a file (the file still answers reads), then, when the operator set a
   * retention, the oldest snapshots that live in memory only.
   */
  #trimMemory(keep: string): void {
    const { count, bytes: maxBytes } = this.#memoryLimit
    let bytes = 0
    for (const entry of this.#memory.values()) bytes += entry.text.length
    const over = (): boolean => this.#memory.size > count || bytes > maxBytes
    const drop = (entry: MemoryEntry): void => {
      this.#memory.delete(entry.id)
      bytes -= entry.text.length
    }
    // A Map iterates in insertion order: oldest saves first.
    for (const entry of [...this.#memory.values()]) {
      if (!over()) break
      if (entry.id !== keep && entry.persisted_path !== '') drop(entry)
    }
    const retention = this.#memoryRetention
    if (retention === undefined) return
    const only = [...this.#memory.values()].filter((e) => e.persisted_path === '')
    const dropped: string[] = []
    for (const entry of only) {
      if (!over() && only.length - dropped.length <= retention) break
      if (entry.id === keep) continue
      drop(entry)
      dropped.push(entry.id)
    }
    if (dropped.length) this.#logger?.warn({ dropped, keep: retention }, 'in-memory snapshots beyond the retention dropped')
  }

  /** Logs an unusable entry of the snapshots directory the first time a listing meets it (lists are frequent). */
  #warnOnce(path: string, error: string): void {
    if (this.#warned.has(path)) return
    if (this.#warned.size < MAX_WARNED) this.#warned.add(path)
    this.#logger?.warn({ path, err: error }, 'unusable entry in the snapshots directory: skipped')
  }

  async #describeFile(path: string): Promise<FileEntry> {
    let text: string
    try {
      text = await readRegularFile(path)
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err)
      return { path, id: null, created_at: null, label: '', notes: '', schema_version: null, error }
    }
    try {
      const { file, storedVersion } = parseSnapshot(text, path)
      const { id, created_at, label, notes } = file
      return {
        path,
        id,
        created_at,
        label,
        notes,
        schema_version: storedVersion,
        ...(file.state ? { state: true as const } : {}),
        ...(file.automatic ? { automatic: true as const } : {}),
      }
    } catch (err) {
      return { path, ...peekHeader(text), error: err instanceof Error ? err.message : String(err) }
    }
  }

  /**
   * The file under the snapshots directory whose content has this id: `<dir>/<id>.json` first,
   * then every file. A `<dir>/<id>.json` that is unreadable as a snapshot is returned only when
   * no file matches, so reading it reports why it is broken instead of "not found". The one found
   * is answered parsed; `<dir>/<id>.json` is parsed once, another file read for its id once more.
   */
  async #locateById(id: string): Promise<Located | undefined> {
    const root = await canonicalPath(this.#dir)
    let direct = ''
    let brokenDirect: Located | undefined
    if (!/[/\\]/.test(id) && id !== '.' && id !== '..') {
      direct = join(root, `${id}.json`)
      const text = await this.#readDirect(id, direct)
      if (text !== undefined) {
        const decoded = decodeFile(text, direct)
        const declared = idOf(decoded)
        if (declared === id) return { path: direct, decoded }
        if (declared === null) brokenDirect = { path: direct, decoded }
      }
    }
    const { files } = await scanJsonFiles(root)
    for (const path of files) {
      if (path === direct) continue
      const text = await readRegularFile(path).catch(() => undefined)
      // Only the file that matches is decoded (typed numbers, one walk); the others are only
      // read for their id, by the plain JSON.parse of peekHeader.
      if (text !== undefined && peekHeader(text).id === id) return { path, decoded: decodeFile(text, path) }
    }
    return brokenDirect
  }

  /**
   * The text of `<dir>/<id>.json`, or undefined when there is none. A symlink there is held to
   * the containment of paths: one that resolves outside the allowed directories is a 403, and
   * nothing of its target is read.
   */
  async #readDirect(id: string, path: string): Promise<string | undefined> {
    let real: string
    try {
      real = await realpath(path)
    } catch {
      return undefined
    }
    const roots = await Promise.all(this.#roots.map((root) => canonicalPath(root)))
    if (!roots.some((root) => isWithin(real, root))) {
      throw new ForbiddenError(`Snapshot id '${id}': ${path} is a link that resolves outside the allowed directories`, [
        { path: 'id', message: 'resolves outside the allowed directories' },
      ])
    }
    return readRegularFile(real, 'id').catch((err: unknown) => {
      // A FIFO or a device under the id's name is named, not waited on; a file that vanished is simply not there.
      if (err instanceof ValidationError) throw err
      return undefined
    })
  }

  async #notFound(id: string): Promise<NotFoundError> {
    const root = await canonicalPath(this.#dir)
    return new NotFoundError(
      `File not found: no snapshot with id '${id}' in memory or under ${root} ` +
        `(looked for ${join(root, `${id}.json`)} and in every *.json file below the directory)`,
      [{ path: 'id', message: `no snapshot file with this id under ${root}` }],
    )
  }
}

/** A snapshot file found by its id: parsed once (`decodeSnapshot`), or why it could not be. */
interface Located {
  path: string
  decoded: RawSnapshotFile | ValidationError
}

function decodeFile(text: string, path: string): RawSnapshotFile | ValidationError {
  try {
    return decodeSnapshot(text, path)
  } catch (err) {
    if (err instanceof ValidationError) return err
    throw err
  }
}

/** The id a parsed file declares, or null. */
function idOf(decoded: RawSnapshotFile | ValidationError): string | null {
  return headerOf(decoded instanceof ValidationError ? undefined : decoded).id
}

export function checkDefinition(definition: unknown): void {
  const result = systemDefinitionSchema.safeParse(definition)
  if (result.success) return
  const details: ErrorDetail[] = result.error.issues.map((issue) => ({
    path: ['definition', ...issue.path.map(String)].join('.'),
    message: issueMessage(issue),
  }))
  throw new ValidationError(summarize('Cannot save the system definition', details), details)
}

export function checkSelector(selector: SnapshotSelector | undefined): Selection {
  const id = selector?.id ?? undefined
  const path = selector?.path ?? undefined
  if ((id === undefined) === (path === undefined)) {
    throw new ValidationError('Select a snapshot with exactly one of id or path', [
      { path: id === undefined ? 'id' : 'path', message: 'give exactly one of id or path' },
    ])
  }
  if (id !== undefined) return { id: checkPathText(id, 'id') }
  return { path: checkPathText(path, 'path') }
}

export function optionalText(value: unknown, field: string): string {
  if (value === undefined || value === null) return ''
  if (typeof value !== 'string') {
    throw new ValidationError(`${field} must be a string`, [{ path: field, message: 'expected a string' }])
  }
  return value
}

/** Where the instances of a state section go in the text of a file (random per process, so no value looks like it). */
const INSTANCES_SLOT = JSON.stringify(`~instances~${randomUUID()}~`)

/**
 * The text of a snapshot file: indented with one space, except that each instance of a state
 * section is one line (what changes between two saves of a running system is its values, so a
 * diff shows one line per instance that changed; and the file is a third of the size).
 */
export function serialize(file: SnapshotFile): string {
  const models = Object.fromEntries(Object.entries(file.definition.models).map(([name, model]) => [name, typedModelDefinition(model)]))
  try {
    const definition = { ...file.definition, models }
    const state = file.state
    if (state === undefined) return `${typedJson({ ...file, definition }, 1)}\n`
    const text = typedJson({ ...file, definition, state: { ...state, instances: JSON.parse(INSTANCES_SLOT) as string } }, 1)
    const entries = Object.entries(state.instances).map(([name, instance]) => `   ${JSON.stringify(name)}: ${typedJson(instance)}`)
    const instances = entries.length === 0 ? '{}' : `{\n${entries.join(',\n')}\n  }`
    const at = text.indexOf(INSTANCES_SLOT)
    return `${text.slice(0, at)}${instances}${text.slice(at + INSTANCES_SLOT.length)}\n`
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err)
    throw new ValidationError(`Cannot save the system definition: not serializable as JSON: ${reason}`, [{ path: 'definition', message: reason }])
  }
}

export function toRecord({ file, storedVersion }: ParsedSnapshot, path: string): SnapshotRecord {
  const { id, created_at, label, notes, server_version, definition, state } = file
  const record: SnapshotRecord = { id, path, created_at, label, notes, schema_version: storedVersion, server_version, definition }
  if (state !== undefined) record.state = state
  if (file.automatic === true) record.automatic = true
  return record
}

/** The in-memory part of a listing, oldest first: what `list` shows of each copy kept in memory (both stores). */
export function inMemoryListing(entries: Iterable<InMemoryEntry>): InMemoryEntry[] {
  return [...entries]
    .map(({ id, created_at, label, notes, persisted_path, state, automatic }) => ({
      id,
      created_at,
      label,
      notes,
      persisted_path,
      ...(state ? { state } : {}),
      ...(automatic ? { automatic } : {}),
    }))
    .sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at))
}

export function byCreatedAt(a: FileEntry, b: FileEntry): number {
  const ta = a.created_at === null ? Number.NaN : Date.parse(a.created_at)
  const tb = b.created_at === null ? Number.NaN : Date.parse(b.created_at)
  if (Number.isNaN(ta) !== Number.isNaN(tb)) return Number.isNaN(ta) ? 1 : -1
  if (!Number.isNaN(ta) && ta !== tb) return ta - tb
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0
}

function readText(path: string): Promise<string> {
  return readRegularFile(path, 'path')
}

/** 409 when `path` holds something that is not a snapshot (a directory, a foreign file). */
async function refuseForeignTarget(path: string): Promise<void> {
  let isFile: boolean
  try {
    isFile = (await stat(path)).isFile()
  } catch (err) {
    const code = errnoCode(err)
    if (code === 'ENOENT' || code === 'ENOTDIR') return
    throw toMimicError(err, { action: 'inspect', path })
  }
  if (!isFile || !looksLikeSnapshot(await readText(path))) {
    throw new ConflictError(`Refusing to overwrite ${path}: it is not a Mimic snapshot`, [{ path, message: 'exists and is not a Mimic snapshot' }])
  }
}

async function fileIdAt(path: string): Promise<string | null> {
  try {
    return peekHeader(await readRegularFile(path)).id
  } catch {
    return null
  }
}

async function removeFile(path: string): Promise<void> {
  try {
    await unlink(path)
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw toMimicError(err, { action: 'delete snapshot', path })
  }
}
