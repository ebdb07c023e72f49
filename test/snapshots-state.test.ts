// Snapshots that carry runtime state (save(include_state=true)): a run split by a save, a
// restart of the server process and a load ends exactly where the same run taken in one go ends
// — every attribute value read over HTTP and every Modbus register read by a Modbus client —
// for declarative actions (function, seeded noise, pid), a scenario half-way through its
// duration, and Python classes with and without __getstate__/__setstate__. Real `mimic serve`
// processes, real Python workers, real sockets and files.
import assert from 'node:assert/strict'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { serveProcess, type ServerProcess } from './helpers/process.js'
import { TestClient, registersOf } from './unit/modbus/helpers.js'

const SYS = '/api/v3/system'
const SNAP = `${SYS}/snapshots`
const DT = 0.1

/** A pump with hidden state: a random generator and a running total, saved through the pair. */
const PUMP_PY = `
import random

class Pump:
    def __init__(self, base=2.0):
        self.base = base
        self.speed = base
        self._rng = random.Random(7)
        self._total = 0.0
        self._count = 0

    def tick(self):
        self._count += 1
        self.speed = self.base + self._rng.gauss(0.0, 0.25) + (self._total % 1.0) * 0.1
        self._total += self.speed

    @property
    def total(self):
        return self._total

    def __getstate__(self):
        return {"speed": self.speed, "total": self._total, "count": self._count, "rng": self._rng.getstate()}

    def __setstate__(self, state):
        self.speed = state["speed"]
        self._total = state["total"]
        self._count = state["count"]
        version, words, gauss = state["rng"]
        self._rng.setstate((version, tuple(words), gauss))
`

/** A meter without the pair: all it keeps is in its bound attributes, which a load writes back. */
const METER_PY = `
class Meter:
    def __init__(self):
        self.energy = 0.0
        self.power = 5.0

    def tick(self):
        self.energy += self.power * 0.1
        self.power = self.power * 0.97 + 0.5
`

/** The system: a declarative plant fed by the pump, published over Modbus (on a port each server chooses), and the meter. */
function system(): Record<string, unknown> {
  return {
    models: {
      Plant: {
        timer: { time_step: DT },
        attributes: {
          setpoint: 50.0,
          level: 10.0,
          inflow: 0.0,
          flow: 0.0,
          noisy: 20.0,
          valve: 0.0,
          pressure: 1.0,
          alarm: { default: 0, type: 'int' },
        },
        actions: [
          { function: '$out(flow)', name: 'flow', call: '$in(valve) * 2.0 + $in(inflow) + $attr(timer.time) * 0.01' },
          { noise: '$out(noisy)', name: 'jitter', type: 'pink', std: 0.5, seed: 42 },
          {
            pid: '$out(valve)',
            name: 'controller',
            setpoint: '$in(setpoint)',
            input: '$in(level)',
            kp: 0.4,
            ki: 0.08,
            kd: 0.05,
            output_min: 0,
            output_max: 10,
          },
          { function: '$out(level)', name: 'fill', call: '$in(level) + ($in(flow) - 6.0) * 0.05' },
        ],
        scenarios: {
          surge: {
            enabled: true,
            duration: 19.5,
            period: 30,
            jitter: 2,
            run_limit: 2,
            overrides: { '$out(alarm)': 1, 'communication.modbus_slave.response_delay': 0.01 },
            actions: [{ function: '$out(pressure)', name: 'ramp', call: '1.0 + $attr(timer.time) * 0.2' }],
          },
        },
        communication: {
          modbus_slave: {
            port: 0,
            mapping: {
              level: { address: [0, 1], group: 'h_r', type: 'float' },
              valve: { address: [2, 3], group: 'h_r', type: 'float' },
              noisy: { address: [0, 1], group: 'i_r', type: 'float' },
              pressure: { address: [2, 3], group: 'i_r', type: 'float' },
              alarm: { address: 4, group: 'i_r', type: 'uint_16' },
            },
          },
        },
      },
      Pump: {
        attributes: { speed: 0.0, total: 0.0 },
        import: { 'pump.py': { class: 'Pump', attributes: { speed: { property: 'speed' }, total: { property: 'total' } }, methods: { run: 'tick' } } },
      },
      Meter: {
        attributes: { energy: 0.0, power: 0.0 },
        import: { 'meter.py': { class: 'Meter', attributes: { energy: { property: 'energy' }, power: { property: 'power' } }, methods: { run: 'tick' } } },
      },
    },
    instances: [{ plant: 'Plant' }, { pump: 'Pump' }, { meter: 'Meter' }],
    connections: { feed: { from: 'pump.attributes.speed', to: 'plant.attributes.inflow' } },
  }
}

