import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { eventually, startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

const FILES: Record<string, string> = {
  'loose.py': `
class Loose:
    # Sets its properties to whatever it is told: Python itself never checks a type.
    def __init__(self):
        self.level = 1.5
        self.count = 0
        self.label = "ok"
        self.items = []
        self.mode = "step"

    def put(self, name, value):
        setattr(self, name, value)

    def tick(self):
        if self.mode == "bad":
            self.level = "hot"
        else:
            self.level = self.level + 1
`,
  'py_temp_sensor.py': `
class PyTempSensor:
    """A plain class: no base class."""
    def __init__(self, start=0.0, drift=0.0):
        self._t = start
        self.drift = drift
        self.ticks = 0

    @property
    def temperature(self):
        return self._t

    @temperature.setter
    def temperature(self, value):
        self._t = value

    def tick(self):
        self.ticks += 1
        self._t += self.drift

    def read_ticks(self):
        return self.ticks

    def calibrate(self, offset=0.0, scale=1.0):
        self._t = self._t * scale + offset
        return {"temperature": self._t, "offset": offset}

    def explode(self):
        raise RuntimeError("sensor on fire")

    def crash(self):
        import os
        os._exit(3)

    def hang(self):
        import time
        time.sleep(60)

    def chatty(self, n=3):
        for i in range(n):
            print("chatty line", i)
        return n
`,
  'pair.py': `
class Heater:
    def __init__(self, power=1.0):
        self.power = power
    def get_power(self):
        return self.power
    def set_power(self, value):
        self.power = value

class Meter:
    def __init__(self):
        self.reading = 42
    def read(self):
        return self.reading
`,
  'other.py': `
class Lamp:
    def __init__(self):
        self.on = False
    def toggle(self):
        self.on = not self.on
        return self.on
`,
  'ctx.py': `
from mimic_sdk import MimicComponent

class Controller(MimicComponent):
    def __init__(self, gain=1.0):
        # the context is already set when __init__ runs
        self.seen_name = self.name
        self.seen_attrs = sorted(self.definition["attributes"].keys())
        self.gain = gain
        self.output = 0.0

    def step(self):
        error = self.attributes["setpoint"] - self.output
        self.output += self.gain * error * self.dt
        self.attributes["last_time"] = self.time
        self.logger.info("stepped at %s", self.time)

    def info(self):
        kinds = [type(v).__name__ for v in (self.time, self.dt, self.attributes["setpoint"], self.attributes["last_time"])]
        return {"name": self.seen_name, "attrs": self.seen_attrs, "time": self.time, "dt": self.dt, "kinds": kinds}
`,
}

const SENSOR_MODEL = {
  attributes: { temperature: 0.0, ticks: 0.0 },
  import: {
    'py_temp_sensor.py': {
      class: 'PyTempSensor',
      init: { kwargs: { start: 25.0, drift: 0.5 } },
      attributes: { temperature: { property: 'temperature' }, ticks: { getter: 'read_ticks' } },
      methods: { run: 'tick', calibrate: 'calibrate', explode: 'explode', crash: 'crash', hang: 'hang', chatty: 'chatty' },
    },
  },
}

describe('Python-backed models over HTTP', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ files: FILES, config: { pythonTimeout: 2, pythonWorkers: 2 } })
    const res = await t.api('PUT', `${SYS}/models`, { PySensorModel: SENSOR_MODEL })
    assert.equal(res.status, 200, JSON.stringify(res.body))
  })
  after(async () => t.close())

  it('prepare binds the object: attributes read its own state (25.0, not the default), run calls tick, writes call the setter', async () => {
    await t.api('PUT', `${SYS}/instances`, { sensor: 'PySensorModel' })
    const inst = `${SYS}/instances/sensor`
    assert.equal((await t.call(`${inst}/polling`, 'disable')).status, 200)
    assert.equal((await t.api('GET', inst)).body.state, 'INITIALIZED')
    const notPrepared = await t.call(inst, 'run')
    assert.equal(notPrepared.status, 409)
    assert.match(notPrepared.body.error.message, /prepare/)

    assert.deepEqual((await t.call(inst, 'prepare')).body, { result: true })
    assert.equal((await t.api('GET', inst)).body.state, 'PREPARED')
    assert.deepEqual((await t.api('GET', `${inst}/attributes/temperature/attr/internal_value`)).body, { value: 25.0 })
    await t.call(inst, 'run')
    await t.call(inst, 'run')
    assert.deepEqual((await t.api('GET', `${inst}/attributes/temperature/attr/internal_value`)).body, { value: 26.0 })
    assert.deepEqual((await t.api('GET', `${inst}/attributes/ticks/attr/internal_value`)).body, { value: 2 })

    assert.equal((await t.api('PUT', `${inst}/attributes/temperature/attr/internal_value`, { value: 50 })).status, 200)
    await t.call(inst, 'run')
    assert.deepEqual((await t.api('GET', `${inst}/attributes/temperature/attr/internal_value`)).body, { value: 50.5 })

    const readOnly = await t.api('PUT', `${inst}/attributes/ticks/attr/internal_value`, { value: 7 })
    assert.equal(readOnly.status, 422)
    assert.match(readOnly.body.error.message, /read-only/)
    assert.deepEqual((await t.api('GET', `${inst}/attributes/ticks/attr/internal_value`)).body, { value: 3 })
  })

  it('mapped methods appear on the instance, take kwargs and return JSON results', async () => {
    const inst = `${SYS}/instances/sensor`
    const doc = (await t.api('GET', inst)).body
    for (const m of ['calibrate', 'explode', 'chatty']) assert.ok(doc.methods.includes(m), `${m} listed`)
    const res = await t.call(inst, 'calibrate', { offset: 1.5, scale: 2 })
    assert.equal(res.status, 200)
    assert.deepEqual(res.body.result, { temperature: 102.5, offset: 1.5 })
    assert.deepEqual(
      (await t.api('GET', `${inst}/attributes/temperature/attr/internal_value`)).body,
      { value: 102.5 },
      'values changed by a method are visible at once',
    )
    const unknown = await t.call(inst, 'tick')
    assert.equal(unknown.status, 404, 'only mapped names are methods')
  })

  it('arguments that do not fit a method are a 422 naming them, and the method does not run', async () => {
    const inst = `${SYS}/instances/sensor`
    const offset = () => t.api('GET', `${inst}/attributes/temperature/attr/internal_value`)
    const before = (await offset()).body
    const typo = await t.call(inst, 'calibrate', { ofset: 3 })
    assert.equal(typo.status, 422)
    assert.equal(typo.body.event, 'validation')
    assert.deepEqual(typo.body.error.details, [{ path: 'kwargs.ofset', message: "calibrate(): got an unexpected keyword argument 'ofset'" }])
    const many = await t.api('POST', `${inst}/method/calibrate`, { args: [1, 2, 3, 4] })
    assert.equal(many.status, 422)
    assert.equal(many.body.error.details[0].path, 'args')
    assert.deepEqual((await offset()).body, before, 'calibrate did not run')
    assert.equal((await t.call(inst, 'calibrate', { offset: 1.5, scale: 2 })).status, 200)
  })

  it('an exception in user code is a 500 with the traceback; the instance keeps working', async () => {
    const inst = `${SYS}/instances/sensor`
    const res = await t.call(inst, 'explode')
    assert.equal(res.status, 500)
    assert.equal(res.body.event, 'user_code')
    assert.match(res.body.error.message, /sensor on fire/)
    assert.match(JSON.stringify(res.body.error.details), /Traceback[\s\S]*explode/)
    assert.equal((await t.call(inst, 'run')).status, 200)
    assert.equal((await t.api('GET', inst)).body.state, 'PREPARED')
  })

  it('print() output reaches the server log tagged with the instance', async () => {
    await t.call(`${SYS}/instances/sensor`, 'chatty', { n: 2 })
    await eventually(() => t.logs.some((l) => JSON.stringify(l).includes('chatty line 1') && JSON.stringify(l).includes('sensor')))
  })

  it('getter/setter bindings, several classes of one file and several files in one model', async () => {
    const res = await t.api('PUT', `${SYS}/models`, {
      Combo: {
        attributes: { power: 0.0, reading: 0.0, lamp: false },
        import: {
          'pair.py': [
            { class: 'Heater', init: { args: [3.5] }, attributes: { power: { getter: 'get_power', setter: 'set_power' } } },
            { class: 'Meter', attributes: { reading: { getter: 'read' } } },
          ],
          'other.py': { class: 'Lamp', attributes: { lamp: { property: 'on' } }, methods: { toggle: 'toggle' } },
        },
      },
    })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    await t.api('PUT', `${SYS}/instances`, { combo: 'Combo' })
    const inst = `${SYS}/instances/combo`
    assert.equal((await t.call(inst, 'prepare')).status, 200)
    const attrs = `${inst}/attributes`
    assert.deepEqual((await t.api('GET', `${attrs}/power/attr/internal_value`)).body, { value: 3.5 })
    assert.deepEqual((await t.api('GET', `${attrs}/reading/attr/internal_value`)).body, { value: 42 })
    await t.api('PUT', `${attrs}/power/attr/internal_value`, { value: 9 })
    assert.deepEqual((await t.api('GET', `${attrs}/power/attr/internal_value`)).body, { value: 9 })
    assert.deepEqual((await t.call(inst, 'toggle')).body, { result: true })
    assert.deepEqual((await t.api('GET', `${attrs}/lamp/attr/internal_value`)).body, { value: true })
    const imp = (await t.api('GET', `${inst}/import`)).body
    assert.equal(imp.bound, true)
    assert.equal(typeof imp.worker, 'number')
    assert.deepEqual(imp.bound_attributes.sort(), ['lamp', 'power', 'reading'])
    assert.deepEqual(imp.bound_methods, { toggle: 'toggle' })
  })

  it('a MimicComponent subclass gets its context before __init__: name, definition, attributes, time, dt, logger', async () => {
    await t.api('PUT', `${SYS}/models`, {
      Ctl: {
        attributes: { output: 0.0, setpoint: 10.0, last_time: -1.0 },
        import: {
          'ctx.py': {
            class: 'Controller',
            init: { kwargs: { gain: 0.5 } },
            attributes: { output: { property: 'output' } },
            methods: { run: 'step', info: 'info' },
          },
        },
      },
    })
    await t.api('PUT', `${SYS}/instances`, { ctl: 'Ctl' })
    const inst = `${SYS}/instances/ctl`
    assert.equal((await t.call(inst, 'prepare')).status, 200, 'prepared')
    await t.api('PUT', `${inst}/timer`, { dt: 0.5 })
    const info = (await t.call(inst, 'info')).body.result
    assert.equal(info.name, 'ctl')
    assert.deepEqual(info.attrs, ['last_time', 'output', 'setpoint'])
    assert.equal(info.dt, 0.5)
    // A whole float stays a float in Python: time 0.0, setpoint 10.0, last_time -1.0.
    assert.deepEqual(info.kinds, ['float', 'float', 'float', 'float'])
    await t.call(inst, 'run')
    // output += 0.5 * (10 - 0) * 0.5
    assert.deepEqual((await t.api('GET', `${inst}/attributes/output/attr/internal_value`)).body, { value: 2.5 })
    assert.deepEqual((await t.api('GET', `${inst}/attributes/last_time/attr/internal_value`)).body, { value: 0 }, 'declarative attribute written from Python')
    await t.api('PUT', `${inst}/attributes/setpoint/attr/internal_value`, { value: 2.5 })
    await t.api('PUT', `${inst}/timer/attr/time`, { value: 7 })
    await t.call(inst, 'run')
    assert.deepEqual((await t.api('GET', `${inst}/attributes/output/attr/internal_value`)).body, { value: 2.5 }, 'reads the new setpoint: no error, no change')
    assert.deepEqual((await t.api('GET', `${inst}/attributes/last_time/attr/internal_value`)).body, { value: 7 })
    await eventually(() => t.logs.some((l) => JSON.stringify(l).includes('stepped at 7')))
  })

  it('editing the .py file and calling prepare again picks up the new code', async () => {
    await writeFile(join(t.extensions, 'live.py'), 'class Live:\n    def __init__(self):\n        self.version = 1\n')
    await t.api('PUT', `${SYS}/models`, {
      LiveM: { attributes: { version: 0 }, import: { 'live.py': { class: 'Live', attributes: { version: { property: 'version' } } } } },
    })
    await t.api('PUT', `${SYS}/instances`, { live: 'LiveM' })
    await t.call(`${SYS}/instances/live`, 'prepare')
    assert.deepEqual((await t.api('GET', `${SYS}/instances/live/attributes/version/attr/internal_value`)).body, { value: 1 })
    await writeFile(join(t.extensions, 'live.py'), 'class Live:\n    def __init__(self):\n        self.version = 2\n')
    await t.call(`${SYS}/instances/live`, 'prepare')
    assert.deepEqual((await t.api('GET', `${SYS}/instances/live/attributes/version/attr/internal_value`)).body, { value: 2 })
  })

  it('prepare fails with a fault naming the exact entry for a missing class, file, binding or bad init args; the instance goes to ERROR', async () => {
    const cases: Array<[string, unknown, RegExp, number]> = [
      ['NoClass', { 'py_temp_sensor.py': { class: 'PyTempSensr' } }, /import\.py_temp_sensor\.py\.class/, 422],
      ['NoFile', { 'missing.py': { class: 'X' } }, /import\.missing\.py/, 422],
      [
        'NoProp',
        { 'py_temp_sensor.py': { class: 'PyTempSensor', attributes: { temperature: { property: 'temp' } } } },
        /import\.py_temp_sensor\.py\.attributes\.temperature\.property/,
        422,
      ],
      ['BadInit', { 'py_temp_sensor.py': { class: 'PyTempSensor', init: { kwargs: { nope: 1 } } } }, /import\.py_temp_sensor\.py/, 422],
      ['Escape', { '../outside.py': { class: 'X' } }, /extensions/, 403],
      ['Absolute', { '/etc/passwd.py': { class: 'X' } }, /extensions/, 403],
    ]
    for (const [name, imp, pattern, status] of cases) {
      const put = await t.api('PUT', `${SYS}/models`, { [name]: { attributes: { temperature: 0.0 }, import: imp } })
      assert.equal(put.status, 200, JSON.stringify(put.body))
      await t.api('PUT', `${SYS}/instances`, { [`i_${name}`]: name })
      const res = await t.call(`${SYS}/instances/i_${name}`, 'prepare')
      assert.equal(res.status, status, `${name}: ${JSON.stringify(res.body)}`)
      assert.match(JSON.stringify(res.body.error), pattern, name)
      if (status === 422) assert.match(res.body.error.message, new RegExp(`^Cannot load Python code of instance 'i_${name}': `), name)
      assert.equal(res.body.component.state, 'ERROR', `${name}: the fault shows the state the failure left`)
      const doc = (await t.api('GET', `${SYS}/instances/i_${name}`)).body
      assert.equal(doc.state, 'ERROR', name)
      assert.ok(doc.last_error, name)
      assert.equal((await t.api('GET', `${SYS}/instances/i_${name}/import`)).body.last_error, doc.last_error)
    }
  })

  it('a worker that crashes: only its instances go to ERROR, the server keeps serving, prepare() restores them', async () => {
    await t.api('PUT', `${SYS}/instances`, { victim: 'PySensorModel', bystander: 'PySensorModel' })
    await t.call(`${SYS}/instances/victim`, 'prepare')
    await t.call(`${SYS}/instances/bystander`, 'prepare')
    const res = await t.call(`${SYS}/instances/victim`, 'crash')
    assert.equal(res.status, 503, JSON.stringify(res.body))
    assert.equal(res.body.event, 'worker_gone')
    const victim = (await t.api('GET', `${SYS}/instances/victim`)).body
    assert.equal(victim.state, 'ERROR')
    assert.match(victim.last_error, /worker|exit/i)
    assert.equal((await t.api('GET', '/health')).status, 200)
    const victimWorker = (await t.api('GET', `${SYS}/instances/victim/import`)).body
    assert.equal(victimWorker.bound, false)
    // Its bound attributes stay bound and refuse writes until prepare(): no code would see them.
    const temperature = `${SYS}/instances/victim/attributes/temperature`
    assert.equal((await t.api('GET', temperature)).body.bound, true)
    const write = await t.api('PUT', `${temperature}/attr/internal_value`, { value: 3.0 })
    assert.equal(write.status, 409, JSON.stringify(write.body))
    assert.match(write.body.error.message, /is in ERROR.*call prepare\(\) to recover/)
    assert.equal((await t.api('GET', `${SYS}/instances/victim/attributes/ticks`)).body.writable, false, 'a getter stays read-only')
    // instances on other workers keep working; those that shared the dead worker are in ERROR too
    let survivors = 0
    for (const name of ['sensor', 'combo', 'ctl', 'bystander']) {
      const state = (await t.api('GET', `${SYS}/instances/${name}`)).body.state
      if (state !== 'ERROR') {
        assert.equal((await t.call(`${SYS}/instances/${name}`, 'run')).status, 200, name)
        survivors++
      }
    }
    assert.ok(survivors > 0, 'some instances lived on the other worker')
    assert.equal((await t.call(`${SYS}/instances/victim`, 'prepare')).status, 200)
    assert.equal((await t.call(`${SYS}/instances/victim`, 'run')).status, 200)
    assert.deepEqual((await t.api('GET', `${SYS}/instances/victim/attributes/temperature/attr/internal_value`)).body, { value: 25.5 })
  })

  it('a call that hangs past --python-timeout is a 504; the worker is replaced and prepare() restores the instance', async () => {
    await t.api('PUT', `${SYS}/instances`, { sleeper: 'PySensorModel' })
    await t.call(`${SYS}/instances/sleeper`, 'prepare')
    const started = Date.now()
    const res = await t.call(`${SYS}/instances/sleeper`, 'hang')
    assert.equal(res.status, 504, JSON.stringify(res.body))
    assert.ok(Date.now() - started < 15_000)
    assert.equal((await t.api('GET', `${SYS}/instances/sleeper`)).body.state, 'ERROR')
    assert.equal((await t.call(`${SYS}/instances/sleeper`, 'prepare')).status, 200)
    assert.equal((await t.call(`${SYS}/instances/sleeper`, 'run')).status, 200)
  })

  it('a system run drives all workers with one batch per worker and returns the bound values', async () => {
    await t.call(SYS, 'prepare').catch(() => {})
    const names: string[] = []
    for (let i = 0; i < 20; i++) names.push(`b${i}`)
    await t.api('PUT', `${SYS}/instances`, Object.fromEntries(names.map((n) => [n, 'PySensorModel'])))
    for (const n of names) assert.equal((await t.call(`${SYS}/instances/${n}`, 'prepare')).status, 200)
    const workers = new Set<number>()
    for (const n of names) workers.add((await t.api('GET', `${SYS}/instances/${n}/import`)).body.worker)
    assert.equal(workers.size, 2, 'instances are spread over both workers')
    const res = await t.call(SYS, 'run', { steps: 4 })
    // instances left in ERROR by earlier tests are skipped, not fatal
    assert.equal(res.status, 200, JSON.stringify(res.body))
    for (const n of names) assert.deepEqual((await t.api('GET', `${SYS}/instances/${n}/attributes/temperature/attr/internal_value`)).body, { value: 27 })
  })

  it('a system run completes every step for the others while one instance raises, then reports it once', async () => {
    await t.api('PUT', `${SYS}/models`, {
      Raiser: { attributes: { temperature: 0.0 }, import: { 'py_temp_sensor.py': { class: 'PyTempSensor', methods: { run: 'explode' } } } },
    })
    await t.api('PUT', `${SYS}/instances`, { raiser: 'Raiser' })
    assert.equal((await t.call(`${SYS}/instances/raiser`, 'prepare')).status, 200)
    const before = (await t.api('GET', `${SYS}/instances/b1/attributes/temperature/attr/internal_value`)).body.value
    const res = await t.call(SYS, 'run', { steps: 3 })
    assert.equal(res.status, 500, JSON.stringify(res.body))
    assert.equal(res.body.error.details.length, 1)
    assert.equal(res.body.error.details[0].path, 'instances.raiser')
    assert.match(res.body.error.details[0].message, /sensor on fire.*failed in 3 of 3 steps/)
    assert.deepEqual((await t.api('GET', `${SYS}/instances/b1/attributes/temperature/attr/internal_value`)).body, { value: before + 1.5 })
    assert.equal((await t.api('GET', `${SYS}/instances/raiser`)).body.state, 'PREPARED', 'an exception leaves the instance working')
    await t.api('DELETE', `${SYS}/instances/raiser`)
  })

  it('values Python leaves in bound attributes keep the attribute type: converted when Python would, else refused with a fault naming them', async () => {
    const bind = (names: string[]): Record<string, { property: string }> => Object.fromEntries(names.map((n) => [n, { property: n }]))
    const model = {
      attributes: { level: 0.0, count: { default: 0, type: 'int' }, label: '', items: { default: [], type: 'list' }, mode: '' },
      import: { 'loose.py': { class: 'Loose', attributes: bind(['level', 'count', 'label', 'items', 'mode']), methods: { run: 'tick', put: 'put' } } },
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Loose: model })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { loose: 'Loose' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/loose`, 'prepare')).status, 200)
    const attr = `${SYS}/instances/loose/attributes`
    const value = async (name: string): Promise<unknown> => (await t.api('GET', `${attr}/${name}/attr/internal_value`)).body.value
    const put = async (name: string, v: unknown): Promise<{ status: number; body: any }> => await t.call(`${SYS}/instances/loose`, 'put', { name, value: v })

    // What Python would convert: an int or a bool into a float, a bool into an int; None is "no value yet".
    assert.equal((await put('level', 3)).status, 200)
    assert.equal(await value('level'), 3)
    assert.equal((await t.api('GET', `${attr}/level`)).body.type, 'float')
    assert.equal((await put('count', true)).status, 200)
    assert.equal(await value('count'), 1)
    assert.equal((await put('label', null)).status, 200)
    assert.equal(await value('label'), null)

    // What no attribute of that type holds: the call answers 500 naming it, and the value is not taken.
    for (const [name, bad, before] of [
      ['level', 'hot', 3],
      ['count', 2.5, 1],
      ['items', { a: 1 }, []],
    ] as const) {
      const res = await put(name, bad)
      assert.equal(res.status, 500, `${name}: ${JSON.stringify(res.body)}`)
      assert.equal(res.body.error.type, 'UserCodeError')
      assert.match(res.body.error.message, new RegExp(`Python code of instance 'loose' left a value of the wrong type: attribute '${name}'`))
      assert.equal(res.body.error.details[0].path, `instances.loose.attributes.${name}`)
      assert.deepEqual(await value(name), before, name)
      // Python still holds it, so every call reports it until the code puts a good value back.
      assert.equal((await put(name, before)).status, 200)
    }

    // In a step (a system run, then the instance's own): the step in which Python leaves such a
    // value fails for this instance, and the attribute keeps its last good value.
    assert.equal((await put('level', 3.0)).status, 200)
    assert.equal((await put('mode', 'bad')).status, 200)
    const system = await t.call(SYS, 'run', { steps: 2 })
    assert.equal(system.status, 500, JSON.stringify(system.body))
    assert.ok(system.body.error.details.some((d: { path: string; message: string }) => d.path === 'instances.loose' && /attribute 'level'/.test(d.message)))
    assert.equal(await value('level'), 3)
    assert.equal((await put('level', 4.0)).status, 200)
    const run = await t.call(`${SYS}/instances/loose`, 'run')
    assert.equal(run.status, 500, JSON.stringify(run.body))
    assert.match(run.body.error.message, /attribute 'level' \(float\): expected a finite number \(float\), got string/)
    assert.equal(await value('level'), 4)
    assert.equal((await t.api('DELETE', `${SYS}/instances/loose`)).status, 200)
  })

  it('deleting instances and stopping the server leaves no worker processes', async () => {
    const pids = t.server.system.services
      .python()
      .workers()
      .map((w) => w.pid)
      .filter((p): p is number => typeof p === 'number')
    assert.ok(pids.length >= 1)
    await t.api('DELETE', `${SYS}/instances/b0`)
    assert.equal((await t.api('GET', `${SYS}/instances/b0`)).status, 404)
    await t.server.close()
    for (const pid of pids) {
      await eventually(() => {
        try {
          process.kill(pid, 0)
          return false
        } catch {
          return true
        }
      }, 5000)
    }
  })
})

// The worker sends a value only when it changed since it last sent it: after the answer that
// carried a value its attribute refused, Python goes on holding it unseen. Every call and step
// after which it still does fails the same way, until Python holds a good value again.
const STUCK = `
from mimic_sdk import MimicComponent

class Stuck:
    """While broken, each step sets level to a str, which its float attribute cannot hold."""
    def __init__(self, broken=True):
        self.level = 1.5
        self.broken = broken

    def tick(self):
        if self.broken:
            self.level = "hot"

    def fix(self, level):
        self.broken = False
        self.level = level

    def peek(self):
        return repr(self.level)

    def __getstate__(self):
        return {"level": self.level, "broken": self.broken}

    def __setstate__(self, state):
        self.level = state["level"]
        self.broken = state["broken"]


class StuckComponent(MimicComponent):
    """Stuck's methods on a MimicComponent, whose every value the worker sends only when it changed."""
    __init__ = Stuck.__init__
    tick = Stuck.tick
    fix = Stuck.fix
    peek = Stuck.peek
`

function stuckModel(cls: string): Record<string, unknown> {
  return {
    attributes: { level: 0.0 },
    import: { 'stuck.py': { class: cls, attributes: { level: { property: 'level' } }, methods: { run: 'tick', fix: 'fix', peek: 'peek' } } },
  }
}

describe('a value Python holds that its attribute refused', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ files: { 'stuck.py': STUCK }, config: { pythonWorkers: 1 } })
    const res = await t.api('PUT', `${SYS}/models`, { Stuck: stuckModel('Stuck'), StuckComponent: stuckModel('StuckComponent') })
    assert.equal(res.status, 200, JSON.stringify(res.body))
  })
  after(async () => t.close())

  const level = async (instance: string): Promise<unknown> =>
    (await t.api('GET', `${SYS}/instances/${instance}/attributes/level/attr/internal_value`)).body.value
  const fresh = async (instance: string, model: string): Promise<void> => {
    assert.equal((await t.api('PUT', `${SYS}/instances`, { [instance]: model })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/${instance}`, 'prepare')).status, 200)
  }
  const refusal = (instance: string): RegExp =>
    new RegExp(
      `^Python code of instance '${instance}' left a value of the wrong type: attribute 'level' \\(float\\): expected a finite number \\(float\\), got string`,
    )

  for (const model of ['Stuck', 'StuckComponent']) {
    it(`${model}: every step and call after which Python still holds it fails as the first did, until a method sets a good value`, async () => {
      const name = model.toLowerCase()
      await fresh(name, model)
      const path = `${SYS}/instances/${name}`

      const first = await t.call(path, 'run')
      assert.equal(first.status, 500, JSON.stringify(first.body))
      assert.equal(first.body.error.type, 'UserCodeError')
      assert.match(first.body.error.message, refusal(name))
      assert.equal(first.body.error.details[0].path, `instances.${name}.attributes.level`)
      assert.equal(await level(name), 1.5, 'the attribute keeps its last good value')

      // Python still holds "hot": the worker does not send it again, the server still refuses it.
      const second = await t.call(path, 'run')
      assert.equal(second.status, 500, JSON.stringify(second.body))
      assert.deepEqual(second.body.error, first.body.error)
      const call = await t.call(path, 'peek')
      assert.equal(call.status, 500, 'a method call after which Python holds it fails too')
      assert.deepEqual(call.body.error, first.body.error)
      assert.equal((await t.api('GET', path)).body.last_error, first.body.error.message)
      assert.equal(await level(name), 1.5)

      // A method puts a good value: the attribute takes it and the steps pass again.
      const fixed = await t.call(path, 'fix', { level: 7.5 })
      assert.equal(fixed.status, 200, JSON.stringify(fixed.body))
      assert.equal(await level(name), 7.5)
      for (let i = 0; i < 2; i++) assert.equal((await t.call(path, 'run')).status, 200)
      assert.equal(await level(name), 7.5)
      assert.equal((await t.api('DELETE', path)).status, 200)
    })
  }

  it('a system run fails in every step after which Python still holds it, batched or not, and passes once a good value is back', async () => {
    const detail = (body: any, instance: string): { path: string; message: string } | undefined =>
      body.error.details.find((d: { path: string }) => d.path === `instances.${instance}`)
    const requests = (): number => t.server.system.services.python().workers()[0]!.requests

    // Alone, a plain instance's steps after the first go to the worker several in one message.
    await fresh('plain', 'Stuck')
    const sent = requests()
    const run = await t.call(SYS, 'run', { steps: 20 })
    assert.ok(requests() - sent < 20, 'some steps were batched')
    assert.equal(run.status, 500, JSON.stringify(run.body))
    assert.equal(run.body.error.details.length, 1, JSON.stringify(run.body.error.details))
    assert.match(detail(run.body, 'plain')?.message ?? '', refusal('plain'))
    assert.match(detail(run.body, 'plain')!.message, /\(failed in 20 of 20 steps\)$/)
    assert.equal(await level('plain'), 1.5)
    const again = await t.call(SYS, 'run', { steps: 2 })
    assert.equal(again.status, 500, JSON.stringify(again.body))
    assert.match(detail(again.body, 'plain')?.message ?? '', /\(failed in 2 of 2 steps\)$/)

    // With a MimicComponent every step goes alone.
    await fresh('component', 'StuckComponent')
    const both = await t.call(SYS, 'run', { steps: 3 })
    assert.equal(both.status, 500, JSON.stringify(both.body))
    assert.equal(both.body.error.details.length, 2, JSON.stringify(both.body.error.details))
    for (const instance of ['plain', 'component']) {
      assert.match(detail(both.body, instance)?.message ?? '', refusal(instance))
      assert.match(detail(both.body, instance)!.message, /\(failed in 3 of 3 steps\)$/)
    }
    const one = await t.call(SYS, 'run')
    assert.equal(one.status, 500, 'a single system step fails too')
    assert.equal(one.body.error.details.length, 2)

    // The plain one is fixed: only the other fails; then both are, and the run passes.
    assert.equal((await t.call(`${SYS}/instances/plain`, 'fix', { level: 3.25 })).status, 200)
    const half = await t.call(SYS, 'run', { steps: 3 })
    assert.equal(half.status, 500)
    assert.deepEqual(
      half.body.error.details.map((d: { path: string }) => d.path),
      ['instances.component'],
    )
    assert.equal((await t.call(`${SYS}/instances/component`, 'fix', { level: 4.5 })).status, 200)
    const passed = await t.call(SYS, 'run', { steps: 3 })
    assert.equal(passed.status, 200, JSON.stringify(passed.body))
    assert.equal(await level('plain'), 3.25)
    assert.equal(await level('component'), 4.5)
    for (const instance of ['plain', 'component']) assert.equal((await t.api('DELETE', `${SYS}/instances/${instance}`)).status, 200)
  })

  it('prepare makes the objects anew: what the old ones held is no longer reported', async () => {
    await fresh('again', 'Stuck')
    const path = `${SYS}/instances/again`
    assert.equal((await t.call(path, 'run')).status, 500)
    assert.equal((await t.call(path, 'prepare')).status, 200)
    assert.equal((await t.call(path, 'peek')).status, 200, 'the new object holds 1.5')
    assert.equal(await level('again'), 1.5)
    assert.equal((await t.call(path, 'run')).status, 500, 'its first step breaks it again')
    assert.equal((await t.api('DELETE', path)).status, 200)
  })

  it('a snapshot with state taken while Python holds it loads as it was: the next step fails the same way', async () => {
    await fresh('saved', 'Stuck')
    const path = `${SYS}/instances/saved`
    const first = await t.call(path, 'run')
    assert.equal(first.status, 500)
    const save = await t.call(`${SYS}/snapshots`, 'save', { include_state: true })
    assert.equal(save.status, 200, JSON.stringify(save.body))
    const load = await t.call(`${SYS}/snapshots`, 'load', { id: save.body.result.id })
    assert.equal(load.status, 200, JSON.stringify(load.body))
    assert.equal(await level('saved'), 1.5)
    assert.equal((await t.call(path, 'peek')).body.error?.message, first.body.error.message)
    const step = await t.call(path, 'run')
    assert.equal(step.status, 500)
    assert.deepEqual(step.body.error, first.body.error)
    assert.equal((await t.call(path, 'fix', { level: 2.5 })).status, 200)
    assert.equal((await t.call(path, 'run')).status, 200)
    assert.equal(await level('saved'), 2.5)
    assert.equal((await t.api('DELETE', path)).status, 200)
  })
})
