import { randomBytes } from 'node:crypto'
import { connect, MimicApiError, type MimicClient, type SnapshotList } from '../client/index.js'
import type { EntryProblem, ShardTarget } from './targets.js'

/**
 * What one shard server answered (or why it did not): its health, which shard of how many it
 * is, its instances, system state and steps.
 *
 * @example
 * { url: 'http://10.0.1.7:8080', from: 'http://tasks.mimic:8080', ok: true, health: 'ok', shard: { index: 2, count: 3 }, instances: 2040, state: 'RUNNING', steps: 812 }
 */
export interface ShardStatus {
  url: string
  from: string
  ok: boolean
  /** Why the server could not be used: unreachable, refused the key, answered an error. */
  error?: string
  health?: string
  /** `--shard I/N` of the server; a server without `--shard` holds the whole fleet: 1 of 1. */
  shard?: { index: number; count: number }
  instances?: number
  state?: string
  steps?: number
}

/**
 * Whether the servers' `I/N` cover shards 1..N exactly once.
 *
 * @example
 * { ok: false, count: 3, missing: [2], duplicated: [], mismatched: [] }
 */
export interface Coverage {
  ok: boolean
  /** N: the fleet size most servers report (none when no server answered). */
  count: number | undefined
  missing: number[]
  duplicated: Array<{ shard: number; urls: string[] }>
  /** Servers that report another fleet size than `count`. */
  mismatched: Array<{ url: string; shard: string }>
}

/**
 * One fleet command's result per shard and over the fleet. `ok` is the exit status: every shard
 * answered, the shards cover 1..N once, and the command's work succeeded on every shard.
 */
export interface FleetReport {
  ok: boolean
  command: string
  /** `--shards` entries that gave no server (bad URL, a name that does not resolve). */
  entries: EntryProblem[]
  shards: ShardStatus[]
  coverage: Coverage
  [key: string]: unknown
}

/** How to reach the shards. */
export interface FleetOptions {
  productKey?: string | undefined
  /** Per call, milliseconds. */
  timeoutMs: number
}

interface Shard {
  target: ShardTarget
  client: MimicClient
  status: ShardStatus
}

/** Lowest first: the order the report is printed in. */
function byShard(a: ShardStatus, b: ShardStatus): number {
  return (a.shard?.index ?? Number.MAX_SAFE_INTEGER) - (b.shard?.index ?? Number.MAX_SAFE_INTEGER) || a.url.localeCompare(b.url)
}

/** An error of a call to a shard as one line naming the server. */
export function callError(url: string, err: unknown): string {
  if (err instanceof MimicApiError) return err.status ? `${url}: ${err.message} (HTTP ${err.status})` : `${url}: ${err.message}`
  return `${url}: ${(err as Error)?.message ?? String(err)}`
}

/** Reads every shard's health and system document at once; unreachable ones are reported, not thrown. */
async function probe(targets: readonly ShardTarget[], options: FleetOptions): Promise<Shard[]> {
  const shards = await Promise.all(
    targets.map(async (target): Promise<Shard> => {
      const client = connect({ address: target.url, productKey: options.productKey, timeoutMs: options.timeoutMs })
      const status: ShardStatus = { url: target.url, from: target.from, ok: false }
      try {
        const health = await client.health()
        status.health = health.status
        status.shard = parseShardText(health.shard)
        if (typeof health.instances === 'number') status.instances = health.instances
        // The key is needed from here on: /health answers without one.
        const root = await client.get()
        if (typeof root.state === 'string') status.state = root.state
        if (typeof root.steps === 'number') status.steps = root.steps
        status.ok = health.status === 'ok'
        if (!status.ok) status.error = `${target.url}: health is ${JSON.stringify(health.status)}, not ok`
      } catch (err) {
        status.error = callError(target.url, err)
      }
      return { target, client, status }
    }),
  )
  return shards.sort((a, b) => byShard(a.status, b.status))
}

