import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { FloatMark } from '../../../src/values/number.js'
import { NotFoundError, UserCodeError, ValidationError } from '../../../src/errors.js'
import type { ImportBlock, PythonPool } from '../../../src/python/index.js'
import { eventually } from '../../helpers/wait.js'
import { fixture, py, runStep } from './helpers.js'
import type { Fixture } from './helpers.js'

const SENSOR = py(`
  class PyTempSensor:
      def __init__(self, start=25.0, drift=0.0):
          self._t = start
          self.drift = drift

      @property
      def temperature(self):
          return self._t

      @temperature.setter
      def temperature(self, value):
          self._t = float(value)

      def tick(self):
          self._t += self.drift
          return self._t

      def calibrate(self, offset=0.0):
          self._t += offset
          return {"calibrated": True, "offset": offset}

      def read_level(self):
          return round(self._t * 2, 6)

      def write_level(self, value):
          self._t = value / 2

      def explode(self, n):
          raise ValueError(f"bad n: {n}")

      def shout(self, text):
          print("sensor says", text)
          return len(text)

      def flood(self, lines=100000):
          for i in range(lines):
              print("flood", i)
          return lines
`)

const SENSOR_IMPORT = {
  'py_temp_sensor.py': {
    class: 'PyTempSensor',
    init: { kwargs: { start: 25.0, drift: 0.5 }, args: [] },
    attributes: { temperature: { property: 'temperature' } },
    methods: { run: 'tick', calibrate: 'calibrate', explode: 'explode', shout: 'shout', flood: 'flood' },
  },
}

const COMPONENT = py(`
  from mimic_sdk import MimicComponent

  class Thermostat(MimicComponent):
      def __init__(self, gain=1.0):
          self.gain = gain
          self.temperature = 10.0
          self.started_as = self.name
          self.logger.info("thermostat %s ready", self.name)

      def tick(self):
          error = self.attributes["setpoint"] - self.attributes["temperature"]
          self.attributes["temperature"] = self.attributes["temperature"] + self.gain * error * self.dt
          self.attributes["heating"] = error > 0
          self.logger.warning("tick at %s", self.time)
          return {"name": self.name, "started_as": self.started_as, "time": self.time, "dt": self.dt,
                  "model_attributes": sorted(self.definition["attributes"])}
`)

