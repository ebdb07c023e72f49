import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import { COUNTER_MODEL, startEngineSystem, valueOf, type EngineSystem } from './helpers.js'

// A snapshot with state is taken between two system steps. Asked for during a long run, it gets
// in after the step under way, not after the whole run: steps and `between` take turns in the
// order they asked.

describe('between two steps of a long run', () => {
  let s: EngineSystem
  before(async () => {
    s = await startEngineSystem({ models: { Counter: COUNTER_MODEL }, instances: { a: 'Counter' }, config: { pythonWorkers: 1 } })
  })
  after(async () => s?.close())

  const steps = (): number => s.system.properties().steps as number

  it('a save with state gets in during the run, with the values of one moment, and the run goes on to its end', async () => {
    let runEnded = false
    const run = s.system.runSteps({ args: [], kwargs: { steps: 20_000 } }).then(() => (runEnded = true))
    // Asked for at the first turn of the event loop after the run's first step, not after a timer:
    // a 5 ms timer fired late on a loaded machine once let a fast run end before it.
    while (steps() === 0) await new Promise((r) => setImmediate(r))
    const saved = await s.system.saveSnapshot({}, { includeState: true })
    assert.equal(runEnded, false, 'the save did not wait for the run')
    const file = JSON.parse(await readFile(saved.persisted_path, 'utf8'))
    const time = file.state.instances.a.timer.time
    assert.ok(time > 0 && time < 20_000, `saved at step ${time}`)
    assert.equal(file.state.instances.a.attributes.level.internal, time, 'the value and the time of one moment')
    await run
    assert.equal(valueOf(s.system, 'a', 'level'), steps())
  })
})