/** `"2/3"` as {index, count}; a server without `--shard` is the whole fleet. */
function parseShardText(text: unknown): { index: number; count: number } {
  const m = typeof text === 'string' ? /^(\d+)\/(\d+)$/.exec(text) : null
  return m ? { index: Number(m[1]), count: Number(m[2]) } : { index: 1, count: 1 }
}

/**
 * Checks that the answering shards' `I/N` cover 1..N exactly once: N is the size most of them
 * report; a server with another N is listed as mismatched, a number no server has as missing,
 * one that two servers have as duplicated.
 *
 * @example
 * coverage([{ url: 'a', shard: { index: 1, count: 2 }, ... }]) // { ok: false, count: 2, missing: [2], ... }
 */
export function coverage(statuses: readonly ShardStatus[]): Coverage {
  const known = statuses.filter((s) => s.shard !== undefined)
  const sizes = new Map<number, number>()
  for (const s of known) sizes.set(s.shard!.count, (sizes.get(s.shard!.count) ?? 0) + 1)
  const count = [...sizes.entries()].sort((a, b) => b[1] - a[1] || b[0] - a[0])[0]?.[0]
  const holders = new Map<number, string[]>()
  const mismatched: Coverage['mismatched'] = []
  for (const s of known) {
    if (s.shard!.count !== count) mismatched.push({ url: s.url, shard: `${s.shard!.index}/${s.shard!.count}` })
    else holders.set(s.shard!.index, [...(holders.get(s.shard!.index) ?? []), s.url])
  }
  const missing: number[] = []
  for (let i = 1; i <= (count ?? 0); i++) if (!holders.has(i)) missing.push(i)
  const duplicated = [...holders.entries()].filter(([, urls]) => urls.length > 1).map(([shard, urls]) => ({ shard, urls }))
  return { ok: count !== undefined && !missing.length && !duplicated.length && !mismatched.length, count, missing, duplicated, mismatched }
}

function report(command: string, entries: EntryProblem[], shards: Shard[], extra: Record<string, unknown> = {}, workOk = true): FleetReport {
  const statuses = shards.map((s) => s.status)
  const cover = coverage(statuses)
  const ok = workOk && !entries.length && statuses.every((s) => s.ok) && cover.ok
  return { ok, command, entries, shards: statuses, coverage: cover, ...extra }
}

/** Sums of the answering shards. */
function totals(statuses: readonly ShardStatus[]): Record<string, unknown> {
  const states: Record<string, number> = {}
  for (const s of statuses) if (s.state !== undefined) states[s.state] = (states[s.state] ?? 0) + 1
  return {
    shards: statuses.length,
    answering: statuses.filter((s) => s.ok).length,
    instances: statuses.reduce((sum, s) => sum + (s.instances ?? 0), 0),
    states,
  }
}

/**
 * `mimic fleet status`: every shard's health, I/N, instances, state and steps, and the total.
 *
 * @example
 * const r = await fleetStatus(targets, [], { productKey, timeoutMs: 30_000 })
 */
export async function fleetStatus(targets: readonly ShardTarget[], entries: EntryProblem[], options: FleetOptions): Promise<FleetReport> {
  const shards = await probe(targets, options)
  return report('status', entries, shards, { total: totals(shards.map((s) => s.status)) })
}

/** Per shard: what the work answered, or the error. */
export interface ShardOutcome {
  url: string
  shard?: string
  ok: boolean
  error?: string
  [key: string]: unknown
}

function shardText(s: ShardStatus): string | undefined {
  return s.shard ? `${s.shard.index}/${s.shard.count}` : undefined
}

async function onEach(shards: readonly Shard[], work: (s: Shard) => Promise<Record<string, unknown>>): Promise<ShardOutcome[]> {
  return Promise.all(
    shards.map(async (s): Promise<ShardOutcome> => {
      const base = { url: s.status.url, ...(shardText(s.status) ? { shard: shardText(s.status) } : {}) }
      try {
        return { ...base, ok: true, ...(await work(s)) }
      } catch (err) {
        return { ...base, ok: false, error: callError(s.status.url, err) }
      }
    }),
  )
}

