import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { PlanCache, stepInstance, stepSystem } from '../../../src/engine/index.js'
import type { MimicError } from '../../../src/errors.js'
import type { Instance } from '../../../src/system/instance.js'
import { registersOf, TestClient } from '../modbus/helpers.js'
import { clockModel, COUNTER_MODEL, FAULTY_MODEL, startEngineSystem, valueOf, type EngineSystem } from './helpers.js'

// MODEL_LANGUAGE.md section 4: in a system step every instance steps (its Python `run` first),
// then the connections are applied, then the adapters publish. Each check below would read the
// previous step's value if two of these ran the other way round.

describe('the order of one step', () => {
  let s: EngineSystem
  let modbus: TestClient
  const failed: Array<[string, number]> = []
  const plans = new PlanCache<Instance>()

  /** One system step of these instances through the engine's step function. */
  async function step(names: string[], dt = 0.5): Promise<void> {
    const stepped = s.instances(...names)
    const owners = stepped.filter((i) => i.stepsInPython)
    const pool = s.system.services.python()
    const plan = plans.kept(pool, owners) ?? plans.renew(pool, owners)
    await stepSystem({
      system: s.system,
      stepped,
      plan,
      dt,
      repeat: 1,
      failed: (instance: Instance, _error: MimicError, count: number) => void failed.push([instance.name, count]),
    })
  }

  /** The holding register the panel's adapter serves `shown` from. */
  async function published(): Promise<number> {
    return registersOf(await modbus.request({ fc: 3, address: 0, quantity: 1 }, { unitId: 1 }))[0]!
  }

  before(async () => {
    const panel = {
      attributes: { shown: { type: 'int', default: 0 } },
      communication: [{ modbus_slave: { host: '127.0.0.1', port: 0, unit_id: 1, mapping: { shown: { address: 0, group: 'h_r', type: 'uint_16' } } } }],
    }
    s = await startEngineSystem({
      models: { Counter: COUNTER_MODEL, Faulty: FAULTY_MODEL, Clock: clockModel(true), Panel: panel },
      instances: { source: 'Counter', panel: 'Panel', clock: 'Clock', faulty: 'Faulty' },
      connections: { wire: { from: 'source.attributes.level', to: 'panel.attributes.shown' } },
    })
    const { port } = (await s.t.api('GET', '/api/v3/system/instances/panel/communication/modbus_slave')).body
    modbus = await TestClient.connect(port)
  })
  after(async () => {
    modbus?.close()
    await s?.close()
  })

  it("behaviour, then connections, then the adapters: a step's new value is published by that same step", async () => {
    assert.equal(await published(), 0)
    await step(['source', 'panel'])
    assert.equal(valueOf(s.system, 'source', 'level'), 1)
    assert.equal(valueOf(s.system, 'panel', 'shown'), 1, "the connection copied the value this step's run left")
    assert.equal(await published(), 1, 'the adapter serves what the connection wrote')
    for (let i = 0; i < 3; i++) await step(['source', 'panel'])
    assert.equal(valueOf(s.system, 'panel', 'shown'), 4)
    assert.equal(await published(), 4)
  })

  it('the instance steps end before the connections: an external value presented before the step is gone when they copy', async () => {
    const level = s.instances('source')[0]!.attributes.get('level')!
    level.setExternal(99)
    assert.equal(level.externalValue, 99)
    await step(['source', 'panel'])
    assert.equal(level.externalValue, 5)
    assert.equal(valueOf(s.system, 'panel', 'shown'), 5)
    assert.equal(await published(), 5)
  })

  it("every instance runs at its timer's time, which then moves on by dt, as does the system's", async () => {
    const [clock] = s.instances('clock')
    const time = clock!.timer.time
    const systemTime = s.system.timer.time
    await step(['clock', 'source'], 0.25)
    assert.equal(valueOf(s.system, 'clock', 'seen'), time, 'the MimicComponent saw the time before the step')
    assert.equal(clock!.timer.time, time + 0.25)
    assert.equal(s.system.timer.time, systemTime + 0.25)
  })

  it('a failing instance is reported and the step completes for the others', async () => {
    failed.length = 0
    const [faulty] = s.instances('faulty')
    const level = valueOf(s.system, 'source', 'level') as number
    const time = faulty!.timer.time
    await step(['source', 'faulty', 'panel'])
    await step(['source', 'faulty', 'panel'])
    assert.deepEqual(failed, [['faulty', 1]], 'its second run raised')
    assert.equal(valueOf(s.system, 'source', 'level'), level + 2)
    assert.equal(valueOf(s.system, 'panel', 'shown'), level + 2)
    assert.equal(faulty!.timer.time, time + 1, 'its time moved on in both steps, as for the others')
  })

  it("an instance step alone: its Python run at the timer's time, then time moves on; a run that raises leaves time where it was", async () => {
    const [clock, faulty] = s.instances('clock', 'faulty')
    const time = clock!.timer.time
    await stepInstance(clock!, 2)
    assert.equal(valueOf(s.system, 'clock', 'seen'), time)
    assert.equal(clock!.timer.time, time + 2)

    const before = faulty!.timer.time
    await stepInstance(faulty!, 1)
    assert.equal(faulty!.timer.time, before + 1)
    await assert.rejects(stepInstance(faulty!, 1), /even tick/)
    assert.equal(faulty!.timer.time, before + 1)
  })
})
