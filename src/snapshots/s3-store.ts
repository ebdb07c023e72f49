/**
 * The snapshot store in an S3 object store (`--snapshots-store s3://bucket/prefix`), beside the
 * file store: the same calls, the same snapshot text, one object per shard of a snapshot.
 *
 *   <prefix>/<id>/shard-<I>-of-<N>.json       the snapshot of shard I of a fleet of N (`--shard I/N`;
 *                                              a single server is shard 1 of 1); its S3 metadata holds what
 *                                              `list` shows (created_at, label, notes, name, epoch)
 *   <prefix>/_fence/shard-<I>-of-<N>/started/<epoch>   one empty object per process start
 *   <prefix>/_fence/shard-<I>-of-<N>/saved.json        the newest epoch that saved this shard
 *
 * A fencing epoch keeps a stale copy of a shard (an update may run two for a while) from
 * overwriting a newer one's saves: each process takes an epoch at start, above every epoch taken
 * before (and above the clock, in microseconds), and a save first moves `saved.json` up to its own
 * epoch; a save whose epoch is below the one there is refused (409). The writes of the fence are
 * conditional (`If-None-Match: *`, `If-Match: <etag>`), so on a store that honours conditional
 * writes (AWS S3, MinIO) two copies cannot both win; on one that ignores them it still refuses every
 * save of the older copy once the newer one has saved.
 */
import { randomInt, randomUUID } from 'node:crypto'
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type PutObjectCommandInput,
} from '@aws-sdk/client-s3'
import { Mutex } from 'async-mutex'
import type { Logger } from 'pino'
import { ConflictError, ForbiddenError, NotFoundError, StoreUnavailableError, ValidationError } from '../errors.js'
import { parseSnapshot, parseSnapshotJson } from './parse-snapshot.js'
import { checkName } from './safe-path.js'
import { CURRENT_SCHEMA_VERSION, STRUCTURE_SCHEMA_VERSION, type SnapshotFile, type SystemDefinition } from './schema.js'
import { storeFault, isMissing, lostRace, storeStatus } from './s3-faults.js'
import { byCreatedAt, checkDefinition, checkSelector, inMemoryListing, optionalText, serialize, toRecord } from './store.js'
import type {
  DeleteResult,
  FileEntry,
  InMemoryEntry,
  ListResult,
  PersistAllResult,
  SaveExtras,
  SaveOptions,
  SaveResult,
  SnapshotBackend,
  SnapshotRecord,
  SnapshotSelector,
} from './types.js'

/**
 * Options of the object store.
 *
 * @example
 * await S3SnapshotStore.open({ url: 's3://mimic/plant-a', serverVersion: '0.1.0', env: process.env })
 */
export interface S3StoreOptions {
  /** `s3://bucket` or `s3://bucket/prefix`. */
  url: string
  serverVersion: string
  /** Where AWS_ENDPOINT_URL(_S3), AWS_REGION and AWS_DEFAULT_REGION are read (default process.env); credentials come from the SDK's default chain. */
  env?: NodeJS.ProcessEnv
  /** Path-style addressing (`http://host/bucket/key`); default: on when a custom endpoint is set. */
  forcePathStyle?: boolean | undefined
  /**
   * This server's shard of a fleet and the fleet's size, numbered as `--shard I/N` numbers them
   * (from 1, like a Docker Swarm task slot); default 1 of 1, a single server.
   */
  shard?: { index: number; count: number } | undefined
  logger?: Logger | undefined
  /**
   * In-memory copies of recent saves (default 100 snapshots, 256 MiB); the bytes are also the
   * largest snapshot saved or read.
   */
  memoryLimit?: { count: number; bytes: number }
}

/**
 * A snapshot in the store as listed: the file store's fields (`path` is the object's URL), plus
 * the name it was saved under, its size in bytes (all shards), the epoch that saved this shard and
 * which shards of the fleet have saved it.
 *
 * @example
 * { path: 's3://mimic/plant-a/3f0c…/shard-1-of-1.json', id: '3f0c…', size: 2048, epoch: 1767261600000123, shards: { count: 1, saved: [1] }, ... }
 */
export interface StoreEntry extends FileEntry {
  name?: string
  size: number
  epoch: number | null
  shards: { count: number; saved: number[] }
}

interface MemoryCopy extends InMemoryEntry {
  text: string
  schema_version: number
}

