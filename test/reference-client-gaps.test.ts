// Calls that scripts written for the reference product's client make, and that Mimic answers:
// the structure as a definition, an attribute's `value`, `reload()` of the --system file, DELETE
// of an attribute, and model faults whose first line says what is wrong. Runs again with the
// fast lane off (test/lane-off/reference-client-gaps.test.ts).
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { parse as parseYaml } from 'yaml'
import { connect, type MimicApiError } from '../src/client/index.js'
import { startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'
import { rawRequest, runPythonWithSdk } from './helpers/wire.js'

const SYS = '/api/v3/system'

const SYSTEM_YAML = `models:
  pt100:
    meta_parameters:
      gain: { type: float, default: 1.0 }
    attributes:
      temperature: 25.0
      count: { default: 3, type: int }
  display:
    attributes:
      value: 0.0
      label: { default: '', type: str }
instances:
  - s1: pt100
  - s2: { type: pt100, parameters: { gain: 2.0 }, init_parameters: { temperature: 30.0 } }
  - panel: display
connections:
  c1: { from: s1.attributes.temperature, to: panel.attributes.value }
`

/** A server started with `--system` pointing at a file holding `text`. */
async function startWithSystem(text: string): Promise<{ t: TestServer; file: string; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'mimic-refclient-'))
  const file = join(dir, 'system.yaml')
  await writeFile(file, text)
  const t = await startTestServer({ config: { system: file } })
  return { t, file, dir }
}