/**
 * `mimic fleet run`: starts the system (background stepping) on every shard that answers; the
 * others are reported.
 *
 * @example
 * await fleetRun(targets, [], options)
 */
export async function fleetRun(targets: readonly ShardTarget[], entries: EntryProblem[], options: FleetOptions): Promise<FleetReport> {
  const shards = await probe(targets, options)
  const results = await onEach(
    shards.filter((s) => s.status.ok),
    async (s) => {
      await s.client.start()
      return { started: true, state: await s.client.state() }
    },
  )
  return report(
    'run',
    entries,
    shards,
    { results },
    results.every((r) => r.ok),
  )
}

/** A fleet snapshot id: `fleet-<UTC time>-<4 hex>`, sortable by time. */
export function newFleetSnapshotId(now = new Date()): string {
  const time = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')
  return `fleet-${time}-${randomBytes(2).toString('hex')}`
}

/** What `fleet save` writes besides the id. */
export interface FleetSaveOptions {
  id?: string | undefined
  label?: string | undefined
  notes?: string | undefined
  includeState?: boolean | undefined
}

/**
 * `mimic fleet save`: one snapshot id saved on every shard (the API's `save` with `id`; with the
 * S3 store, one id with one object per shard). All or nothing: nothing is saved unless every
 * shard answers and the shards cover 1..N; when a shard's save fails, the shards that did save
 * delete theirs again, so no partial fleet snapshot is left under the id.
 *
 * @example
 * const r = await fleetSave(targets, [], options, { label: 'before upgrade', includeState: true })
 */
export async function fleetSave(targets: readonly ShardTarget[], entries: EntryProblem[], options: FleetOptions, save: FleetSaveOptions): Promise<FleetReport> {
  const id = save.id ?? newFleetSnapshotId()
  const shards = await probe(targets, options)
  const before = report('save', entries, shards, { id })
  if (!before.ok) return { ...before, saved: false, reason: 'not every shard of the fleet answered: nothing was saved' }
  const kwargs = {
    id,
    ...(save.label !== undefined ? { label: save.label } : {}),
    ...(save.notes !== undefined ? { notes: save.notes } : {}),
    ...(save.includeState ? { include_state: true } : {}),
  }
  const results = await onEach(shards, async (s) => {
    const r = await s.client.snapshots.node.call<Record<string, unknown>>('save', kwargs)
    return { persisted_path: r.persisted_path, created_at: r.created_at, ...(r.state ? { state: true } : {}) }
  })
  if (results.every((r) => r.ok)) return { ...report('save', entries, shards, { id, results }), saved: true }
  // Undo the saves that went through. With the object store one delete removes every shard's
  // object of the id; the other shards then find nothing to delete, which is what was wanted.
  for (const r of results.filter((x) => x.ok)) {
    const shard = shards.find((s) => s.status.url === r.url)!
    try {
      await shard.client.snapshots.delete({ id })
      r.rolled_back = true
    } catch (err) {
      if (err instanceof MimicApiError && err.status === 404) r.rolled_back = true
      else r.rollback_error = callError(r.url, err)
    }
  }
  return { ...report('save', entries, shards, { id, results }, false), saved: false, reason: 'a shard could not save: the others deleted theirs' }
}

/** The snapshot ids a shard can load: in memory, and stored ones without an `error`. */
function usableIds(list: SnapshotList): Map<string, { created_at: string | null; label: string }> {
  const ids = new Map<string, { created_at: string | null; label: string }>()
  for (const e of list.in_memory) ids.set(e.id, { created_at: e.created_at, label: e.label })
  for (const e of list.files as Array<{ id: string | null; created_at: string | null; label: string; error?: string }>) {
    if (e.id !== null && e.error === undefined && !ids.has(e.id)) ids.set(e.id, { created_at: e.created_at, label: e.label })
  }
  return ids
}