/** One shard's object of a snapshot, as a listing finds it. */
interface ShardObject {
  key: string
  size: number
  shard: number
  count: number
}

interface Fence {
  epoch: number
  etag: string | undefined
  saved_at: string
}

const DEFAULT_MEMORY_LIMIT = { count: 100, bytes: 256 * 1024 * 1024 }
/** A snapshot id the store accepts (a save makes UUIDs; a fleet's coordinator may give its own). */
const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/
const SHARD_KEY = /^([^/]+)\/shard-(\d+)-of-(\d+)\.json$/
/** Epoch markers kept per shard: older ones go (best effort), the newest is what counts. */
const KEEP_MARKERS = 16
/** Most objects a listing reads (1,000 a page). */
const MAX_LISTED = 100_000
/** Encoded characters of each text kept in the object's metadata (S3 allows 2 KB in all). */
const META_TEXT = 480
/** HEAD requests of a listing in flight at once. */
const LIST_CONCURRENCY = 8

/**
 * Saves, lists, reads and deletes snapshots in an S3 bucket, one object per shard.
 *
 * @example
 * const store = await S3SnapshotStore.open({ url: 's3://mimic/plant-a', serverVersion: '0.1.0' })
 * const { id } = await store.save(definition, { name: 'nightly' }, { state })
 * const record = await store.read({ id })
 */
export class S3SnapshotStore implements SnapshotBackend {
  readonly mode = 'durable' as const
  readonly #client: S3Client
  readonly #bucket: string
  readonly #base: string
  readonly #url: string
  readonly #endpoint: string
  readonly #shard: number
  readonly #count: number
  readonly #serverVersion: string
  readonly #logger: Logger | undefined
  readonly #memoryLimit: { count: number; bytes: number }
  readonly #memory = new Map<string, MemoryCopy>()
  readonly #writes = new Mutex()
  #epoch = 0
  #conditionalWrites = true