describe('PythonPool: load, call, set', () => {
  let fx: Fixture
  let pool: PythonPool

  before(async () => {
    fx = await fixture({
      'py_temp_sensor.py': SENSOR,
      'thermostat.py': COMPONENT,
      'pair.py': py(`
        class Counter:
            def __init__(self, step=1):
                self.count = 0
                self.step = step
            def bump(self):
                self.count += self.step

        class Greeter:
            greeting = "hello"
            def greet(self, who="world"):
                return f"{self.greeting} {who}"
      `),
    })
    pool = fx.pool({ workers: 2 })
  })
  after(() => fx.cleanup())

  it('binds a property to the object state (not the model default) and calls the mapped method', async () => {
    const loaded = await fx.load(pool, 'sensor', SENSOR_IMPORT, { attributes: { temperature: 0.0 } })
    assert.deepEqual(loaded.values, { temperature: 25 })
    assert.deepEqual(loaded.methods, ['calibrate', 'explode', 'flood', 'run', 'shout'])
    assert.equal(loaded.component, false)
    const first = await pool.call('sensor', 'run')
    assert.deepEqual(first, { result: 25.5, values: { temperature: 25.5 }, attributes: {} })
    const calibrated = await pool.call('sensor', 'calibrate', { kwargs: { offset: 2 } })
    assert.deepEqual(calibrated.result, { calibrated: true, offset: 2 })
    assert.deepEqual(pool.values('sensor'), { temperature: 27.5 })
  })

  it('set goes through the property setter, and the object itself holds the value', async () => {
    await fx.load(pool, 'sensor2', SENSOR_IMPORT)
    const { values } = await pool.set('sensor2', 'temperature', 30)
    assert.deepEqual(values, { temperature: 30 })
    // a step without a method reads the bound values from the object
    const [read] = await runStep(pool, pool.plan(['sensor2'], undefined))
    assert.equal(read?.error, undefined)
    assert.equal(pool.values('sensor2')?.temperature, 30)
    await pool.call('sensor2', 'run')
    assert.equal(pool.values('sensor2')?.temperature, 30.5)
  })

  it('writes of one turn leave together, in order, each answered on its own', async () => {
    const block = {
      'py_temp_sensor.py': {
        class: 'PyTempSensor',
        attributes: { temperature: { property: 'temperature' }, level_ro: { getter: 'read_level' } },
        methods: { run: 'tick' },
      },
    }
    const names = ['w0', 'w1', 'w2', 'w3']
    for (const name of names) await fx.load(pool, name, block)
    const requests = (): number => pool.workers().reduce((sum, w) => sum + w.requests, 0)
    const before = requests()
    const writes = names.map((name, i) => pool.set(name, 'temperature', 10 * (i + 1)))
    // observed at once: its rejection may arrive in the same answer as the writes
    const readOnly = assert.rejects(pool.set('w0', 'level_ro', 1), (err: unknown) => err instanceof ValidationError && /read-only/.test(err.message))
    // a call issued after the writes, in the same turn, sees them
    const run = pool.call('w1', 'run')
    const results = await Promise.all(writes)
    assert.deepEqual(
      results.map((r) => r.values.temperature),
      [10, 20, 30, 40],
    )
    await readOnly
    // Python's 20.0 comes marked as a float (src/values/number.ts), so HTTP answers 20.0.
    assert.deepEqual((await run).result, new FloatMark(20), 'tick (no drift) returns the temperature just written, not the start value 25')
    assert.equal(requests() - before, 2 + 1, 'one message of writes per worker, then the call')
    assert.equal(pool.values('w3')?.temperature, 40)
  })

  it('getter/setter bindings, and a getter without setter is read-only (422)', async () => {
    const block = {
      'py_temp_sensor.py': {
        class: 'PyTempSensor',
        attributes: {
          level: { getter: 'read_level', setter: 'write_level' },
          level_ro: { getter: 'read_level' },
        },
      },
    }
    const loaded = await fx.load(pool, 'levels', block)
    assert.deepEqual(loaded.values, { level: 50, level_ro: 50 })
    assert.deepEqual(loaded.readOnly, ['level_ro'])
    assert.deepEqual((await pool.set('levels', 'level', 10)).values, { level: 10, level_ro: 10 })
    await assert.rejects(pool.set('levels', 'level_ro', 1), (err: unknown) => {
      assert.ok(err instanceof ValidationError)
      assert.equal(err.status, 422)
      assert.match(err.message, /read-only/)
      assert.equal(err.details[0]?.path, 'attributes.level_ro')
      return true
    })
  })

  it('several files and a list of classes from one file', async () => {
    const block: ImportBlock = {
      'pair.py': [
        { class: 'Counter', init: { kwargs: { step: 3 } }, attributes: { count: { property: 'count' } }, methods: { run: 'bump' } },
        { class: 'Greeter', attributes: { greeting: { property: 'greeting' } }, methods: { greet: 'greet' } },
      ],
      'py_temp_sensor.py': { class: 'PyTempSensor', attributes: { temperature: { property: 'temperature' } } },
    }
    const loaded = await fx.load(pool, 'multi', block)
    assert.deepEqual(loaded.values, { count: 0, greeting: 'hello', temperature: 25 })
    assert.equal((await pool.call('multi', 'greet', { kwargs: { who: 'Mimic' } })).result, 'hello Mimic')
    assert.deepEqual((await pool.call('multi', 'run')).values, { count: 3, temperature: 25 }, 'numbers always come, the unchanged greeting does not')
    await pool.set('multi', 'greeting', 'hi')
    assert.equal((await pool.call('multi', 'greet')).result, 'hi world')
    assert.deepEqual(pool.info('multi')?.files.length, 2)
  })

  it('a MimicComponent gets name, definition, attributes, time, dt and logger', async () => {
    const block = {
      'thermostat.py': {
        class: 'Thermostat',
        init: { kwargs: { gain: 0.5 } },
        attributes: { temperature: { property: 'temperature' } },
        methods: { run: 'tick' },
      },
    }
    const definition = { attributes: { temperature: 0.0, setpoint: 20.0, heating: false }, import: block }
    const loaded = await fx.load(pool, 'hall', block, {
      definition,
      attributes: { setpoint: 20.0, heating: false },
      time: 0,
      dt: 1,
    })
    assert.equal(loaded.component, true)
    assert.deepEqual(loaded.values, { temperature: 10 })
    const answer = await pool.call('hall', 'run', { time: 2.5, dt: 1, attributes: { setpoint: 30.0, heating: false } })
    assert.deepEqual(answer.result, {
      name: 'hall',
      started_as: 'hall',
      time: 2.5,
      // dt 1 reaches Python as the float 1.0, and comes back marked as one
      dt: new FloatMark(1),
      model_attributes: ['heating', 'setpoint', 'temperature'],
    })
    assert.deepEqual(answer.values, { temperature: 20 })
    assert.deepEqual(answer.attributes, { heating: true })
    const ready = fx.records.find((r) => r.instance === 'hall' && r.msg === 'thermostat hall ready')
    assert.equal(ready?.level, 30)
    const tick = fx.records.find((r) => r.instance === 'hall' && r.msg === 'tick at 2.5')
    assert.equal(tick?.level, 40)
  })

  it('editing the file and loading again picks up the new code', async () => {
    await fx.write('live.py', 'class Live:\n    def version(self):\n        return 1\n')
    const block = { 'live.py': { class: 'Live', methods: { version: 'version' } } }
    await fx.load(pool, 'live', block)
    assert.equal((await pool.call('live', 'version')).result, 1)
    await fx.write('live.py', 'class Live:\n    def version(self):\n        return 2\n')
    const reloaded = await fx.load(pool, 'live', block)
    assert.equal((await pool.call('live', 'version')).result, 2)
    assert.equal(reloaded.worker, pool.info('live')?.worker)
  })

  it('a user exception is a 500 with the traceback and the instance keeps working', async () => {
    await fx.load(pool, 'oops', SENSOR_IMPORT)
    await assert.rejects(pool.call('oops', 'explode', { args: [7] }), (err: unknown) => {
      assert.ok(err instanceof UserCodeError)
      assert.equal(err.status, 500)
      assert.match(err.message, /ValueError: bad n: 7/)
      const detail = err.details[0]!
      assert.equal(detail.path, 'explode')
      assert.match(String(detail.traceback), /py_temp_sensor\.py", line \d+, in explode/)
      assert.match(String(detail.traceback), /raise ValueError/)
      return true
    })
    assert.equal((await pool.call('oops', 'run')).result, 25.5)
  })

  it('load problems are 422 naming the exact entry', async () => {
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ 'py_temp_sensor.py': { class: 'PyTempSensr' } }, 'import.py_temp_sensor.py.class', /class 'PyTempSensr' not found in py_temp_sensor\.py/],
      [
        { 'py_temp_sensor.py': { class: 'PyTempSensor', init: { kwargs: { strat: 1 } } } },
        'import.py_temp_sensor.py.init',
        /unexpected keyword argument 'strat'/,
      ],
      [
        { 'pair.py': [{ class: 'Counter' }, { class: 'Greeter', attributes: { greeting: { property: 'greting' } } }] },
        'import.pair.py[1].attributes.greeting.property',
        /'Greeter' has no property 'greting'/,
      ],
      [{ 'pair.py': { class: 'Counter', methods: { run: 'bumpp' } } }, 'import.pair.py.methods.run', /no method 'bumpp'/],
      [{ 'missing.py': { class: 'X' } }, 'import.missing.py', /not found in the extension directories/],
    ]
    for (const [block, detailPath, message] of cases) {
      await assert.rejects(fx.load(pool, 'broken', block as never), (err: unknown) => {
        assert.ok(err instanceof ValidationError, String(err))
        assert.equal(err.status, 422)
        assert.equal(err.details[0]?.path, detailPath)
        assert.match(err.details[0]!.message, message)
        return true
      })
    }
    assert.equal(pool.info('broken'), undefined)
    await assert.rejects(pool.call('broken', 'run'), NotFoundError)
  })

  it('unknown methods and unloaded instances are 404; unload releases the objects', async () => {
    await fx.load(pool, 'gone', SENSOR_IMPORT)
    await assert.rejects(pool.call('gone', 'nope'), (err: unknown) => err instanceof NotFoundError && /bound: calibrate/.test(err.message))
    await pool.unload('gone')
    assert.equal(pool.info('gone'), undefined)
    await assert.rejects(pool.call('gone', 'run'), NotFoundError)
  })

  it('print() output reaches the logger tagged with the instance', async () => {
    await fx.load(pool, 'talker', SENSOR_IMPORT)
    assert.equal((await pool.call('talker', 'shout', { args: ['hello'] })).result, 5)
    const record = fx.records.find((r) => r.instance === 'talker' && r.msg === 'sensor says hello')
    assert.ok(record, 'print output logged')
    assert.equal(record.stream, 'stdout')
    assert.equal(record.worker, pool.info('talker')?.worker)
  })

  it('a flood of prints does not stall the worker or the server', async () => {
    await fx.load(pool, 'flooder', SENSOR_IMPORT)
    // The event loop keeps turning while the flood is read: a 10 ms ticker runs again and again
    // before the call answers. A loop held by the output until the end would let it run once at
    // most. No bound on time: a loaded machine slows the flood and the ticker alike.
    let ticks = 0
    const ticker = setInterval(() => ticks++, 10)
    let ticksBeforeAnswer: number
    try {
      assert.equal((await pool.call('flooder', 'flood')).result, 100000)
      ticksBeforeAnswer = ticks
    } finally {
      clearInterval(ticker)
    }
    assert.ok(ticksBeforeAnswer >= 5, `the event loop turned ${ticksBeforeAnswer} times during the flood`)
    // The log's last word on the flood: how much it dropped.
    const flooded = () => fx.records.filter((r) => r.instance === 'flooder' && r.stream === 'stdout')
    await eventually(() => flooded().some((r) => /characters of output dropped/.test(r.msg)), 15_000, 10)
    const lines = flooded()
    assert.ok(lines.length > 100 && lines.length < 60000, `${lines.length} lines logged`)
    assert.ok(lines.some((r) => /characters of output dropped/.test(r.msg)))
    assert.equal((await pool.call('flooder', 'run')).result, 25.5)
  })
})
