// The plan of the fused step (src/engine/fused-steps.ts) with a model's loop written out here:
// which instance each step takes in the loop and which alone, in what order, when the plan is
// kept and when it is made again, and a row that stops being ready inside a step (another
// instance's step takes it out), which the server's models cannot make happen on demand. The
// values themselves are compared on random models by test/unit/language/fused-differential.test.ts.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { FusedSteps, type FusedStepper } from '../../../src/engine/fused-steps.js'
import type { Steppable } from '../../../src/engine/steppable.js'

/** A model's loop that records the rows it steps, in order; `version` as a store keeps it. */
class Loop implements FusedStepper {
  version = 0
  readonly ready = new Set<number>()
  readonly log: string[]
  asked = 0
  constructor(log: string[]) {
    this.log = log
  }
  step(rows: Int32Array, from: number, n: number): number {
    for (let k = from; k < n; k++) this.log.push(`loop ${rows[k]}`)
    return n
  }
  setReady(row: number, ready: boolean): void {
    if (ready) this.ready.add(row)
    else this.ready.delete(row)
    this.version++
  }
}

function instance(name: string, loop: Loop | undefined, row: number, log: string[], onStep?: () => void): Steppable {
  const fused = loop && {
    stepper: loop,
    row,
    ready: () => {
      loop.asked++
      return loop.ready.has(row)
    },
  }
  return {
    name,
    runnable: true,
    stepsInPython: false,
    needsServerEachStep: false,
    timer: { time: 0, dt: 1, advance: () => {} },
    behaviour: { usesWorker: false, step: () => onStep?.(), stepAsync: async () => {}, fused },
    attributes: { get: () => undefined, clearOverrides: () => {} },
    stepContext: () => ({ time: 0, dt: 1 }),
    runPython: async () => {},
    applyDeclarative: () => [],
    stepFailed: () => {},
  }
}

describe('the fused step keeps its plan from step to step', () => {
  it('makes it again only when a row changes, and asks each row when one changes inside a step', () => {
    const log: string[] = []
    const loop = new Loop(log)
    const a = instance('a', loop, 0, log)
    const b = instance('b', loop, 1, log)
    // x steps alone (no row); its step takes c's row out of the loop once `spoil` is set.
    let spoil = false
    const x = instance('x', undefined, 0, log, () => {
      if (spoil) loop.setReady(2, false)
    })
    const c = instance('c', loop, 2, log)
    for (const row of [0, 1, 2]) loop.setReady(row, true)
    let live = [a, b, x, c]
    const fused = new FusedSteps<Steppable>()
    const step = (): string[] => {
      log.length = 0
      fused.run(live, undefined, (i) => {
        log.push(`alone ${i.name}`)
        i.behaviour?.step(0, 1)
      })
      return [...log]
    }

    // a and b in the loop, which runs before x (x may read their values), then c in a loop of its own.
    assert.deepEqual(step(), ['loop 0', 'loop 1', 'alone x', 'loop 2'])
    const asked = loop.asked
    // Nothing changed: the plan is kept, no row is asked again.
    assert.deepEqual(step(), ['loop 0', 'loop 1', 'alone x', 'loop 2'])
    assert.equal(loop.asked, asked)
    // b stops being ready between steps: the plan is made again, b steps alone in its place.
    loop.setReady(1, false)
    assert.deepEqual(step(), ['loop 0', 'alone b', 'alone x', 'loop 2'])
    loop.setReady(1, true)
    assert.deepEqual(step(), ['loop 0', 'loop 1', 'alone x', 'loop 2'])
    // x's step takes c out inside the step: c's loop asks its rows and c steps alone.
    spoil = true
    assert.deepEqual(step(), ['loop 0', 'loop 1', 'alone x', 'alone c'])
    spoil = false
    assert.deepEqual(step(), ['loop 0', 'loop 1', 'alone x', 'alone c'])
    loop.setReady(2, true)
    assert.deepEqual(step(), ['loop 0', 'loop 1', 'alone x', 'loop 2'])
    // Another list of instances (one left): the plan is made for it. A list once given is not
    // changed (FusedSteps.run); a list equal to the plan's is taken as it.
    live = [a, x, c]
    assert.deepEqual(step(), ['loop 0', 'alone x', 'loop 2'])
    const planned = loop.asked
    live = [a, x, c]
    assert.deepEqual(step(), ['loop 0', 'alone x', 'loop 2'])
    assert.equal(loop.asked, planned)
  })
})