  private constructor(options: S3StoreOptions) {
    const { bucket, prefix } = parseStoreUrl(options.url)
    this.#bucket = bucket
    this.#base = prefix === '' ? '' : `${prefix}/`
    this.#url = `s3://${bucket}${prefix === '' ? '' : `/${prefix}`}`
    this.#shard = options.shard?.index ?? 1
    this.#count = options.shard?.count ?? 1
    if (!Number.isInteger(this.#count) || this.#count < 1 || !Number.isInteger(this.#shard) || this.#shard < 1 || this.#shard > this.#count) {
      throw new ValidationError(`Invalid shard ${this.#shard} of ${this.#count}: expected 1 <= shard <= count`)
    }
    this.#serverVersion = options.serverVersion
    this.#logger = options.logger
    this.#memoryLimit = options.memoryLimit ?? DEFAULT_MEMORY_LIMIT
    const env = options.env ?? process.env
    const endpoint = env['AWS_ENDPOINT_URL_S3'] || env['AWS_ENDPOINT_URL'] || undefined
    const region = env['AWS_REGION'] || env['AWS_DEFAULT_REGION'] || (endpoint !== undefined ? 'us-east-1' : undefined)
    this.#endpoint = endpoint ?? `the AWS S3 endpoint of ${region ?? 'the configured region'}`
    this.#client = new S3Client({
      ...(region !== undefined ? { region } : {}),
      ...(endpoint !== undefined ? { endpoint } : {}),
      forcePathStyle: options.forcePathStyle ?? endpoint !== undefined,
      // Checksums only where S3 requires them: stores compatible with S3 (MinIO, Ceph, test servers) do not all take the newer ones.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
      requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
    })
  }

  /**
   * Opens the store: checks that the bucket is there and takes this process's fencing epoch. A
   * missing bucket, an unreachable endpoint or refused credentials fail here, at start-up, with
   * the endpoint in the message.
   *
   * @example
   * const store = await S3SnapshotStore.open({ url: 's3://mimic', serverVersion })
   */
  static async open(options: S3StoreOptions): Promise<S3SnapshotStore> {
    const store = new S3SnapshotStore(options)
    try {
      await store.#start()
    } catch (err) {
      store.close()
      throw err
    }
    return store
  }

  /** `s3://bucket/prefix`. */
  get dir(): string {
    return this.#url
  }

  /** The fencing epoch this process took at start. */
  get epoch(): number {
    return this.#epoch
  }

  /** The endpoint, as messages name it. */
  get endpoint(): string {
    return this.#endpoint
  }

  /** Ends the client's connections. */
  close(): void {
    this.#client.destroy()
  }

  /**
   * Saves a definition (and the state in `extras`) as this shard's object of a new snapshot, or
   * of `extras.id` when a fleet's coordinator names the snapshot every shard saves into. `name`
   * is kept with it (a load or delete may name it); `path` and `directory` mean files and are
   * refused.
   *
   * @example
   * await store.save(definition, { name: 'before-upgrade', label: 'v1' }, { state })
   */
  async save(definition: SystemDefinition, options?: SaveOptions, extras: SaveExtras & { id?: string } = {}): Promise<SaveResult> {
    const opts = options ?? {}
    checkDefinition(definition)
    const label = optionalText(opts.label, 'label')
    const notes = optionalText(opts.notes, 'notes')
    for (const field of ['path', 'directory'] as const) {
      if ((opts[field] ?? undefined) !== undefined) {
        throw new ValidationError(`Snapshots are kept in the object store ${this.#url}: give a name (or nothing), not a ${field}`, [
          { path: field, message: `not used with --snapshots-store; give name instead` },
        ])
      }
    }
    const name = opts.name === undefined || opts.name === null ? undefined : checkName(opts.name, 'name')
    const id = extras.id === undefined ? randomUUID() : checkId(extras.id, 'id')
    const withState = extras.state !== undefined
    const automatic = extras.automatic === true
    return this.#writes.runExclusive(async () => {
      const created_at = new Date().toISOString()
      const schema_version = withState || automatic ? CURRENT_SCHEMA_VERSION : STRUCTURE_SCHEMA_VERSION
      const file: SnapshotFile = {
        schema_version,
        id,
        created_at,
        label,
        notes,
        server_version: this.#serverVersion,
        ...(automatic ? { automatic: true } : {}),
        definition: { models: definition.models, instances: definition.instances, connections: definition.connections },
      }
      if (withState) (file as { state?: unknown }).state = extras.state
      const text = serialize(file)
      const size = Buffer.byteLength(text)
      if (size > this.#memoryLimit.bytes) {
        throw new ConflictError(`The snapshot is ${size} bytes, more than the ${this.#memoryLimit.bytes} bytes a snapshot may be: nothing was saved`, [
          { path: 'snapshot', message: `${size} bytes, limit ${this.#memoryLimit.bytes}` },
        ])
      }
      const key = this.#key(id)
      await this.#claimFence(key)
      if (extras.id !== undefined) await this.#refuseNewerObject(key)
      const metadata: Record<string, string> = {
        'mimic-id': id,
        'mimic-created-at': created_at,
        'mimic-schema-version': String(schema_version),
        'mimic-epoch': String(this.#epoch),
        'mimic-label': metaText(label),
        'mimic-notes': metaText(notes),
        ...(name !== undefined ? { 'mimic-name': metaText(name) } : {}),
        ...(withState ? { 'mimic-state': '1' } : {}),
        ...(automatic ? { 'mimic-automatic': '1' } : {}),
      }
      await this.#put({ Key: key, Body: text, ContentType: 'application/json', Metadata: metadata }, `save snapshot ${id} to`)
      const marks = { ...(withState ? { state: true as const } : {}), ...(automatic ? { automatic: true as const } : {}) }
      const url = this.#objectUrl(key)
      this.#memory.set(id, { id, created_at, label, notes, persisted_path: url, text, schema_version, ...marks })
      this.#trimMemory()
      this.#logger?.info({ snapshot: id, path: url, state: withState, automatic, epoch: this.#epoch, bytes: size }, 'snapshot saved')
      return { id, in_memory: true, persisted_path: url, created_at, label, notes, ...marks }
    })
  }

  /**
   * The recent saves kept in memory, and every snapshot in the store: one entry per snapshot id,
   * with this shard's object (an entry without it carries `error`). Both sorted by created_at.
   *
   * @example
   * const { files } = await store.list()
   */
  async list(): Promise<ListResult> {
    const in_memory = inMemoryListing(this.#memory.values())
    return { in_memory, files: await this.#entries() }
  }

  /**
   * Reads this shard's object of a snapshot. By id; or by path: the URL `list` shows
   * (`s3://bucket/prefix/<id>` or one shard's object), or the name it was saved under (the newest
   * of that name). Missing -> 404 `File not found`; corrupt, foreign or newer -> 422.
   *
   * @example
   * const record = await store.read({ path: 'nightly' })
   */
  async read(selector: SnapshotSelector): Promise<SnapshotRecord> {
    const selection = checkSelector(selector)
    if (selection.id !== undefined) {
      const copy = this.#memory.get(selection.id)
      if (copy !== undefined) {
        const file = parseSnapshotJson(copy.text) as SnapshotFile
        return toRecord({ file, storedVersion: copy.schema_version }, copy.persisted_path)
      }
      return this.#readKey(this.#key(checkId(selection.id, 'id')), selection.id, 'id')
    }
    const key = await this.#keyOfPath(selection.path)
    return this.#readKey(key, undefined, 'path')
  }

  /**
   * Deletes a snapshot: every shard's object of its id (by id, URL or name) and its copy in memory.
   *
   * @example
   * await store.delete({ id })
   */
  async delete(selector: SnapshotSelector): Promise<DeleteResult> {
    const selection = checkSelector(selector)
    return this.#writes.runExclusive(async () => {
      let id: string
      if (selection.id !== undefined) id = checkId(selection.id, 'id')
      else {
        const match = SHARD_KEY.exec((await this.#keyOfPath(selection.path)).slice(this.#base.length))
        id = match?.[1] ?? ''
      }
      const keys = (await this.#listObjects(`${this.#base}${id}/`)).map((o) => o.key)
      const inMemory = this.#memory.delete(id)
      if (keys.length === 0 && !inMemory) throw this.#notFound(id)
      for (const key of keys) await this.#deleteKey(key, `delete snapshot ${id} from`)
      this.#logger?.info({ snapshot: id, objects: keys.length }, 'snapshot deleted')
      return { id, deleted: true }
    })
  }

  /**
   * Every save is in the store already: nothing to persist.
   *
   * @example
   * await store.persistAllInMemory() // { persisted: [] }
   */
  async persistAllInMemory(): Promise<PersistAllResult> {
    return { persisted: [] }
  }

  /**
   * Deletes the oldest automatic snapshots of this shard (every shard's object of each) until
   * `keep` remain; a snapshot saved by a user is never deleted. Answers their URLs.
   *
   * @example
   * await store.prune(5)
   */
  async prune(keep: number): Promise<string[]> {
    return this.#writes.runExclusive(async () => {
      const automatic = (await this.#entries()).filter((e) => e.automatic === true && e.error === undefined && e.id !== null)
      const doomed = automatic.slice(0, Math.max(0, automatic.length - keep))
      const deleted: string[] = []
      for (const entry of doomed) {
        const id = entry.id as string
        for (const { key } of await this.#listObjects(`${this.#base}${id}/`)) await this.#deleteKey(key, `delete snapshot ${id} from`)
        this.#memory.delete(id)
        deleted.push(entry.path)
      }
      if (deleted.length) this.#logger?.info({ deleted, keep }, 'automatic snapshots beyond the retention deleted')
      return deleted
    })
  }

  /**
   * The newest snapshot in the store that this shard can load, by created_at; `skipped` names
   * the unusable ones.
   *
   * @example
   * const { latest } = await store.latest()
   */
  async latest(): Promise<{ latest: FileEntry | undefined; skipped: FileEntry[] }> {
    const files = await this.#entries()
    const usable = files.filter((f) => f.error === undefined && f.created_at !== null)
    return { latest: usable[usable.length - 1], skipped: files.filter((f) => f.error !== undefined) }
  }

  async #start(): Promise<void> {
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket: this.#bucket }))
    } catch (err) {
      if (storeStatus(err) === 404) {
        throw new StoreUnavailableError(`The snapshot store ${this.#url}: bucket '${this.#bucket}' does not exist at ${this.#endpoint}: create it first`, [
          { path: 'snapshots_store', message: `no bucket '${this.#bucket}'`, endpoint: this.#endpoint },
        ])
      }
      throw this.#fault(err, 'open the snapshot store')
    }
    await this.#takeEpoch()
  }

  /** The epoch of this process: above every epoch this shard took before, and above the clock in microseconds. */
  async #takeEpoch(): Promise<void> {
    const prefix = `${this.#fence()}started/`
    const markers = (await this.#listObjects(prefix)).map((o) => o.key.slice(prefix.length)).filter((k) => /^\d{1,16}$/.test(k))
    const taken = markers.map(Number).sort((a, b) => a - b)
    let epoch = Math.max((taken[taken.length - 1] ?? 0) + 1, Date.now() * 1000 + randomInt(1000))
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#put({ Key: `${prefix}${pad(epoch)}`, Body: '', IfNoneMatch: '*' }, 'take a fencing epoch in')
        break
      } catch (err) {
        if (!lostRace(err) || attempt >= 5) throw this.#fault(err, 'take a fencing epoch in')
        epoch += 1 + randomInt(1000)
      }
    }
    this.#epoch = epoch
    // Only the newest marker matters; the others are tidied away.
    for (const old of taken.slice(0, Math.max(0, taken.length - KEEP_MARKERS + 1))) {
      await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: `${prefix}${pad(old)}` })).catch(() => undefined)
    }
    this.#logger?.info({ store: this.#url, endpoint: this.#endpoint, shard: this.#shard, shards: this.#count, epoch }, 'snapshot store opened')
  }

  /**
   * Moves this shard's fence up to this process's epoch before a save, or refuses the save (409)
   * when a newer epoch has saved since: this process is then a stale copy of the shard.
   */
  async #claimFence(key: string): Promise<void> {
    const fenceKey = `${this.#fence()}saved.json`
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await this.#readFence(fenceKey)
      if (current !== undefined && current.epoch > this.#epoch) {
        const message =
          `Refusing to save shard ${this.#shard} of ${this.#count} to ${this.#url}: a newer copy of this shard (epoch ${current.epoch}) saved at ` +
          `${current.saved_at}, after this server took epoch ${this.#epoch} at start. This server is a stale copy (an update may run two for a while) ` +
          'and must not overwrite the newer state: stop it, or restart it to take a new epoch'
        throw new ConflictError(message, [
          {
            path: 'epoch',
            message: `epoch ${this.#epoch} is older than ${current.epoch}`,
            epoch: this.#epoch,
            newer_epoch: current.epoch,
            object: this.#objectUrl(key),
          },
        ])
      }
      if (current !== undefined && current.epoch === this.#epoch) return
      const body = JSON.stringify({ epoch: this.#epoch, saved_at: new Date().toISOString(), server_version: this.#serverVersion })
      const condition = current === undefined ? { IfNoneMatch: '*' } : current.etag !== undefined ? { IfMatch: current.etag } : {}
      try {
        await this.#put({ Key: fenceKey, Body: body, ContentType: 'application/json', ...condition }, 'claim the fence of')
        return
      } catch (err) {
        if (!lostRace(err)) throw this.#fault(err, 'claim the fence of')
      }
    }
    throw new ConflictError(`Cannot save shard ${this.#shard} of ${this.#count} to ${this.#url}: other copies of this shard keep claiming its fence`)
  }

  async #readFence(key: string): Promise<Fence | undefined> {
    let text: string
    let etag: string | undefined
    try {
      const res = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key }))
      etag = res.ETag
      text = (await res.Body?.transformToString('utf8')) ?? ''
    } catch (err) {
      if (isMissing(err)) return undefined
      throw this.#fault(err, 'read the fence of')
    }
    try {
      const parsed = JSON.parse(text) as { epoch?: unknown; saved_at?: unknown }
      if (typeof parsed.epoch === 'number' && Number.isSafeInteger(parsed.epoch)) {
        return { epoch: parsed.epoch, etag, saved_at: typeof parsed.saved_at === 'string' ? parsed.saved_at : 'an unknown time' }
      }
    } catch {
      // An unreadable fence is taken over below.
    }
    this.#logger?.warn({ key }, 'the fence object of this shard is not readable: it is written anew')
    return { epoch: 0, etag, saved_at: 'an unknown time' }
  }

  /** A fleet save names its id: an object of it that a newer epoch wrote is not overwritten. */
  async #refuseNewerObject(key: string): Promise<void> {
    let epoch: number
    try {
      const head = await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }))
      epoch = Number(head.Metadata?.['mimic-epoch'] ?? 0)
    } catch (err) {
      if (isMissing(err)) return
      throw this.#fault(err, 'inspect')
    }
    if (epoch > this.#epoch) {
      throw new ConflictError(
        `Refusing to overwrite ${this.#objectUrl(key)}: a newer copy of this shard (epoch ${epoch}) saved it; this server has epoch ${this.#epoch}`,
        [{ path: 'epoch', message: `epoch ${this.#epoch} is older than ${epoch}`, epoch: this.#epoch, newer_epoch: epoch }],
      )
    }
  }

  async #readKey(key: string, id: string | undefined, field: string): Promise<SnapshotRecord> {
    const url = this.#objectUrl(key)
    const text = await this.#getText(key, field)
    if (text === undefined) throw await this.#missing(key, id)
    return toRecord(parseSnapshot(text, url), url)
  }

  /** The text of an object, or undefined when there is none; one larger than a snapshot may be is refused without reading it all. */
  async #getText(key: string, field: string): Promise<string | undefined> {
    const url = this.#objectUrl(key)
    const limit = this.#memoryLimit.bytes
    const tooLarge = (size: number | string): ConflictError =>
      new ConflictError(`Refusing to read ${url}: it is ${size} bytes, more than the ${limit} bytes a snapshot may be`, [
        { path: field, message: `larger than ${limit} bytes` },
      ])
    let body: (AsyncIterable<Uint8Array> & { destroy?: () => void }) | undefined
    try {
      const res = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: key }))
      body = res.Body as unknown as AsyncIterable<Uint8Array> & { destroy?: () => void }
      if (res.ContentLength !== undefined && res.ContentLength > limit) {
        body?.destroy?.()
        throw tooLarge(res.ContentLength)
      }
      const chunks: Uint8Array[] = []
      let total = 0
      for await (const chunk of body ?? []) {
        total += chunk.byteLength
        if (total > limit) {
          body?.destroy?.()
          throw tooLarge(`more than ${limit}`)
        }
        chunks.push(chunk)
      }
      return Buffer.concat(chunks).toString('utf8')
    } catch (err) {
      if (isMissing(err)) return undefined
      throw this.#fault(err, `read ${url} from`)
    }
  }

  /** 404 for a key with no object; when other shards of the id exist, says which fleet saved it. */
  async #missing(key: string, id: string | undefined): Promise<NotFoundError> {
    const match = SHARD_KEY.exec(key.slice(this.#base.length))
    const snapshotId = id ?? match?.[1] ?? key
    const others = match === null ? [] : await this.#listObjects(`${this.#base}${match[1]}/`)
    if (others.length === 0) return this.#notFound(snapshotId, key)
    const names = others.map((o) => o.key.slice(`${this.#base}${match?.[1]}/`.length))
    return new NotFoundError(
      `File not found: snapshot '${snapshotId}' in ${this.#url} has no object for shard ${this.#shard} of ${this.#count} (${this.#objectUrl(key)}); it holds ${names.join(', ')}`,
      [{ path: 'id', message: `no shard-${this.#shard}-of-${this.#count}.json`, objects: names }],
    )
  }

  #notFound(id: string, key = this.#key(id)): NotFoundError {
    return new NotFoundError(
      `File not found: no snapshot with id '${id}' in memory or in ${this.#url} (looked for ${this.#objectUrl(key)} at ${this.#endpoint})`,
      [{ path: 'id', message: `no snapshot with this id in ${this.#url}` }],
    )
  }

  /** The object a `path` names: a URL inside this store, or a snapshot's name. */
  async #keyOfPath(path: string): Promise<string> {
    if (path.startsWith('s3://')) {
      const root = `s3://${this.#bucket}/${this.#base}`
      if (!path.startsWith(root)) {
        throw new ForbiddenError(`${path} is outside the snapshot store ${this.#url}`, [{ path: 'path', message: `outside ${this.#url}` }])
      }
      const rest = path.slice(root.length).replace(/\/+$/, '')
      if (SHARD_KEY.test(rest)) return `${this.#base}${rest}`
      return this.#key(checkId(rest, 'path'))
    }
    const named = (await this.#entries()).filter((e) => e.name === path && e.error === undefined && e.id !== null)
    const newest = named[named.length - 1]
    if (newest === undefined) {
      throw new NotFoundError(`File not found: no snapshot named '${path}' in ${this.#url} (a path there is s3://${this.#bucket}/${this.#base}<id>)`, [
        { path: 'path', message: `no snapshot of this name in ${this.#url}` },
      ])
    }
    return this.#key(newest.id as string)
  }

  /** Every snapshot in the store, one entry per id, sorted by created_at. */
  async #entries(): Promise<StoreEntry[]> {
    const groups = new Map<string, ShardObject[]>()
    for (const object of await this.#listObjects(this.#base)) {
      const match = SHARD_KEY.exec(object.key.slice(this.#base.length))
      if (match === null || match[1]!.startsWith('_')) continue
      const id = match[1]!
      groups.set(id, [...(groups.get(id) ?? []), { ...object, shard: Number(match[2]), count: Number(match[3]) }])
    }
    const jobs = [...groups].map(
      ([id, objects]) =>
        () =>
          this.#describe(id, objects),
    )
    const entries: StoreEntry[] = []
    await runLimited(jobs, LIST_CONCURRENCY, (entry) => {
      if (entry !== undefined) entries.push(entry)
    })
    return entries.sort(byCreatedAt)
  }

  /** The entry of one snapshot id: this shard's object described (another's when it has none, with `error`). */
  async #describe(id: string, objects: ShardObject[]): Promise<StoreEntry | undefined> {
    const own = this.#key(id)
    const described = (objects.find((o) => o.key === own) ?? objects[0]!).key
    const counts = [...new Set(objects.map((o) => o.count))].sort((a, b) => a - b)
    const count = counts.includes(this.#count) ? this.#count : counts[counts.length - 1]!
    const saved = objects
      .filter((o) => o.count === count)
      .map((o) => o.shard)
      .sort((a, b) => a - b)
    let meta: Record<string, string>
    try {
      meta = (await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: described }))).Metadata ?? {}
    } catch (err) {
      if (isMissing(err)) return undefined
      throw this.#fault(err, 'list snapshots in')
    }
    const schema = Number(meta['mimic-schema-version'])
    const name = meta['mimic-name'] === undefined ? undefined : fromMeta(meta['mimic-name'])
    const entry: StoreEntry = {
      path: this.#objectUrl(described),
      id: meta['mimic-id'] ?? id,
      created_at: meta['mimic-created-at'] ?? null,
      label: fromMeta(meta['mimic-label'] ?? ''),
      notes: fromMeta(meta['mimic-notes'] ?? ''),
      schema_version: Number.isInteger(schema) ? schema : null,
      ...(meta['mimic-state'] === '1' ? { state: true as const } : {}),
      ...(meta['mimic-automatic'] === '1' ? { automatic: true as const } : {}),
      ...(name !== undefined ? { name } : {}),
      size: objects.reduce((sum, o) => sum + o.size, 0),
      epoch: meta['mimic-epoch'] === undefined ? null : Number(meta['mimic-epoch']),
      shards: { count, saved },
    }
    if (meta['mimic-id'] === undefined) entry.error = `${entry.path} was not saved by Mimic (it has no snapshot metadata)`
    else if (described !== own) {
      const fleets = counts.map((n) => `a fleet of ${n}`).join(' and ')
      entry.error = `snapshot '${id}' was saved by ${fleets} (shards ${saved.join(', ')} of ${count}) without shard ${this.#shard} of ${this.#count}, this server`
    }
    return entry
  }

  async #listObjects(prefix: string): Promise<Array<{ key: string; size: number }>> {
    const out: Array<{ key: string; size: number }> = []
    let token: string | undefined
    do {
      let page
      try {
        page = await this.#client.send(new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: prefix, ContinuationToken: token }))
      } catch (err) {
        throw this.#fault(err, 'list snapshots in')
      }
      for (const object of page.Contents ?? []) if (object.Key !== undefined) out.push({ key: object.Key, size: object.Size ?? 0 })
      token = page.IsTruncated ? page.NextContinuationToken : undefined
    } while (token !== undefined && out.length < MAX_LISTED)
    return out
  }

  /**
   * PUT with its conditions; a store that does not implement conditional writes (501) gets the
   * write without them, and the log says so once.
   */
  async #put(input: Omit<PutObjectCommandInput, 'Bucket'>, action: string): Promise<void> {
    const conditional = input.IfMatch !== undefined || input.IfNoneMatch !== undefined
    const plain = { ...input, IfMatch: undefined, IfNoneMatch: undefined }
    const length = typeof input.Body === 'string' ? { ContentLength: Buffer.byteLength(input.Body) } : {}
    try {
      await this.#client.send(new PutObjectCommand({ Bucket: this.#bucket, ...(this.#conditionalWrites ? input : plain), ...length }))
    } catch (err) {
      if (lostRace(err)) throw err
      if (conditional && this.#conditionalWrites && storeStatus(err) === 501) {
        this.#conditionalWrites = false
        this.#logger?.warn(
          { store: this.#url, endpoint: this.#endpoint },
          'the object store does not implement conditional writes: the fence is checked without them',
        )
        return this.#put(input, action)
      }
      throw this.#fault(err, action)
    }
  }

  async #deleteKey(key: string, action: string): Promise<void> {
    try {
      await this.#client.send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: key }))
    } catch (err) {
      if (!isMissing(err)) throw this.#fault(err, action)
    }
  }

  #fault(err: unknown, action: string): ReturnType<typeof storeFault> {
    return storeFault(err, { action, store: this.#url, endpoint: this.#endpoint })
  }

  #key(id: string): string {
    return `${this.#base}${id}/shard-${this.#shard}-of-${this.#count}.json`
  }

  #fence(): string {
    return `${this.#base}_fence/shard-${this.#shard}-of-${this.#count}/`
  }

  #objectUrl(key: string): string {
    return `s3://${this.#bucket}/${key}`
  }

  /** Keeps the in-memory copies within their limits, oldest dropped first (the store still answers for them). */
  #trimMemory(): void {
    const { count, bytes: maxBytes } = this.#memoryLimit
    let bytes = 0
    for (const copy of this.#memory.values()) bytes += copy.text.length
    for (const copy of [...this.#memory.values()]) {
      if (this.#memory.size <= count && bytes <= maxBytes) break
      this.#memory.delete(copy.id)
      bytes -= copy.text.length
    }
  }
}

/**
 * Bucket and prefix of `s3://bucket/prefix` (the prefix without slashes around it; "" for the
 * bucket's root). Anything else is a 422 naming what is wrong.
 *
 * @example
 * parseStoreUrl('s3://mimic/plant-a/') // { bucket: 'mimic', prefix: 'plant-a' }
 */
export function parseStoreUrl(url: string): { bucket: string; prefix: string } {
  const match = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(url)
  const bucket = match?.[1] ?? ''
  if (match === null || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw new ValidationError(
      `Invalid snapshot store ${JSON.stringify(url)}: expected s3://bucket or s3://bucket/prefix, with a bucket name of 3-63 lower-case letters, digits, dots and hyphens`,
    )
  }
  const prefix = (match[2] ?? '').replace(/^\/+|\/+$/g, '')
  if (prefix !== '' && (/[\u0000-\u001f\u007f]/.test(prefix) || prefix.split('/').some((part) => part === '' || part === '.' || part === '..'))) {
    throw new ValidationError(
      `Invalid snapshot store ${JSON.stringify(url)}: the prefix must be path segments without empty, "." or ".." parts or control characters`,
    )
  }
  return { bucket, prefix: prefix }
}

function checkId(id: string, field: string): string {
  if (!ID.test(id)) {
    throw new ValidationError(
      `Invalid snapshot id ${JSON.stringify(id)}: expected letters, digits, '.', '_' and '-' (at most 128, not starting with '.', '_' or '-')`,
      [{ path: field, message: 'not a snapshot id' }],
    )
  }
  return id
}

/** An epoch as a marker's name: 16 digits, so names sort as numbers do. */
function pad(epoch: number): string {
  return String(epoch).padStart(16, '0')
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/** A text as S3 metadata (ASCII): URI-encoded, cut to what the metadata holds (the object keeps it whole). */
function metaText(text: string): string {
  let chars = Array.from(text.replace(LONE_SURROGATE, '\ufffd'))
  let encoded = encodeURIComponent(chars.join(''))
  while (encoded.length > META_TEXT) {
    chars = chars.slice(0, Math.floor(chars.length * 0.9))
    encoded = `${encodeURIComponent(chars.join(''))}%E2%80%A6`
  }
  return encoded
}

function fromMeta(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** Runs `jobs` with at most `limit` at once, handing each result to `done`. */
async function runLimited<T>(jobs: Array<() => Promise<T>>, limit: number, done: (result: T) => void): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < jobs.length) {
      const job = jobs[next++]!
      done(await job())
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, worker))
}
