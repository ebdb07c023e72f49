// The fast sin and cos (src/language/expression/fast-trig.ts) change nothing but speed: on every
// input they give the double-double series' correctly rounded value.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { cos as ddCos, sin as ddSin } from '../../../src/language/expression/double-double.js'
import { cos, PIO2_PARTS, sin } from '../../../src/language/expression/fast-trig.js'
import { generator } from '../../helpers/seeded-random.js'

/** A double spread over [lo, hi) with all 53 bits random. */
function uniform(random: ReturnType<typeof generator>, lo: number, hi: number): number {
  const unit = (random.int(2 ** 26) * 2 ** 27 + random.int(2 ** 27)) / 2 ** 53
  return lo + (hi - lo) * unit
}

describe('fast sin and cos', () => {
  it('equal the double-double values on 300,000 seeded inputs across the ranges models use, and at the edges', () => {
    const random = generator(20261124)
    const ranges: Array<[number, number]> = [
      [-1, 1],
      [-7, 7],
      [-100, 100],
      [-1e4, 1e4],
      [-(2 ** 20), 2 ** 20],
      [1e-9, 1e-3],
    ]
    const inputs: number[] = []
    for (const [lo, hi] of ranges) for (let i = 0; i < 25_000; i++) inputs.push(uniform(random, lo, hi))
    // Near multiples of pi/4 (the table's and the quadrants' edges) and whole steps of a timer.
    for (let k = -200; k <= 200; k++) for (const d of [0, 1e-12, -1e-12, 1e-7]) inputs.push((k * Math.PI) / 4 + d)
    for (let t = 0; t < 20_000; t++) inputs.push(t * 0.1, t * 0.05, t)
    inputs.push(0, -0, 1e-8, 2 ** 20, -(2 ** 20), 1e300, Infinity, -Infinity, NaN, Number.MIN_VALUE)
    let differ = 0
    for (const x of inputs) {
      if (!Object.is(sin(x), ddSin(x))) differ++
      if (!Object.is(cos(x), ddCos(x))) differ++
    }
    assert.equal(differ, 0, `${differ} of ${2 * inputs.length} results differ`)
  })

  it('equal the double-double values on 4 million more seeded inputs (each with all 53 bits random) and on every step of 10 Hz and 1 Hz timers', () => {
    // The fast path hands its result back through an array rather than as a returned double
    // (fast-trig.ts): this checks, on many more inputs than the test above, that it still gives
    // the correctly rounded value everywhere, including where it defers to the double-double series.
    const random = generator(20261129)
    const ranges: Array<[number, number]> = [
      [-4, 4],
      [-50, 50],
      [-2000, 2000],
      [-(2 ** 20), 2 ** 20],
    ]
    let differ = 0
    let count = 0
    const check = (x: number): void => {
      count += 2
      if (!Object.is(sin(x), ddSin(x))) differ++
      if (!Object.is(cos(x), ddCos(x))) differ++
    }
    for (const [lo, hi] of ranges) for (let i = 0; i < 1_000_000; i++) check(uniform(random, lo, hi))
    // What benchmark 7's meters compute: t * 0.1 (+ phase), t * 0.05 and t, t a whole number of steps.
    for (let step = 0; step < 200_000; step++) {
      const t = step * 0.1
      check(t * 0.1)
      check(t * 0.1 + 2.0944)
      check(t * 0.1 + 4.1888)
      check(t * 0.05)
      check(t)
      check(step)
    }
    assert.equal(differ, 0, `${differ} of ${count} results differ`)
  })

  it("splits pi/2 into parts of at most 33 bits that sum to double-double's pi/2", () => {
    for (const part of PIO2_PARTS.slice(0, 3)) {
      const bits = new DataView(new Float64Array([part]).buffer).getBigUint64(0, true)
      assert.equal(bits & 0xfffffn, 0n, `${part} has more than 33 significant bits`)
    }
    // The parts against pi/2 as three doubles (1.5707963267948966 + 6.123233995736766e-17 + ...).
    const hi = 1.5707963267948966
    const lo = 6.123233995736766e-17
    const sum = PIO2_PARTS[0] - hi + PIO2_PARTS[1] - lo + PIO2_PARTS[2] + PIO2_PARTS[3]
    assert.ok(Math.abs(sum) < 1e-31, `parts differ from pi/2 by ${sum}`)
  })
})
