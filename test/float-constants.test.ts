// A number written as a float in a model's behaviour (`value: 2.0`, `params: {k: 2.0}`, a named
// constant, a scenario override, a hook's value, an untyped meta parameter's default or the value
// an instance gives it) is a float
// to the expressions, as it would be in Python: `str(k)` gives '2.0', not '2'. The same model is
// read from a YAML system file, a JSON body and a snapshot; the text of the answers is checked,
// since JSON.parse would turn 2.0 into 2 again.
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from './helpers/server.js'
import { rawRequest } from './helpers/wire.js'

const SYS = '/api/v3/system'

/** The model, in YAML: each `seen_*` attribute shows Python's text of one number as the step saw it. */
const MODEL_YAML = `
    meta_parameters:
      gain: {type: float, default: 2}
      offset: {default: 3.0}
      count: {type: int, default: 4}
    attributes:
      limit: {default: &limit 2.0, type: float}
      held: {default: null, type: any}
      hooked: {default: null, type: any}
      trigger: {default: 0, type: int}
      seen_param: {default: '', type: str}
      seen_constant: {default: '', type: str}
      seen_params: {default: '', type: str}
      seen_set: {default: null, type: any}
      seen_alias: {default: null, type: any}
      seen_branch: {default: null, type: any}
      ramped: {default: 0.0, type: float}
      smooth: {default: 0.0, type: float}
    actions:
      - function: $out(seen_param)
        call: 'f"{$param(gain)} {$param(offset)} {$param(count)}"'
      - function: $out(seen_constant)
        call: str(k) + " " + str(n)
        k: 5.0
        n: 5
      - function: $out(seen_params)
        call: str(half) + " " + str(items)
        params: {half: 1.0, items: [1.0, 2, {x: 3.0}]}
      - set: $out(seen_set)
        value: 2.0
      - set: $out(seen_alias)
        value: *limit
      - ramp: $out(ramped)
        start_value: 0.0
        stop_value: 10.0
        duration: 10.0
      - noise: $out(smooth)
        std: 1.0
        seed: 3.0
    conditions:
      - if: $in(trigger) == 1
        actions:
          - set: $out(seen_branch)
            value: 7.0
    scenarios:
      hold:
        duration: 60.0
        overrides:
          $in(held): 4.0
    hooks:
      on_set:
        - set_attr: {attribute: $out(hooked), value: 6.0}
`

function systemYaml(): string {
  const model = MODEL_YAML.replace(/^ {4}/gm, '    ')
  return `models:\n  Device:\n${model.replace(/^\n/, '')}\ninstances:\n  - d1: {type: Device}\n  - d2: {type: Device, parameters: {offset: 7.0, count: 8.0, gain: 9}}\n`
}

/** What each attribute answers, as raw JSON text. */
async function answers(t: TestServer, instance: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const name of ['seen_param', 'seen_constant', 'seen_params', 'seen_set', 'seen_alias', 'seen_branch', 'held', 'hooked']) {
    const res = await rawRequest(t, 'GET', `${SYS}/instances/${instance}/attributes/${name}/attr/internal_value`)
    assert.equal(res.status, 200, res.text)
    out[name] = res.text
  }
  return out
}

/** Steps once with the condition's branch and the scenario on, and a write that fires the hook. */
async function exercise(t: TestServer, instance: string): Promise<void> {
  assert.equal((await t.api('PUT', `${SYS}/instances/${instance}/attributes/trigger`, { value: 1 })).status, 200)
  assert.equal((await t.call(`${SYS}/instances/${instance}/scenarios/hold`, 'start')).status, 200)
  const run = await t.call(`${SYS}/instances/${instance}`, 'run')
  assert.equal(run.status, 200, JSON.stringify(run.body))
}

const EXPECTED = {
  seen_param: '{"value":"2.0 3.0 4"}',
  seen_constant: '{"value":"5.0 5"}',
  seen_params: `{"value":"1.0 [1.0, 2, {'x': 3.0}]"}`,
  seen_set: '{"value":2.0}',
  seen_alias: '{"value":2.0}',
  seen_branch: '{"value":7.0}',
  held: '{"value":4.0}',
  hooked: '{"value":6.0}',
}

