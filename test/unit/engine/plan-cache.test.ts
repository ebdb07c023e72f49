import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { PlanCache } from '../../../src/engine/index.js'
import type { MimicError } from '../../../src/errors.js'
import { PythonPool } from '../../../src/python/index.js'
import type { Instance } from '../../../src/system/instance.js'
import { PYTHON } from '../python/helpers.js'
import { COUNTER_MODEL, FAULTY_MODEL, startEngineSystem, valueOf, type EngineSystem } from './helpers.js'

describe('step plan cache', () => {
  let s: EngineSystem

  before(async () => {
    s = await startEngineSystem({
      models: { Counter: COUNTER_MODEL, Faulty: FAULTY_MODEL },
      instances: { a: 'Counter', b: 'Counter', c: 'Counter', f: 'Faulty' },
    })
  })
  after(() => s.close())

  it('keeps the plan of exactly the same instances, in the same order, on the same pool', async () => {
    const pool = s.system.services.python()
    const [a, b, c] = s.instances('a', 'b', 'c')
    const plans = new PlanCache<Instance>()
    assert.equal(plans.kept(pool, [a!, b!]), undefined, 'nothing kept yet')
    const plan = plans.renew(pool, [a!, b!])
    assert.equal(plans.kept(pool, [a!, b!]), plan)
    assert.equal(plans.kept(pool, [b!, a!]), undefined, 'another order')
    assert.equal(plans.kept(pool, [a!]), undefined, 'fewer instances')
    assert.equal(plans.kept(pool, [a!, b!, c!]), undefined, 'more instances')
    assert.equal(plans.kept(pool, [a!, b!]), plan, 'asking about others does not drop it')
    const other = new PythonPool({ python: PYTHON, workers: 1, timeoutMs: 10_000, logger: s.t.server.logger })
    try {
      assert.equal(plans.kept(other, [a!, b!]), undefined, 'another pool')
    } finally {
      await other.close()
    }
    const wider = plans.renew(pool, [a!, b!, c!])
    assert.notEqual(wider, plan)
    assert.equal(plans.kept(pool, [a!, b!]), undefined, 'only the last plan is kept')
    assert.equal(plans.kept(pool, [a!, b!, c!]), wider)
  })

  it('an instance rebuilt under the same name is another instance: its plan is not reused', async () => {
    const pool = s.system.services.python()
    const plans = new PlanCache<Instance>()
    const [before] = s.instances('c')
    plans.renew(pool, [before!])
    await s.system.instances.put({ c: 'Faulty' })
    const [rebuilt] = s.instances('c')
    await rebuilt!.lifecycle.prepare()
    assert.notEqual(rebuilt, before)
    assert.equal(plans.kept(pool, [rebuilt!]), undefined)
  })

  it('a run of a kept plan puts the values into the attributes, reports failures with their counts, and times the message', async () => {
    const pool = s.system.services.python()
    const [a, f] = s.instances('a', 'f')
    const plan = new PlanCache<Instance>().renew(pool, [a!, f!])
    const failed: Array<[string, string, number]> = []
    const report = (instance: Instance, error: MimicError, count: number): void => void failed.push([instance.name, error.message, count])
    const start = valueOf(s.system, 'a', 'level') as number
    const time = a!.timer.time

    await plan.run({ dt: 0.5, repeat: 1, refused: s.system.refused, failed: report })
    assert.equal(valueOf(s.system, 'a', 'level'), start + 1)
    assert.equal(valueOf(s.system, 'f', 'level'), 1)
    assert.equal(failed.length, 0)
    assert.equal(plan.lastBatch, 1)
    assert.ok(plan.stepMs !== undefined && plan.stepMs > 0, 'the message was timed')

    await plan.run({ dt: 0.5, repeat: 4, refused: s.system.refused, failed: report })
    assert.equal(valueOf(s.system, 'a', 'level'), start + 5, 'values of the last of the four steps')
    assert.equal(valueOf(s.system, 'f', 'level'), 5)
    assert.deepEqual(
      failed.map(([name, , count]) => [name, count]),
      [['f', 2]],
      'f failed in its 2nd and 4th tick',
    )
    assert.match(failed[0]![1], /even tick/)
    assert.equal(plan.lastBatch, 4)
    assert.equal(a!.timer.time, time, "moving time on is the step's business, not the plan's")
  })
})
