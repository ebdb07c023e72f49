// Loading a snapshot with runtime state: what a user sees when the file is fine (floats stay
// floats, overrides and attributes added to an instance come back, the clients and the CLI
// save with state), and when it is not: a corrupt, foreign or newer state section is refused with
// a 422 naming the path of every problem, and a failure while the loaded system starts (a
// __setstate__ that raises) puts the old system back; in both cases the running system is as it was.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { connect } from '../src/client/index.js'
import { freePort, startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const SNAP = `${SYS}/snapshots`
const PYTHON_DIR = new URL('../python', import.meta.url).pathname
const BIN = new URL('../bin/mimic.js', import.meta.url).pathname

/** Keeps a history nobody can see from outside; refuses a state that says so. */
const VALVE_PY = `
import os

# While this file exists, no state is taken: neither a loaded one nor the one before the load.
STUCK = os.path.join(os.path.dirname(__file__), "stuck.flag")

class Valve:
    def __init__(self):
        self.opening = 0.5
        self._moves = []

    def tick(self):
        self._moves.append(self.opening)
        self.opening = round(1.0 - self.opening * 0.9, 6)

    @property
    def moves(self):
        return len(self._moves)

    def __getstate__(self):
        return {"opening": self.opening, "moves": self._moves}

    def __setstate__(self, state):
        if state.get("explode") or os.path.exists(STUCK):
            raise ValueError("this state cannot be taken")
        self.opening = state["opening"]
        self._moves = list(state["moves"])
`

function model(port: number): Record<string, unknown> {
  return {
    Tank: {
      attributes: { level: 25.0, count: { default: 3, type: 'int' }, label: 'tank', noisy: 1.0, valve: 0.0 },
      actions: [
        { function: '$out(count)', name: 'counter', call: '$in(count) + 1' },
        { noise: '$out(noisy)', name: 'jitter', seed: 5, std: 0.1 },
        { pid: '$out(valve)', name: 'controller', setpoint: 30.0, input: '$in(level)', kp: 0.5, ki: 0.1 },
      ],
      scenarios: { drain: { duration: 100, overrides: { '$out(level)': 12.0 } } },
      communication: { modbus_slave: { port, mapping: { level: { address: [0, 1], group: 'h_r', type: 'float' } } } },
    },
    Valve: {
      attributes: { opening: 0.0, moves: { default: 0, type: 'int' } },
      import: { 'valve.py': { class: 'Valve', attributes: { opening: { property: 'opening' }, moves: { property: 'moves' } }, methods: { run: 'tick' } } },
    },
  }
}

/** Runs a command without blocking this process's event loop (the server under test lives in it). */
function run(command: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: { ...process.env, ...env } })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    child.on('close', (code) => resolve({ code, out, err }))
  })
}

