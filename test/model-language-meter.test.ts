// The declarative three-phase energy meter of examples/devices, read as a SCADA would read it:
// over Modbus TCP with pymodbus, and over HTTP. Every expected value is computed here, in
// CPython, from the formulas of the example written out again (noise from random.Random(seed)),
// so the server's expression engine, noise and stepping are checked against Python itself.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { peerSkipReason, run } from './unit/modbus/helpers.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const DEVICES = new URL('../examples/devices/system.yaml', import.meta.url).pathname
const PYMODBUS = new URL('./unit/modbus/pymodbus-client.py', import.meta.url).pathname
const STEPS = 7

// The meter's formulas, as a Python programmer would write them, for STEPS steps of 1 s from t = 0.
const EXPECTED_PY = `
import json, math, random, sys
steps = int(sys.argv[1])
nominal, load_kw, pf, dt, t = 230.0, 12.0, 0.95, 1.0, 0.0
noise = [random.Random(11), random.Random(12), random.Random(13)]
energy = 0.0
for _ in range(steps):
    v = [nominal + g.gauss(0.0, 0.5) for g in noise]
    i = load_kw * 1000 * (1 + 0.3 * math.sin(2 * math.pi * t / 600)) / (3 * nominal * pf)
    s = v[0] * i + v[1] * i + v[2] * i
    p = (v[0] * i + v[1] * i + v[2] * i) * pf
    q = math.sqrt(max(0.0, s ** 2 - p ** 2))
    energy = energy + p * dt / 3600000
    f = 50.0 + 0.02 * math.sin(t / 7)
    t = round(t + dt, 6)
print(json.dumps({"v_l1": v[0], "v_l2": v[1], "v_l3": v[2], "i_l1": i, "p_total": p, "q_total": q, "s_total": s, "energy_kwh": energy, "frequency": f, "time": t}))
`

/** A float64 as the 32-bit float a Modbus float register pair carries. */
function float32(x: number): number {
  return Math.fround(x)
}

describe('a declarative energy meter (examples/devices)', () => {
  let t: TestServer
  let expected: Record<string, number>
  const skip = peerSkipReason('pymodbus', { command: '/usr/bin/python3', args: ['-c', 'import pymodbus'] }, 'apt-get install python3-pymodbus')

  before(async () => {
    t = await startTestServer({ config: { system: DEVICES } })
    const res = await run('/usr/bin/python3', ['-c', EXPECTED_PY, String(STEPS)])
    assert.equal(res.code, 0, res.stderr)
    expected = JSON.parse(res.stdout)
    assert.equal((await t.call(SYS, 'prepare')).status, 200)
    const step = await t.call(SYS, 'run', { steps: STEPS })
    assert.equal(step.status, 200, JSON.stringify(step.body))
  })
  after(async () => t.close())

  it('its attributes hold exactly what CPython computes from the same formulas and seeds', async () => {
    for (const name of ['v_l1', 'v_l2', 'v_l3', 'i_l1', 'p_total', 'q_total', 's_total', 'energy_kwh', 'frequency']) {
      const res = await t.api('GET', `${SYS}/instances/meter_1/attributes/${name}`)
      assert.equal(res.status, 200)
      assert.equal(res.body.internal_value, expected[name], `${name}`)
    }
    const timer = await t.api('GET', `${SYS}/instances/meter_1/timer`)
    assert.equal(timer.body.attr.time.value, expected.time)
  })

  it('every action of an instance is a node of its own, those inside conditions included', async () => {
    const res = await t.api('GET', `${SYS}/instances/tank_1/actions`)
    assert.equal(res.status, 200)
    const names = (res.body.children as Array<{ name: string }>).map((c) => c.name)
    assert.deepEqual(names, [
      'level',
      'conditions_0_set_0',
      'conditions_1_set_0',
      'conditions_2_set_0',
      'conditions_3_set_0',
      'if_chain_0_set_0',
      'if_chain_1_set_0',
      'if_chain_2_set_0',
    ])
    const inChain = await t.api('GET', `${SYS}/instances/tank_1/actions/if_chain_2_set_0`)
    assert.equal(inChain.body.attr.model_path.value, 'if_chain[2].actions[0]')
  })

  it('pymodbus reads the same values from the input registers', { skip }, async () => {
    const adapter = await t.api('GET', `${SYS}/instances/meter_1/communication/modbus_slave`)
    const port = adapter.body.attr.port.value as number
    const names = ['v_l1', 'v_l2', 'v_l3', 'i_l1', 'i_l2', 'i_l3', 'p_total', 'q_total', 's_total', 'energy_kwh', 'frequency']
    const ops = names.map((_n, k) => ({ op: 'read', group: 'i_r', address: 2 * k, count: 2, type: 'float', unit: 1 }))
    const out = await run('/usr/bin/python3', [PYMODBUS, String(port)], { input: JSON.stringify(ops) })
    assert.equal(out.code, 0, out.stderr)
    const values = JSON.parse(out.stdout) as Array<{ value: number }>
    names.forEach((name, k) => {
      const want = expected[name.startsWith('i_l') ? 'i_l1' : name] as number
      assert.equal(values[k]?.value, float32(want), `${name} at input registers ${2 * k}-${2 * k + 1}`)
    })
  })
})
