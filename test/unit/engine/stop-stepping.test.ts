import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { ShuttingDownError } from '../../../src/errors.js'
import { COUNTER_MODEL, startEngineSystem, valueOf, type EngineSystem } from './helpers.js'

// System.stopStepping, what a shutdown does first: a run under way ends after its step under way
// with a 503 that counts the steps taken, later runs are refused, the polling loop stays still,
// and the state after the last step can still be read.

describe('stopStepping', () => {
  let s: EngineSystem
  before(async () => {
    s = await startEngineSystem({ models: { Counter: COUNTER_MODEL }, instances: { a: 'Counter' }, config: { pythonWorkers: 1 } })
  })
  after(async () => s?.close())

  const steps = (): number => s.system.properties().steps as number

  it('ends a run under way after its step under way; the steps taken are kept and counted in the fault', async () => {
    const run = s.system.runSteps({ args: [], kwargs: { steps: 100_000 } }).then(
      () => undefined,
      (err: unknown) => err,
    )
    // At the first turn of the event loop after the run's first step (a timer can fire late on a loaded machine).
    while (steps() === 0) await new Promise((r) => setImmediate(r))
    s.system.stopStepping('the server is shutting down (test)')
    const err = await run
    assert.ok(err instanceof ShuttingDownError, String(err))
    assert.equal(err.status, 503)
    const done = err.details[0]!.steps_done as number
    assert.ok(done > 0 && done < 100_000, `steps_done ${done}`)
    assert.equal(err.message, `run of 100000 steps stopped after ${done} step${done === 1 ? '' : 's'}: the server is shutting down (test)`)
    assert.equal(steps(), done, 'no step after the one under way')
    assert.equal(valueOf(s.system, 'a', 'level'), done, "the last step's value")
    const state = await s.system.captureState(false)
    assert.equal(state.instances.a!.timer.time, done)
  })

  it('refuses later runs, and the polling loop does not step', async () => {
    const before = steps()
    await assert.rejects(s.system.runSteps({ args: [], kwargs: { steps: 5 } }), (err: ShuttingDownError) => {
      assert.equal(err.code, 'SHUTTING_DOWN')
      assert.equal(err.message, 'run of 5 steps refused: the server is shutting down (test)')
      assert.equal(err.details[0]!.steps_done, 0)
      return true
    })
    await s.system.polling.setProperty('interval', 0.01)
    await s.system.start()
    // A negative check: no step in twenty polling intervals.
    await new Promise((r) => setTimeout(r, 200))
    assert.equal(steps(), before)
    assert.equal(s.system.state, 'RUNNING', 'the lifecycle state is left as it is (a snapshot resumes it)')
  })
})