interface Listed {
  shards: Shard[]
  lists: Map<string, Map<string, { created_at: string | null; label: string }>>
  errors: Map<string, string>
}

async function listAll(shards: Shard[]): Promise<Listed> {
  const lists = new Map<string, Map<string, { created_at: string | null; label: string }>>()
  const errors = new Map<string, string>()
  await Promise.all(
    shards
      .filter((s) => s.status.ok)
      .map(async (s) => {
        try {
          lists.set(s.status.url, usableIds(await s.client.snapshots.list()))
        } catch (err) {
          errors.set(s.status.url, callError(s.status.url, err))
        }
      }),
  )
  return { shards, lists, errors }
}

/** One snapshot id over the fleet: which shards have it and which lack it. */
export interface FleetSnapshot {
  id: string
  created_at: string | null
  label: string
  shards: string[]
  missing: string[]
}

function snapshotsOf(listed: Listed): FleetSnapshot[] {
  const name = (s: Shard): string => shardText(s.status) ?? s.status.url
  const listedShards = listed.shards.filter((s) => listed.lists.has(s.status.url))
  const all = new Map<string, FleetSnapshot>()
  for (const s of listedShards) {
    for (const [id, info] of listed.lists.get(s.status.url)!) {
      const entry = all.get(id) ?? { id, created_at: info.created_at, label: info.label, shards: [], missing: [] }
      entry.shards.push(name(s))
      if (entry.created_at === null || (info.created_at !== null && info.created_at < entry.created_at)) entry.created_at = info.created_at
      all.set(id, entry)
    }
  }
  for (const entry of all.values()) entry.missing = listedShards.map(name).filter((n) => !entry.shards.includes(n))
  return [...all.values()].sort((a, b) => (a.created_at ?? '').localeCompare(b.created_at ?? '') || a.id.localeCompare(b.id))
}

/**
 * `mimic fleet list`: the snapshots every shard has, and those some shards lack (which).
 *
 * @example
 * const { common, partial } = await fleetList(targets, [], options)
 */
export async function fleetList(targets: readonly ShardTarget[], entries: EntryProblem[], options: FleetOptions): Promise<FleetReport> {
  const listed = await listAll(await probe(targets, options))
  const snapshots = snapshotsOf(listed)
  const listErrors = [...listed.errors.values()]
  return report(
    'list',
    entries,
    listed.shards,
    { common: snapshots.filter((s) => !s.missing.length), partial: snapshots.filter((s) => s.missing.length), list_errors: listErrors },
    !listErrors.length,
  )
}

/**
 * `mimic fleet load ID`: loads the snapshot on every shard. Nothing is loaded unless every shard
 * answers, the shards cover 1..N and every one of them has the id; the report says which lack it.
 *
 * @example
 * await fleetLoad(targets, [], options, 'fleet-20260101T120000Z-3f0c')
 */
export async function fleetLoad(targets: readonly ShardTarget[], entries: EntryProblem[], options: FleetOptions, id: string): Promise<FleetReport> {
  const shards = await probe(targets, options)
  const before = report('load', entries, shards, { id })
  if (!before.ok) return { ...before, loaded: false, reason: 'not every shard of the fleet answered: nothing was loaded' }
  const listed = await listAll(shards)
  const lacking = shards
    .filter((s) => !listed.lists.get(s.status.url)?.has(id))
    .map((s) => listed.errors.get(s.status.url) ?? `${shardText(s.status)} (${s.status.url})`)
  if (lacking.length)
    return { ...report('load', entries, shards, { id, lacking }, false), loaded: false, reason: `snapshot '${id}' is not on every shard: nothing was loaded` }
  const results = await onEach(shards, async (s) => {
    const r = await s.client.snapshots.load({ id })
    return { instances: r.instances, ...(r.state ? { state: true } : {}) }
  })
  const ok = results.every((r) => r.ok)
  return { ...report('load', entries, shards, { id, results }, ok), loaded: ok }
}
