// Actions whose `imports` name Python modules (MODEL_LANGUAGE.md section 2): a helper under
// --extensions and a standard-library module, evaluated by the instance's real Python worker, in
// list order with native actions, all-or-nothing, through instance and system steps.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

const FILES = {
  'thermal_model.py': `
def thermal_step(t, dt, gain):
    """Newton's cooling towards 50 degrees."""
    return t + gain * dt * (50.0 - t) / 10.0


def ratio(a, b):
    return a / b


def kinds(x):
    return [type(x).__name__, x]


def crash_if(die, x):
    if die:
        import os
        os._exit(3)
    return x + 1.0
`,
}

/** Python's `median` of three floats. */
const median3 = (values: number[]): number => [...values].sort((a, b) => a - b)[1] as number

describe('actions evaluated by the Python worker', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ files: FILES })
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
  const run = async (instance: string): Promise<void> => {
    const res = await t.call(`${SYS}/instances/${instance}`, 'run')
    assert.equal(res.status, 200, JSON.stringify(res.body))
  }

  // n (native) -> t (helper, worker) -> heat (native, reads t) -> mid (statistics, worker, reads heat and n)
  const MIXED = {
    timer: { time_step: 0.5 },
    attributes: { n: { type: 'int', default: 0 }, t: 20.0, heat: 0.0, mid: 0.0, label: '', kinds: { type: 'any', default: [] } },
    actions: [
      { name: 'count', function: '$out(n)', call: 'n + 1' },
      {
        name: 'cool',
        function: '$out(t)',
        imports: { thermal_step: 'extensions.thermal_model.thermal_step' },
        gain: 0.5,
        call: 'thermal_step($in(t), $attr(timer.dt), gain)',
      },
      { name: 'heat', function: '$out(heat)', call: '$in(t) * 2' },
      { name: 'middle', function: '$out(mid)', imports: ['statistics'], call: 'statistics.median([$in(t), $in(heat), n * 10.0])' },
      { name: 'label', function: '$out(label)', imports: { st: 'statistics' }, call: 'st.median([1, 3])' },
      {
        name: 'kinds',
        function: '$out(kinds)',
        imports: { kinds: 'extensions.thermal_model.kinds' },
        params: { doubled: '$in(heat) * 2' },
        call: 'kinds(n) + kinds(doubled) + kinds(half)',
        half: 0.5,
      },
    ],
  }

  /** The model's values after `steps` steps, computed here. */
  const expected = (steps: number): { n: number; t: number; heat: number; mid: number } => {
    let [n, temp, heat, mid] = [0, 20.0, 0.0, 0.0]
    for (let i = 0; i < steps; i++) {
      n += 1
      temp = temp + (0.5 * 0.5 * (50.0 - temp)) / 10.0
      heat = temp * 2
      mid = median3([temp, heat, n * 10.0])
    }
    return { n, t: temp, heat, mid }
  }

  it('mixes native and worker actions in list order, each seeing the writes before it, with Python types kept', async () => {
    await define({ mixed: MIXED })
    await create({ m1: 'mixed' })
    for (let i = 0; i < 4; i++) await run('m1')
    const want = expected(4)
    assert.equal(await value('m1', 'n'), want.n)
    assert.equal(await value('m1', 't'), want.t)
    assert.equal(await value('m1', 'heat'), want.heat)
    assert.equal(await value('m1', 'mid'), want.mid)
    assert.equal(await value('m1', 'label'), '2.0', 'statistics.median([1, 3]) is the float 2.0, and str() of it says so')
    assert.deepEqual(await value('m1', 'kinds'), ['int', 4, 'float', want.heat * 2, 'float', 0.5], 'an int arrives as int, a float as float')
    assert.equal((await t.api('GET', `${SYS}/instances/m1/timer/attr/time`)).body.value, 2)
  })

  it('library functions written in C import what they need: datetime parsing and formatting in a worker action', async () => {
    // statistics sends the action to the worker; datetime's C functions load _strptime and the
    // locale data on their first call, through the builtins of the action's frame.
    await define({
      dates: {
        attributes: { stamp: '2024-03-01', day: '', days: { type: 'int', default: 0 } },
        actions: [
          { function: '$out(day)', imports: ['datetime', 'statistics'], call: "datetime.datetime.strptime(stamp, '%Y-%m-%d').strftime('%A %d %B')" },
          {
            function: '$out(days)',
            imports: ['datetime', 'statistics'],
            call: "statistics.median_low([datetime.date.fromisoformat(stamp).toordinal(), datetime.datetime.strptime(stamp, '%Y-%m-%d').toordinal()])",
          },
        ],
      },
    })
    await create({ d1: 'dates' })
    await run('d1')
    assert.equal(await value('d1', 'day'), 'Friday 01 March')
    assert.equal(await value('d1', 'days'), 738946)
    assert.equal((await t.api('DELETE', `${SYS}/instances/d1`)).status, 200)
  })

  it('run(steps=N) of the system steps worker and native instances alike', async () => {
    await define({
      mixed2: MIXED,
      plain: { attributes: { k: { type: 'int', default: 0 } }, actions: [{ function: '$out(k)', call: 'k + 2' }] },
    })
    await create({ s1: 'mixed2', s2: 'mixed2', p1: 'plain' })
    assert.equal((await t.call(`${SYS}/instances/s2`, 'prepare')).status, 200, 'prepared or not, both step')
    const res = await t.call(SYS, 'run', { steps: 6 })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    const want = expected(6)
    for (const name of ['s1', 's2']) {
      assert.deepEqual([await value(name, 'n'), await value(name, 't'), await value(name, 'mid')], [want.n, want.t, want.mid], name)
    }
    assert.equal(await value('p1', 'k'), 12)
  })

  it('a Python error in a worker action takes back every write of the step and names instance, action, expression and error', async () => {
    await define({
      brittle: {
        attributes: { a: 0.0, b: 0.0, c: 0.0, d: 1.0 },
        actions: [
          { set: '$out(a)', value: '$in(a) + 1' },
          { name: 'divide', function: '$out(b)', imports: { h: 'extensions.thermal_model' }, call: 'h.ratio($in(a), $in(d))' },
          { set: '$out(c)', value: '$in(c) + 7' },
        ],
      },
    })
    await create({ b1: 'brittle' })
    await run('b1')
    assert.deepEqual([await value('b1', 'a'), await value('b1', 'b'), await value('b1', 'c')], [1, 1, 7])
    assert.equal((await t.api('PUT', `${SYS}/instances/b1/attributes/d/attr/internal_value`, { value: 0.0 })).status, 200)
    const res = await t.call(`${SYS}/instances/b1`, 'run')
    assert.equal(res.status, 500)
    assert.equal(res.body.error.type, 'UserCodeError')
    assert.match(res.body.error.message, /Instance 'b1'/)
    assert.match(res.body.error.message, /action 'divide' \(actions\[1\]\)/)
    assert.match(res.body.error.message, /ZeroDivisionError: float division by zero/)
    assert.match(res.body.error.message, /h\.ratio\(\$in\(a\), \$in\(d\)\)/)
    assert.equal(res.body.error.details[0].path, 'actions[1].call')
    assert.match(res.body.error.details[0].traceback, /thermal_model\.py", line \d+, in ratio/)
    assert.deepEqual([await value('b1', 'a'), await value('b1', 'b'), await value('b1', 'c')], [1, 1, 7], 'the step kept none of its writes')
    assert.equal((await t.api('GET', `${SYS}/instances/b1/timer/attr/time`)).body.value, 1, 'time did not move')
    const sys = await t.call(SYS, 'run', { steps: 2 })
    assert.equal(sys.status, 500)
    assert.equal(sys.body.error.details[0].path, 'instances.b1')
    assert.equal((await t.api('PUT', `${SYS}/instances/b1/attributes/d/attr/internal_value`, { value: 4.0 })).status, 200)
    await run('b1')
    assert.deepEqual([await value('b1', 'a'), await value('b1', 'b'), await value('b1', 'c')], [2, 0.5, 14], 'the instance steps again')
  })

  it('a name the worker cannot import fails prepare with a 422 naming the action and the module', async () => {
    await define({
      missing: { attributes: { x: 0.0 }, actions: [{ name: 'calc', function: '$out(x)', imports: { nope: 'statistics.no_such_name' }, call: 'nope.f()' }] },
      missing_helper: {
        attributes: { x: 0.0 },
        actions: [{ function: '$out(x)', imports: { f: 'extensions.thermal_model.not_there' }, call: 'f($in(x))' }],
      },
    })
    await create({ x1: 'missing', x2: 'missing_helper' })
    const res = await t.call(`${SYS}/instances/x1`, 'prepare')
    assert.equal(res.status, 422, JSON.stringify(res.body))
    assert.equal(res.body.error.details[0].path, 'actions[0].imports.nope')
    assert.match(res.body.error.message, /statistics\.no_such_name/)
    assert.match(res.body.error.message, /'statistics' has no 'no_such_name'/)
    const helper = await t.call(`${SYS}/instances/x2`, 'run')
    assert.equal(helper.status, 422, 'an unprepared instance loads its worker context on its first step')
    assert.equal(helper.body.error.details[0].path, 'actions[0].imports.f')
    assert.match(helper.body.error.message, /thermal_model\.py has no 'not_there'/)
  })

  it('an expression the worker refuses names its path once', async () => {
    await define({ reach: { attributes: { x: 0.0 }, actions: [{ function: '$out(x)', imports: ['statistics'], call: 'len(statistics.sys.path)' }] } })
    await create({ r1: 'reach' })
    const res = await t.call(`${SYS}/instances/r1`, 'run')
    assert.equal(res.status, 422, JSON.stringify(res.body))
    assert.deepEqual(res.body.error.details, [{ path: 'actions[0].call', message: "statistics.sys is the module 'sys', which actions may not use" }])
    assert.equal(
      res.body.error.message,
      "Cannot load Python code of instance 'r1': actions[0].call: statistics.sys is the module 'sys', which actions may not use",
    )
  })

  it('refuses at load time, with paths, modules that are not allowed and names the native compiler refuses', async () => {
    const res = await t.api('PUT', `${SYS}/models`, {
      unsafe: {
        attributes: { x: 0.0 },
        actions: [
          { function: '$out(x)', imports: { o: 'os' }, call: 'o.getpid()' },
          { function: '$out(x)', imports: { np: 'numpy' }, call: 'np.__dict__' },
          { function: '$out(x)', imports: { st: 'statistics' }, call: 'open("/etc/passwd")' },
          { function: '$out(x)', imports: { st: 'statistics' }, call: 'st.mean($in(nope))' },
          { function: '$out(x)', imports: { st: 'statistics' }, call: 'st.mean(' },
        ],
      },
    })
    assert.equal(res.status, 422)
    const paths = res.body.error.details.map((d: { path: string }) => d.path)
    assert.deepEqual(paths, ['actions[0].imports.o', 'actions[1].imports.np', 'actions[1].call', 'actions[2].call', 'actions[3].call', 'actions[4].call'])
    const messages = res.body.error.details.map((d: { message: string }) => d.message)
    assert.match(messages[0], /'os' may not be imported by an action: .*--action-modules/)
    assert.match(messages[1], /'numpy' may not be imported by an action/, 'numpy only when the operator trusts it')
    assert.match(messages[2], /^1:\d+: .*'__dict__'/)
    assert.match(messages[3], /open/)
    assert.match(messages[4], /'nope' is not an attribute/)
    assert.match(messages[5], /^1:\d+: invalid syntax/)
    assert.equal((await t.api('GET', `${SYS}/models/unsafe`)).status, 404, 'nothing was created')
  })

  it('a set the worker computes sees the references inside it, and is checked at load time like any expression', async () => {
    await define({
      sets: {
        attributes: { n: { default: 4, type: 'int' }, size: { default: 0, type: 'int' }, one: { default: 0, type: 'int' }, big: { default: 0, type: 'int' } },
        actions: [
          { function: '$out(size)', call: 'len({1, 2, $in(n)})' },
          { function: '$out(one)', call: 'len({n})' },
          { function: '$out(big)', call: 'len({x * 2 for x in [1, 2, $in(n)]})' },
        ],
      },
    })
    await create({ s1: 'sets' })
    await run('s1')
    assert.deepEqual([await value('s1', 'size'), await value('s1', 'one'), await value('s1', 'big')], [3, 1, 3])

    const res = await t.api('PUT', `${SYS}/models`, {
      unsafe_sets: {
        attributes: { x: 0.0 },
        actions: [
          { function: '$out(x)', call: 'len({x for x in [1, open]})' },
          { function: '$out(x)', call: 'len({*[open]})' },
          { function: '$out(x)', call: 'len({1, $in(missing)})' },
        ],
      },
    })
    assert.equal(res.status, 422, JSON.stringify(res.body))
    assert.deepEqual(
      res.body.error.details.map((d: { path: string }) => d.path),
      ['actions[0].call', 'actions[1].call', 'actions[2].call'],
    )
  })

  it('a public method the engine does not serve (swapcase, rsplit, dict.fromkeys, bit_length, str.join on the type) runs in the worker with CPython’s result', async () => {
    await define({
      rare: {
        attributes: { name: 'Pump_7', out: { default: null, type: 'any' } },
        actions: [
          {
            function: '$out(out)',
            call: "[$in(name).swapcase(), $in(name).rsplit('_', 1), $in(name).removeprefix('Pu'), dict.fromkeys(['a', 'b'], 0), (255).bit_length(), str.upper('x'), str.join('-', ['a', 'b'])]",
          },
        ],
      },
    })
    await create({ r2: 'rare' })
    await run('r2')
    assert.deepEqual(await value('r2', 'out'), ['pUMP_7', ['Pump', '7'], 'mp_7', { a: 0, b: 0 }, 8, 'X', 'a-b'])
  })

  // Last: the dying worker takes the other instances it holds with it.
  it('a worker that dies puts the instance in ERROR like any Python instance, and prepare brings it back', async () => {
    await define({
      fatal: {
        attributes: { x: 0.0, die: false },
        actions: [{ name: 'maybe', function: '$out(x)', imports: { crash_if: 'extensions.thermal_model.crash_if' }, call: 'crash_if($in(die), $in(x))' }],
      },
    })
    await create({ d1: 'fatal' })
    await run('d1')
    assert.equal(await value('d1', 'x'), 1)
    assert.equal((await t.api('PUT', `${SYS}/instances/d1/attributes/die/attr/internal_value`, { value: true })).status, 200)
    const res = await t.call(`${SYS}/instances/d1`, 'run')
    assert.equal(res.status, 503, JSON.stringify(res.body))
    const doc = (await t.api('GET', `${SYS}/instances/d1`)).body
    assert.equal(doc.state, 'ERROR')
    assert.match(doc.last_error, /worker/i)
    assert.equal((await t.call(`${SYS}/instances/d1`, 'run')).status, 409, 'it stays in ERROR until prepared')
    assert.equal(await value('d1', 'x'), 1, 'the failed step kept nothing')
    assert.equal((await t.api('PUT', `${SYS}/instances/d1/attributes/die/attr/internal_value`, { value: false })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/d1`, 'prepare')).status, 200)
    await run('d1')
    assert.equal(await value('d1', 'x'), 2)
  })
})
