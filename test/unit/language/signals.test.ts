// The stateful signals of the model language (src/language/model/signals.ts) over many samples:
// noise statistics with a seed, and the controller and shapes at their edges.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { interpolator, Noise, Pid, rampValue, sawValue, textSeed } from '../../../src/language/model/signals.js'

function stats(xs: number[]): { mean: number; std: number; lag1: number } {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length
  const variance = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length
  let cov = 0
  for (let i = 1; i < xs.length; i++) cov += ((xs[i] as number) - mean) * ((xs[i - 1] as number) - mean)
  return { mean, std: Math.sqrt(variance), lag1: cov / (xs.length - 1) / variance }
}

const N = 10_000

describe('noise', () => {
  it('white: mean and spread as asked over 10,000 samples, uncorrelated, the same for the same seed', () => {
    const noise = new Noise({ type: 'white', mean: 2, std: 0.5, seed: 1234n })
    const xs = Array.from({ length: N }, () => noise.sample())
    const s = stats(xs)
    assert.ok(Math.abs(s.mean - 2) < 0.02, `mean ${s.mean}`)
    assert.ok(Math.abs(s.std - 0.5) < 0.02, `std ${s.std}`)
    assert.ok(Math.abs(s.lag1) < 0.05, `lag-1 correlation ${s.lag1}`)
    const again = new Noise({ type: 'white', mean: 2, std: 0.5, seed: 1234n })
    assert.deepEqual(
      Array.from({ length: 10 }, () => again.sample()),
      xs.slice(0, 10),
    )
    noise.reset()
    assert.equal(noise.sample(), xs[0])
  })

  it('pink: the asked spread, and strongly correlated from one sample to the next', () => {
    const noise = new Noise({ type: 'pink', mean: 0, std: 1, seed: 99n })
    const s = stats(Array.from({ length: 100_000 }, () => noise.sample()))
    assert.ok(Math.abs(s.mean) < 0.1, `mean ${s.mean}`)
    assert.ok(s.std > 0.85 && s.std < 1.15, `std ${s.std}`)
    assert.ok(s.lag1 > 0.5, `lag-1 correlation ${s.lag1}`)
  })

  it('brownian: its steps are the white draws', () => {
    const noise = new Noise({ type: 'brownian', mean: 0, std: 0.1, seed: 5n })
    const xs = Array.from({ length: N }, () => noise.sample())
    const steps = xs.slice(1).map((x, i) => x - (xs[i] as number))
    const s = stats(steps)
    assert.ok(Math.abs(s.std - 0.1) < 0.005, `step std ${s.std}`)
    assert.ok(Math.abs(s.lag1) < 0.05)
  })

  it('a text seed is stable and differs between names', () => {
    assert.equal(textSeed('meter_1/noise_3'), textSeed('meter_1/noise_3'))
    assert.notEqual(textSeed('meter_1/noise_3'), textSeed('meter_2/noise_3'))
  })
})

describe('shapes and the controller', () => {
  it('ramp before, along and after; saw at negative times wraps the same way as Python', () => {
    const ramp = { start: 5, stop: 1, duration: 4, type: 'linear' as const, overshoot: 0, stabilization: 0 }
    assert.equal(rampValue(ramp, -1), 5)
    assert.equal(rampValue(ramp, 1), 4)
    assert.equal(rampValue(ramp, 9), 1)
    // Python: (-0.5 % 2) / 2 = 0.75
    assert.equal(sawValue({ start: 0, stop: 8, period: 2, type: 'regular' }, -0.5), 6)
  })

  it('interpolation through one point is that point; step holds the first value before the start', () => {
    assert.equal(interpolator({ points: [[3, 7]], method: 'linear', fill: 'extrapolate' })(100), 7)
    const step = interpolator({
      points: [
        [0, 1],
        [1, 2],
      ],
      method: 'step',
      fill: 'extrapolate',
    })
    assert.equal(step(-5), 1)
    assert.equal(step(0.999), 1)
    assert.equal(step(1), 2)
  })

  it('pid with a sample time updates only when that much time has passed, and holds its output between', () => {
    const pid = new Pid({ kp: 1, ki: 1, kd: 0, sampleTime: 1, min: -Infinity, max: Infinity })
    assert.equal(pid.update(1, 0, 0, 0.25), 1 + 0.25)
    assert.equal(pid.update(1, 0, 0.5, 0.25), 1.25, 'held: half a sample time')
    assert.equal(pid.update(1, 0, 1, 0.25), 1 + 1.25, 'dt is the time since the last update')
    pid.reset()
    assert.equal(pid.update(2, 0, 5, 0.5), 2 + 1)
  })
})
