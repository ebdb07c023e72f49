import { ValidationError } from '../errors.js'
import { fleetList, fleetLoad, fleetRun, fleetSave, fleetStatus, type FleetReport, type FleetSnapshot, type ShardOutcome, type ShardStatus } from './fleet.js'
import { resolveShards, shardEntries, type Lookup } from './targets.js'

/**
 * The flags every `mimic fleet` command takes.
 *
 * @example
 * { shards: ['http://tasks.mimic:8080'], productKey: 'k', timeout: 30, json: false }
 */
export interface FleetFlags {
  shards?: string[] | undefined
  productKey?: string | undefined
  key?: string | undefined
  timeout?: number | undefined
  json?: boolean | undefined
  id?: string | undefined
  label?: string | undefined
  notes?: string | undefined
  includeState?: boolean | undefined
}

/** The commands of `mimic fleet`. */
export type FleetVerb = 'status' | 'run' | 'save' | 'load' | 'list'

/**
 * Runs one `mimic fleet` command: resolves the shards (`--shards`, else `MIMIC_SHARDS`), calls
 * every one at once, prints the report (text, or JSON with `--json`) and answers whether all
 * went well — the caller makes that the exit status. Problems go to stderr, one line each,
 * naming the server.
 *
 * @example
 * process.exitCode = (await runFleetCommand('status', { shards: ['http://127.0.0.1:8001'] })) ? 0 : 1
 */
export async function runFleetCommand(verb: FleetVerb, flags: FleetFlags, args: { id?: string } = {}, lookup?: Lookup): Promise<boolean> {
  const given = flags.shards?.length ? flags.shards : (process.env.MIMIC_SHARDS ?? '').split(',')
  const entries = shardEntries(given)
  if (!entries.length) {
    throw new ValidationError('no shards given: pass --shards URL... (or a DNS name whose addresses are the shards) or set MIMIC_SHARDS')
  }
  const { targets, problems } = await resolveShards(entries, lookup)
  const options = { productKey: flags.key ?? flags.productKey, timeoutMs: (flags.timeout ?? 30) * 1000 }
  let result: FleetReport
  if (verb === 'status') result = await fleetStatus(targets, problems, options)
  else if (verb === 'run') result = await fleetRun(targets, problems, options)
  else if (verb === 'save') result = await fleetSave(targets, problems, options, flags)
  else if (verb === 'list') result = await fleetList(targets, problems, options)
  else result = await fleetLoad(targets, problems, options, args.id ?? '')
  if (flags.json) console.log(JSON.stringify(result, null, 2))
  else printReport(result)
  return result.ok
}

function pad(text: string, width: number): string {
  return text.padEnd(width)
}

function shardColumn(s: ShardStatus): string {
  return s.shard ? `${s.shard.index}/${s.shard.count}` : '?'
}

/** The report as text: a table of shards, the command's outcome, then every problem on stderr. */
function printReport(r: FleetReport): void {
  const shards = r.shards
  const urlWidth = Math.max(3, ...shards.map((s) => s.url.length))
  if (r.command === 'status') {
    console.log(`${pad('SHARD', 6)} ${pad('URL', urlWidth)} ${pad('HEALTH', 11)} ${pad('INSTANCES', 9)} ${pad('STATE', 12)} STEPS`)
    for (const s of shards) {
      const health = s.ok ? (s.health ?? '') : s.health ? s.health : 'unreachable'
      console.log(
        `${pad(shardColumn(s), 6)} ${pad(s.url, urlWidth)} ${pad(health, 11)} ${pad(String(s.instances ?? '-'), 9)} ${pad(s.state ?? '-', 12)} ${s.steps ?? '-'}`,
      )
    }
    const total = r.total as { shards: number; answering: number; instances: number; states: Record<string, number> }
    const states = Object.entries(total.states)
      .map(([state, n]) => `${n} ${state}`)
      .join(', ')
    const of = r.coverage.count === undefined ? '' : ` of ${r.coverage.count}`
    console.log(`total  ${total.answering}${of} shards answering, ${total.instances} instances${states ? `, ${states}` : ''}`)
  } else if (r.command === 'list') {
    const common = r.common as FleetSnapshot[]
    const partial = r.partial as FleetSnapshot[]
    if (!common.length && !partial.length) console.log('(no snapshots)')
    for (const s of common) console.log(`${pad(s.id, 40)} ${pad(s.created_at ?? '', 24)} on every shard${s.label ? `  ${s.label}` : ''}`)
    for (const s of partial) {
      console.log(
        `${pad(s.id, 40)} ${pad(s.created_at ?? '', 24)} only on ${s.shards.join(', ')}; missing on ${s.missing.join(', ')}${s.label ? `  ${s.label}` : ''}`,
      )
    }
  } else {
    const results = (r.results as ShardOutcome[] | undefined) ?? []
    for (const o of results.sort((a, b) => (a.shard ?? '').localeCompare(b.shard ?? '', undefined, { numeric: true }))) {
      const what = o.ok ? outcomeText(r.command, o) : `failed: ${o.error}`
      console.log(`${pad(o.shard ?? '?', 6)} ${pad(o.url, urlWidth)} ${what}`)
    }
    if (r.command === 'save')
      console.log(r.saved ? `saved fleet snapshot ${String(r.id)} on ${results.length} shards` : `fleet snapshot ${String(r.id)} not saved`)
    if (r.command === 'load')
      console.log(r.loaded ? `loaded fleet snapshot ${String(r.id)} on ${results.length} shards` : `fleet snapshot ${String(r.id)} not loaded`)
    if (r.command === 'run') console.log(`started ${results.filter((o) => o.ok).length} of ${shards.length} shards`)
  }
  for (const line of problems(r)) console.error(`error: ${line}`)
}

function outcomeText(command: string, o: ShardOutcome): string {
  if (command === 'run') return `started (${String(o.state)})`
  if (command === 'save') return `saved ${String(o.persisted_path || '(in memory)')}`
  if (command === 'load') return `loaded, ${String(o.instances)} instances${o.state ? ' with state' : ''}`
  return 'ok'
}

/**
 * Every problem of a report as one line: entries that gave no server, shards that did not
 * answer, shard numbers missing, doubled or of another fleet size, and the command's own.
 *
 * @example
 * problems(report) // ['http://127.0.0.1:8002: fetch failed ...', 'shard 2 of 3 is missing: no server answered as 2/3']
 */
export function problems(r: FleetReport): string[] {
  const out: string[] = []
  for (const e of r.entries) out.push(`${e.entry}: ${e.error}`)
  for (const s of r.shards) if (!s.ok && s.error) out.push(s.error)
  const c = r.coverage
  for (const i of c.missing) out.push(`shard ${i} of ${c.count} is missing: no server answered as ${i}/${c.count}`)
  for (const d of c.duplicated) out.push(`shard ${d.shard} of ${c.count} is answered by ${d.urls.length} servers: ${d.urls.join(', ')}`)
  for (const m of c.mismatched) out.push(`${m.url} is shard ${m.shard}, of another fleet size than ${c.count}`)
  if (c.count === undefined && r.shards.length) out.push('no shard answered')
  for (const e of (r.list_errors as string[] | undefined) ?? []) out.push(e)
  if (Array.isArray(r.lacking)) for (const l of r.lacking as string[]) out.push(`snapshot '${String(r.id)}' is not on ${l}`)
  for (const o of (r.results as ShardOutcome[] | undefined) ?? []) {
    if (o.rollback_error) out.push(`${String(o.rollback_error)} (its part of the snapshot is left)`)
  }
  if (typeof r.reason === 'string') out.push(r.reason)
  return out
}
