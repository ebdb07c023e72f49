import { promises as dns } from 'node:dns'
import { isIP } from 'node:net'

/**
 * One shard server to call: its base URL, and the `--shards` entry it came from (the same URL,
 * or a DNS name whose addresses are the shards).
 *
 * @example
 * { url: 'http://10.0.1.7:8080', from: 'http://tasks.mimic:8080' }
 */
export interface ShardTarget {
  url: string
  from: string
}

/**
 * A `--shards` entry that gave no server: not a URL, or a name that does not resolve.
 *
 * @example
 * { entry: 'http://tasks.mimic:8080', error: 'cannot resolve tasks.mimic: getaddrinfo ENOTFOUND tasks.mimic' }
 */
export interface EntryProblem {
  entry: string
  error: string
}

/** What resolves a host name: `dns.promises.lookup(host, { all: true })`'s shape, replaceable in tests. */
export type Lookup = (host: string, options: { all: true }) => Promise<Array<{ address: string; family: number }>>

/**
 * The `--shards` entries (each may hold several, comma-separated, as `MIMIC_SHARDS` does) as one
 * list of entries, blanks dropped.
 *
 * @example
 * shardEntries(['http://a:8000,http://b:8000', ' http://c:8000 ']) // ['http://a:8000', 'http://b:8000', 'http://c:8000']
 */
export function shardEntries(values: readonly string[]): string[] {
  return values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '')
}

/**
 * Turns `--shards` entries into the servers to call. An entry whose host is an IP address is one
 * server. A host name is looked up with `dns.promises.lookup(host, { all: true })`, as Docker
 * Swarm's `tasks.<service>` names one address per running task: each IPv4 address is a shard
 * (IPv6 ones only when the name has no IPv4 address, so `localhost` is one server, not two),
 * reached at the entry's port and path. A name with a single address keeps its name in the URL.
 * The same URL twice is called once.
 *
 * @example
 * await resolveShards(['http://tasks.mimic:8080']) // { targets: [{ url: 'http://10.0.1.7:8080', from: 'http://tasks.mimic:8080' }, ...], problems: [] }
 */
export async function resolveShards(entries: readonly string[], lookup: Lookup = dns.lookup): Promise<{ targets: ShardTarget[]; problems: EntryProblem[] }> {
  // One slot per entry, so that problems come back in the order the entries were given.
  const found: Array<EntryProblem | undefined> = entries.map(() => undefined)
  const resolved = await Promise.all(
    entries.map(async (entry, index): Promise<ShardTarget[]> => {
      const problem = (error: string): ShardTarget[] => {
        found[index] = { entry, error }
        return []
      }
      // A bare `host` or `host:port` (as `--shards tasks.mimic`) is http://, at Mimic's default port 8000 without one.
      const full = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(entry) ? entry : `http://${/:\d+$/.test(entry) ? entry : `${entry}:8000`}`
      let url: URL
      try {
        url = new URL(full)
      } catch {
        return problem(`not a URL: give a shard's base address, e.g. http://10.0.0.5:8000 or http://tasks.mimic:8080`)
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        return problem('not an http:// or https:// address')
      }
      const base = full.replace(/\/+$/, '')
      const host = url.hostname.replace(/^\[|\]$/g, '')
      if (isIP(host) !== 0) return [{ url: base, from: entry }]
      let addresses: Array<{ address: string; family: number }>
      try {
        addresses = await lookup(host, { all: true })
      } catch (err) {
        return problem(`cannot resolve ${host}: ${(err as Error).message}`)
      }
      const v4 = addresses.filter((a) => a.family === 4)
      const chosen = [...new Set((v4.length ? v4 : addresses).map((a) => a.address))]
      if (chosen.length === 0) {
        return problem(`${host} has no address`)
      }
      if (chosen.length === 1) return [{ url: base, from: entry }]
      return chosen.map((address) => {
        const one = new URL(url.href)
        one.hostname = address.includes(':') ? `[${address}]` : address
        return { url: one.href.replace(/\/+$/, ''), from: entry }
      })
    }),
  )
  const seen = new Set<string>()
  const targets: ShardTarget[] = []
  for (const target of resolved.flat()) {
    if (seen.has(target.url)) continue
    seen.add(target.url)
    targets.push(target)
  }
  return { targets, problems: found.filter((p): p is EntryProblem => p !== undefined) }
}
