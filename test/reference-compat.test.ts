// What models and scripts written for the reference product (SPX) rely on, each feature with a
// model of its own on a real server: `timer.dt`, floats on the timer node, attribute specs with
// unknown keys, adapters of protocols Mimic does not serve (and --strict-protocols refusing them),
// `reload_modules` over both of its routes, the `overshoot` ramp against the reference's formula
// computed by Python, and `__timer` in every form the reference language has.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { parseConfig } from '../src/config.js'
import { loadDefinitionFile } from '../src/definition/load-file.js'
import { modelBehaviourProblems } from '../src/language/model/index.js'
import { startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'
import { exceptionOf, registersOf, TestClient, wordsToBuffer } from './unit/modbus/helpers.js'

const SYS = '/api/v3/system'

/** The body of a GET as the server wrote it: a float's `1.0` is lost once JSON.parse reads it. */
async function rawText(t: TestServer, path: string): Promise<string> {
  const res = await fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${TEST_KEY}` } })
  assert.equal(res.status, 200)
  return await res.text()
}

async function define(t: TestServer, name: string, model: unknown, instance = `${name}_1`): Promise<void> {
  const put = await t.api('PUT', `${SYS}/models`, { [name]: model })
  assert.equal(put.status, 200, JSON.stringify(put.body))
  const created = await t.api('PUT', `${SYS}/instances`, { [instance]: name })
  assert.equal(created.status, 200, JSON.stringify(created.body))
}

async function value(t: TestServer, instance: string, attr: string): Promise<unknown> {
  const res = await t.api('GET', `${SYS}/instances/${instance}/attributes/${attr}/attr/internal_value`)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body.value
}

describe('reference compatibility', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(async () => t.close())

  it('timer.dt is the step of the model timer, as time_step and step are', async () => {
    await define(t, 'half_step', { attributes: { x: 0.0 }, timer: { dt: 0.5 } })
    const timer = await t.api('GET', `${SYS}/instances/half_step_1/timer`)
    assert.equal(timer.body.dt, 0.5)
    assert.equal((await t.call(`${SYS}/instances/half_step_1`, 'run')).status, 200)
    assert.equal((await t.api('GET', `${SYS}/instances/half_step_1/timer/attr/time`)).body.value, 0.5)
    const clash = await t.api('PUT', `${SYS}/models`, { clash: { attributes: { x: 0.0 }, timer: { dt: 0.5, time_step: 0.25 } } })
    assert.equal(clash.status, 422)
    assert.ok(
      clash.body.error.details.some((d: { path: string }) => d.path === 'timer.dt'),
      JSON.stringify(clash.body),
    )
  })

  it('the timer and polling nodes answer their floats as floats (dt 1.0, time 0.0)', async () => {
    await define(t, 'floats', { attributes: { x: 0.0 } })
    const timer = await rawText(t, `${SYS}/instances/floats_1/timer`)
    assert.match(timer, /"dt":1\.0\b/)
    assert.match(timer, /"time":0\.0\b/)
    assert.match(timer, /"attr":\{[^]*"dt":\{"value":1\.0\}/)
    assert.equal(await rawText(t, `${SYS}/instances/floats_1/timer/attr/dt`), '{"value":1.0}')
    assert.equal(await rawText(t, `${SYS}/timer/attr/time`), '{"value":0.0}')
    assert.match(await rawText(t, `${SYS}/instances/floats_1/polling`), /"interval":1\.0\b/)
    await define(t, 'scenario_floats', { attributes: { x: 0.0 }, scenarios: { s: { duration: 3, actions: [{ set: '$out(x)', value: 1.0 }] } } })
    const scenario = await rawText(t, `${SYS}/instances/scenario_floats_1/scenarios/s`)
    assert.match(scenario, /"elapsed":0\.0\b/)
    assert.match(scenario, /"duration":3\.0\b/)
    // Still numbers to whoever reads them as JSON.
    assert.equal((await t.api('GET', `${SYS}/instances/floats_1/timer`)).body.dt, 1)
  })

  it('an attribute spec with a key that is not a spec key is a 422 naming it, with line:col from a file', async () => {
    const put = await t.api('PUT', `${SYS}/models`, { misspelt: { attributes: { v: { default: 1.0, units: 'V' } } } })
    assert.equal(put.status, 422)
    assert.deepEqual(
      put.body.error.details.map((d: { path: string }) => d.path),
      ['attributes.v.units'],
    )
    assert.match(put.body.error.details[0].message, /unknown key 'units'/)
    // A dict value is written as the default of a spec, or as a map without a `default` key.
    await define(t, 'dicts', { attributes: { d: { default: { default: 1.0, units: 'V' } }, e: { a: 1, b: 2 }, f: { type: 'dict', default: {} } } })
    assert.deepEqual(await value(t, 'dicts_1', 'd'), { default: 1.0, units: 'V' })
    assert.deepEqual(await value(t, 'dicts_1', 'e'), { a: 1, b: 2 })

    const dir = await mkdtemp(join(tmpdir(), 'mimic-spec-'))
    try {
      const file = join(dir, 'meter.yaml')
      await writeFile(file, 'attributes:\n  v:\n    default: 1.0\n    units: V\n')
      const loaded = await loadDefinitionFile(file, modelBehaviourProblems)
      assert.equal(loaded.details.length, 1, JSON.stringify(loaded.details))
      assert.equal(loaded.details[0]!.path, 'attributes.v.units')
      assert.match(JSON.stringify(loaded.details[0]), /4:5|"line":4/)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('an adapter of a protocol Mimic does not serve is an UNSUPPORTED node, its properties read as defaults, and /health lists it', async () => {
    await define(t, 'lwm2m_sensor', {
      attributes: { connected: { type: 'int', default: 1 }, requests: { type: 'int', default: 5 }, other: 'x' },
      actions: [
        { function: '$in(connected)', call: 'int($attr(communication.lwm2m.registered))' },
        { function: '$in(requests)', call: 'int($attr(communication.lwm2m.request_counter))' },
        { function: '$in(other)', call: 'str($attr(communication.lwm2m.port))' },
      ],
      communication: [{ lwm2m: { port: 56830, server: { host: '127.0.0.1', port: 5683 } } }],
      scenarios: { reconnect: { duration: 1.0, call: { path: 'communication.lwm2m.stop', stop_path: 'communication.lwm2m.start' } } },
    })
    for (let i = 0; i < 2; i++) {
      const run = await t.call(`${SYS}/instances/lwm2m_sensor_1`, 'run')
      assert.equal(run.status, 200, JSON.stringify(run.body))
    }
    assert.equal(await value(t, 'lwm2m_sensor_1', 'connected'), 0)
    assert.equal(await value(t, 'lwm2m_sensor_1', 'requests'), 0)
    assert.equal(await value(t, 'lwm2m_sensor_1', 'other'), '56830')
    const node = await t.api('GET', `${SYS}/instances/lwm2m_sensor_1/communication/lwm2m`)
    assert.equal(node.status, 200)
    assert.equal(node.body.state, 'UNSUPPORTED')
    assert.equal(node.body.kind, 'lwm2m')
    assert.equal(node.body.type, 'UnsupportedAdapter')
    assert.match(node.body.detail, /does not serve the lwm2m protocol/)
    const scenario = await t.call(`${SYS}/instances/lwm2m_sensor_1/scenarios/reconnect`, 'start')
    assert.equal(scenario.status, 200, JSON.stringify(scenario.body))
    const instance = await t.api('GET', `${SYS}/instances/lwm2m_sensor_1`)
    assert.deepEqual(instance.body.unsupported_protocols, ['lwm2m'])
    const health = await t.api('GET', '/health')
    assert.deepEqual(health.body.unsupported_adapters, [{ instance: 'lwm2m_sensor_1', adapter: 'lwm2m', kind: 'lwm2m' }])
  })

  it('__timer is an attribute of every instance, listed, read-only to clients', async () => {
    await define(t, 'timed', { attributes: { x: 0.0 }, timer: { time_step: 0.25 } })
    await t.call(`${SYS}/instances/timed_1`, 'run')
    const list = await t.api('GET', `${SYS}/instances/timed_1/attributes`)
    assert.deepEqual(
      list.body.children.map((c: { name: string }) => c.name),
      ['x', '__timer'],
    )
    const timer = await t.api('GET', `${SYS}/instances/timed_1/attributes/__timer`)
    assert.equal(timer.body.internal_value, 0.25)
    assert.equal(timer.body.writable, false)
    assert.equal(timer.body.type, 'float')
    for (const [path, body] of [
      [`${SYS}/instances/timed_1/attributes/__timer/attr/internal_value`, { value: 3 }],
      [`${SYS}/instances/timed_1/attributes`, { __timer: 3 }],
    ] as const) {
      const write = await t.api('PUT', path, body)
      assert.equal(write.status, 422, JSON.stringify(write.body))
      assert.match(write.body.error.message, /__timer/)
    }
    assert.equal(await value(t, 'timed_1', '__timer'), 0.25)
  })
})

/**
 * The reference product's ramp with `type: overshoot`, computed by Python: a natural cubic spline
 * through (0, start), (D, stop), (D + 0.2 S, stop + overshoot % of the span), (D + 0.6 S, stop),
 * (D + S, stop), S the stabilization time (D / 2 unless given); `start` before 0, `stop` after.
 */
const PYTHON_RAMP = `
import json, sys
def ramp(start, stop, duration, overshoot, settle, t):
    if t <= 0: return start
    if t >= duration + settle: return stop
    xs = [0.0, duration, duration + 0.2 * settle, duration + 0.6 * settle, duration + settle]
    ys = [start, stop, stop + overshoot / 100.0 * (stop - start), stop, stop]
    n = len(xs) - 1
    h = [xs[i + 1] - xs[i] for i in range(n)]
    # Natural end conditions: the second derivative is 0 at both ends; Gaussian elimination of the
    # tridiagonal system for the inner ones.
    a = [[0.0] * (n + 1) for _ in range(n + 1)]
    r = [0.0] * (n + 1)
    a[0][0] = a[n][n] = 1.0
    for i in range(1, n):
        a[i][i - 1], a[i][i], a[i][i + 1] = h[i - 1], 2 * (h[i - 1] + h[i]), h[i]
        r[i] = 6 * ((ys[i + 1] - ys[i]) / h[i] - (ys[i] - ys[i - 1]) / h[i - 1])
    for i in range(1, n + 1):
        f = a[i][i - 1] / a[i - 1][i - 1]
        a[i] = [x - f * y for x, y in zip(a[i], a[i - 1])]
        r[i] -= f * r[i - 1]
    m = [0.0] * (n + 1)
    for i in range(n, -1, -1):
        m[i] = (r[i] - (a[i][i + 1] * m[i + 1] if i < n else 0.0)) / a[i][i]
    k = next(i for i in range(n) if t <= xs[i + 1])
    x0, x1, hk = xs[k], xs[k + 1], h[k]
    return (m[k] * (x1 - t) ** 3 / (6 * hk) + m[k + 1] * (t - x0) ** 3 / (6 * hk)
            + (ys[k] / hk - m[k] * hk / 6) * (x1 - t) + (ys[k + 1] / hk - m[k + 1] * hk / 6) * (t - x0))
start, stop, duration, overshoot, settle, times = json.loads(sys.stdin.read())
print(json.dumps([ramp(start, stop, duration, overshoot, settle, t) for t in times]))
`

function pythonRamp(args: { start: number; stop: number; duration: number; overshoot: number; settle: number }, times: number[]): number[] {
  const run = spawnSync('python3', ['-c', PYTHON_RAMP], {
    input: JSON.stringify([args.start, args.stop, args.duration, args.overshoot, args.settle, times]),
    encoding: 'utf8',
    timeout: 30_000,
  })
  assert.equal(run.status, 0, run.stderr)
  return JSON.parse(run.stdout) as number[]
}

describe('reference compatibility: the overshoot ramp', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(async () => t.close())

  /** Steps an instance at times 0.1, 0.2, ... (pinned, as the guides do) and reads `attr` after each. */
  async function trace(instance: string, attr: string, steps: number): Promise<{ times: number[]; values: number[] }> {
    const times: number[] = []
    const values: number[] = []
    for (let k = 1; k <= steps; k++) {
      const time = k * 0.1
      assert.equal((await t.api('PUT', `${SYS}/instances/${instance}/timer`, { time })).status, 200)
      assert.equal((await t.call(`${SYS}/instances/${instance}`, 'run')).status, 200)
      times.push(time)
      values.push((await value(t, instance, attr)) as number)
    }
    return { times, values }
  }

  it("the guides' PT100 (stop 150, duration 5, overshoot 5) gives the reference's values and Python's", async () => {
    await define(t, 'pt_100', {
      attributes: { temperature: 0.0 },
      actions: [{ ramp: '$in(temperature)', stop_value: 150, duration: 5, type: 'overshoot', overshoot: 5 }],
    })
    const { times, values } = await trace('pt_100_1', 'temperature', 100)
    // Published by the reference product (its first-simulation example's chart), by step k: t = k / 10.
    const published: Array<[number, number]> = [
      [1, 3.48418125],
      [10, 34.65],
      [25, 84.08203125],
      [50, 150.0],
      [55, 157.5],
      [56, 157.834921875],
      [60, 155.490234375],
      [69, 148.44599999999997],
      [75, 150.0],
      [100, 150.0],
    ]
    for (const [k, expected] of published) assert.ok(Math.abs((values[k - 1] as number) - expected) < 1e-9, `t=${k / 10}: ${values[k - 1]} != ${expected}`)
    const python = pythonRamp({ start: 0, stop: 150, duration: 5, overshoot: 5, settle: 2.5 }, times)
    values.forEach((v, i) => assert.ok(Math.abs(v - (python[i] as number)) < 1e-9, `t=${times[i]}: ${v} != ${python[i]}`))
  })

  it('takes overshoot (percent of the span), stabilization_time and start_value as given, and a falling ramp', async () => {
    await define(t, 'falling', {
      attributes: { level: 0.0 },
      actions: [{ ramp: '$out(level)', start_value: 80, stop_value: 20, duration: 3, type: 'overshoot', overshoot: 10, stabilization_time: 4 }],
    })
    const { times, values } = await trace('falling_1', 'level', 80)
    const python = pythonRamp({ start: 80, stop: 20, duration: 3, overshoot: 10, settle: 4 }, times)
    values.forEach((v, i) => assert.ok(Math.abs(v - (python[i] as number)) < 1e-9, `t=${times[i]}: ${v} != ${python[i]}`))
    assert.ok(Math.min(...values) < 20 - 5, 'overshoots below a falling ramp')
    assert.equal(values.at(-1), 20)
  })

  it('refuses a ramp type the reference does not have', async () => {
    const put = await t.api('PUT', `${SYS}/models`, {
      bad: { attributes: { x: 0.0 }, actions: [{ ramp: '$out(x)', stop_value: 1, duration: 1, type: 'bounce' }] },
    })
    assert.equal(put.status, 422)
    assert.match(put.body.error.details[0].message, /linear, spline, overshoot/)
  })
})

describe('reference compatibility: __timer in every form', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(async () => t.close())

  it('$in, $out, #attr, $ext, $attr and bare __timer read the instance time, natively and in the Python worker', async () => {
    await define(t, 'timers', {
      timer: { time_step: 0.5 },
      attributes: { a: 0.0, b: 0.0, c: 0.0, d: 0.0, e: 0.0, f: 0.0, g: 0.0, w: 0.0, elapsed: 0.0, previous: 0.0, cond: 0 },
      actions: [
        { function: '$in(a)', call: '$in(__timer)' },
        { function: '$in(b)', call: '$out(__timer) * 2' },
        { function: '$in(c)', call: '#attr(__timer) + 1' },
        { function: '$in(d)', call: '$ext(__timer)' },
        { function: '$in(e)', call: '$attr(__timer)' },
        { function: '$in(f)', call: '__timer' },
        { function: '$in(g)', call: '$(__timer) or -1' },
        // An action importing a module the native compiler does not serve runs in the Python worker.
        { function: '$in(w)', imports: { statistics: 'statistics' }, call: 'statistics.mean([$in(__timer), $in(__timer)])' },
        // The reference catalog's integration idiom (iEM3000, SDM630, ...).
        { function: '$in(elapsed)', call: 'max(0.0, $in(__timer) - $in(previous))' },
        { function: '$in(previous)', call: '$in(__timer)' },
      ],
      conditions: [{ if: '$in(__timer) >= 1.0', actions: [{ set: '$out(cond)', value: 1 }] }],
    })
    for (let i = 0; i < 4; i++) assert.equal((await t.call(`${SYS}/instances/timers_1`, 'run')).status, 200)
    // The fourth step ran at time 1.5.
    const expected = { a: 1.5, b: 3, c: 2.5, d: 1.5, e: 1.5, f: 1.5, g: 1.5, w: 1.5, elapsed: 0.5, previous: 1.5, cond: 1 }
    for (const [attr, want] of Object.entries(expected)) assert.equal(await value(t, 'timers_1', attr), want, attr)
    assert.equal(await value(t, 'timers_1', '__timer'), 2)
  })

  it('an adapter publishes #attr(__timer), read-only', async () => {
    await define(t, 'clock', {
      timer: { time_step: 0.5 },
      attributes: { x: 0.0 },
      communication: [{ modbus_slave: { host: '127.0.0.1', port: 0, mapping: { __timer: { address: [0, 1], group: 'h_r', type: 'float' } } } }],
    })
    assert.equal((await t.call(`${SYS}/instances/clock_1`, 'prepare')).status, 200)
    for (let i = 0; i < 3; i++) await t.call(`${SYS}/instances/clock_1`, 'run')
    const { port } = (await t.api('GET', `${SYS}/instances/clock_1/communication/modbus_slave`)).body
    const client = await TestClient.connect(port)
    try {
      const words = registersOf(await client.request({ fc: 3, address: 0, quantity: 2 }, { unitId: 1 }))
      assert.equal(wordsToBuffer(words).readFloatBE(0), 1.5)
      const write = await client.request({ fc: 16, address: 0, quantity: 2, data: wordsToBuffer([0, 0]) }, { unitId: 1 })
      assert.notEqual(exceptionOf(write), null, 'a write of the time is refused')
    } finally {
      client.close()
      await t.call(`${SYS}/instances/clock_1`, 'stop')
    }
  })

  it('an action writing $out(__timer) or #attr(__timer) pins the timer', async () => {
    await define(t, 'pinning', { attributes: { x: 0.0 }, actions: [{ set: '#attr(__timer)', value: 42.0 }] })
    assert.equal((await t.call(`${SYS}/instances/pinning_1`, 'run')).status, 200)
    const timer = await t.api('GET', `${SYS}/instances/pinning_1/timer`)
    assert.equal(timer.body.time, 42)
    assert.equal(timer.body.pinned, true)
  })
})

describe('reference compatibility: catalog models that needed it', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(async () => t.close())

  /** A fixture of test/fixtures/spx/ (kept as published) as an instance, stepped without prepare: its adapters would listen on fixed ports of every interface. */
  async function fixture(file: string, steps: number): Promise<string> {
    const loaded = await loadDefinitionFile(join(import.meta.dirname, 'fixtures', 'spx', file), modelBehaviourProblems)
    assert.deepEqual(loaded.details, [])
    const name = file.replace(/\.yaml$/, '')
    await define(t, name, loaded.data)
    for (let i = 0; i < steps; i++) {
      const run = await t.call(`${SYS}/instances/${name}_1`, 'run')
      assert.equal(run.status, 200, JSON.stringify(run.body))
    }
    return `${name}_1`
  }

  it('the SDM630 meter integrates its energy over $in(__timer)', async () => {
    const meter = await fixture('eastron_sdm630__modbus.yaml', 3)
    // Steps at 0, 1 and 2 s (dt 1.0): the last one measured 1 s since the one before.
    assert.equal(await value(t, meter, '_previous_time_s'), 2)
    assert.equal(await value(t, meter, '_elapsed_step_s'), 1)
    assert.ok(((await value(t, meter, 'energy_import_total_kwh')) as number) > 0)
  })

  it('the LwM2M sensor steps without its adapter: registered reads False, the counter 0', async () => {
    const sensor = await fixture('environment_sensor__lwm2m.yaml', 3)
    assert.equal(await value(t, sensor, 'lwm2m_connected'), 0)
    assert.equal(await value(t, sensor, 'lwm2m_request_counter'), 0)
    assert.equal(await value(t, sensor, 'k__status_text'), 'DISCONNECTED')
    assert.equal(await value(t, sensor, '_lwm2m_time_s'), 1735732800)
    assert.equal((await t.api('GET', `${SYS}/instances/${sensor}/communication/lwm2m`)).body.state, 'UNSUPPORTED')
  })
})

describe('reference compatibility: --strict-protocols', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ config: { strictProtocols: true } })
  })
  after(async () => t.close())

  it('refuses a model with an adapter of a protocol Mimic does not serve, naming where it is', async () => {
    const put = await t.api('PUT', `${SYS}/models`, { panel: { attributes: { x: 0 }, communication: [{ matter: { port: 5540 } }] } })
    assert.equal(put.status, 422)
    assert.deepEqual(
      put.body.error.details.map((d: { path: string }) => d.path),
      ['communication[0].matter'],
    )
    assert.match(put.body.error.details[0].message, /--strict-protocols/)
    assert.equal((await t.api('PUT', `${SYS}/models`, { plain: { attributes: { x: 0 } } })).status, 200)
  })

  it('is read from MIMIC_STRICT_PROTOCOLS and given to serve as --strict-protocols', () => {
    assert.equal(parseConfig({}, { MIMIC_STRICT_PROTOCOLS: 'yes' }).strictProtocols, true)
    assert.equal(parseConfig({}, {}).strictProtocols, false)
    assert.throws(() => parseConfig({}, { MIMIC_STRICT_PROTOCOLS: 'maybe' }), /MIMIC_STRICT_PROTOCOLS/)
    const bin = join(import.meta.dirname, '..', 'bin', 'mimic.js')
    const help = spawnSync(process.execPath, [bin, 'serve', '--help'], { encoding: 'utf8', timeout: 30_000 })
    assert.match(help.stdout, /--strict-protocols/)
    assert.match(help.stdout, /MIMIC_STRICT_PROTOCOLS/)
  })
})

/** A Python class whose `version` attribute says which text of the file made it. */
function counterSource(version: number): string {
  return `class Counter:\n    def __init__(self):\n        self.version = ${version}\n`
}

describe('reference compatibility: reload_modules', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ files: { 'counter.py': counterSource(1) } })
  })
  after(async () => t.close())

  it('takes an edited extension without a restart, over the tree method and over POST /system/reload', async () => {
    await define(t, 'counted', {
      attributes: { version: { type: 'int', default: 0 } },
      import: { 'counter.py': { class: 'Counter', attributes: { version: { property: 'version' } } } },
    })
    assert.equal((await t.call(`${SYS}/instances/counted_1`, 'prepare')).status, 200)
    assert.equal(await value(t, 'counted_1', 'version'), 1)

    await writeFile(join(t.extensions, 'counter.py'), counterSource(2))
    const viaTree = await t.call(SYS, 'reload_modules')
    assert.equal(viaTree.status, 200, JSON.stringify(viaTree.body))
    assert.deepEqual(viaTree.body.result.reloaded, ['counted_1'])
    assert.equal(viaTree.body.result.files.length, 1)
    assert.match(viaTree.body.result.files[0], /counter\.py$/)
    assert.equal(await value(t, 'counted_1', 'version'), 2)

    await writeFile(join(t.extensions, 'counter.py'), counterSource(3))
    const viaAdmin = await t.api('POST', '/system/reload', { kwargs: { directories: [t.extensions] } })
    assert.equal(viaAdmin.status, 200, JSON.stringify(viaAdmin.body))
    assert.deepEqual(viaAdmin.body.result.reloaded, ['counted_1'])
    assert.equal(await value(t, 'counted_1', 'version'), 3)
  })

  it('asks for the product key on /system/reload, and keeps directories inside the extension directories', async () => {
    const anonymous = await fetch(`${t.url}/system/reload`, { method: 'POST' })
    assert.equal(anonymous.status, 401)
    const outside = await t.call(SYS, 'reload_modules', { directories: ['/etc'] })
    assert.equal(outside.status, 403, JSON.stringify(outside.body))
    assert.equal(outside.body.error.details[0].path, 'kwargs.directories[0]')
    const typo = await t.call(SYS, 'reload_modules', { directory: t.extensions })
    assert.equal(typo.status, 422)
  })
})