/** What a user would compare: every attribute document (as text: 25.0 stays 25.0), scenario, timer and register. */
async function observe(server: ServerProcess): Promise<Record<string, unknown>> {
  const seen: Record<string, unknown> = {}
  for (const instance of ['plant', 'pump', 'meter']) {
    const attrs = (await server.api('GET', `${SYS}/instances/${instance}/attributes`)).body.children as Array<{ name: string }>
    for (const { name } of attrs) seen[`${instance}.${name}`] = (await server.api('GET', `${SYS}/instances/${instance}/attributes/${name}`)).text
    seen[`${instance}.timer`] = (await server.api('GET', `${SYS}/instances/${instance}/timer`)).body.attr
    seen[`${instance}.state`] = (await server.api('GET', `${SYS}/instances/${instance}`)).body.state
  }
  const surge = (await server.api('GET', `${SYS}/instances/plant/scenarios/surge`)).body
  seen['plant.scenarios.surge'] = { state: surge.state, elapsed: surge.attr.elapsed.value, runs: surge.attr.runs.value }
  seen['plant.response_delay'] = (await server.api('GET', `${SYS}/instances/plant/communication/modbus_slave/attr/response_delay`)).body.value
  const port = (await server.api('GET', `${SYS}/instances/plant/communication/modbus_slave`)).body.attr.port.value as number
  const client = await TestClient.connect(port)
  try {
    seen['modbus.h_r'] = registersOf(await client.request({ fc: 3, address: 0, quantity: 4 }))
    seen['modbus.i_r'] = registersOf(await client.request({ fc: 4, address: 0, quantity: 5 }))
  } finally {
    client.close()
  }
  return seen
}

describe('a run split by save(include_state=true), a server restart and a load ends where the whole run ends', () => {
  let dir: string
  let extensions: string
  const servers: ServerProcess[] = []
  const serve = async (snapshots: string): Promise<ServerProcess> => {
    const server = await serveProcess(['--extensions', extensions, '--snapshots-dir', snapshots])
    servers.push(server)
    return server
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-state-'))
    extensions = join(dir, 'extensions')
    await mkdir(extensions)
    await writeFile(join(extensions, 'pump.py'), PUMP_PY)
    await writeFile(join(extensions, 'meter.py'), METER_PY)
  })
  after(async () => {
    for (const server of servers) await server.stop('SIGKILL')
    await rm(dir, { recursive: true, force: true })
  })

  it('run(200) on server A equals run(100), save with state, a new server process, load, run(100) on server B', async () => {
    // A: the whole run.
    const a = await serve(join(dir, 'snapshots-a'))
    assert.equal((await a.api('PUT', SYS, system())).status, 200)
    await a.call(SYS, 'prepare')
    await a.call(SYS, 'run', { steps: 200, dt: DT })
    const whole = await observe(a)
    await a.stop()

    // B: half, save with state, stop the process; a new one on the same directory loads and runs the rest.
    const snapshots = join(dir, 'snapshots-b')
    const b1 = await serve(snapshots)
    assert.equal((await b1.api('PUT', SYS, system())).status, 200)
    await b1.call(SYS, 'prepare')
    await b1.call(SYS, 'run', { steps: 100, dt: DT })
    const half = await b1.api('GET', `${SYS}/instances/plant/scenarios/surge`)
    // The 100th step ran at t = 9.9 (time moves on after each step): half-way through its 19.5 s.
    assert.equal(half.body.state, 'active')
    assert.ok(Math.abs(half.body.attr.elapsed.value - 9.9) < 1e-9, `elapsed ${half.body.attr.elapsed.value}`)
    const saved = await b1.call(SNAP, 'save', { include_state: true, label: 'half-way' })
    assert.equal(saved.state, true)
    const file = JSON.parse(await readFile(saved.persisted_path, 'utf8'))
    assert.equal(file.schema_version, 2)
    assert.equal(file.state.version, 1)
    assert.deepEqual(Object.keys(file.state.instances).sort(), ['meter', 'plant', 'pump'])
    assert.match(JSON.parse(file.state.instances.pump.python.states)[0].rng ? 'rng' : '', /rng/, 'the pump saved its own state')
    assert.equal(JSON.parse(file.state.instances.meter.python.states)[0], null, 'the meter has no __getstate__')
    assert.equal(await b1.stop('SIGTERM'), 0)

    const b2 = await serve(snapshots)
    const loaded = await b2.call(SNAP, 'load', { id: saved.id })
    assert.deepEqual(loaded, { id: saved.id, loaded: true, models: 3, instances: 3, connections: 1, state: true })
    await b2.call(SYS, 'run', { steps: 100, dt: DT })
    const split = await observe(b2)

    assert.deepEqual(split, whole)
    // The run went somewhere: the scenario ended (in the second half) and put back what it held.
    const surge = whole['plant.scenarios.surge'] as { state: string; elapsed: number; runs: number }
    assert.deepEqual([surge.state, surge.runs, Math.round(surge.elapsed * 10) / 10], ['idle', 1, 19.4])
    assert.equal(whole['plant.response_delay'], 0)
    assert.match(String(whole['plant.alarm']), /"internal_value":0,/)
    assert.notEqual(whole['pump.speed'], whole['pump.total'])
    await b2.stop()
  })
})