/** The body of a GET as the server wrote it (a float's `.0` is lost once parsed). */
async function rawGet(t: TestServer, path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${TEST_KEY}` } })
  return { status: res.status, text: await res.text() }
}

describe('GET /api/v3/system/definition', () => {
  let t: TestServer
  let dir: string
  let bare: TestServer

  before(async () => {
    ;({ t, dir } = await startWithSystem(SYSTEM_YAML))
    bare = await startTestServer()
  })
  after(async () => {
    await t?.close()
    await bare?.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('is the whole structure as a system definition: models as given, instances with their parameters, connections', async () => {
    const res = await t.api('GET', `${SYS}/definition`)
    assert.equal(res.status, 200)
    assert.deepEqual(Object.keys(res.body), ['value'])
    assert.deepEqual(res.body.value, parseYaml(SYSTEM_YAML))
  })

  it('writes float values as floats: defaults, float parameters and start values keep their .0', async () => {
    const { text } = await rawGet(t, `${SYS}/definition`)
    for (const written of [
      '"temperature":25.0',
      '"gain":{"type":"float","default":1.0}',
      '"count":{"default":3,"type":"int"}',
      '"value":0.0',
      '"parameters":{"gain":2.0}',
      '"init_parameters":{"temperature":30.0}',
    ]) {
      assert.ok(text.includes(written), `${written} in ${text}`)
    }
  })

  it('is a read-only property of the root, also as definition_snapshot and through /attr/', async () => {
    const { text } = await rawGet(t, `${SYS}/definition`)
    for (const path of [`${SYS}/attr/definition`, `${SYS}/definition_snapshot`, `${SYS}/attr/definition_snapshot`]) {
      assert.deepEqual(await rawGet(t, path), { status: 200, text }, path)
    }
    const root = await rawGet(t, SYS)
    const doc = JSON.parse(root.text)
    assert.deepEqual(doc.attr.definition, JSON.parse(text))
    assert.deepEqual(doc.attr.definition_snapshot, JSON.parse(text))
    assert.ok(root.text.includes('"temperature":25.0'), 'the root document keeps the floats too')
    assert.equal('definition' in doc, false, 'the structure is in attr only')
    assert.equal('value' in doc, false)
    for (const [verb, path, body] of [
      ['PUT', `${SYS}/attr/definition`, { value: { models: {} } }],
      ['PATCH', SYS, { definition_snapshot: {} }],
    ] as const) {
      const write = await t.api(verb, path, body)
      assert.equal(write.status, 422, `${verb} ${path}`)
      assert.match(write.body.error.message, /read-only/)
    }
    assert.equal((await rawGet(t, `${SYS}/definition`)).text, text)
  })

  it('follows the structure as it changes', async () => {
    assert.equal((await t.api('PUT', `${SYS}/instances`, { s9: { type: 'pt100', init_parameters: { temperature: 5.0 } } })).status, 200)
    const { text } = await rawGet(t, `${SYS}/definition`)
    assert.ok(text.includes('{"s9":{"type":"pt100","init_parameters":{"temperature":5.0}}}'), text)
    assert.equal((await t.api('DELETE', `${SYS}/instances/s9`)).status, 200)
    assert.deepEqual((await t.api('GET', `${SYS}/definition`)).body.value, parseYaml(SYSTEM_YAML))
  })

  it('loads as it is: as a --system file, and PUT on the root of another server', async () => {
    const { text } = await rawGet(t, `${SYS}/definition`)
    const definition = JSON.stringify(JSON.parse(text).value)
    const file = join(dir, 'definition.json')
    await writeFile(file, definition)
    const copy = await startTestServer({ config: { system: file } })
    try {
      assert.equal((await rawGet(copy, `${SYS}/definition`)).text, text)
    } finally {
      await copy.close()
    }
    const put = await bare.api('PUT', SYS, JSON.parse(definition))
    assert.equal(put.status, 200, JSON.stringify(put.body))
    assert.equal((await rawGet(bare, `${SYS}/definition`)).text, text)
    assert.equal((await bare.api('GET', `${SYS}/instances/s2/attributes/temperature/value`)).body.value, 30)
  })

  it('loads as it is on the root of another server when the system has no connections, floats included', async () => {
    const source = await startTestServer()
    const copy = await startTestServer()
    try {
      const model =
        '{"M": {"attributes": {"xs": {"default": [1.0], "type": "list"}, "d": {"default": null, "type": "any"}}, "actions": [{"set": "$out(d)", "value": 2.0}]}}'
      assert.equal((await rawRequest(source, 'PUT', `${SYS}/models`, model)).status, 200)
      assert.equal((await source.api('PUT', `${SYS}/instances`, { m1: 'M' })).status, 200)
      const { text } = await rawGet(source, `${SYS}/definition`)
      assert.match(text, /"connections":\{\}/)
      const put = await rawRequest(copy, 'PUT', SYS, text.slice('{"value":'.length, -1))
      assert.equal(put.status, 200, put.text)
      assert.equal((await rawGet(copy, `${SYS}/definition`)).text, text)
      assert.equal((await copy.call(`${SYS}/instances/m1`, 'run')).status, 200)
      assert.equal((await rawRequest(copy, 'GET', `${SYS}/instances/m1/attributes/d/attr/internal_value`)).text, '{"value":2.0}')
    } finally {
      await source.close()
      await copy.close()
    }
  })

  it('is described in the OpenAPI document, with reload', async () => {
    const doc = (await (await fetch(`${t.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>
      components: { schemas: Record<string, unknown> }
    }
    assert.ok(doc.paths['/api/v3/system/definition']?.get)
    assert.ok(doc.paths['/api/v3/system/method/reload']?.post)
    assert.ok(doc.components.schemas.SystemDefinition)
  })

  it('a root PUT refuses a malformed list of instances, naming the entry, and changes nothing', async () => {
    const before = (await rawGet(bare, `${SYS}/definition`)).text
    const res = await bare.api('PUT', SYS, { instances: [{ s7: 'pt100' }, { a: 'pt100', b: 'pt100' }, { s7: 'display' }] })
    assert.equal(res.status, 422)
    assert.deepEqual(
      res.body.error.details.map((d: { path: string }) => d.path),
      ['instances[1]', 'instances[2]'],
    )
    assert.equal((await rawGet(bare, `${SYS}/definition`)).text, before)
  })

  it('a root PUT whose instances name a model nowhere, or whose connections name an instance nowhere, writes nothing', async () => {
    const before = (await rawGet(bare, `${SYS}/definition`)).text
    const good = { attributes: { v: 1.0 } }
    const noModel = await bare.api('PUT', SYS, { models: { fresh: good }, instances: { f1: 'fresh', f2: 'nomodel' } })
    assert.equal(noModel.status, 404, JSON.stringify(noModel.body))
    assert.deepEqual(noModel.body.error.details, [{ path: 'models.nomodel', message: 'not found' }])
    const noInstance = await bare.api('PUT', SYS, {
      models: { fresh: good },
      instances: { f1: 'fresh' },
      connections: { c: { from: 'f1.attributes.v', to: 'ghost.attributes.v' } },
    })
    assert.equal(noInstance.status, 422, JSON.stringify(noInstance.body))
    assert.deepEqual(noInstance.body.error.details, [{ path: 'connections.c.to', message: "unknown instance 'ghost'" }])
    assert.equal((await rawGet(bare, `${SYS}/definition`)).text, before, 'neither the model nor the instance was created')
  })

  it('a root PUT checks every part against the system it would make, and writes nothing when any is wrong', async () => {
    const before = (await rawGet(bare, `${SYS}/definition`)).text
    const fresh = { meta_parameters: { k: { type: 'float', default: 1.0 } }, attributes: { v: 1.0, label: { default: '', type: 'str' } } }
    const refused = async (body: unknown): Promise<string[]> => {
      const res = await bare.api('PUT', SYS, body)
      assert.equal(res.status, 422, JSON.stringify(res.body))
      assert.match(res.body.error.message, /nothing was written|validation failed/)
      assert.equal((await rawGet(bare, `${SYS}/definition`)).text, before, `${JSON.stringify(body)} changed the system`)
      return res.body.error.details.map((d: { path: string }) => d.path)
    }
    // A connection no value can cross (a str into a float), to an instance the same PUT makes.
    const typed = { models: { fresh }, instances: { f1: 'fresh' }, connections: { c: { from: 'f1.attributes.label', to: 'panel.attributes.value' } } }
    assert.deepEqual(await refused(typed), ['connections.c.to'])
    // An attribute the new instance's model does not have.
    const ghost = { models: { fresh }, instances: { f1: 'fresh' }, connections: { c: { from: 'f1.attributes.ghost', to: 'panel.attributes.value' } } }
    assert.deepEqual(await refused(ghost), ['connections.c.from'])
    // A parameter the model does not declare.
    const params = await refused({ models: { fresh }, instances: { f1: { type: 'fresh', parameters: { nope: 1 } } } })
    assert.ok(params.length === 1 && params[0]!.startsWith('instances.f1.parameters'), String(params))
    // An invalid model beside a valid one and an instance of it: the model's path in the body.
    const broken = await refused({ models: { fresh, broken: { attributes: { x: { type: 'float', default: 'a' } } } }, instances: { f1: 'fresh' } })
    assert.ok(broken.length > 0 && broken.every((p) => p.startsWith('models.broken.')), String(broken))

    // Right, the same parts are written together: the connection is checked against the
    // attributes the body's own model gives, and carries its value at the next step.
    const wired = { models: { fresh }, instances: { f1: 'fresh' }, connections: { c: { from: 's2.attributes.temperature', to: 'f1.attributes.v' } } }
    const ok = await bare.api('PUT', SYS, wired)
    assert.equal(ok.status, 200, JSON.stringify(ok.body))
    assert.equal((await bare.call(SYS, 'run')).status, 200)
    assert.equal((await bare.api('GET', `${SYS}/instances/f1/attributes/v/value`)).body.value, 30)
    for (const path of ['connections/c', 'instances/f1', 'models/fresh']) assert.equal((await bare.api('DELETE', `${SYS}/${path}`)).status, 200)
    assert.equal((await rawGet(bare, `${SYS}/definition`)).text, before)
  })
})

