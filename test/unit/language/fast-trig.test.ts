// The fast sin and cos (src/language/expression/fast-trig.ts) change nothing but speed: on every
// input they give the double-double series' correctly rounded value, as functions and as the
// inline text the code generator writes in their place.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { cos as ddCos, sin as ddSin } from '../../../src/language/expression/double-double.js'
import { cos, inlineTrig, PI128_PARTS, sin } from '../../../src/language/expression/fast-trig.js'
import { generator } from '../../helpers/seeded-random.js'

/** A double spread over [lo, hi) with all 53 bits random. */
function uniform(random: ReturnType<typeof generator>, lo: number, hi: number): number {
  const unit = (random.int(2 ** 26) * 2 ** 27 + random.int(2 ** 27)) / 2 ** 53
  return lo + (hi - lo) * unit
}

/** x * 2**200 as an exact integer (x a double whose last bit is above 2**-200). */
function scaled(x: number): bigint {
  const bits = new DataView(new Float64Array([x]).buffer).getBigUint64(0, true)
  const exponent = Number((bits >> 52n) & 0x7ffn) - 1075
  const mantissa = (bits & 0xfffffffffffffn) | 0x10000000000000n
  const magnitude = exponent + 200 >= 0 ? mantissa << BigInt(exponent + 200) : mantissa >> BigInt(-(exponent + 200))
  return bits >> 63n ? -magnitude : magnitude
}

/** The inline text of fast-trig.ts made into a function of its own, as codegen.ts uses it in an expression. */
function inlined(quarter: 0 | 64): (x: number) => number {
  const constants: unknown[] = []
  const temps: string[] = []
  const text = inlineTrig('x', quarter, {
    temp: () => {
      temps.push(`t${temps.length}`)
      return temps[temps.length - 1] as string
    },
    constant: (value) => `K[${constants.push(value) - 1}]`,
  })
  return new Function('K', `return function (x) { let ${temps.join(', ')}; return ${text} }`)(constants) as (x: number) => number
}
const inlineSin = inlined(0)
const inlineCos = inlined(64)

describe('fast sin and cos', () => {
  it('equal the double-double values on 240,000 inputs: seeded ones across the ranges models use, the table edges, the zeros of sin and cos', () => {
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
    // Near multiples of pi/128 (the table's entries and the halfway points between them, where the
    // reduction's k changes), near the zeros of sin and cos, and whole steps of a timer.
    for (let k = -2000; k <= 2000; k++) for (const d of [0, 1e-12, -1e-12, 1e-7, 2 ** -18, Math.PI / 256, -Math.PI / 256]) inputs.push((k * Math.PI) / 128 + d)
    for (let k = -300; k <= 300; k++) for (const d of [0, 3e-6, -3e-6, 1e-9]) inputs.push((k * Math.PI) / 2 + d)
    for (let t = 0; t < 20_000; t++) inputs.push(t * 0.1, t * 0.05, t)
    inputs.push(0, -0, 1e-8, 2 ** 20, -(2 ** 20), 1e300, Infinity, -Infinity, NaN, Number.MIN_VALUE)
    let differ = 0
    for (const x of inputs) {
      const s = ddSin(x)
      const c = ddCos(x)
      if (!Object.is(sin(x), s) || !Object.is(inlineSin(x), s)) differ++
      if (!Object.is(cos(x), c) || !Object.is(inlineCos(x), c)) differ++
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
      const s = ddSin(x)
      const c = ddCos(x)
      if (!Object.is(sin(x), s) || !Object.is(inlineSin(x), s)) differ++
      if (!Object.is(cos(x), c) || !Object.is(inlineCos(x), c)) differ++
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

  it("splits pi/128 into parts of at most 27 bits that sum to double-double's pi/2 over 64", () => {
    for (const part of PI128_PARTS.slice(0, 3)) {
      const bits = new DataView(new Float64Array([part]).buffer).getBigUint64(0, true)
      assert.equal(bits & 0x3ffffffn, 0n, `${part} has more than 27 significant bits`)
    }
    // The parts against pi/2 as three doubles (1.5707963267948966 + 6.123233995736766e-17 +
    // -1.4973849048591698e-33) over 64, summed exactly: that triple is pi/2 within about 1e-49.
    const triple = [1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33].map((part) => scaled(part / 64))
    const parts = PI128_PARTS.map(scaled)
    const difference = Number(parts.reduce((a, b) => a + b) - triple.reduce((a, b) => a + b)) / 2 ** 200
    assert.ok(Math.abs(difference) < 1e-44, `parts differ from pi/128 by ${difference}`)
  })
})
