import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { batchSize, BATCH_TARGET_MS, Engine, needsServerBetweenSteps } from '../../../src/engine/index.js'
import type { Instance } from '../../../src/system/instance.js'
import { clockModel, COUNTER_MODEL, GAUGE_MODEL, startEngineSystem, valueOf, workerRequests, type EngineSystem } from './helpers.js'

describe('batch sizing', () => {
  const python = { limit: 100, needsServer: false, pythonInstances: 1000 }

  it('a step that needs the server, or a limit of 1, goes alone', () => {
    assert.equal(batchSize({ ...python, limit: 1, kept: { stepMs: 0.01, lastBatch: 64 } }), 1)
    assert.equal(batchSize({ ...python, needsServer: true, kept: { stepMs: 0.01, lastBatch: 64 } }), 1)
  })

  it('without Python every remaining step fits in one go', () => {
    assert.equal(batchSize({ limit: 37, needsServer: false, pythonInstances: 0, kept: undefined }), 37)
  })

  it('the first step of a new set of instances goes alone, to be timed', () => {
    assert.equal(batchSize({ ...python, kept: undefined }), 1)
    assert.equal(batchSize({ ...python, kept: { stepMs: undefined, lastBatch: 1 } }), 1)
  })

  it('then about BATCH_TARGET_MS of work per message, growing at most fourfold, never past the limit', () => {
    const stepMs = BATCH_TARGET_MS / 50
    assert.equal(batchSize({ ...python, kept: { stepMs, lastBatch: 1 } }), 4)
    assert.equal(batchSize({ ...python, kept: { stepMs, lastBatch: 4 } }), 16)
    assert.equal(batchSize({ ...python, kept: { stepMs, lastBatch: 16 } }), 50)
    assert.equal(batchSize({ ...python, limit: 30, kept: { stepMs, lastBatch: 16 } }), 30)
  })

  it('slow user code gets one step per message', () => {
    assert.equal(batchSize({ ...python, kept: { stepMs: BATCH_TARGET_MS * 2, lastBatch: 8 } }), 1)
  })
})

describe('batching in a real system', () => {
  let s: EngineSystem

  before(async () => {
    s = await startEngineSystem({
      models: { Counter: COUNTER_MODEL, Gauge: GAUGE_MODEL, Clock: clockModel(true), Idle: clockModel(false) },
      instances: { c1: 'Counter', c2: 'Counter', g: 'Gauge', clock: 'Clock', idle: 'Idle' },
    })
  })
  after(() => s.close())

  const engineOf = (stepBatch: number): Engine<Instance> =>
    new Engine({
      system: s.system,
      python: s.system.services.python,
      stepBatch,
      logger: s.t.server.logger,
      polling: { interval: () => 1, wanted: () => false, includes: () => true },
    })

  it('a MimicComponent whose run sees the server time, or a connection, makes every step need the server', async () => {
    const [c1, c2, g, clock, idle] = s.instances('c1', 'c2', 'g', 'clock', 'idle')
    assert.equal(needsServerBetweenSteps(s.system, [c1!, c2!, g!]), false)
    assert.equal(needsServerBetweenSteps(s.system, [c1!, idle!]), false, 'a MimicComponent the step does not call')
    assert.equal(needsServerBetweenSteps(s.system, [c1!, clock!]), true)
    await s.system.connections.put({ wire: { from: 'c1.attributes.level', to: 'g.attributes.reading' } })
    try {
      assert.equal(needsServerBetweenSteps(s.system, [c1!, c2!, g!]), true)
    } finally {
      await s.system.connections.deleteChild('wire')
    }
  })

  it('with a limit of 1 every step of a run is one message per worker', async () => {
    await s.system.instances.deleteChild('clock')
    const before = workerRequests(s.system)
    const level = valueOf(s.system, 'c1', 'level') as number
    await engineOf(1).run(12, 0.5)
    // c1 and c2 are on different workers (a new instance goes to the worker holding fewest)
    assert.equal(workerRequests(s.system) - before, 2 * 12)
    assert.equal(valueOf(s.system, 'c1', 'level'), level + 12)
  })

  it('batches grow at most fourfold: 85 steps take at least 1 + 4 + 16 + 64, four messages per worker', async () => {
    const before = workerRequests(s.system)
    const level = valueOf(s.system, 'c2', 'level') as number
    const engine = engineOf(100)
    await engine.run(85, 0.5)
    assert.ok(workerRequests(s.system) - before >= 2 * 4, `${workerRequests(s.system) - before} messages`)
    assert.equal(valueOf(s.system, 'c2', 'level'), level + 85, 'every step called run')
    assert.equal(engine.steps, 85)
  })

  it('in a batch of instances without declarative behaviour each one takes every step: timers, the system time and overrides as single steps leave them', async () => {
    const [c1, c2, g] = s.instances('c1', 'c2', 'g')
    const times = () => [c1!, c2!, g!].map((i) => i.timer.time)
    const start = times()
    const systemStart = s.system.timer.time
    const level = valueOf(s.system, 'c1', 'level') as number
    g!.attributes.get('reading')!.setExternal(7)
    const engine = engineOf(100)
    await engine.run(40, 0.25)
    assert.deepEqual(
      times(),
      start.map((t) => t + 40 * 0.25),
    )
    assert.equal(s.system.timer.time, systemStart + 40 * 0.25)
    assert.equal(valueOf(s.system, 'c1', 'level'), level + 40)
    assert.equal(g!.attributes.get('reading')!.presented, undefined, 'the first step ended the override')
  })
})
