import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { nameIndex, SharedNameMap } from '../../../src/tree/shared-names.js'

/** A seeded generator (mulberry32), so that a failure names a sequence that can be run again. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const state = <T>(map: Iterable<[string, T]> & { size: number; values(): Iterable<T> }) => ({
  entries: [...map],
  values: [...map.values()],
  size: map.size,
})

describe('SharedNameMap', () => {
  const index = nameIndex(['a', 'b', 'c', 'd'])

  it('holds children set in the index order like a Map, in the shared positions', () => {
    const map = new SharedNameMap<number>(index)
    map.set('a', 1).set('b', 2)
    assert.equal(map.size, 2)
    assert.equal(map.get('b'), 2)
    assert.equal(map.get('c'), undefined)
    assert.equal(map.has('c'), false, 'a name of the index not set yet is not held')
    assert.deepEqual(
      [...map],
      [
        ['a', 1],
        ['b', 2],
      ],
    )
    map.set('a', 10)
    assert.deepEqual([...map.values()], [10, 2], 'replacing keeps the place, as a Map does')
  })

  it('two copies of one index hold their own children', () => {
    const one = new SharedNameMap<string>(index)
    const two = new SharedNameMap<string>(index)
    for (const name of ['a', 'b', 'c', 'd']) {
      one.set(name, `one.${name}`)
      two.set(name, `two.${name}`)
    }
    two.delete('b')
    two.set('x', 'two.x')
    assert.deepEqual([...one.values()], ['one.a', 'one.b', 'one.c', 'one.d'])
    assert.deepEqual(
      [...two],
      [
        ['a', 'two.a'],
        ['c', 'two.c'],
        ['d', 'two.d'],
        ['x', 'two.x'],
      ],
    )
  })

  it('gives what a Map gives over random sequences of set, delete, clear and reads', () => {
    const names = ['a', 'b', 'c', 'd', 'e', 'x']
    for (let seed = 1; seed <= 300; seed++) {
      const next = random(seed)
      const map = new SharedNameMap<number>(index)
      const model = new Map<string, number>()
      const done: string[] = []
      for (let step = 0; step < 40; step++) {
        const name = names[Math.floor(next() * names.length)]!
        const roll = next()
        // Mostly in-order sets, as an instance's construction makes them, then anything.
        const op = roll < 0.5 ? 'set-next' : roll < 0.75 ? 'set' : roll < 0.95 ? 'delete' : 'clear'
        if (op === 'set-next') {
          const first = ['a', 'b', 'c', 'd'].find((n) => !model.has(n)) ?? name
          map.set(first, step)
          model.set(first, step)
          done.push(`set ${first}`)
        } else if (op === 'set') {
          map.set(name, step)
          model.set(name, step)
          done.push(`set ${name}`)
        } else if (op === 'delete') {
          assert.equal(map.delete(name), model.delete(name), `seed ${seed}: delete ${name} after ${done.join(', ')}`)
          done.push(`delete ${name}`)
        } else {
          map.clear()
          model.clear()
          done.push('clear')
        }
        const where = `seed ${seed} after ${done.join(', ')}`
        assert.deepEqual(state(map), state(model), where)
        for (const n of names) {
          assert.equal(map.get(n), model.get(n), `${where}: get ${n}`)
          assert.equal(map.has(n), model.has(n), `${where}: has ${n}`)
        }
      }
    }
  })
})
