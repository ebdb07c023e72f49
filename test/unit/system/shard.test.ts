import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseConfig } from '../../../src/config.js'
import { ownsInstance, parseShard, shardOf } from '../../../src/system/shard.js'

const names = (n: number, prefix = 'meter_'): string[] => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(4, '0')}`)

describe('shards: rendezvous hashing of instance names', () => {
  it('every name has exactly one owner: shards are disjoint and cover the fleet', () => {
    const fleet = names(3000)
    const held = [1, 2, 3].map((index) => fleet.filter((n) => ownsInstance({ index, count: 3 }, n)))
    assert.equal(held.flat().length, fleet.length)
    assert.deepEqual(new Set(held.flat()).size, fleet.length)
  })

  it('6,000 names over 3 shards are balanced within 10%', () => {
    const counts = [0, 0, 0]
    for (const n of names(6000)) counts[shardOf(n, 3) - 1]!++
    for (const c of counts) assert.ok(Math.abs(c - 2000) <= 200, `counts ${counts.join(', ')}`)
  })

  it('is stable: the same owner every time, and a fourth shard takes about a quarter, moving nothing else', () => {
    const fleet = names(8000, 'dev-')
    assert.deepEqual(
      fleet.slice(0, 50).map((n) => shardOf(n, 3)),
      fleet.slice(0, 50).map((n) => shardOf(n, 3)),
    )
    let moved = 0
    for (const n of fleet) {
      const [before, after] = [shardOf(n, 3), shardOf(n, 4)]
      if (before !== after) {
        moved++
        assert.equal(after, 4, `${n} moved from ${before} to ${after}, not to the new shard`)
      }
    }
    assert.ok(Math.abs(moved / fleet.length - 0.25) < 0.03, `moved ${moved}`)
  })

  it('known owners do not change between releases', () => {
    // Shards started by different versions must agree: the hash is part of the contract.
    assert.deepEqual(
      ['hub', 'spare', 'meter_0000', 'meter_0999'].map((n) => shardOf(n, 3)),
      [2, 3, 2, 3],
    )
    assert.equal(shardOf('anything', 1), 1)
  })

  it('--shard I/N counts from 1', () => {
    assert.deepEqual(parseShard('2/3'), { index: 2, count: 3 })
    assert.deepEqual(parseShard(' 3 / 3 '), { index: 3, count: 3 })
    for (const bad of ['0/3', '4/3', '1/0', '1', 'a/b', '-1/3', '1/2000']) assert.equal(typeof parseShard(bad), 'string', bad)
    assert.match(parseShard('0/3') as string, /count from 1/)
  })

  it('is the setting --shard (MIMIC_SHARD), refused at start-up when wrong', () => {
    assert.deepEqual(parseConfig({}, { MIMIC_SHARD: '2/3' }).shard, { index: 2, count: 3 })
    assert.deepEqual(parseConfig({ shard: '1/2' }, { MIMIC_SHARD: '2/3' }).shard, { index: 1, count: 2 })
    assert.equal(parseConfig({}, {}).shard, undefined)
    assert.throws(() => parseConfig({}, { MIMIC_SHARD: '0/3' }), /--shard \(MIMIC_SHARD\): shards count from 1/)
  })
})