describe('loading snapshots with runtime state', () => {
  let t: TestServer
  let saved: { id: string; persisted_path: string }
  let text: string

  const ok = async (res: Promise<{ status: number; body: any }>): Promise<any> => {
    const r = await res
    assert.equal(r.status, 200, JSON.stringify(r.body))
    return r.body
  }
  /** Everything a user could look at: the structure, every attribute document, states, timers, scenarios, the adapter. */
  const observe = async (): Promise<Record<string, unknown>> => {
    const seen: Record<string, unknown> = { definition: (await ok(t.api('GET', `${SYS}/attr/definition`))).value }
    for (const instance of (await ok(t.api('GET', `${SYS}/instances`))).children.map((c: { name: string }) => c.name)) {
      const doc = await ok(t.api('GET', `${SYS}/instances/${instance}`))
      seen[instance] = { state: doc.state, last_error: doc.attr.last_error.value, timer: (await ok(t.api('GET', `${SYS}/instances/${instance}/timer`))).attr }
      for (const { name } of (await ok(t.api('GET', `${SYS}/instances/${instance}/attributes`))).children)
        seen[`${instance}.${name}`] = (await t.api('GET', `${SYS}/instances/${instance}/attributes/${name}`)).body
    }
    seen.drain = (await ok(t.api('GET', `${SYS}/instances/tank/scenarios/drain`))).state
    seen.modbus = (await ok(t.api('GET', `${SYS}/instances/tank/communication/modbus_slave`))).state
    return seen
  }
  /** Loads a changed copy of the saved file; answers the response. */
  const loadChanged = async (name: string, change: (file: any) => void): Promise<{ status: number; body: any }> => {
    const file = JSON.parse(text)
    change(file)
    await writeFile(join(t.snapshots, name), JSON.stringify(file))
    return await t.call(SNAP, 'load', { path: name })
  }

  before(async () => {
    t = await startTestServer({ files: { 'valve.py': VALVE_PY } })
    await ok(t.api('PUT', `${SYS}/models`, model(await freePort())))
    await ok(t.api('PUT', `${SYS}/instances`, { tank: 'Tank', valve: 'Valve' }))
    await ok(t.call(SYS, 'prepare'))
    await ok(t.call(SYS, 'run', { steps: 4 }))
    await ok(t.call(`${SYS}/instances/tank/scenarios/drain`, 'start'))
    await ok(t.call(SYS, 'run', { steps: 2 }))
    await ok(t.api('PUT', `${SYS}/instances/tank/attributes`, { extra: 2.0, tags: ['a', 'b'] }))
    await ok(t.api('PUT', `${SYS}/instances/tank/attributes/label/attr/external_value`, { value: 'shown' }))
    saved = (await ok(t.call(SNAP, 'save', { include_state: true }))).result
    text = await readFile(saved.persisted_path, 'utf8')
  })
  after(async () => t.close())

  it('a load brings back every value as it was, floats as floats, overrides and attributes added to the instance', async () => {
    const before = await observe()
    const file = JSON.parse(text)
    assert.equal(file.schema_version, 2)
    assert.match(text, /"level":\{"internal":12\.0\}/, 'a float attribute is written as a float')
    assert.match(text, /"extra":\{"internal":2\.0,"added":true,"type":"float"\}/)
    assert.match(text, /"count":\{"internal":9\}/, 'an int stays an int')
    assert.match(text, /\n {3}"tank": \{"state":"PREPARED",/, 'one line per instance')
    assert.deepEqual(file.state.instances.tank.attributes.label, { internal: 'tank', external: 'shown' })
    assert.equal(file.state.instances.tank.behaviour.scenarios.drain.state, 'active')

    // Change everything, then load.
    await ok(t.call(SYS, 'run', { steps: 5 }))
    await ok(t.api('DELETE', `${SYS}/instances/tank/attributes/extra`))
    const loaded = (await ok(t.call(SNAP, 'load', { id: saved.id }))).result
    assert.equal(loaded.state, true)
    assert.deepEqual(await observe(), before)
    const raw = await fetch(`${t.url}${SYS}/instances/tank/attributes/level/attr/internal_value`, { headers: { authorization: `Bearer ${TEST_KEY}` } })
    assert.equal(await raw.text(), '{"value":12.0}', 'read back as 12.0')

    // It goes on as the saved system would have: the scenario still holds, the valve's history counts on.
    await ok(t.call(SYS, 'run', { steps: 1 }))
    const after = await observe()
    assert.equal((after['tank.level'] as any).internal_value, 12)
    assert.equal((after['valve.moves'] as any).internal_value, (before['valve.moves'] as any).internal_value + 1)
    await ok(t.call(`${SYS}/instances/tank/scenarios/drain`, 'stop'))
    assert.equal(
      (await ok(t.api('GET', `${SYS}/instances/tank/attributes/level/attr/internal_value`))).value,
      25,
      'stopped, the scenario gives back the value it took',
    )
    await ok(t.call(SNAP, 'load', { id: saved.id }))
  })

  it('a state that names what the structure lacks, or holds values of the wrong type, is refused with every path; nothing changes', async () => {
    const before = await observe()
    const res = await loadChanged('corrupt.json', (file) => {
      const tank = file.state.instances.tank
      file.state.instances.ghost = file.state.instances.valve
      tank.attributes.nope = { internal: 1 }
      tank.attributes.level.internal = 'high'
      tank.attributes.count.internal = 2.5
      tank.timer.dt = -1
      tank.behaviour.actions.controller.state.integral = 'x'
      tank.behaviour.actions.jitter.state.noise.random.mt = 'AAAA'
      tank.behaviour.scenarios.flood = tank.behaviour.scenarios.drain
      file.state.instances.valve.python.states = '[1, 2]'
    })
    assert.equal(res.status, 422, JSON.stringify(res.body))
    const paths = res.body.error.details.map((d: { path: string }) => d.path)
    // The shape is checked first: a timer step below zero is found before anything else is looked at.
    assert.deepEqual(paths, ['state.instances.tank.timer.dt'])
    const res2 = await loadChanged('corrupt.json', (file) => {
      const tank = file.state.instances.tank
      file.state.instances.ghost = file.state.instances.valve
      tank.attributes.nope = { internal: 1 }
      tank.attributes.level.internal = 'high'
      tank.attributes.count.internal = 2.5
      file.state.instances.valve.python.states = '[1, 2]'
    })
    assert.equal(res2.status, 422)
    assert.deepEqual(res2.body.error.details.map((d: { path: string }) => d.path).sort(), [
      'state.instances.ghost',
      'state.instances.tank.attributes.count.internal',
      'state.instances.tank.attributes.level.internal',
      'state.instances.tank.attributes.nope',
      'state.instances.valve.python.states',
    ])
    assert.match(res2.body.error.message, /its runtime state cannot be loaded/)
    const res3 = await loadChanged('corrupt-behaviour.json', (file) => {
      const tank = file.state.instances.tank
      tank.behaviour.actions.controller.state.integral = 'x'
      tank.behaviour.actions.jitter.state.noise.random.mt = 'AAAA'
      tank.behaviour.actions.counter.state = { kept: 1 }
      tank.behaviour.scenarios.flood = tank.behaviour.scenarios.drain
    })
    assert.equal(res3.status, 422)
    assert.deepEqual(res3.body.error.details.map((d: { path: string }) => d.path).sort(), [
      'state.instances.tank.behaviour.actions.controller.state.integral',
      'state.instances.tank.behaviour.actions.counter.state',
      'state.instances.tank.behaviour.actions.jitter.state.noise.random',
      'state.instances.tank.behaviour.scenarios.flood',
    ])
    assert.deepEqual(await observe(), before)
  })

  it('a newer schema_version or state version is refused as written by a newer Mimic; nothing changes', async () => {
    const before = await observe()
    const schema = await loadChanged('newer-schema.json', (file) => (file.schema_version = 3))
    assert.equal(schema.status, 422)
    assert.deepEqual(
      schema.body.error.details.map((d: { path: string }) => d.path),
      ['schema_version'],
    )
    assert.match(schema.body.error.message, /written by a newer Mimic/)
    const state = await loadChanged('newer-state.json', (file) => (file.state.version = 2))
    assert.equal(state.status, 422)
    assert.deepEqual(
      state.body.error.details.map((d: { path: string }) => d.path),
      ['state.version'],
    )
    assert.match(state.body.error.message, /holds runtime state of version 2, written by a newer Mimic/)
    const listed = (await ok(t.call(SNAP, 'list'))).result.files.find((f: { path: string }) => f.path.endsWith('newer-state.json'))
    assert.match(listed.error, /newer Mimic/)
    assert.deepEqual(await observe(), before)
  })

  it('a failure while the loaded system starts (a __setstate__ that raises) puts the system before it back', async () => {
    const before = await observe()
    const res = await loadChanged('explode.json', (file) => {
      const states = JSON.parse(file.state.instances.valve.python.states)
      states[0].explode = true
      file.state.instances.valve.python.states = JSON.stringify(states)
      file.state.instances.tank.attributes.count.internal = 1000
    })
    assert.equal(res.status, 500, JSON.stringify(res.body))
    assert.match(res.body.error.message, /Valve\.__setstate__ raised ValueError: this state cannot be taken/)
    assert.deepEqual(await observe(), before)
    // And it runs on from there: the valve's own history was given back to the new objects.
    await ok(t.call(SYS, 'run', { steps: 1 }))
    assert.equal(
      (await ok(t.api('GET', `${SYS}/instances/valve/attributes/moves/attr/internal_value`))).value,
      (before['valve.moves'] as any).internal_value + 1,
    )
    assert.ok(t.logs.some((r) => String(r.msg).includes('the system it replaced is put back')))
    await ok(t.call(SNAP, 'load', { id: saved.id }))
  })

  it('when the system before a failed load cannot be put back either, it comes back with its Python objects made anew, and the fault says so', async () => {
    const before = await observe()
    const flag = join(t.dir, 'extensions', 'stuck.flag')
    await writeFile(flag, '')
    try {
      const res = await t.call(SNAP, 'load', { id: saved.id })
      assert.equal(res.status, 500, JSON.stringify(res.body))
      assert.match(res.body.error.message, /Valve\.__setstate__ raised ValueError: this state cannot be taken/)
      const restore = res.body.error.details.find((d: { path: string }) => d.path === 'restore')
      assert.ok(restore, JSON.stringify(res.body.error.details))
      assert.match(restore.message, /the system before the load is back, with its Python objects made anew/)
      const now = await observe()
      // Everything but the valve's Python objects is as it was: the structure, the tank, states and timers.
      for (const key of Object.keys(before).filter((k) => !k.startsWith('valve'))) assert.deepEqual(now[key], before[key], key)
      assert.equal((now.valve as { state: string }).state, (before.valve as { state: string }).state)
    } finally {
      await rm(flag, { force: true })
    }
    await ok(t.call(SNAP, 'load', { id: saved.id }))
  })

  it('held actions hold again after a load, and give back what they held before the save when the instance stops', async () => {
    await ok(
      t.api('PUT', `${SYS}/models`, {
        Held: {
          attributes: { mode: 'auto', shown: 1.0 },
          actions: [
            { suspend: 'polling', name: 'quiet' },
            { override: { '$out(mode)': 'manual', '$ext(shown)': 9.0 }, name: 'manual' },
          ],
        },
      }),
    )
    await ok(t.api('PUT', `${SYS}/instances`, { held: 'Held' }))
    await ok(t.call(`${SYS}/instances/held`, 'prepare'))
    const polling = async (): Promise<unknown> => (await ok(t.api('GET', `${SYS}/instances/held/polling/attr/enabled`))).value
    const mode = async (): Promise<unknown> => (await ok(t.api('GET', `${SYS}/instances/held/attributes/mode/attr/internal_value`))).value
    assert.deepEqual([await polling(), await mode()], [false, 'manual'])
    const held = (await ok(t.call(SNAP, 'save', { include_state: true }))).result
    await ok(t.call(`${SYS}/instances/held`, 'stop'))
    await ok(t.call(SNAP, 'load', { id: held.id }))
    assert.deepEqual([await polling(), await mode()], [false, 'manual'], 'held again')
    await ok(t.call(`${SYS}/instances/held`, 'stop'))
    assert.deepEqual([await polling(), await mode()], [true, 'auto'], 'what they held before the save, not what they found at the load')
    await ok(t.api('DELETE', `${SYS}/instances/held`))
    await ok(t.api('DELETE', `${SYS}/models/Held`))
    await ok(t.call(SNAP, 'load', { id: saved.id }))
  })

  it('an action switched off stays off after a load (fused or not), and its instance goes on without it', async () => {
    for (const action of ['counter', 'controller']) await ok(t.api('PUT', `${SYS}/instances/tank/actions/${action}/attr/enabled`, { value: false }))
    const off = (await ok(t.call(SNAP, 'save', { include_state: true }))).result
    await ok(t.call(SNAP, 'load', { id: saved.id }))
    const enabled = async (action: string): Promise<unknown> => (await ok(t.api('GET', `${SYS}/instances/tank/actions/${action}/attr/enabled`))).value
    assert.deepEqual([await enabled('counter'), await enabled('controller')], [true, true])
    await ok(t.call(SNAP, 'load', { id: off.id }))
    assert.deepEqual([await enabled('counter'), await enabled('controller')], [false, false])
    const count = async (): Promise<unknown> => (await ok(t.api('GET', `${SYS}/instances/tank/attributes/count/attr/internal_value`))).value
    const before = await count()
    await ok(t.call(SYS, 'run', { steps: 2 }))
    assert.equal(await count(), before, 'the switched-off counter counts no more')
    await ok(t.call(SNAP, 'load', { id: saved.id }))
  })

  it('include_state must be true or false', async () => {
    const res = await t.call(SNAP, 'save', { include_state: 'yes' })
    assert.equal(res.status, 422)
    assert.deepEqual(res.body.error.details, [{ path: 'kwargs.include_state', message: 'expected true or false' }])
  })

  it('the TypeScript client, the Python client and `mimic snapshot save --include-state` save with state', async () => {
    const sim = connect({ address: t.url, productKey: TEST_KEY })
    const fromTs = await sim.snapshots.save({ include_state: true, label: 'ts' })
    assert.equal(fromTs.state, true)
    const reloaded = await sim.snapshots.load({ id: fromTs.id })
    assert.equal(reloaded.state, true)

    const script = join(t.dir, 'save.py')
    await writeFile(
      script,
      [
        'import json, os',
        'from mimic_sdk import client as mimic',
        'sim = mimic.init(address=os.environ["MIMIC_URL"], product_key=os.environ["MIMIC_PRODUCT_KEY"])',
        'saved = sim["snapshots"].save(include_state=True, label="py")',
        'loaded = sim["snapshots"].load(id=saved["id"])',
        'print(json.dumps({"saved": saved.get("state"), "loaded": loaded.get("state")}))',
      ].join('\n'),
    )
    const py = await run('python3', [script], { PYTHONPATH: PYTHON_DIR, MIMIC_URL: t.url, MIMIC_PRODUCT_KEY: TEST_KEY })
    assert.equal(py.code, 0, py.err)
    assert.deepEqual(JSON.parse(py.out), { saved: true, loaded: true })

    const cli = await run(process.execPath, [BIN, 'snapshot', 'save', '--include-state', '--label', 'cli', '--url', t.url, '--product-key', TEST_KEY])
    assert.equal(cli.code, 0, cli.err)
    const fromCli = JSON.parse(cli.out)
    assert.equal(fromCli.state, true)
    assert.equal(JSON.parse(await readFile(fromCli.persisted_path, 'utf8')).schema_version, 2)
    const structureOnly = JSON.parse((await run(process.execPath, [BIN, 'snapshot', 'save', '--url', t.url, '--product-key', TEST_KEY])).out)
    assert.equal(structureOnly.state, undefined)
    assert.equal(JSON.parse(await readFile(structureOnly.persisted_path, 'utf8')).schema_version, 1, 'without state: version 1 as before')
  })
})
