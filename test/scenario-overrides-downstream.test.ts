// A scenario's overrides are what the model's own actions and conditions read in a step
// (MODEL_LANGUAGE.md sections 4 and 6, docs/model-language.md "Scenarios"): a forced overcurrent
// heats the motor, and the value stays forced after the actions that compute it.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

describe('scenario overrides seen downstream', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(async () => t.close())

  const ok = async (res: Promise<{ status: number; body: unknown }>): Promise<any> => {
    const r = await res
    assert.equal(r.status, 200, JSON.stringify(r.body))
    return r.body
  }
  const value = async (instance: string, attr: string): Promise<unknown> =>
    (await ok(t.api('GET', `${SYS}/instances/${instance}/attributes/${attr}/attr/internal_value`))).value
  const values = async (instance: string, names: string[]): Promise<unknown[]> => Promise.all(names.map((n) => value(instance, n)))
  const step = (instance: string): Promise<unknown> => ok(t.call(`${SYS}/instances/${instance}`, 'run'))

  it("the model's actions and conditions read a forced value, which stays forced after them", async () => {
    await ok(
      t.api('PUT', `${SYS}/models`, {
        motor: {
          attributes: { load: 1.0, current: 0.0, temperature: 20.0, alarm: { default: 0, type: 'int' }, trips: { default: 0, type: 'int' } },
          actions: [
            { function: '$out(current)', call: '$in(load) * 10' },
            { function: '$out(temperature)', call: '20 + $in(current) * 2' },
          ],
          conditions: [
            { if: '$in(current) > 50', actions: [{ set: '$out(alarm)', value: 1 }] },
            { else: null, actions: [{ set: '$out(alarm)', value: 0 }] },
          ],
          scenarios: {
            overcurrent: {
              overrides: { '$out(current)': 99 },
              actions: [{ function: '$out(trips)', call: '$in(trips) + ($in(current) > 50)' }],
            },
          },
        },
      }),
    )
    await ok(t.api('PUT', `${SYS}/instances`, { m1: 'motor' }))
    await ok(t.call(`${SYS}/instances/m1`, 'prepare'))
    const names = ['current', 'temperature', 'alarm', 'trips']
    await step('m1')
    assert.deepEqual(await values('m1', names), [10, 40, 0, 0])

    await ok(t.call(`${SYS}/instances/m1/scenarios/overcurrent`, 'start'))
    await step('m1')
    assert.deepEqual(await values('m1', names), [99, 218, 1, 1], 'the action computing current keeps the forced value, and what reads it sees 99')
    await step('m1')
    assert.deepEqual(await values('m1', names), [99, 218, 1, 2])

    await ok(t.call(`${SYS}/instances/m1/scenarios/overcurrent`, 'stop'))
    assert.equal(await value('m1', 'current'), 10, 'stop restores the value under the override')
    await step('m1')
    assert.deepEqual(await values('m1', names), [10, 40, 0, 2], 'the model computes current again')
  })

  it('a client write between steps does not get past a held value in the next step', async () => {
    await ok(
      t.api('PUT', `${SYS}/models`, {
        heater: {
          attributes: { setpoint: 50.0, power: 0.0 },
          actions: [{ function: '$out(power)', call: '$in(setpoint) * 2' }],
          scenarios: { stuck: { overrides: { setpoint: 5 } } },
        },
      }),
    )
    await ok(t.api('PUT', `${SYS}/instances`, { h1: 'heater' }))
    await ok(t.call(`${SYS}/instances/h1`, 'prepare'))
    await ok(t.call(`${SYS}/instances/h1/scenarios/stuck`, 'start'))
    await ok(t.api('PUT', `${SYS}/instances/h1/attributes/setpoint/attr/internal_value`, { value: 70.0 }))
    await step('h1')
    assert.deepEqual(await values('h1', ['setpoint', 'power']), [5, 10], 'the override is written again before the actions')
  })

  it('an override action of the model is seen by the actions after it', async () => {
    await ok(
      t.api('PUT', `${SYS}/models`, {
        lamp: {
          attributes: { level: 0.0, lux: 0.0 },
          actions: [{ function: '$out(level)', call: '0.5' }, { function: '$out(lux)', call: '$in(level) * 100' }, { override: { '$out(level)': 1.0 } }],
        },
      }),
    )
    await ok(t.api('PUT', `${SYS}/instances`, { l1: 'lamp' }))
    await ok(t.call(`${SYS}/instances/l1`, 'start'))
    await step('l1')
    assert.deepEqual(await values('l1', ['level', 'lux']), [1, 100])
    await ok(t.call(`${SYS}/instances/l1`, 'stop'))
  })
})
