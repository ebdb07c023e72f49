// Models of the reference product's public device library (test/fixtures/spx/, MIT licensed, kept
// as published) load in Mimic unchanged and step. A protocol of the reference product that Mimic
// does not serve (KNX, Matter, BACnet, ...) does not stop a model from loading: the model runs
// without it and says so, while a kind neither product knows is still refused.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { loadDefinitionFile } from '../src/definition/load-file.js'
import { modelBehaviourProblems } from '../src/language/model/index.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const FIXTURES = join(import.meta.dirname, 'fixtures', 'spx')
const BIN = join(import.meta.dirname, '..', 'bin', 'mimic.js')
/** The fixtures this file steps; test/spx-protocols.test.ts reads the adapter settings of the others. */
const FILES = [
  'fire_alarm_panel__bacnet.yaml',
  'prevac_mcd7__modbus.yaml',
  'rohde_schwarz_hmc8015__scpi.yaml',
  'smart_plug__matter.yaml',
  'stepper_controller__modbus.yaml',
]

describe("models of the reference product's library", () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(async () => t.close())

  for (const file of FILES) {
    it(`${file} loads unchanged and steps`, async () => {
      const loaded = await loadDefinitionFile(join(FIXTURES, file), modelBehaviourProblems)
      assert.deepEqual(loaded.details, [])
      assert.equal(loaded.kind, 'model')
      const name = file.replace(/\.yaml$/, '')
      const put = await t.api('PUT', `${SYS}/models`, { [name]: loaded.data })
      assert.equal(put.status, 200, JSON.stringify(put.body))
      assert.equal((await t.api('PUT', `${SYS}/instances`, { [`${name}_1`]: name })).status, 200)
      // Stepped without prepare, which would start the adapters: the library's models listen on
      // fixed ports of every interface (0.0.0.0:5022), and tests listen on loopback only.
      for (let i = 0; i < 3; i++) {
        const run = await t.call(`${SYS}/instances/${name}_1`, 'run')
        assert.equal(run.status, 200, JSON.stringify(run.body))
      }
    })
  }

  it('a Matter model runs without its Matter adapter, and says so in its communication node, the log and `mimic validate`', async () => {
    const communication = await t.api('GET', `${SYS}/instances/smart_plug__matter_1/communication`)
    assert.equal(communication.status, 200)
    assert.deepEqual(communication.body.attr.unserved, { value: ['communication[0].matter'] })
    // Its adapter is a node that says it is not served, rather than nothing at all.
    assert.deepEqual(communication.body.children, [{ name: 'matter' }])
    const adapter = await t.api('GET', `${SYS}/instances/smart_plug__matter_1/communication/matter`)
    assert.equal(adapter.body.state, 'UNSUPPORTED')
    assert.equal(adapter.body.kind, 'matter')
    const warnings = t.logs.filter((r) => r.model === 'smart_plug__matter' && Array.isArray(r.unserved))
    assert.equal(warnings.length, 1, JSON.stringify(warnings))
    assert.match(String(warnings[0]!.msg), /declares matter, which Mimic does not serve: it runs without it/)
    const validate = spawnSync(process.execPath, [BIN, 'validate', join(FIXTURES, 'smart_plug__matter.yaml')], { encoding: 'utf8', timeout: 30_000 })
    assert.equal(validate.status, 0, validate.stderr)
    assert.match(
      validate.stdout,
      /valid model definition\n {2}note: communication\[0\]\.matter: Mimic does not serve the matter protocol; the model runs without it/,
    )
  })

  it('a scenario that detaches an adapter Mimic does not serve runs, skipping what it does to that adapter, and says so once', async () => {
    const model = {
      attributes: { level: 0.0 },
      actions: [{ function: '$out(level)', call: '$in(level) + 1' }],
      communication: [{ lwm2m: { server: 'coap://127.0.0.1:5683' } }],
      scenarios: {
        // As the reference product's library writes it: its node of the lwm2m protocol is `lwm2m_client`.
        lwm2m_reconnect: { enabled: true, duration: 3.0, call: { path: 'communication.lwm2m_client.detach', stop_path: 'communication.lwm2m_client.attach' } },
        quiet: { duration: 2.0, overrides: { 'communication.lwm2m.response_delay': 2.0 } },
      },
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Gauge: model })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { g1: 'Gauge' })).status, 200)
    for (const method of ['prepare', 'start']) {
      const res = await t.call(`${SYS}/instances/g1`, method)
      assert.equal(res.status, 200, `${method}: ${JSON.stringify(res.body)}`)
    }
    assert.equal((await t.call(`${SYS}/instances/g1/scenarios/quiet`, 'start')).status, 200)
    for (let i = 0; i < 4; i++) assert.equal((await t.call(`${SYS}/instances/g1`, 'run')).status, 200)
    assert.equal((await t.api('GET', `${SYS}/instances/g1/scenarios/lwm2m_reconnect`)).body.attr.state.value, 'finished')
    assert.equal((await t.api('GET', `${SYS}/instances/g1/attributes/level`)).body.attr.internal_value.value, 4)
    const skipped = t.logs.filter((r) => r.instance === 'g1' && typeof r.path === 'string').map((r) => [r.path, r.msg])
    assert.deepEqual(skipped, [
      ['communication.lwm2m_client.detach', "'communication.lwm2m_client.detach' is on the lwm2m adapter, which Mimic does not serve: skipped"],
      ['communication.lwm2m.response_delay', "'communication.lwm2m.response_delay' is on the lwm2m adapter, which Mimic does not serve: skipped"],
      ['communication.lwm2m_client.attach', "'communication.lwm2m_client.attach' is on the lwm2m adapter, which Mimic does not serve: skipped"],
    ])
    assert.equal((await t.call(`${SYS}/instances/g1`, 'stop')).status, 200)
    // A path into no adapter at all (a misspelt name) is still refused when it is used.
    const typo = { ...model, scenarios: { reconnect: { duration: 1.0, call: { path: 'communication.lwm2n_client.detach' } } } }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Typo: typo })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { typo1: 'Typo' })).status, 200)
    const refused = await t.call(`${SYS}/instances/typo1/scenarios/reconnect`, 'start')
    assert.equal(refused.status, 404, JSON.stringify(refused.body))
    assert.match(refused.body.error.message, /'communication\.lwm2n_client\.detach' names no method/)
  })

  it("a stepper controller's `distortions` section: its noise runs after the model's own actions", async () => {
    const noise = await t.api('GET', `${SYS}/instances/stepper_controller__modbus_1/actions/distortions_noise_0`)
    assert.equal(noise.status, 200, JSON.stringify(noise.body))
    assert.equal(noise.body.attr.kind.value, 'noise')
    const names = (await t.api('GET', `${SYS}/instances/stepper_controller__modbus_1/actions`)).body.children.map((c: { name: string }) => c.name)
    assert.equal(names.at(-1), 'distortions_noise_0', String(names))
  })

  it('a `set` of a text such as "ALARM" writes that text, as the reference product\'s models expect', async () => {
    // fire_alarm_panel__bacnet: a manual call point raises the alarm and its text.
    const panel = `${SYS}/instances/fire_alarm_panel__bacnet_1`
    assert.equal((await t.api('GET', `${panel}/attributes/alarm_text/value`)).body.value, 'NORMAL')
    assert.equal((await t.api('PUT', `${panel}/attributes/manual_callpoint`, { value: 1 })).status, 200)
    assert.equal((await t.call(panel, 'run')).status, 200)
    assert.equal((await t.api('GET', `${panel}/attributes/alarm_text/value`)).body.value, 'ALARM')
    assert.equal((await t.api('GET', `${panel}/attributes/system_status/value`)).body.value, 3)
    // An expression is still an expression, and a broken one is still a 422 with its path.
    const model = (value: string): unknown => ({ attributes: { s: '', x: 2.0 }, actions: [{ set: '$out(s)', value }] })
    assert.equal((await t.api('PUT', `${SYS}/models`, { Expr: model('str($in(x) * 2)') })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { e1: 'Expr' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/e1`, 'run')).status, 200)
    assert.equal((await t.api('GET', `${SYS}/instances/e1/attributes/s/value`)).body.value, '4.0')
    for (const broken of ['1 +', '$in(x) + ALARM', '$in(nope)']) {
      const res = await t.api('PUT', `${SYS}/models`, { Broken: model(broken) })
      assert.equal(res.status, 422, broken)
      assert.equal(res.body.error.details[0].path, 'actions[0].value', broken)
    }
  })

  it('an attribute may be named as a method of other nodes (`enable`), as drive models name it; `start`, `attr` and `method` stay reserved', async () => {
    const put = await t.api('PUT', `${SYS}/models`, {
      Drive: { attributes: { enable: 0, disable: false, speed: 0.0 }, actions: [{ function: '$out(speed)', call: '50.0 if $in(enable) else 0.0' }] },
    })
    assert.equal(put.status, 200, JSON.stringify(put.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { d1: 'Drive' })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances/d1/attributes/enable`, { value: 1 })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/d1`, 'run')).status, 200)
    assert.equal((await t.api('GET', `${SYS}/instances/d1/attributes/speed/value`)).body.value, 50)
    for (const name of ['start', 'attr', 'method']) {
      const res = await t.api('PUT', `${SYS}/models`, { Bad: { attributes: { [name]: 1.0 } } })
      assert.equal(res.status, 422, name)
      assert.equal(res.body.error.details[0].path, `attributes.${name}`)
    }
    assert.equal((await t.api('PUT', `${SYS}/instances/d1/attributes/attr/attr/internal_value`, { value: 1 })).status, 422)
  })

  it('`random.Random(seed)` and the rest of the random module the engine does not serve run in the Python worker, with its numbers', async () => {
    const model = {
      attributes: { n: 0, picks: { default: [], type: 'list' } },
      actions: [
        { function: '$out(n)', imports: ['random'], call: 'random.Random(7).randint(1, 1000)' },
        { function: '$out(picks)', imports: ['random'], call: 'random.Random(7).sample(range(10), 3)' },
      ],
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Seeded: model })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { r1: 'Seeded' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/r1`, 'prepare')).status, 200)
    assert.equal((await t.call(`${SYS}/instances/r1`, 'run')).status, 200)
    // What python3 gives for the same calls.
    assert.equal((await t.api('GET', `${SYS}/instances/r1/attributes/n/value`)).body.value, 332)
    assert.deepEqual((await t.api('GET', `${SYS}/instances/r1/attributes/picks/value`)).body.value, [5, 2, 6])
  })

  it('a params string that is plain text ("URMS,IRMS,...") is that text, as in the power analyzer\'s measurement list', async () => {
    const analyzer = `${SYS}/instances/rohde_schwarz_hmc8015__scpi_1`
    const data = (await t.api('GET', `${analyzer}/attributes/measurement_data/value`)).body.value as string
    // One number per function of the default list, as the instrument answers MEAS? with them.
    assert.equal(data.split(',').length, 9, data)
    for (const item of data.split(',')) assert.ok(Number.isFinite(Number(item)), data)
  })

  it('a kind that neither Mimic nor the reference product has is still refused, with its path', async () => {
    const res = await t.api('PUT', `${SYS}/models`, { Typo: { attributes: { x: 1.0 }, communication: [{ modbus_tpc: { mapping: {} } }] } })
    assert.equal(res.status, 422)
    assert.equal(res.body.error.details[0].path, 'communication[0].modbus_tpc')
    assert.match(res.body.error.details[0].message, /unknown adapter kind 'modbus_tpc'/)
  })
})
