// Scenarios and hooks of the model language (MODEL_LANGUAGE.md sections 6 and 7) on a running
// server: overrides held and restored (attribute values and an adapter setting), the scenario's
// own timer, duration, period and run_limit, start with the instance, reproducible runs, and the
// hooks of lifecycle and attribute events.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createConnection } from 'node:net'
import { startTestServer, type TestServer } from './helpers/server.js'
import { generator } from './helpers/seeded-random.js'

const SYS = '/api/v3/system'

describe('scenarios and hooks on a running server', () => {
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
  const step = (instance: string): Promise<unknown> => ok(t.call(`${SYS}/instances/${instance}`, 'run'))
  const scenario = async (instance: string, name: string): Promise<{ state: string; elapsed: number; runs: number }> => {
    const doc = await ok(t.api('GET', `${SYS}/instances/${instance}/scenarios/${name}`))
    return { state: doc.state, elapsed: doc.attr.elapsed.value, runs: doc.attr.runs.value }
  }

  it('a scenario holds its overrides against the actions, runs on its own timer, and restores all when its duration is up', async () => {
    await ok(
      t.api('PUT', `${SYS}/models`, {
        supply: {
          attributes: { v: 230.0, since: -1.0, trips: { default: 0, type: 'int' } },
          actions: [{ set: '$out(v)', value: 230.0 }],
          scenarios: {
            sag: {
              display_name: 'Voltage sag',
              duration: 3,
              overrides: { '$out(v)': 180, 'communication.modbus_slave.response_delay': 0.5, 'communication.modbus_slave.faults': { exception: { code: 6 } } },
              actions: [{ function: '$out(since)', call: '$attr(timer.time)' }],
              conditions: [{ if: '$attr(timer.time) == 0', actions: [{ function: '$out(trips)', call: '$in(trips) + 1' }] }],
            },
          },
          communication: { modbus_slave: { port: 0, mapping: { v: { address: [0, 1], group: 'h_r', type: 'float' } } } },
        },
      }),
    )
    await ok(t.api('PUT', `${SYS}/instances`, { s1: 'supply' }))
    await ok(t.call(`${SYS}/instances/s1`, 'prepare'))
    const delay = `${SYS}/instances/s1/communication/modbus_slave/attr/response_delay`
    await step('s1')
    await step('s1')
    assert.deepEqual(await scenario('s1', 'sag'), { state: 'idle', elapsed: 0, runs: 0 })

    await ok(t.call(`${SYS}/instances/s1/scenarios/sag`, 'start'))
    assert.equal(await value('s1', 'v'), 180, 'the override applies at once, converted to a float')
    assert.equal((await ok(t.api('GET', delay))).value, 0.5)
    const faults = `${SYS}/instances/s1/communication/modbus_slave/attr/faults`
    assert.deepEqual((await ok(t.api('GET', faults))).value.exception?.code, 6, 'Modbus faults set through a scenario override')
    const seen: Array<[unknown, unknown]> = []
    for (let i = 0; i < 3; i++) {
      await step('s1')
      seen.push([await value('s1', 'v'), await value('s1', 'since')])
    }
    assert.deepEqual(seen, [
      [180, 0],
      [180, 1],
      [180, 2],
    ])
    assert.deepEqual(await scenario('s1', 'sag'), { state: 'active', elapsed: 2, runs: 1 })
    await step('s1')
    assert.equal((await scenario('s1', 'sag')).state, 'finished')
    assert.equal(await value('s1', 'v'), 230, 'restored, and the model’s own action writes again')
    assert.equal(await value('s1', 'since'), 2, 'what its actions wrote stays')
    assert.equal(await value('s1', 'trips'), 1)
    assert.equal((await ok(t.api('GET', delay))).value, 0, 'the adapter setting is restored')
    assert.deepEqual((await ok(t.api('GET', faults))).value, {}, 'and the faults cleared')

    // Stopping the instance mid-scenario restores too.
    await ok(t.call(`${SYS}/instances/s1/scenarios/sag`, 'start'))
    assert.equal((await ok(t.api('GET', delay))).value, 0.5)
    await ok(t.call(`${SYS}/instances/s1`, 'stop'))
    assert.equal((await scenario('s1', 'sag')).state, 'finished')
    assert.equal(await value('s1', 'v'), 230)
    assert.equal((await ok(t.api('GET', delay))).value, 0)
  })

  it('enabled starts it with the instance; period restarts it, at most run_limit times; a reset run repeats exactly', async () => {
    await ok(
      t.api('PUT', `${SYS}/models`, {
        blinker: {
          timer: { time_step: 1 },
          attributes: { lamp: false, pulses: { default: 0, type: 'int' } },
          actions: [{ set: '$out(lamp)', value: false }],
          scenarios: {
            pulse: {
              enabled: true,
              duration: 1,
              period: 3,
              jitter: 1,
              run_limit: 3,
              overrides: { lamp: true },
              conditions: [{ if: '$attr(timer.time) == 0', actions: [{ function: '$out(pulses)', call: '$in(pulses) + 1' }] }],
            },
          },
        },
      }),
    )
    await ok(t.api('PUT', `${SYS}/instances`, { b1: 'blinker' }))
    await ok(t.call(`${SYS}/instances/b1`, 'prepare'))
    const trace = async (): Promise<string> => {
      let out = ''
      for (let i = 0; i < 14; i++) {
        await step('b1')
        out += (await value('b1', 'lamp')) ? '#' : '.'
      }
      return out
    }
    const first = await trace()
    const { runs, state } = await scenario('b1', 'pulse')
    assert.equal(runs, 3)
    assert.equal(state, 'finished')
    assert.equal(await value('b1', 'pulses'), 3)
    assert.equal(first.split('#').length - 1, 3, `three pulses of one step each: ${first}`)
    await ok(t.call(`${SYS}/instances/b1`, 'reset'))
    await ok(t.call(`${SYS}/instances/b1`, 'prepare'))
    assert.equal(await trace(), first, 'the same jitter after a reset: runs are reproducible')
  })

  it('hooks: lifecycle events, on_run, and a client’s write refreshing the model at once', async () => {
    await ok(
      t.api('PUT', `${SYS}/models`, {
        hooked: {
          attributes: {
            celsius: { default: 20.0, type: 'float', hooks: { on_internal_set: [{ set_attr: { attribute: '$out(writes)', value: '$in(writes) + 1' } }] } },
            fahrenheit: 0.0,
            writes: { default: 0, type: 'int' },
            steps: { default: 0, type: 'int' },
            status: '',
          },
          actions: [{ function: '$out(fahrenheit)', call: '$in(celsius) * 9 / 5 + 32' }],
          hooks: {
            on_prepare: [{ set_attr: { attribute: '$out(status)', value: "'prepared'" } }],
            on_start: [{ set_attr: { attribute: '$out(status)', value: "'running'" } }],
            on_stop: [{ set_attr: { attribute: '$out(status)', value: "'stopped'" } }],
            on_run: [{ set_attr: { attribute: '$out(steps)', value: '$in(steps) + 1' } }],
            on_set: ['refresh_model'],
          },
        },
      }),
    )
    await ok(t.api('PUT', `${SYS}/instances`, { h1: 'hooked' }))
    await ok(t.call(`${SYS}/instances/h1`, 'prepare'))
    assert.equal(await value('h1', 'status'), 'prepared')
    await ok(t.api('PUT', `${SYS}/instances/h1/attributes/celsius/attr/internal_value`, { value: 100.0 }))
    assert.equal(await value('h1', 'fahrenheit'), 212, 'refresh_model ran the actions without a step')
    assert.equal(await value('h1', 'writes'), 1, 'the attribute’s own hook')
    assert.equal((await ok(t.api('GET', `${SYS}/instances/h1/timer/attr/time`))).value, 0, 'time did not move')
    await step('h1')
    await step('h1')
    assert.equal(await value('h1', 'steps'), 2)
    await ok(t.call(`${SYS}/instances/h1`, 'start'))
    assert.equal(await value('h1', 'status'), 'running')
    await ok(t.call(`${SYS}/instances/h1`, 'stop'))
    assert.equal(await value('h1', 'status'), 'stopped')
  })

  it('refresh_model in a hook keeps what an active scenario holds, as a step does', async () => {
    await ok(
      t.api('PUT', `${SYS}/models`, {
        refreshed: {
          attributes: { o: 0.0, x: 0.0 },
          actions: [{ function: '$out(o)', call: '5.0' }],
          scenarios: { s: { overrides: { o: 42.0 } } },
          hooks: { on_set: ['refresh_model'] },
        },
      }),
    )
    await ok(t.api('PUT', `${SYS}/instances`, { rf1: 'refreshed' }))
    await ok(t.call(`${SYS}/instances/rf1/scenarios/s`, 'start'))
    await step('rf1')
    assert.equal(await value('rf1', 'o'), 42)
    await ok(t.api('PUT', `${SYS}/instances/rf1/attributes/x/attr/internal_value`, { value: 1.0 }))
    assert.equal(await value('rf1', 'o'), 42, 'still held while the scenario is active')
    await ok(t.call(`${SYS}/instances/rf1/scenarios/s`, 'stop'))
    await ok(t.api('PUT', `${SYS}/instances/rf1/attributes/x/attr/internal_value`, { value: 2.0 }))
    assert.equal(await value('rf1', 'o'), 5, 'the action’s value once nothing holds it')
  })

  it('two scenarios holding the same values give them back as a stack, whatever order they stop in', async () => {
    await ok(
      t.api('PUT', `${SYS}/models`, {
        gateway: {
          attributes: { mode: 'normal' },
          scenarios: {
            glitch: { overrides: { mode: 'glitch', 'communication.modbus_slave.faults': { no_response: true } } },
            busy: { overrides: { mode: 'busy', 'communication.modbus_slave.faults': { exception: { code: 6 } } } },
          },
          communication: { modbus_slave: { port: 0, mapping: {} } },
        },
      }),
    )
    await ok(t.api('PUT', `${SYS}/instances`, { gw: 'gateway' }))
    await ok(t.call(`${SYS}/instances/gw`, 'prepare'))
    const faults = async (): Promise<Record<string, unknown>> => (await ok(t.api('GET', `${SYS}/instances/gw/communication/modbus_slave/attr/faults`))).value
    const start = (s: string): Promise<unknown> => ok(t.call(`${SYS}/instances/gw/scenarios/${s}`, 'start'))
    const stop = (s: string): Promise<unknown> => ok(t.call(`${SYS}/instances/gw/scenarios/${s}`, 'stop'))
    await start('glitch')
    await start('busy')
    assert.equal(await value('gw', 'mode'), 'busy')
    await stop('glitch')
    assert.equal(await value('gw', 'mode'), 'busy', 'the one started last still holds')
    assert.equal((await faults()).exception !== undefined, true)
    await step('gw')
    assert.equal(await value('gw', 'mode'), 'busy')
    await stop('busy')
    assert.equal(await value('gw', 'mode'), 'normal', 'back to the value before both')
    assert.deepEqual(await faults(), {})
    // And in the other order: the later one's stop brings the earlier one's values back.
    await start('glitch')
    await start('busy')
    await stop('busy')
    assert.equal(await value('gw', 'mode'), 'glitch')
    assert.equal((await faults()).no_response !== undefined, true)
    await stop('glitch')
    assert.equal(await value('gw', 'mode'), 'normal')
    assert.deepEqual(await faults(), {})
    await ok(t.call(`${SYS}/instances/gw`, 'stop'))
  })

  it('deleting an instance mid-scenario restores what it held outside the instance', async () => {
    await ok(
      t.api('PUT', `${SYS}/models`, {
        hog: { attributes: { x: 0.0 }, scenarios: { slow_poll: { overrides: { '~.polling.interval': 7.5 } } } },
      }),
    )
    await ok(t.api('PUT', `${SYS}/instances`, { g1: 'hog' }))
    const before = (await ok(t.api('GET', `${SYS}/polling/attr/interval`))).value
    await ok(t.call(`${SYS}/instances/g1/scenarios/slow_poll`, 'start'))
    assert.equal((await ok(t.api('GET', `${SYS}/polling/attr/interval`))).value, 7.5)
    await ok(t.api('DELETE', `${SYS}/instances/g1`))
    assert.equal((await ok(t.api('GET', `${SYS}/polling/attr/interval`))).value, before)
  })

  it('a pinned-timer run with scenarios gives the same register values every time', async () => {
    await ok(
      t.api('PUT', `${SYS}/models`, {
        drifting: {
          attributes: { f: 50.0, code: { default: 0, type: 'int' } },
          actions: [
            { noise: '$out(f)', std: 0.05, seed: 3 },
            { function: '$out(code)', call: 'int($in(f) * 100) % 65536' },
          ],
          scenarios: { drift: { enabled: true, period: 4, jitter: 1.5, duration: 2, actions: [{ function: '$out(f)', call: '$in(f) + 0.5' }] } },
          communication: {
            modbus_slave: { port: 0, mapping: { f: { address: [0, 1], group: 'h_r', type: 'float' }, code: { address: 2, group: 'h_r', type: 'uint_16' } } },
          },
        },
      }),
    )
    await ok(t.api('PUT', `${SYS}/instances`, { d1: 'drifting' }))
    const dump = async (): Promise<string> => {
      await ok(t.call(`${SYS}/instances/d1`, 'reset'))
      await ok(t.call(`${SYS}/instances/d1`, 'prepare'))
      const port = (await ok(t.api('GET', `${SYS}/instances/d1/communication/modbus_slave`))).port as number
      const out: string[] = []
      for (let i = 0; i < 12; i++) {
        await ok(t.api('PUT', `${SYS}/instances/d1/timer/attr/time`, { value: i * 0.5 }))
        await step('d1')
        const raw = await new Promise<Buffer>((resolve, reject) => {
          const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write(Buffer.from([0, 1, 0, 0, 0, 6, 1, 3, 0, 0, 0, 3])))
          socket.once('data', (data) => {
            socket.destroy()
            resolve(data)
          })
          socket.once('error', reject)
        })
        out.push(raw.subarray(9).toString('hex'))
      }
      await ok(t.call(`${SYS}/instances/d1`, 'stop'))
      return out.join(' ')
    }
    const first = await dump()
    assert.equal(await dump(), first)
    assert.ok(new Set(first.split(' ')).size > 6, `the registers change from step to step: ${first}`)
  })

  it('a seeded fuzz of scenario definitions gives only 200 or 422, and the server keeps serving', async () => {
    const random = generator(20261124)
    const pick = <T>(items: readonly T[]): T => random.pick(items)
    const values = [0, -1, 1.5, 'x', null, true, [], {}, '$in(a)', '$out(zz)', 1e308, 'communication.nope.x', '~.polling.interval']
    const keys = ['duration', 'period', 'jitter', 'run_limit', 'enabled', 'overrides', 'actions', 'conditions', 'call', 'display_name', 'bogus']
    for (let i = 0; i < 60; i++) {
      const scenario: Record<string, unknown> = {}
      for (let k = 0; k < 3; k++) {
        const key = pick(keys)
        scenario[key] =
          key === 'overrides'
            ? { [pick(['$out(a)', 'a', '~.polling.interval', 'communication.modbus_slave.response_delay', '#ext(a)', '$in(zz)'])]: pick(values) }
            : key === 'actions'
              ? [{ [pick(['set', 'function', 'noise', 'pid', 'call'])]: pick(['$out(a)', 'a', 'zz']), value: pick(values), call: pick(['1', '1 +', '$in(a)']) }]
              : pick(values)
      }
      const res = await t.api('PUT', `${SYS}/models`, { [`fz${i}`]: { attributes: { a: 0.0 }, scenarios: { s: scenario } } })
      assert.ok(res.status === 200 || res.status === 422, `${res.status} for ${JSON.stringify(scenario)}: ${JSON.stringify(res.body)}`)
      if (res.status === 200) {
        await ok(t.api('PUT', `${SYS}/instances`, { [`fz${i}_1`]: `fz${i}` }))
        const started = await t.call(`${SYS}/instances/fz${i}_1/scenarios/s`, 'start')
        assert.ok(started.status < 500, `start: ${started.status} ${JSON.stringify(started.body)}`)
        const run = await t.call(`${SYS}/instances/fz${i}_1`, 'run')
        assert.ok(run.status < 500, `run: ${run.status} ${JSON.stringify(run.body)}`)
        await ok(t.api('DELETE', `${SYS}/instances/fz${i}_1`))
      }
    }
    assert.equal((await fetch(`${t.url}/health`)).status, 200)
  })

  it('a scenario named as the reference product names them (spaces, `name` for the display name) starts and stops by that name', async () => {
    const model = {
      attributes: { wind: 3.0 },
      scenarios: { 'Summer storm': { name: 'Summer Storm', duration: 60.0, overrides: { '$in(wind)': 25.0 } } },
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Weather: model })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { w1: 'Weather' })).status, 200)
    const node = `${SYS}/instances/w1/scenarios/${encodeURIComponent('Summer storm')}`
    assert.equal((await t.call(node, 'start')).status, 200)
    const doc = await t.api('GET', node)
    assert.equal(doc.body.name, 'Summer storm')
    assert.equal(doc.body.attr.display_name.value, 'Summer Storm')
    assert.equal(doc.body.attr.state.value, 'active')
    assert.equal((await t.api('GET', `${SYS}/instances/w1/attributes/wind/value`)).body.value, 25)
    assert.equal((await t.call(node, 'stop')).status, 200)
    assert.equal((await t.api('GET', `${SYS}/instances/w1/attributes/wind/value`)).body.value, 3)
    // A name cannot hold what separates the parts of a path.
    const bad = await t.api('PUT', `${SYS}/models`, { Bad: { attributes: { a: 1.0 }, scenarios: { 'a.b': { duration: 1.0 }, ' lead': { duration: 1.0 } } } })
    assert.equal(bad.status, 422)
    assert.deepEqual(
      bad.body.error.details.map((d: { path: string }) => d.path),
      ['scenarios.a.b', 'scenarios. lead'],
    )
  })

  it('refuses bad scenarios and hooks with a 422 naming each problem', async () => {
    const res = await t.api('PUT', `${SYS}/models`, {
      bad: {
        attributes: { a: 0.0, flag: { default: false, hooks: { on_sneeze: [] } } },
        scenarios: {
          s: { duration: -1, overrides: { '$out(nope)': 1, a: 'high' }, actions: [{ set: '$out(a)' }], colour: 'red' },
          t: 'not a map',
        },
        hooks: { on_run: [{ set_attr: { attribute: '$out(a)', value: '1 +' } }, { call: { path: 'no dots' } }, { teleport: {} }] },
      },
    })
    assert.equal(res.status, 422)
    const paths = new Set((res.body as any).error.details.map((d: { path: string }) => d.path))
    for (const path of [
      'scenarios.s.duration',
      'scenarios.s.overrides.$out(nope)',
      'scenarios.s.overrides.a',
      'scenarios.s.actions[0].value',
      'scenarios.s.colour',
      'scenarios.t',
      'hooks.on_run[0].set_attr.value',
      'hooks.on_run[1].call.path',
      'hooks.on_run[2].teleport',
      'attributes.flag.hooks.on_sneeze',
    ]) {
      assert.ok(paths.has(path), `${path} in ${JSON.stringify([...paths])}`)
    }
    assert.equal((await t.api('GET', `${SYS}/models/bad`)).status, 404)
  })
})