describe("an attribute's value property", () => {
  let t: TestServer
  let dir: string
  const TEMPERATURE = `${SYS}/instances/s1/attributes/temperature`

  before(async () => {
    ;({ t, dir } = await startWithSystem(SYSTEM_YAML))
  })
  after(async () => {
    await t?.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('reads the internal value, written by its type (25.0), in attr and as a property path', async () => {
    assert.deepEqual(await rawGet(t, `${TEMPERATURE}/value`), { status: 200, text: '{"value":25.0}' })
    assert.deepEqual(await rawGet(t, `${TEMPERATURE}/attr/value`), { status: 200, text: '{"value":25.0}' })
    const doc = await rawGet(t, TEMPERATURE)
    assert.ok(doc.text.includes('"value":{"value":25.0}'), doc.text)
    const parsed = JSON.parse(doc.text)
    assert.equal('value' in parsed, false, 'no top-level value: clients would take the document for a leaf')
    assert.equal(parsed.internal_value, 25)
    // An attribute named `value` has a `value` property like any other.
    assert.deepEqual(await rawGet(t, `${SYS}/instances/panel/attributes/value/value`), { status: 200, text: '{"value":0.0}' })
  })

  it('writes the internal value: PUT .../attr/value, PATCH in both forms', async () => {
    const written = await fetch(`${t.url}${TEMPERATURE}/attr/value`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
      body: '{"value": 40.0}',
    })
    assert.equal(await written.text(), '{"value":40.0}')
    assert.equal((await t.api('GET', `${TEMPERATURE}/internal_value`)).body.value, 40)
    assert.equal((await t.api('PATCH', TEMPERATURE, { attr: { value: { value: 41.5 } } })).body.internal_value, 41.5)
    assert.equal((await t.api('PATCH', TEMPERATURE, { value: 42.5 })).body.internal_value, 42.5)
    await t.api('PUT', `${TEMPERATURE}/attr/external_value`, { value: 99.0 })
    assert.equal((await t.api('GET', `${TEMPERATURE}/value`)).body.value, 42.5, 'value is the internal value, not the presented one')
    assert.equal((await t.api('GET', `${TEMPERATURE}/external_value`)).body.value, 99)
  })

  it('checks a written value as internal_value is checked (422 with the path, nothing changes)', async () => {
    const before = (await t.api('GET', `${SYS}/instances/s1/attributes`)).body
    const values = async (): Promise<unknown[]> =>
      Promise.all(['temperature', 'count'].map(async (a) => (await t.api('GET', `${SYS}/instances/s1/attributes/${a}/internal_value`)).body.value))
    const start = await values()
    for (const [attr, value, message] of [
      ['temperature', 'warm', /expected a finite number/],
      ['temperature', null, /expected a finite number/],
      ['count', 2.5, /integer/],
      ['count', true, /integer/],
    ] as const) {
      for (const internal of ['value', 'internal_value']) {
        const res = await t.api('PUT', `${SYS}/instances/s1/attributes/${attr}/attr/${internal}`, { value })
        assert.equal(res.status, 422, `${attr} ${internal} ${JSON.stringify(value)}`)
        assert.equal(res.body.error.details[0].path, internal)
        assert.match(res.body.error.details[0].message, message)
      }
    }
    const patched = await t.api('PATCH', `${SYS}/instances/s1/attributes/count`, { attr: { value: { value: 'many' } } })
    assert.equal(patched.status, 422)
    assert.deepEqual(await values(), start)
    assert.deepEqual((await t.api('GET', `${SYS}/instances/s1/attributes`)).body, before)
  })

  it('a write to the value of an attribute that does not exist creates it, as internal_value does', async () => {
    const res = await t.api('PUT', `${SYS}/instances/s1/attributes/extra/attr/value`, { value: 7.0 })
    assert.equal(res.status, 200)
    assert.deepEqual(await rawGet(t, `${SYS}/instances/s1/attributes/extra/value`), { status: 200, text: '{"value":7.0}' })
    assert.equal((await t.api('GET', `${SYS}/instances/s1/attributes/extra`)).body.type, 'float')
    assert.equal((await t.api('DELETE', `${SYS}/instances/s1/attributes/extra`)).status, 200)
  })
})

describe('DELETE of an attribute of an instance', () => {
  let t: TestServer
  let dir: string
  const ATTRS = `${SYS}/instances/s2/attributes`

  before(async () => {
    ;({ t, dir } = await startWithSystem(SYSTEM_YAML))
  })
  after(async () => {
    await t?.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('refuses a model attribute with a 409 that says why, and the attribute stays', async () => {
    const res = await t.api('DELETE', `${ATTRS}/temperature`)
    assert.equal(res.status, 409)
    assert.equal(res.body.event, 'conflict')
    assert.deepEqual(res.body.component, { name: 'temperature', path: 'instances.s2.attributes.temperature', state: null })
    const message: string = res.body.error.message
    assert.match(message, /^Attribute 'temperature' of instance 's2' is declared by its model 'pt100' and cannot be removed from an instance/)
    assert.match(message, /behaviour, Python bindings and protocol mappings rely on/)
    assert.match(message, /only attributes added to an instance with PUT can be deleted/)
    assert.equal((await t.api('GET', `${ATTRS}/temperature/value`)).body.value, 30)
  })

  it('removes an attribute the instance gained by a PUT', async () => {
    assert.equal((await t.api('PUT', ATTRS, { note: 'hi', level: 3.5 })).status, 200)
    const res = await t.api('DELETE', `${ATTRS}/note`)
    assert.equal(res.status, 200)
    assert.deepEqual(res.body, { detail: "Component 'note' deleted", destroyed: true, removed_from_parent: true })
    assert.equal((await t.api('GET', `${ATTRS}/note`)).status, 404)
    const names = (await t.api('GET', ATTRS)).body.children.map((c: { name: string }) => c.name)
    assert.deepEqual(names, ['temperature', 'count', 'level', '__timer'])
    assert.equal((await t.api('DELETE', `${ATTRS}/note`)).status, 404)
    // A new one of the same name starts afresh, with the type of its new value.
    await t.api('PUT', `${ATTRS}/note/attr/internal_value`, { value: 12 })
    assert.equal((await t.api('GET', `${ATTRS}/note`)).body.type, 'float')
    assert.equal((await t.api('DELETE', `${ATTRS}/note`)).status, 200)
  })

  it('refuses one a connection uses (409 naming it) until the connection is gone', async () => {
    await t.api('PUT', ATTRS, { caption: 'tank' })
    assert.equal((await t.api('PUT', `${SYS}/connections`, { c2: { from: 's2.attributes.caption', to: 'panel.attributes.label' } })).status, 200)
    const res = await t.api('DELETE', `${ATTRS}/caption`)
    assert.equal(res.status, 409)
    assert.match(res.body.error.message, /wired by connection c2/)
    assert.deepEqual(res.body.error.details, [{ path: 'connections.c2', message: 'uses s2.attributes.caption' }])
    assert.equal((await t.api('DELETE', `${SYS}/connections/c2`)).status, 200)
    assert.equal((await t.api('DELETE', `${ATTRS}/caption`)).status, 200)
  })
})

describe('POST /api/v3/system/method/reload', () => {
  let t: TestServer
  let dir: string
  let file: string
  let bare: TestServer

  before(async () => {
    ;({ t, dir, file } = await startWithSystem(SYSTEM_YAML))
    bare = await startTestServer()
  })
  after(async () => {
    await t?.close()
    await bare?.close()
    await rm(dir, { recursive: true, force: true })
  })

  /** What must not change when a reload is refused: the structure and a value written before. */
  const state = async (): Promise<{ definition: string; temperature: unknown; state: unknown }> => ({
    definition: (await rawGet(t, `${SYS}/definition`)).text,
    temperature: (await t.api('GET', `${SYS}/instances/s1/attributes/temperature/value`)).body.value,
    state: (await t.api('GET', `${SYS}/instances/s1/state`)).body.value,
  })

  it('reads the --system file again and replaces the structure, every instance fresh', async () => {
    await t.api('PUT', `${SYS}/instances/s1/attributes/temperature/attr/value`, { value: 50.0 })
    await t.call(`${SYS}/instances/s1`, 'prepare')
    await writeFile(file, SYSTEM_YAML.replace('temperature: 25.0', 'temperature: 26.0').replace('  - panel: display\n', '  - panel: display\n  - s3: pt100\n'))
    const res = await t.call(SYS, 'reload')
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.deepEqual(res.body.result, { file, loaded: true, models: 2, instances: 4, connections: 1 })
    assert.deepEqual(await rawGet(t, `${SYS}/instances/s1/attributes/temperature/value`), { status: 200, text: '{"value":26.0}' })
    assert.equal((await t.api('GET', `${SYS}/instances/s1/state`)).body.value, 'INITIALIZED')
    assert.equal((await t.api('GET', `${SYS}/instances/s3`)).status, 200)
    const empty = await t.api('POST', `${SYS}/method/reload`)
    assert.equal(empty.status, 200, 'an empty body is allowed')
  })

  it('refuses a file that is not YAML, with line:column, and leaves the system as it was', async () => {
    await t.api('PUT', `${SYS}/instances/s1/attributes/temperature/attr/value`, { value: 55.5 })
    const before = await state()
    await writeFile(file, 'models:\n  pt100: { attributes: [\n')
    const res = await t.call(SYS, 'reload')
    assert.equal(res.status, 422)
    assert.equal(res.body.event, 'validation')
    assert.equal(res.body.action, 'reload')
    const [detail] = res.body.error.details
    assert.equal(typeof detail.line, 'number')
    assert.equal(typeof detail.column, 'number')
    assert.match(res.body.error.message, new RegExp(`^System file ${file} is invalid: \\d+ errors?: ${detail.line}:${detail.column} `))
    assert.deepEqual(await state(), before)
  })

  it('refuses an invalid definition, every problem with its path and line:column, and leaves the system as it was', async () => {
    const before = await state()
    const broken = SYSTEM_YAML.replace('temperature: 25.0', 'temperature: { default: warm, type: float }').replace(
      '  - panel: display\n',
      '  - panel: nowhere\n',
    )
    await writeFile(file, broken)
    const res = await t.call(SYS, 'reload')
    assert.equal(res.status, 422)
    const details = res.body.error.details as Array<{ path: string; line: number; column: number }>
    const byPath = Object.fromEntries(details.map((d) => [d.path, d]))
    assert.equal(byPath['models.pt100.attributes.temperature.default']?.line, 6)
    assert.ok(
      details.some((d) => d.path.startsWith('instances[2]') && d.line === 15),
      JSON.stringify(details),
    )
    assert.match(res.body.error.message, /^System file .* is invalid: \d+ errors: 6:\d+ models\.pt100\.attributes\.temperature\.default: /)
    assert.deepEqual(await state(), before)
  })

  it('locates the problems found past the schema too (a default a register cannot carry)', async () => {
    const before = await state()
    const unmappable = SYSTEM_YAML.replace(
      '      count: { default: 3, type: int }\n',
      '      count: { default: 70000, type: int }\n    communication:\n      - modbus_slave:\n          mapping:\n            count: { address: 0, group: h_r, type: int_16 }\n',
    )
    await writeFile(file, unmappable)
    const res = await t.call(SYS, 'reload')
    assert.equal(res.status, 422, JSON.stringify(res.body))
    const [detail] = res.body.error.details
    assert.match(detail.path, /^models\.pt100\./)
    assert.equal(typeof detail.line, 'number', JSON.stringify(detail))
    assert.deepEqual(await state(), before)
  })

  it('refuses a file holding a single model, a file that is gone, and arguments', async () => {
    const before = await state()
    await writeFile(file, 'attributes: { temperature: 25.0 }\n')
    const model = await t.call(SYS, 'reload')
    assert.equal(model.status, 422)
    assert.match(model.body.error.message, /holds a single model, not a system/)
    await rm(file)
    const gone = await t.call(SYS, 'reload')
    assert.equal(gone.status, 422)
    assert.match(gone.body.error.message, /cannot be read/)
    const args = await t.call(SYS, 'reload', { path: '/etc/passwd' })
    assert.equal(args.status, 422)
    assert.deepEqual(args.body.error.details, [{ path: 'kwargs.path', message: 'unknown argument (reload takes none)' }])
    assert.deepEqual(await state(), before)
    await writeFile(file, SYSTEM_YAML)
  })

  it('answers 409 on a server started without --system', async () => {
    const res = await bare.call(SYS, 'reload')
    assert.equal(res.status, 409)
    assert.equal(res.body.event, 'conflict')
    assert.match(res.body.error.message, /started without --system/)
    assert.ok((await bare.api('GET', SYS)).body.methods.includes('reload'))
  })
})

describe('the fault of an invalid model', () => {
  let t: TestServer

  before(async () => {
    t = await startTestServer()
  })
  after(async () => {
    await t?.close()
  })

  it('starts with the model and its first problem, on one line', async () => {
    const bad = { attributes: { y: { default: 'a', type: 'float' }, z: { default: 1.5, type: 'int' } } }
    const check = (res: { status: number; body: any }): void => {
      assert.equal(res.status, 422)
      const message: string = res.body.error.message
      assert.equal(message.includes('\n'), false)
      assert.ok(message.startsWith("Model 'x' schema validation failed: attributes.y.default: expected a finite number (float), got string"), message)
      assert.match(message, /attributes\.z\.default: .* \(2 errors\)$/)
      assert.deepEqual(
        res.body.error.details.map((d: { path: string }) => d.path),
        ['attributes.y.default', 'attributes.z.default'],
      )
    }
    check(await t.api('PUT', `${SYS}/models`, { x: bad }))
    assert.equal((await t.api('PUT', `${SYS}/models`, { x: { attributes: { y: 1.0 } } })).status, 200)
    check(await t.api('PUT', `${SYS}/models/x`, { definition: bad }))
    check(await t.api('PUT', `${SYS}/models/x/attr/definition`, { value: bad }))
    assert.deepEqual((await t.api('GET', `${SYS}/models/x/definition`)).body.value, { attributes: { y: 1.0 } })
    assert.equal((await t.api('DELETE', `${SYS}/models/x`)).status, 200)
    const one = await t.api('PUT', `${SYS}/models`, { x: { attributes: { y: { default: 'a', type: 'float' } } } })
    assert.equal(one.body.error.message, "Model 'x' schema validation failed: attributes.y.default: expected a finite number (float), got string")
  })

  it('with several models, names the first invalid one and the others, and keeps every path', async () => {
    const res = await t.api('PUT', `${SYS}/models`, { ok: { attributes: { t: 1.0 } }, a: { attributes: { t: { default: 'x', type: 'int' } } }, b: { nope: 1 } })
    assert.equal(res.status, 422)
    assert.match(res.body.error.message, /^Model 'a' schema validation failed: attributes\.t\.default: .*; also invalid: 'b'$/)
    assert.deepEqual(
      res.body.error.details.map((d: { path: string }) => d.path),
      ['a.attributes.t.default', 'b.nope'],
    )
    assert.equal((await t.api('GET', `${SYS}/models`)).body.children.length, 0)
  })
})

describe('the clients', () => {
  let t: TestServer
  let dir: string

  before(async () => {
    ;({ t, dir } = await startWithSystem(SYSTEM_YAML))
  })
  after(async () => {
    await t?.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('the Python client and plain http.client / urllib calls, as a script sends them', async () => {
    const script = join(dir, 'gaps.py')
    await writeFile(script, PYTHON_SCRIPT)
    const run = await runPythonWithSdk(script, { MIMIC_URL: t.url, MIMIC_PRODUCT_KEY: TEST_KEY })
    assert.equal(run.code, 0, run.stderr)
    const seen = JSON.parse(run.stdout.trim().split('\n').pop()!)
    assert.deepEqual(seen, {
      models: ['display', 'pt100'],
      snapshot_alias_equal: true,
      default_is_float: true,
      start_value_is_float: true,
      value: 25.0,
      value_is_float: true,
      after_value_write: 33.5,
      bad_value: [422, 'value'],
      note_created: true,
      note_gone: true,
      delete_model_attribute: [409, "Attribute 'temperature' of instance 's1' is declared by its model 'pt100' and cannot be removed from an instance"],
      model_fault_first_line: "Model 'bad' schema validation failed: attributes.y.default: expected a finite number (float), got string",
      reload: { file: join(dir, 'system.yaml'), loaded: true, models: 2, instances: 3, connections: 1 },
      value_after_reload: 25.0,
      raw_definition: [200, true],
      raw_value_put: [200, '{"value":31.0}'],
      raw_delete: [409, 'conflict'],
      raw_reload: [200, true],
      urllib_value: '{"value":25.0}',
    })
  })

  it('the TypeScript client', async () => {
    const sim = connect({ address: t.url, productKey: TEST_KEY })
    const definition = await sim.definition()
    assert.deepEqual(definition, parseYaml(SYSTEM_YAML))
    const temperature = sim.instances.at('s1').attributes.at<number>('temperature')
    assert.equal(await temperature.value(), 25)
    assert.equal(await temperature.setValue(27.5), 27.5)
    assert.equal(await temperature.internalValue(), 27.5)
    await assert.rejects(temperature.setValue('warm' as unknown as number), (err: MimicApiError) => err.status === 422 && err.details[0]?.path === 'value')
    const attributes = sim.instances.at('s1').attributes
    await attributes.at('note').setInternalValue('hi')
    assert.deepEqual(await attributes.at('note').delete(), { detail: "Component 'note' deleted", destroyed: true, removed_from_parent: true })
    await assert.rejects(temperature.delete(), (err: MimicApiError) => err.status === 409 && /cannot be removed from an instance/.test(err.message))
    assert.deepEqual(await sim.reload(), { file: join(dir, 'system.yaml'), loaded: true, models: 2, instances: 3, connections: 1 })
    assert.equal(await temperature.value(), 25)
  })
})

const PYTHON_SCRIPT = String.raw`
import http.client, json, os, urllib.request
from urllib.parse import urlsplit
from mimic_sdk import client as mimic

url, key = os.environ["MIMIC_URL"], os.environ["MIMIC_PRODUCT_KEY"]
sim = mimic.init(address=url, product_key=key)
seen = {}

definition = sim.definition
seen["models"] = sorted(definition["models"])
seen["snapshot_alias_equal"] = sim.definition_snapshot == definition
seen["default_is_float"] = isinstance(definition["models"]["pt100"]["attributes"]["temperature"], float)
seen["start_value_is_float"] = isinstance(definition["instances"][1]["s2"]["init_parameters"]["temperature"], float)

attrs = sim["instances"]["s1"]["attributes"]
temperature = attrs["temperature"]
seen["value"] = temperature.value
seen["value_is_float"] = isinstance(temperature.value, float)
temperature.value = 33.5
seen["after_value_write"] = temperature.internal_value
try:
    temperature.value = "warm"
except mimic.MimicApiError as err:
    seen["bad_value"] = [err.status, err.details[0]["path"]]

attrs["note"] = "hi"
seen["note_created"] = "note" in attrs
del attrs["note"]
seen["note_gone"] = "note" not in attrs
try:
    del attrs["temperature"]
except mimic.MimicApiError as err:
    seen["delete_model_attribute"] = [err.status, str(err).split(":")[0]]

try:
    sim["models"]["bad"] = {"attributes": {"y": {"default": "a", "type": "float"}}}
except mimic.MimicApiError as err:
    seen["model_fault_first_line"] = str(err).splitlines()[0]

seen["reload"] = sim.reload()
seen["value_after_reload"] = temperature.value

# The same calls on a bare connection, shaped as a client sends them.
parts = urlsplit(url)
conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
headers = {"Authorization": "Bearer " + key, "Accept": "application/json", "Content-Type": "application/json"}

def send(method, path, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    response = conn.getresponse()
    return response.status, response.read().decode()

status, text = send("GET", "/api/v3/system/definition")
seen["raw_definition"] = [status, json.loads(text)["value"] == definition]
seen["raw_value_put"] = list(send("PUT", "/api/v3/system/instances/s1/attributes/temperature/attr/value", {"value": 31.0}))
status, text = send("DELETE", "/api/v3/system/instances/s1/attributes/count")
seen["raw_delete"] = [status, json.loads(text)["event"]]
status, text = send("POST", "/api/v3/system/method/reload", {"kwargs": {}})
seen["raw_reload"] = [status, json.loads(text)["result"]["loaded"]]

request = urllib.request.Request(url + "/api/v3/system/instances/s1/attributes/temperature/value", headers={"Authorization": "Bearer " + key})
with urllib.request.urlopen(request, timeout=10) as response:
    seen["urllib_value"] = response.read().decode()

print(json.dumps(seen))
`
