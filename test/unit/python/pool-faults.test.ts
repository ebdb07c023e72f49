import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { WorkerGoneError, WorkerTimeoutError } from '../../../src/errors.js'
import { PythonPool } from '../../../src/python/index.js'
import { fixture, pidAlive, py, runStep } from './helpers.js'
import type { Fixture } from './helpers.js'

const FRAGILE = py(`
  import ctypes
  import os
  import time

  class Fragile:
      def __init__(self):
          self.n = 0

      def tick(self):
          self.n += 1
          return self.n

      def die(self):
          os._exit(1)

      def segfault(self):
          ctypes.string_at(0)

      def hang(self):
          while True:
              time.sleep(0.01)
`)

const BLOCK = {
  'fragile.py': {
    class: 'Fragile',
    attributes: { n: { property: 'n' } },
    methods: { run: 'tick', die: 'die', segfault: 'segfault', hang: 'hang' },
  },
}

async function waitFor(check: () => boolean, ms = 3000): Promise<void> {
  const until = Date.now() + ms
  while (!check()) {
    if (Date.now() > until) throw new Error('condition not reached in time')
    await sleep(20)
  }
}

describe('PythonPool: faults stay local', () => {
  let fx: Fixture
  let pool: PythonPool
  let lost: Array<{ instances: string[]; reason: string }>

  beforeEach(async () => {
    fx = await fixture({ 'fragile.py': FRAGILE })
    pool = fx.pool({ workers: 2, timeoutMs: 1500, graceMs: 300 })
    lost = []
    pool.onInstancesLost((instances, reason) => lost.push({ instances: [...instances].sort(), reason }))
    // a and c share worker 0, b is alone on worker 1
    for (const name of ['a', 'b', 'c']) await fx.load(pool, name, BLOCK)
    assert.deepEqual(
      ['a', 'b', 'c'].map((n) => pool.info(n)?.worker),
      [0, 1, 0],
    )
  })
  afterEach(() => fx.cleanup())

  async function expectOthersFine(): Promise<void> {
    assert.equal((await pool.call('b', 'run')).result, 1)
  }

  it('os._exit(1) loses only that worker, which is replaced on the next load', async () => {
    const oldPid = pool.info('a')!.pid
    await assert.rejects(pool.call('a', 'die'), (err: unknown) => {
      assert.ok(err instanceof WorkerGoneError)
      assert.equal(err.status, 503)
      assert.match(err.message, /exited with code 1/)
      return true
    })
    await waitFor(() => lost.length === 1)
    assert.deepEqual(lost[0]!.instances, ['a', 'c'])
    assert.match(lost[0]!.reason, /Python worker 0 \(pid \d+\) exited with code 1/)
    await expectOthersFine()
    await assert.rejects(pool.call('c', 'run'), (err: unknown) => err instanceof WorkerGoneError && /prepare\(\)/.test(err.message))
    assert.match(pool.lostReason('c') ?? '', /exited with code 1/)
    assert.equal(pidAlive(oldPid), false)

    const again = await fx.load(pool, 'c', BLOCK)
    assert.notEqual(again.pid, oldPid)
    assert.equal((await pool.call('c', 'run')).result, 1)
    assert.equal(pool.lostReason('c'), undefined)
  })

  it('a segfault is reported with its signal', async () => {
    await assert.rejects(pool.call('b', 'segfault'), WorkerGoneError)
    await waitFor(() => lost.length === 1)
    assert.deepEqual(lost[0]!.instances, ['b'])
    assert.match(lost[0]!.reason, /killed by signal SIGSEGV/)
    assert.equal((await pool.call('a', 'run')).result, 1)
  })

  it('a call past the timeout kills its worker (504); the other worker keeps serving', async () => {
    const hungPid = pool.info('a')!.pid
    const started = Date.now()
    const hang = pool.call('a', 'hang')
    const pendingBehind = pool.call('c', 'run')
    await assert.rejects(hang, (err: unknown) => {
      assert.ok(err instanceof WorkerTimeoutError)
      assert.equal(err.status, 504)
      assert.match(err.message, /did not finish call 'hang' of 'a' within 1500 ms and was killed/)
      return true
    })
    const waited = Date.now() - started
    assert.ok(waited >= 1400 && waited < 5000, `timed out after ${waited} ms`)
    await assert.rejects(pendingBehind, WorkerTimeoutError)
    await waitFor(() => lost.length === 1)
    assert.deepEqual(lost[0]!.instances, ['a', 'c'])
    assert.match(lost[0]!.reason, /within 1500 ms/)
    await waitFor(() => !pidAlive(hungPid))
    await expectOthersFine()
    const again = await fx.load(pool, 'a', BLOCK)
    assert.equal((await pool.call('a', 'run')).result, 1)
    assert.notEqual(again.pid, hungPid)
  })

  it('a hang inside a step fails only the items of that worker', async () => {
    await fx.load(pool, 'h', { 'fragile.py': { class: 'Fragile', methods: { run: 'hang' } } })
    assert.equal(pool.info('h')?.worker, 1)
    const records = await runStep(pool, pool.plan(['a', 'b', 'c', 'h'], 'run'))
    assert.deepEqual(
      records.map((r) => r.error === undefined),
      [true, false, true, false],
    )
    for (const r of records) if (r.error) assert.ok(r.error instanceof WorkerTimeoutError)
    await waitFor(() => lost.length === 1)
    assert.deepEqual(lost[0]!.instances, ['b', 'h'])
  })

  it('close() ends every worker, even a busy one, and leaves no process behind', async () => {
    const pids = pool.workers().map((w) => w.pid)
    assert.equal(pids.length, 2)
    assert.ok(pids.every(pidAlive))
    const busy = pool.call('b', 'hang')
    await sleep(100)
    const started = Date.now()
    await pool.close()
    assert.ok(Date.now() - started < 3000)
    await assert.rejects(busy, WorkerGoneError)
    assert.deepEqual(pids.map(pidAlive), [false, false])
    assert.equal(lost.length, 0, 'an orderly close loses no instances')
    await assert.rejects(pool.call('a', 'run'), WorkerGoneError)
  })

  it('an interpreter that cannot start is a 503, not a crash', async () => {
    const broken = new PythonPool({ python: '/nonexistent/python3', workers: 1, timeoutMs: 1500, logger: fx.logger })
    try {
      await assert.rejects(broken.start(), (err: unknown) => err instanceof WorkerGoneError && /could not run Python interpreter/.test(err.message))
    } finally {
      await broken.close()
    }
  })
})
