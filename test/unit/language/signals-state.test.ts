// The state the stateful signals keep between steps, saved and taken back (snapshots with
// state): a restored noise source goes on with exactly the samples the original gives next —
// its generator's whole state travels, JSON and all — and a restored PID with the same outputs.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PyRandom } from '../../../src/language/expression/index.js'
import { Noise, Pid } from '../../../src/language/model/signals.js'

/** Through JSON, as a snapshot file carries it. */
const viaJson = <T>(value: T): unknown => JSON.parse(JSON.stringify(value))

describe('saved signal state', () => {
  for (const type of ['white', 'pink', 'brownian'] as const) {
    it(`${type} noise restored from JSON gives the very samples the original gives next, at any point of its generator`, () => {
      // 700 samples cross the 624-word regeneration of the twister, and gauss() caches every second value.
      for (const skip of [0, 1, 311, 700]) {
        const original = new Noise({ type, mean: 1, std: 0.3, seed: 99n })
        for (let i = 0; i < skip; i++) original.sample()
        const saved = viaJson(original.saveState())
        const restored = new Noise({ type, mean: 1, std: 0.3, seed: 12345n })
        assert.equal(restored.restoreState(saved, 'noise'), undefined)
        const next = Array.from({ length: 50 }, () => original.sample())
        assert.deepEqual(
          Array.from({ length: 50 }, () => restored.sample()),
          next,
        )
      }
    })
  }

  it('a noise state of the wrong shape is refused with its path and changes nothing', () => {
    const noise = new Noise({ type: 'pink', mean: 0, std: 1, seed: 7n })
    const twin = new Noise({ type: 'pink', mean: 0, std: 1, seed: 7n })
    const good = noise.saveState() as { random: { mt: string; index: number } }
    assert.deepEqual(noise.restoreState({ ...good, random: { ...good.random, mt: 'AAAA' } }, 's'), [
      { path: 's.random', message: 'mt: expected base64 of 624 32-bit words' },
    ])
    assert.deepEqual(noise.restoreState({ ...good, random: { ...good.random, index: 700 } }, 's'), [
      { path: 's.random', message: 'index: expected an integer from 0 to 625' },
    ])
    assert.deepEqual(noise.restoreState({ random: good.random, sum: 'x', b: [1] }, 's'), [
      { path: 's.sum', message: 'expected a finite number, got string "x"' },
      { path: 's.b', message: 'expected a list of 3 finite numbers' },
    ])
    assert.deepEqual(noise.restoreState(null, 's'), [{ path: 's', message: 'expected an object, got null' }])
    assert.deepEqual(
      Array.from({ length: 5 }, () => noise.sample()),
      Array.from({ length: 5 }, () => twin.sample()),
    )
  })

  it('a PID restored from JSON goes on with the same outputs (integral, last error, sample time)', () => {
    const settings = { kp: 0.8, ki: 0.3, kd: 0.1, sampleTime: 0.25, min: -5, max: 5 }
    const original = new Pid(settings)
    let time = 0
    for (let i = 0; i < 7; i++) original.update(10, i * 1.3, (time += 0.1), 0.1)
    const restored = new Pid(settings)
    assert.equal(restored.restoreState(viaJson(original.saveState()), 'pid'), undefined)
    for (let i = 0; i < 20; i++) {
      time += 0.1
      assert.equal(restored.update(10, 5 + Math.sin(i), time, 0.1), original.update(10, 5 + Math.sin(i), time, 0.1))
    }
    assert.deepEqual(restored.restoreState({ integral: 1, previous_error: 'no', last_time: null }, 'pid'), [
      { path: 'pid.previous_error', message: 'expected a finite number or null, got string "no"' },
      { path: 'pid.output', message: 'expected a finite number, got nothing' },
    ])
  })

  it("the random module's generator: getState and setState continue Python's sequence", () => {
    const rng = new PyRandom(42n)
    rng.gauss(0, 1) // leaves a cached second value
    const state = viaJson(rng.getState())
    const copy = new PyRandom(1n)
    assert.equal(copy.setState(state), undefined)
    assert.deepEqual([copy.gauss(0, 1), copy.random(), copy.getrandbits(70)], [rng.gauss(0, 1), rng.random(), rng.getrandbits(70)])
  })
})
