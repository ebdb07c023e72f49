import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { NotFoundError, UserCodeError } from '../../../src/errors.js'
import type { PythonPool } from '../../../src/python/index.js'
import { fixture, py, runStep } from './helpers.js'
import type { Fixture } from './helpers.js'

const COUNTER = py(`
  import os

  class Counter:
      def __init__(self, start=0):
          self.count = start
          self.pid = os.getpid()

      def tick(self):
          self.count += 1
          if self.count == 13:
              raise RuntimeError("unlucky")
          return self.count
`)

const BLOCK = {
  'counter.py': {
    class: 'Counter',
    attributes: { count: { property: 'count' }, pid: { property: 'pid' } },
    methods: { run: 'tick' },
  },
}

describe('PythonPool: batched steps', () => {
  let fx: Fixture
  let pool: PythonPool
  const names = Array.from({ length: 200 }, (_, i) => `inst_${i}`)

  before(async () => {
    fx = await fixture({ 'counter.py': COUNTER })
    pool = fx.pool({ workers: 2 })
    await Promise.all(names.map((name) => fx.load(pool, name, BLOCK)))
  })
  after(() => fx.cleanup())

  it('spreads 200 instances over 2 workers and steps them with one message per worker', async () => {
    const workers = pool.workers()
    assert.deepEqual(
      workers.map((w) => w.instances),
      [100, 100],
    )
    const before = workers.map((w) => w.requests)
    const records = await runStep(pool, pool.plan(names, 'run'))
    assert.deepEqual(
      pool.workers().map((w, i) => w.requests - before[i]!),
      [1, 1],
    )
    assert.equal(records.length, 200)
    records.forEach((record, i) => {
      assert.equal(record.instance, names[i])
      assert.equal(record.error, undefined)
      assert.equal(record.result, 1)
      assert.deepEqual(record.values, { count: 1 }, 'the unchanged pid is not passed on')
    })
    // each instance ran in the worker the pool placed it in
    for (const name of names.slice(0, 10)) assert.equal(pool.values(name)?.pid, pool.info(name)?.pid)
  })

  it('one failing instance does not fail the others', async () => {
    await fx.load(pool, 'unlucky', { 'counter.py': { ...BLOCK['counter.py'], init: { kwargs: { start: 12 } } } })
    const [first, unlucky, nobody, last] = await runStep(pool, pool.plan(['inst_0', 'unlucky', 'nobody', 'inst_2'], 'run'))
    assert.equal(first?.result, 2)
    assert.ok(unlucky?.error instanceof UserCodeError && /unlucky/.test(unlucky.error.message))
    assert.ok(nobody?.error instanceof NotFoundError)
    assert.equal(last?.result, 2)
    const [nope] = await runStep(pool, pool.plan(['inst_1'], 'nope'))
    assert.ok(nope?.error instanceof NotFoundError && /no method 'nope'/.test(nope.error.message))
    // without a method a step only reads the bound values: nothing is called
    const [refresh] = await runStep(pool, pool.plan(['inst_1'], undefined))
    assert.equal(refresh?.error, undefined)
    assert.equal(refresh?.result, undefined, 'no result: nothing was called')
    assert.equal(pool.values('inst_1')?.count, 1)
    // the failed instance keeps working
    assert.equal((await pool.call('unlucky', 'run')).result, 14)
  })

  it('kept plans: rebuilt after a load, sent again when a worker forgot them', async () => {
    const fresh = ['plan_a', 'plan_b', 'plan_c']
    await Promise.all(fresh.map((name) => fx.load(pool, name, BLOCK)))
    const counts = new Map<string, number>()
    const sink = (plan: readonly string[]) => ({
      value: (index: number, name: string, value: unknown) => {
        if (name === 'count') counts.set(plan[index]!, value as number)
      },
      done: () => {},
      fail: (index: number, error: Error) => assert.fail(`${plan[index]}: ${error.message}`),
    })
    const plan = pool.plan(fresh, 'run')
    await pool.runPlan(plan, {}, sink(fresh))
    await pool.runPlan(plan, {}, sink(fresh))
    assert.deepEqual([...counts.values()], [2, 2, 2])
    // A load elsewhere makes the pool compile the plan again; the counts go on.
    await fx.load(pool, 'plan_d', BLOCK)
    await pool.runPlan(plan, {}, sink(fresh))
    assert.deepEqual([...counts.values()], [3, 3, 3])
    // A worker keeps 16 plans: after 20 others it has forgotten this one and gets it again.
    for (let i = 0; i < 20; i++) await pool.runPlan(pool.plan(['plan_d'], undefined), {}, sink(['plan_d']))
    const requests = (): number => pool.workers().reduce((sum, w) => sum + w.requests, 0)
    const before = requests()
    await pool.runPlan(plan, {}, sink(fresh))
    assert.deepEqual([...counts.values()], [4, 4, 4])
    const groups = new Set(fresh.map((name) => pool.info(name)?.worker)).size
    assert.equal(requests() - before, groups + 1, 'one step per worker, and one more to the worker that forgot')
  })

  it('several steps in one message: the last values, and failures counted per instance', async () => {
    await fx.load(pool, 'multi_a', BLOCK)
    await fx.load(pool, 'multi_b', { 'counter.py': { ...BLOCK['counter.py'], init: { kwargs: { start: 10 } } } })
    const names = ['multi_a', 'multi_b']
    const values = new Map<string, unknown>()
    const failures: Array<[string, string, number | undefined]> = []
    const plan = pool.plan(names, 'run')
    await pool.runPlan(
      plan,
      { repeat: 5 },
      {
        value: (index, name, value) => {
          if (name === 'count') values.set(names[index]!, value)
        },
        done: () => {},
        fail: (index, error, steps) => failures.push([names[index]!, error.message, steps]),
      },
    )
    assert.deepEqual(Object.fromEntries(values), { multi_a: 5, multi_b: 15 })
    assert.equal(failures.length, 1)
    assert.equal(failures[0]![0], 'multi_b')
    assert.match(failures[0]![1], /unlucky/)
    assert.equal(failures[0]![2], 1, 'count 13 failed once in the five steps')
  })
})