describe('floats written in a model behaviour', () => {
  let t: TestServer
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-float-constants-'))
    const system = join(dir, 'system.yaml')
    await writeFile(system, systemYaml())
    t = await startTestServer({ config: { system } })
  })
  after(async () => {
    await t.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('are floats to the expressions of a model read from a YAML system file', async () => {
    await exercise(t, 'd1')
    assert.deepEqual(await answers(t, 'd1'), EXPECTED)
  })

  it('are floats when the model comes as a JSON body, and the definition reads back with them', async () => {
    const answer = (await rawRequest(t, 'GET', `${SYS}/models/Device/attr/definition`)).text
    const definition = answer.slice('{"value":'.length, -1)
    assert.match(definition, /"value":2\.0/)
    assert.match(definition, /"k":5\.0,"n":5/)
    assert.match(definition, /"offset":\{"default":3\.0\}/)
    assert.match(definition, /"duration":60\.0/)
    // The definition as read back, PUT as the body of a new model: the JSON text keeps `2.0`.
    const put = await rawRequest(t, 'PUT', `${SYS}/models`, `{"Copy": ${definition}}`)
    assert.equal(put.status, 200, put.text)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { c1: 'Copy' })).status, 200)
    await exercise(t, 'c1')
    assert.deepEqual(await answers(t, 'c1'), EXPECTED)
  })

  it('stay floats in a model loaded from a snapshot', async () => {
    const saved = await t.call(`${SYS}/snapshots`, 'save', { label: 'floats' })
    assert.equal(saved.status, 200, JSON.stringify(saved.body))
    const loaded = await t.call(`${SYS}/snapshots`, 'load', { id: (saved.body.result as { id: string }).id })
    assert.equal(loaded.status, 200, JSON.stringify(loaded.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { s1: 'Device' })).status, 200)
    await exercise(t, 's1')
    assert.deepEqual(await answers(t, 's1'), EXPECTED)
  })

  it('given by an instance to an untyped parameter stay floats: from a file, a PUT, a snapshot and a root PUT', async () => {
    const seen = async (instance: string): Promise<string> => {
      await exercise(t, instance)
      return (await rawRequest(t, 'GET', `${SYS}/instances/${instance}/attributes/seen_param/attr/internal_value`)).text
    }
    // `count` is an int parameter: 8.0 written for it is the int 8, as before.
    const expected = '{"value":"9.0 7.0 8"}'
    assert.equal(await seen('d2'), expected)
    const put = await rawRequest(t, 'PUT', `${SYS}/instances`, '{"p2": {"type": "Device", "parameters": {"offset": 7.0, "count": 8, "gain": 9}}}')
    assert.equal(put.status, 200, put.text)
    assert.equal(await seen('p2'), expected)
    const definition = (await rawRequest(t, 'GET', `${SYS}/definition`)).text
    assert.ok(definition.includes('{"p2":{"type":"Device","parameters":{"offset":7.0,"count":8,"gain":9.0}}}'), definition)

    const saved = await t.call(`${SYS}/snapshots`, 'save', { label: 'instance floats' })
    assert.equal(saved.status, 200, JSON.stringify(saved.body))
    const copy = await startTestServer()
    try {
      const root = await rawRequest(copy, 'PUT', SYS, definition.slice('{"value":'.length, -1))
      assert.equal(root.status, 200, root.text)
      await exercise(copy, 'p2')
      assert.equal((await rawRequest(copy, 'GET', `${SYS}/instances/p2/attributes/seen_param/attr/internal_value`)).text, expected)
    } finally {
      await copy.close()
    }
    const loaded = await t.call(`${SYS}/snapshots`, 'load', { id: (saved.body.result as { id: string }).id })
    assert.equal(loaded.status, 200, JSON.stringify(loaded.body))
    assert.equal(await seen('p2'), expected)
  })

  it('keep an int an int, and a setting written 10.0 is still a number to its action', async () => {
    const put = await rawRequest(
      t,
      'PUT',
      `${SYS}/models`,
      '{"Ints": {"attributes": {"seen": {"default": "", "type": "str"}, "r": {"default": 0.0, "type": "float"}}, "actions": [{"function": "$out(seen)", "call": "str(k)", "k": 2}, {"ramp": "$out(r)", "start_value": 0.0, "stop_value": 5.0, "duration": 5.0}]}}',
    )
    assert.equal(put.status, 200, put.text)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { i1: 'Ints' })).status, 200)
    // The ramp's settings are numbers to it: 0.0 at the first step, 1.0 a second later.
    for (let i = 0; i < 2; i++) assert.equal((await t.call(`${SYS}/instances/i1`, 'run')).status, 200)
    assert.equal((await rawRequest(t, 'GET', `${SYS}/instances/i1/attributes/seen/attr/internal_value`)).text, '{"value":"2"}')
    assert.equal((await rawRequest(t, 'GET', `${SYS}/instances/i1/attributes/r/attr/internal_value`)).text, '{"value":1.0}')
  })
})
