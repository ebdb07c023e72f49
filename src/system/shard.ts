import { createHash } from 'node:crypto'

/**
 * Shards (docs/scale-out.md): one fleet split over N servers, each started with `--shard I/N`
 * and the same system file. A server keeps exactly the instances whose names hash to its own
 * shard. The hash is rendezvous (highest random weight) hashing: each shard scores a name by
 * `sha256("<shard>:<name>")` and the highest score owns it, so every server decides alone,
 * without talking to the others, and going from N to N+1 shards moves only about 1/(N+1) of the
 * instances (those the new shard wins). Shards count from 1, like a Docker Swarm task slot
 * (`MIMIC_SHARD={{.Task.Slot}}/3`).
 *
 * @example
 * shardOf('meter_0042', 3) // 1, 2 or 3, the same on every machine
 * parseShard('2/3') // { index: 2, count: 3 }
 */

/** A shard of a fleet: `index` from 1 to `count`. */
export interface Shard {
  index: number
  count: number
}

/** Most shards a fleet may be split into. */
export const MAX_SHARDS = 1024

/** The score of `name` on shard `index`: the first 48 bits of sha256("<index>:<name>"). */
function score(index: number, name: string): number {
  return createHash('sha256').update(`${index}:${name}`).digest().readUIntBE(0, 6)
}

/**
 * The shard (1..count) that owns the instance `name`: the one with the highest score; a tie
 * (one in 2^48) goes to the lower index.
 */
export function shardOf(name: string, count: number): number {
  let best = 1
  let bestScore = -1
  for (let index = 1; index <= count; index++) {
    const s = score(index, name)
    if (s > bestScore) {
      best = index
      bestScore = s
    }
  }
  return best
}

/** Whether the server of `shard` keeps the instance `name` (always, when not sharded). */
export function ownsInstance(shard: Shard | undefined, name: string): boolean {
  return shard === undefined || shard.count === 1 || shardOf(name, shard.count) === shard.index
}

/** `"2/3"`: how a shard is written in flags, variables, `/health` and the system document. */
export function shardText(shard: Shard): string {
  return `${shard.index}/${shard.count}`
}

/**
 * Reads `I/N` (blanks around the numbers allowed): the shard, or why it is none.
 *
 * @example
 * parseShard('0/3') // "shards count from 1 (as a Docker Swarm task slot does): expected 1/3 to 3/3, got 0/3"
 */
export function parseShard(text: string): Shard | string {
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text)
  if (m === null) return `expected I/N, shard I of N shards counted from 1 (e.g. 2/3), got ${JSON.stringify(text)}`
  const index = Number(m[1])
  const count = Number(m[2])
  if (count < 1 || count > MAX_SHARDS) return `the number of shards must be from 1 to ${MAX_SHARDS}, got ${count}`
  if (index < 1 || index > count)
    return `shards count from 1 (as a Docker Swarm task slot does): expected 1/${count} to ${count}/${count}, got ${index}/${count}`
  return { index, count }
}
