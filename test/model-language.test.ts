// The model language through the running server (MODEL_LANGUAGE.md sections 1 to 5 and 9):
// every action kind against values worked out here from its documented formula, conditions,
// time, parameters, connections in the reference syntax, held actions, and bad input refused
// with the path of each problem while the running system stays as it was.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { freePort, startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

describe('the model language on a running server', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(async () => t.close())

  const define = async (models: Record<string, unknown>): Promise<void> => {
    const res = await t.api('PUT', `${SYS}/models`, models)
    assert.equal(res.status, 200, JSON.stringify(res.body))
  }
  const create = async (instances: Record<string, unknown>): Promise<void> => {
    const res = await t.api('PUT', `${SYS}/instances`, instances)
    assert.equal(res.status, 200, JSON.stringify(res.body))
  }
  const value = async (instance: string, attr: string): Promise<unknown> => {
    const res = await t.api('GET', `${SYS}/instances/${instance}/attributes/${attr}/attr/internal_value`)
    assert.equal(res.status, 200, JSON.stringify(res.body))
    return res.body.value
  }
  const at = async (instance: string, time: number): Promise<void> => {
    assert.equal((await t.api('PUT', `${SYS}/instances/${instance}/timer/attr/time`, { value: time })).status, 200)
    const run = await t.call(`${SYS}/instances/${instance}`, 'run')
    assert.equal(run.status, 200, JSON.stringify(run.body))
  }
  const steps = async (instance: string, n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const run = await t.call(`${SYS}/instances/${instance}`, 'run')
      assert.equal(run.status, 200, JSON.stringify(run.body))
    }
  }

  it('function and set: Python values, several targets, each converted to its attribute type', async () => {
    await define({
      calc: {
        attributes: { half: 0.0, count: { default: 0, type: 'int' }, on: false, label: '', total: { default: 0, type: 'any' } },
        actions: [
          { function: ['$out(half)', '$out(count)'], call: '7 / 2' },
          { set: '$out(on)', value: 'count' },
          { function: { output: '#attr(label)', call: '"{v:.2f}|{n}".format(v=$in(half), n=$in(count))' } },
          { function: '$out(total)', call: 'sum(x ** 2 for x in range(count + 1)) // 2' },
        ],
      },
    })
    await define({
      lookups: {
        attributes: { out: 0.0, fallback: 0.0 },
        actions: [
          { function: '$out(out)', params: { k: '$in(out) + 1', base: 10 }, call: 'k * base' },
          { function: '$out(fallback)', params: { step: '$(nothing.here) or $(~.polling.interval) or 0.25' }, call: 'step' },
        ],
      },
    })
    await create({ l1: 'lookups' })
    await steps('l1', 2)
    assert.equal(await value('l1', 'out'), 110, 'params are evaluated each step, before the call')
    assert.equal(await value('l1', 'fallback'), 1, '$(path) of nothing is None, so `or` falls through to the root polling interval')
    await create({ c1: 'calc' })
    await steps('c1', 1)
    assert.equal(await value('c1', 'half'), 3.5)
    assert.equal(await value('c1', 'count'), 3, 'int() truncates 3.5')
    assert.equal(await value('c1', 'on'), true)
    assert.equal(await value('c1', 'label'), '3.50|3')
    assert.equal(await value('c1', 'total'), 7, '(0+1+4+9)//2')
  })

  it('ramp, saw and interpolate give the documented value at the timer time', async () => {
    await define({
      shapes: {
        attributes: {
          lin: 0.0,
          smooth: 0.0,
          over: 0.0,
          saw: 0.0,
          rev: 0.0,
          line: 0.0,
          stair: 0.0,
          spline: 0.0,
          filled: 0.0,
          steps: { default: 0, type: 'int' },
        },
        actions: [
          { ramp: '$out(lin)', start_value: 0, stop_value: 10, duration: 5 },
          { ramp: '$out(smooth)', start_value: 0, stop_value: 10, duration: 5, type: 'spline' },
          { ramp: '$out(over)', start_value: 0, stop_value: 10, duration: 5, overshoot: 20, stabilization_time: 4 },
          { saw: '$out(saw)', start_value: 0, stop_value: 4, period: 2 },
          { saw: '$out(rev)', start_value: 0, stop_value: 4, period: 2, type: 'reverse' },
          {
            interpolate: '$out(line)',
            points: [
              [0, 0],
              [10, 100],
              [20, 50],
            ],
          },
          {
            interpolate: '$out(stair)',
            points: [
              [0, 0],
              [10, 100],
              [20, 50],
            ],
            method: 'step',
          },
          {
            interpolate: '$out(spline)',
            points: [
              [0, 0],
              [1, 1],
              [2, 0],
              [3, 1],
            ],
            method: 'spline',
          },
          {
            interpolate: '$out(filled)',
            points: [
              [0, 0],
              [10, 100],
            ],
            fill_value: -1,
          },
          { ramp: '$out(steps)', start_value: 0, stop_value: 10, duration: 4, output_type: 'int' },
        ],
      },
    })
    await create({ s1: 'shapes' })
    await at('s1', 2.5)
    assert.equal(await value('s1', 'lin'), 5)
    assert.equal(await value('s1', 'smooth'), 10 * (0.5 * 0.5 * (3 - 2 * 0.5)))
    assert.equal(await value('s1', 'saw'), 4 * 0.25, 'phase (2.5 mod 2) / 2 = 0.25')
    assert.equal(await value('s1', 'rev'), 4 - 4 * 0.25)
    assert.equal(await value('s1', 'line'), 25)
    assert.equal(await value('s1', 'stair'), 0)
    assert.equal(await value('s1', 'steps'), 6, 'round(6.25) = 6')
    await at('s1', 1.25)
    // The natural cubic spline through (0,0),(1,1),(2,0),(3,1): second derivatives M1 = -4,
    // M2 = 4 (from 4·M1 + M2 = -12, M1 + 4·M2 = 12); at 1.25, a = 0.75, b = 0.25:
    // 0.75·1 + ((a³-a)·M1 + (b³-b)·M2) / 6 = 0.75 + (1.3125 - 0.9375) / 6 = 0.8125.
    assert.ok(Math.abs(((await value('s1', 'spline')) as number) - 0.8125) < 1e-12)
    assert.equal(await value('s1', 'smooth'), 10 * (0.25 * 0.25 * (3 - 2 * 0.25)))
    await at('s1', 6)
    assert.equal(await value('s1', 'lin'), 10)
    assert.equal(await value('s1', 'over'), 10 + (20 / 100) * 10 * Math.sin(Math.PI * 0.25) * 0.75)
    await at('s1', 15)
    assert.equal(await value('s1', 'line'), 75)
    assert.equal(await value('s1', 'stair'), 100)
    assert.equal(await value('s1', 'filled'), -1, 'beyond the last point: fill_value')
    await at('s1', 25)
    assert.equal(await value('s1', 'line'), 25, 'extrapolated along the last segment')
    await at('s1', 10)
    assert.equal(await value('s1', 'over'), 10, 'settled after duration + stabilization_time')
  })

  it('pid: the output sequence of the documented controller, with anti-windup at the limit', async () => {
    await define({
      loop: {
        timer: { time_step: 0.5 },
        attributes: { sp: 10.0, pv: 4.0, out: 0.0 },
        actions: [{ pid: '$out(out)', setpoint: '$in(sp)', input: '$in(pv)', kp: 2, ki: 0.5, kd: 0.1, output_max: 15, output_min: -15 }],
      },
    })
    await create({ p1: 'loop' })
    // The same controller written out here: parallel form, integral kept while clamped.
    let integral = 0
    let previous: number | undefined
    const expected: number[] = []
    const controller = (sp: number, pv: number): number => {
      const dt = 0.5
      const e = sp - pv
      const next = integral + 0.5 * e * dt
      const d = previous === undefined ? 0 : (e - previous) / dt
      let out = 2 * e + next + 0.1 * d
      if (out > 15) out = 15
      else if (out < -15) out = -15
      else integral = next
      previous = e
      return out
    }
    const seen: unknown[] = []
    for (let i = 0; i < 5; i++) {
      await steps('p1', 1)
      expected.push(controller(10, 4))
      seen.push(await value('p1', 'out'))
    }
    assert.equal((await t.api('PUT', `${SYS}/instances/p1/attributes/sp/attr/internal_value`, { value: 5.0 })).status, 200)
    for (let i = 0; i < 3; i++) {
      await steps('p1', 1)
      expected.push(controller(5, 4))
      seen.push(await value('p1', 'out'))
    }
    assert.deepEqual(seen, expected)
    assert.ok(expected.includes(15), 'the sequence reaches the limit')
  })

  it('noise is Python’s random.Random(seed).gauss on the clean value, and reset() starts it over', async () => {
    await define({
      noisy: {
        attributes: { v: 0.0, w: 0.0 },
        actions: [
          { set: '$out(v)', value: 100.0 },
          { noise: '$out(v)', std: 2.0, mean: 0.5, seed: 42 },
          { set: '$out(w)', value: 10.0 },
          { noise: '$out(w)', std: 2.0, seed: 'pump_7 é' },
        ],
      },
    })
    await create({ n1: 'noisy' })
    const seen: number[][] = []
    for (let i = 0; i < 4; i++) {
      await steps('n1', 1)
      seen.push([(await value('n1', 'v')) as number, (await value('n1', 'w')) as number])
    }
    const { execFileSync } = await import('node:child_process')
    const py = execFileSync('/usr/bin/python3', [
      '-c',
      "import random, json; r = random.Random(42); s = random.Random('pump_7 é'); print(json.dumps([[100.0 + r.gauss(0.5, 2.0), 10.0 + s.gauss(0.0, 2.0)] for _ in range(4)]))",
    ])
    assert.deepEqual(seen, JSON.parse(String(py)))
    assert.equal((await t.call(`${SYS}/instances/n1`, 'reset')).status, 200)
    await steps('n1', 1)
    assert.equal(await value('n1', 'v'), seen[0]![0])
  })

  it('a failed step keeps nothing of a PID or a noise: the integral and the clean value under the noise are as before it', async () => {
    await define({
      stateful: {
        timer: { time_step: 1.0 },
        attributes: { flag: 0.0, v: 10.0, u: 0.0, z: 1.0 },
        actions: [
          { noise: '$out(v)', std: 0.5, seed: 11 },
          { pid: '$out(u)', setpoint: 10, input: 0, kp: 0, ki: 1 },
          { function: '$out(z)', name: 'ratio', call: '1 / (1 - $in(flag))' },
        ],
      },
    })
    await create({ st1: 'stateful' })
    const flag = `${SYS}/instances/st1/attributes/flag/attr/internal_value`
    const seen: number[][] = []
    const step = async (expect: number): Promise<void> => {
      assert.equal((await t.call(`${SYS}/instances/st1`, 'run')).status, expect)
      seen.push([(await value('st1', 'v')) as number, (await value('st1', 'u')) as number])
    }
    await step(200)
    await t.api('PUT', flag, { value: 1.0 })
    await step(500)
    await t.api('PUT', flag, { value: 0.0 })
    await step(200)
    await step(200)
    const { execFileSync } = await import('node:child_process')
    const g = JSON.parse(
      String(execFileSync('/usr/bin/python3', ['-c', 'import random, json; r = random.Random(11); print(json.dumps([r.gauss(0, 0.5) for _ in range(4)]))'])),
    ) as number[]
    // The failed step drew its number (the generator is not taken back) but wrote nothing: the
    // steps after it ride on the clean 10.0, and the integral grows by 10 per good step only.
    assert.deepEqual(seen, [
      [10 + g[0]!, 10],
      [10 + g[0]!, 10],
      [10 + g[2]!, 20],
      [10 + g[3]!, 30],
    ])
  })

  it('conditions run the first matching branch of each if; if_chain runs one branch of the whole chain', async () => {
    await define({
      alarms: {
        attributes: { level: 50.0, high: false, low: false, state: '' },
        conditions: [
          { if: '$in(level) >= 90', actions: [{ set: '$out(high)', value: true }] },
          { else: null, actions: [{ set: '$out(high)', value: false }] },
          { if: '$in(level) <= 10', actions: [{ set: '$out(low)', value: true }] },
          { else: [{ set: '$out(low)', value: false }] },
        ],
        if_chain: [
          { if: 'high', actions: [{ set: '$out(state)', value: "'high'" }] },
          { if: 'low', actions: [{ set: '$out(state)', value: "'low'" }] },
          { else: null, actions: [{ set: '$out(state)', value: "'normal'" }] },
        ],
      },
    })
    await create({ a1: 'alarms' })
    for (const [level, high, low, state] of [
      [95, true, false, 'high'],
      [50, false, false, 'normal'],
      [5, false, true, 'low'],
    ] as const) {
      assert.equal((await t.api('PUT', `${SYS}/instances/a1/attributes/level/attr/internal_value`, { value: level })).status, 200)
      await steps('a1', 1)
      assert.deepEqual([await value('a1', 'high'), await value('a1', 'low'), await value('a1', 'state')], [high, low, state], `level ${level}`)
    }
  })

  it('a step that raises keeps none of its writes, does not move time, and names instance, action and expression', async () => {
    await define({
      fragile: {
        attributes: { a: 1.0, b: 1.0, zero: 0.0 },
        actions: [
          { set: '$out(a)', value: 5.0 },
          { name: 'ratio', function: '$out(b)', call: '$in(a) / $in(zero)' },
        ],
      },
    })
    await create({ f1: 'fragile' })
    const run = await t.call(`${SYS}/instances/f1`, 'run')
    assert.equal(run.status, 500)
    assert.equal(run.body.error.type, 'UserCodeError')
    assert.match(run.body.error.message, /f1/)
    assert.match(run.body.error.message, /ratio/)
    assert.match(run.body.error.message, /ZeroDivisionError: float division by zero/)
    assert.match(run.body.error.message, /\$in\(a\) \/ \$in\(zero\)/)
    assert.equal(await value('f1', 'a'), 1, 'the first action’s write is taken back')
    assert.equal((await t.api('GET', `${SYS}/instances/f1/timer/attr/time`)).body.value, 0)
    const sys = await t.call(SYS, 'run', { steps: 3 })
    assert.equal(sys.status, 500)
    assert.equal(sys.body.error.details[0].path, 'instances.f1')
    assert.equal((await t.api('PUT', `${SYS}/instances/f1/attributes/zero/attr/internal_value`, { value: 2.0 })).status, 200)
    await steps('f1', 1)
    assert.deepEqual([await value('f1', 'a'), await value('f1', 'b')], [5, 2.5])
  })

  it('an action can be switched off on one instance while it runs', async () => {
    await define({ counter: { attributes: { n: { default: 0, type: 'int' } }, actions: [{ name: 'tick', function: '$out(n)', call: '$in(n) + 1' }] } })
    await create({ k1: 'counter', k2: 'counter' })
    const doc = await t.api('GET', `${SYS}/instances/k1/actions/tick`)
    assert.equal(doc.status, 200)
    assert.equal(doc.body.attr.kind.value, 'function')
    assert.equal((await t.api('PUT', `${SYS}/instances/k1/actions/tick/attr/enabled`, { value: false })).status, 200)
    assert.equal((await t.call(SYS, 'run', { steps: 3 })).status, 200)
    assert.deepEqual([await value('k1', 'n'), await value('k2', 'n')], [0, 3])
    assert.equal((await t.api('PUT', `${SYS}/instances/k1/actions/tick/attr/enabled`, { value: 'no' })).status, 422)
  })

  it("distortions: its actions run after the model's own each step, as actions named distortions_<kind>_<n>", async () => {
    await define({
      distorted: {
        attributes: { clean: 0.0, reading: 0.0 },
        actions: [
          { function: '$out(clean)', call: '$in(clean) + 1' },
          { set: '$out(reading)', value: '$in(clean)' },
        ],
        distortions: { description: 'offset of the sensor', actions: [{ function: '$out(reading)', call: '$in(reading) + 0.5' }] },
      },
    })
    await create({ d1: 'distorted' })
    await steps('d1', 2)
    assert.deepEqual([await value('d1', 'clean'), await value('d1', 'reading')], [2, 2.5])
    const doc = await t.api('GET', `${SYS}/instances/d1/actions/distortions_function_0`)
    assert.equal(doc.status, 200, JSON.stringify(doc.body))
    assert.equal(doc.body.attr.kind.value, 'function')
    assert.equal((await t.api('PUT', `${SYS}/instances/d1/actions/distortions_function_0/attr/enabled`, { value: false })).status, 200)
    await steps('d1', 1)
    assert.deepEqual([await value('d1', 'clean'), await value('d1', 'reading')], [3, 3])
    const paths = async (distortions: unknown): Promise<string[]> => {
      const bad = await t.api('PUT', `${SYS}/models`, { broken: { attributes: { x: 0.0 }, distortions } })
      assert.equal(bad.status, 422, JSON.stringify(bad.body))
      return bad.body.error.details.map((d: { path: string }) => d.path)
    }
    assert.deepEqual(await paths({ actions: [], extra: 1 }), ['distortions.extra'])
    assert.deepEqual(await paths({ actions: [{ noise: '$out(y)', std: 1.0 }] }), ['distortions.actions[0].noise'])
  })

  it('timer keys: time_step, initial_time, decimal_places, max_duration clamping and auto_reset wrapping', async () => {
    await define({
      clocked: {
        timer: { time_step: 0.1, initial_time: 1, decimal_places: 6 },
        attributes: { seen: 0.0 },
        actions: [{ function: '$out(seen)', call: '$attr(timer.time)' }],
      },
      clamped: { timer: { step: 1, max_duration: 2.5 }, attributes: {} },
      wrapped: { timer: { time_step: 1, max_duration: 2.5, auto_reset: true }, attributes: {} },
    })
    await create({ c1: 'clocked', c2: 'clamped', c3: 'wrapped' })
    await steps('c1', 3)
    assert.equal(await value('c1', 'seen'), 1.2, 'actions see the time before the step moves it on')
    assert.equal((await t.api('GET', `${SYS}/instances/c1/timer/attr/time`)).body.value, 1.3)
    await steps('c2', 4)
    assert.equal((await t.api('GET', `${SYS}/instances/c2/timer/attr/time`)).body.value, 2.5)
    // auto_reset: 0, 1, 2, then the step that would pass 2.5 starts over at 0, then 1, 2, 0 again.
    const seen: number[] = []
    for (let i = 0; i < 7; i++) {
      seen.push((await t.api('GET', `${SYS}/instances/c3/timer/attr/time`)).body.value)
      await steps('c3', 1)
    }
    assert.deepEqual(seen, [0, 1, 2, 0, 1, 2, 0])
    assert.equal((await t.call(`${SYS}/instances/c1`, 'reset')).status, 200)
    assert.equal((await t.api('GET', `${SYS}/instances/c1/timer/attr/time`)).body.value, 1)
  })

  it('parameters: meta_parameters with defaults, $param in expressions and adapter settings, init_parameters', async () => {
    const port = await freePort()
    await define({
      scaled: {
        meta_parameters: { gain: { type: 'float', default: 2.0 }, port: { type: 'int', required: true }, unit: { type: 'string', default: 'bar' } },
        attributes: { x: 1.5, y: 0.0, label: '' },
        actions: [
          { function: '$out(y)', call: '$in(x) * $param(gain)' },
          { function: '$out(label)', call: '"{:.1f} {}".format($in(y), $param(unit))' },
        ],
        communication: { modbus_slave: { port: '$param(port)', mapping: { y: { address: [0, 1], group: 'h_r', type: 'float' } } } },
      },
    })
    await create({ g1: { type: 'scaled', parameters: { gain: 3.0, port }, init_parameters: { x: 2.0 } } })
    await steps('g1', 1)
    assert.equal(await value('g1', 'y'), 6)
    assert.equal(await value('g1', 'label'), '6.0 bar')
    assert.equal((await t.call(`${SYS}/instances/g1`, 'prepare')).status, 200)
    assert.equal((await t.api('GET', `${SYS}/instances/g1/communication/modbus_slave/attr/port`)).body.value, port)
    const bad = await t.api('PUT', `${SYS}/instances`, { g2: { type: 'scaled', parameters: { gain: 'high', colour: 1 } } })
    assert.equal(bad.status, 422)
    const paths = bad.body.error.details.map((d: { path: string }) => d.path).sort()
    assert.deepEqual(paths, ['g2.parameters.colour', 'g2.parameters.gain', 'g2.parameters.port'])
    assert.equal((await t.api('GET', `${SYS}/instances/g2`)).status, 404)
    // A snapshot keeps the instance with its parameters, as given.
    const saved = await t.call(`${SYS}/snapshots`, 'save', {})
    assert.equal(saved.status, 200, JSON.stringify(saved.body))
    const { readFile } = await import('node:fs/promises')
    const file = JSON.parse(await readFile(saved.body.result.persisted_path, 'utf8'))
    assert.deepEqual(
      file.definition.instances.find((i: Record<string, unknown>) => 'g1' in i),
      { g1: { type: 'scaled', parameters: { gain: 3.0, port }, init_parameters: { x: 2.0 } } },
    )
    assert.equal((await t.call(`${SYS}/instances/g1`, 'stop')).status, 200)
  })

  it('connections in the reference syntax, and a disabled connection carries nothing until enabled', async () => {
    await define({ src: { attributes: { out: 5.0 } }, dst: { attributes: { inp: 0.0 } } })
    await create({ s: 'src', d: 'dst' })
    const put = await t.api('PUT', `${SYS}/connections`, { wire: { from: '#attr(s.out)', to: '#attr(d.inp)', enabled: false } })
    assert.equal(put.status, 200, JSON.stringify(put.body))
    assert.equal((await t.call(SYS, 'run', { steps: 1 })).status, 200)
    assert.equal(await value('d', 'inp'), 0)
    assert.equal((await t.api('PUT', `${SYS}/connections/wire/attr/enabled`, { value: true })).status, 200)
    assert.equal((await t.call(SYS, 'run', { steps: 1 })).status, 200)
    assert.equal(await value('d', 'inp'), 5)
    const bad = await t.api('PUT', `${SYS}/connections`, { w2: { from: '#attr(s.nothing)', to: '#ext(d.inp)' } })
    assert.equal(bad.status, 422)
    assert.equal(bad.body.error.details[0].path, 'w2.from')
    assert.equal((await t.api('DELETE', `${SYS}/connections/wire`)).status, 200)
  })

  it('override, suspend and call actions hold from prepare until stop, and stop restores', async () => {
    await define({
      held: {
        attributes: { mode: 'auto', n: { default: 0, type: 'int' } },
        actions: [
          { set: '$out(mode)', value: "'auto'" },
          { name: 'count', function: '$out(n)', call: '$in(n) + 1' },
          { override: { '$out(mode)': 'forced', 'communication.modbus_slave.response_delay': 0.25 } },
          { suspend: 'actions.count' },
          { call: 'communication.modbus_slave.detach', stop_path: 'communication.modbus_slave.attach' },
        ],
        communication: { modbus_slave: { port: 0, mapping: { n: { address: 0, group: 'h_r', type: 'int_16' } } } },
      },
    })
    await create({ h1: 'held' })
    const adapter = `${SYS}/instances/h1/communication/modbus_slave`
    assert.equal((await t.call(`${SYS}/instances/h1`, 'prepare')).status, 200)
    assert.equal((await t.api('GET', `${adapter}/attr/response_delay`)).body.value, 0.25)
    assert.equal((await t.api('GET', `${adapter}`)).body.state, 'DETACHED')
    await steps('h1', 2)
    assert.equal(await value('h1', 'mode'), 'forced', 'held against the set action')
    assert.equal(await value('h1', 'n'), 0, 'the suspended action did not run')
    assert.equal((await t.call(`${SYS}/instances/h1`, 'stop')).status, 200)
    assert.equal((await t.api('GET', `${adapter}/attr/response_delay`)).body.value, 0)
    assert.equal(await value('h1', 'mode'), 'auto', 'restored on stop')
    assert.equal((await t.api('GET', `${SYS}/instances/h1/actions/count/attr/enabled`)).body.value, true)
    await steps('h1', 1)
    assert.equal(await value('h1', 'n'), 1)
  })

  it('refuses bad behaviour with a 422 naming each problem, and changes nothing', async () => {
    await define({ keep: { attributes: { a: 1.0 } } })
    const before = (await t.api('GET', `${SYS}/models`)).body
    const res = await t.api('PUT', `${SYS}/models`, {
      broken: {
        attributes: { a: 0.0, n: { default: 0, type: 'int' } },
        actions: [
          { frobnicate: '$out(a)' },
          { function: '$out(a)', call: '1 +' },
          { function: '$out(nope)', call: '1' },
          { function: '$out(a)', call: "__import__('os')" },
          { function: '$out(a)', call: "open('/etc/passwd')" },
          { function: '$out(a)', call: "eval('1')" },
          { function: '$out(a)', call: '$in(a).__class__' },
          { function: '$out(a)', call: '$in(missing) + 1' },
          { ramp: '$out(a)' },
          { noise: '$out(a)', type: 'purple' },
          {
            interpolate: '$out(a)',
            points: [
              [0, 1],
              [0, 2],
            ],
          },
        ],
        conditions: [{ if: 'a >', actions: [] }, { else: null }],
      },
      keep: { attributes: { a: 2.0 } },
    })
    assert.equal(res.status, 422)
    const paths = new Set(res.body.error.details.map((d: { path: string }) => d.path))
    for (const path of [
      'broken.actions[0]',
      'broken.actions[1].call',
      'broken.actions[2].function',
      'broken.actions[3].call',
      'broken.actions[4].call',
      'broken.actions[5].call',
      'broken.actions[6].call',
      'broken.actions[7].call',
      'broken.actions[8].stop_value',
      'broken.actions[8].duration',
      'broken.actions[9].type',
      'broken.actions[10].points[1]',
      'broken.conditions[0].if',
      'broken.conditions[1].actions',
    ]) {
      assert.ok(paths.has(path), `${path} in ${JSON.stringify([...paths])}`)
    }
    const syntax = res.body.error.details.find((d: { path: string }) => d.path === 'broken.actions[1].call')
    assert.match(syntax.message, /^1:\d+: invalid syntax/)
    assert.deepEqual((await t.api('GET', `${SYS}/models`)).body, before, 'neither model changed')
    assert.equal((await t.api('GET', `${SYS}/models/broken`)).status, 404)
  })
})
