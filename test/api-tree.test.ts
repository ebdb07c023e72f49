import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { eventually, startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

describe('HTTP API v3: open endpoints, auth and the generic tree', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(async () => t.close())

  it('GET / and /health answer without credentials', async () => {
    const root = await fetch(`${t.url}/`)
    const body = (await root.json()) as Record<string, unknown>
    assert.equal(root.status, 200)
    assert.equal(body.api_version, 'v3')
    assert.deepEqual(body.supported_versions, ['v3'])
    assert.match(String(body.server_version), /^\d+\.\d+\.\d+/)
    const health = (await (await fetch(`${t.url}/health`)).json()) as Record<string, unknown>
    assert.equal(health.status, 'ok')
    assert.equal(health.api_version, 'v3')
  })

  it('serves /openapi.json with the tree routes and /docs as a page', async () => {
    const doc = (await (await fetch(`${t.url}/openapi.json`)).json()) as {
      openapi: string
      paths: Record<string, unknown>
      components: { schemas: Record<string, unknown> }
    }
    assert.match(doc.openapi, /^3\./)
    assert.ok(doc.paths['/api/v3/system/instances/{instance}/attributes/{attribute}'])
    assert.ok(doc.paths['/api/v3/system/instances/{instance}/method/{method}'])
    assert.ok(doc.components.schemas.ModelDefinition)
    const docs = await fetch(`${t.url}/docs`, { redirect: 'follow' })
    assert.equal(docs.status, 200)
    assert.match(await docs.text(), /swagger/i)
  })

  it('refuses /api/v3 without the right Bearer key (401 fault) and echoes X-Correlation-Id', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: 'Basic dGVzdA==' }, { authorization: 'Bearer ' }] as Array<
      Record<string, string>
    >) {
      const res = await fetch(`${t.url}${SYS}`, { headers })
      assert.equal(res.status, 401)
      const fault = (await res.json()) as Record<string, any>
      assert.equal(fault.type, 'fault')
      assert.equal(fault.http_status, 401)
      assert.equal(fault.error.type, 'UnauthorizedError')
      assert.ok(res.headers.get('x-correlation-id'))
    }
    const res = await t.api('GET', SYS, undefined, { 'x-correlation-id': 'abc-123' })
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('x-correlation-id'), 'abc-123')
  })

  it('root document lists the children and never has a top-level "value"', async () => {
    const { status, body } = await t.api('GET', SYS)
    assert.equal(status, 200)
    assert.deepEqual(
      body.children.map((c: { name: string }) => c.name),
      ['models', 'instances', 'connections', 'timer', 'polling', 'snapshots', 'logs'],
    )
    assert.equal(body.value, undefined)
    assert.equal(body.state, 'INITIALIZED')
    assert.deepEqual(body.attr.state, { value: 'INITIALIZED' })
  })

  it('models: PUT, read back JSON-equal under definition, replace, delete (409 while used)', async () => {
    const definition = { attributes: { temperature: 0.0, unit_label: { default: 'C', type: 'str' }, limits: { default: [0, 100], type: 'list' } } }
    const put = await t.api('PUT', `${SYS}/models`, { pt100: definition })
    assert.equal(put.status, 200, JSON.stringify(put.body))
    const model = await t.api('GET', `${SYS}/models/pt100`)
    assert.deepEqual(model.body.definition, definition)
    assert.deepEqual(model.body.attr.definition.value, definition)
    assert.equal(model.body.value, undefined)
    const models = await t.api('GET', `${SYS}/models`)
    assert.deepEqual(models.body.children, [{ name: 'pt100' }])

    assert.equal((await t.api('PUT', `${SYS}/instances`, { s1: 'pt100' })).status, 200)
    const conflict = await t.api('DELETE', `${SYS}/models/pt100`)
    assert.equal(conflict.status, 409)
    assert.match(conflict.body.error.message, /s1/)

    const replaced = { attributes: { temperature: 5.0, pressure: 1.0 } }
    assert.equal((await t.api('PUT', `${SYS}/models`, { pt100: replaced })).status, 200)
    assert.deepEqual((await t.api('GET', `${SYS}/models/pt100`)).body.definition, replaced)
    const pressure = await t.api('GET', `${SYS}/instances/s1/attributes/pressure/attr/internal_value`)
    assert.deepEqual(pressure.body, { value: 1.0 })

    assert.equal((await t.api('DELETE', `${SYS}/instances/s1`)).status, 200)
    const del = await t.api('DELETE', `${SYS}/models/pt100`)
    assert.equal(del.status, 200)
    assert.deepEqual(del.body, { detail: "Component 'pt100' deleted", destroyed: true, removed_from_parent: true })
    assert.equal((await t.api('GET', `${SYS}/models/pt100`)).status, 404)
  })

  it('instances: create, list keys, read and write internal/external values of every JSON kind', async () => {
    await t.api('PUT', `${SYS}/models`, {
      box: { attributes: { n: 1.5, flag: false, label: 'x', items: [1, 2], cfg: { a: 1 }, free: { default: null, type: 'any' } } },
    })
    const created = await t.api('PUT', `${SYS}/instances`, { b1: 'box', b2: 'box' })
    assert.equal(created.status, 200)
    assert.deepEqual(
      created.body.children.map((c: { name: string }) => c.name),
      ['b1', 'b2'],
    )

    const attrPath = `${SYS}/instances/b1/attributes`
    for (const [name, value] of [
      ['n', 42.5],
      ['flag', true],
      ['label', 'hello'],
      ['items', [3, 4, { x: 1 }]],
      ['cfg', { deep: { k: [1] } }],
      ['free', 'anything'],
    ] as const) {
      const put = await t.api('PUT', `${attrPath}/${name}/attr/internal_value`, { value })
      assert.equal(put.status, 200, JSON.stringify(put.body))
      assert.deepEqual(put.body, { value })
      assert.deepEqual((await t.api('GET', `${attrPath}/${name}/internal_value`)).body, { value })
    }
    const doc = await t.api('GET', `${attrPath}/n`)
    assert.equal(doc.body.type, 'float')
    assert.equal(doc.body.internal_value, 42.5)
    assert.equal(doc.body.external_value, 42.5)
    assert.deepEqual(doc.body.attr.type, { value: 'float' })
    assert.equal(doc.body.value, undefined)

    // external_value is a presentation override that run() clears
    assert.equal((await t.api('PUT', `${attrPath}/n/attr/external_value`, { value: 7 })).status, 200)
    assert.deepEqual((await t.api('GET', `${attrPath}/n/attr/external_value`)).body, { value: 7 })
    assert.deepEqual((await t.api('GET', `${attrPath}/n/attr/internal_value`)).body, { value: 42.5 })
    assert.equal((await t.call(`${SYS}/instances/b1`, 'run')).status, 200)
    assert.deepEqual((await t.api('GET', `${attrPath}/n/attr/external_value`)).body, { value: 42.5 })

    // a wrong type is a 422 and changes nothing
    const bad = await t.api('PUT', `${attrPath}/n/attr/internal_value`, { value: 'hot' })
    assert.equal(bad.status, 422)
    assert.equal(bad.body.error.details[0].path, 'internal_value')
    assert.deepEqual((await t.api('GET', `${attrPath}/n/attr/internal_value`)).body, { value: 42.5 })

    // PUT attributes {name: v} sets several and creates new ones; PATCH sets properties
    assert.equal((await t.api('PUT', attrPath, { n: 1, extra: 'new' })).status, 200)
    assert.deepEqual((await t.api('GET', `${attrPath}/extra/attr/internal_value`)).body, { value: 'new' })
    assert.equal((await t.api('PATCH', `${attrPath}/n`, { attr: { internal_value: { value: 2 } } })).status, 200)
    assert.equal((await t.api('PATCH', `${attrPath}/n`, { internal_value: 3 })).status, 200)
    assert.deepEqual((await t.api('GET', `${attrPath}/n/attr/internal_value`)).body, { value: 3 })
    // PUT .../attributes/<new>/attr/internal_value creates the attribute
    assert.equal((await t.api('PUT', `${attrPath}/made/attr/internal_value`, { value: 9 })).status, 200)
    assert.deepEqual((await t.api('GET', `${attrPath}/made`)).body.internal_value, 9)
    // ... and a name no attribute may have is a 422 naming the rule, not a 404
    for (const name of ['run', 'constructor', '__proto__', '9bad']) {
      const bad = await t.api('PUT', `${attrPath}/${name}/attr/internal_value`, { value: 1.0 })
      assert.equal(bad.status, 422, `${name}: ${JSON.stringify(bad.body)}`)
      assert.equal(bad.body.error.details[0].path, name)
      assert.match(bad.body.error.details[0].message, /reserved|must match/)
    }
    // a GET of a missing attribute does not create it
    assert.equal((await t.api('GET', `${attrPath}/ghost/attr/internal_value`)).status, 404)
    assert.equal((await t.api('GET', `${attrPath}/ghost`)).status, 404)
  })

  it('timer: pinned time for deterministic steps, otherwise time advances by dt', async () => {
    await t.api('PUT', `${SYS}/models`, { clock: { attributes: { x: 0.0 } } })
    await t.api('PUT', `${SYS}/instances`, { c1: 'clock' })
    const timer = `${SYS}/instances/c1/timer`
    assert.equal((await t.api('PUT', timer, { dt: 0.5 })).status, 200)
    await t.call(`${SYS}/instances/c1`, 'run')
    await t.call(`${SYS}/instances/c1`, 'run')
    assert.deepEqual((await t.api('GET', `${timer}/time`)).body, { value: 1.0 })
    assert.equal((await t.api('PUT', `${timer}/attr/time`, { value: 10 })).status, 200)
    await t.call(`${SYS}/instances/c1`, 'run')
    assert.deepEqual((await t.api('GET', `${timer}/attr/time`)).body, { value: 10 })
    assert.equal((await t.api('GET', timer)).body.pinned, true)
    await t.call(timer, 'reset')
    const after = (await t.api('GET', timer)).body
    assert.equal(after.time, 0)
    assert.equal(after.pinned, false)
    assert.equal((await t.api('PUT', timer, { dt: -1 })).status, 422)
    assert.equal((await t.api('PUT', timer, { time: 'soon' })).status, 422)
  })

  it('lifecycle: prepare, start polls run() every interval, disable keeps start from looping, stop, reset', async () => {
    await t.api('PUT', `${SYS}/models`, { ticker: { attributes: { v: 0.0 } } })
    await t.api('PUT', `${SYS}/instances`, { k1: 'ticker' })
    const inst = `${SYS}/instances/k1`
    assert.deepEqual((await t.call(inst, 'prepare')).body, { result: true })
    assert.equal((await t.api('GET', inst)).body.state, 'PREPARED')
    await t.api('PUT', `${inst}/polling`, { interval: 0.02 })
    await t.call(inst, 'start')
    assert.equal((await t.api('GET', inst)).body.state, 'RUNNING')
    // Polling steps it, every 20 ms: three steps at least.
    await eventually(async () => (await t.api('GET', `${inst}/timer/time`)).body.value >= 3)
    await t.call(inst, 'stop')
    assert.equal((await t.api('GET', inst)).body.state, 'STOPPED')
    const stopped = (await t.api('GET', `${inst}/timer/time`)).body.value
    // A negative check: no step in five polling intervals.
    await new Promise((r) => setTimeout(r, 100))
    assert.equal((await t.api('GET', `${inst}/timer/time`)).body.value, stopped)

    await t.call(`${inst}/polling`, 'disable')
    assert.equal((await t.api('GET', `${inst}/polling`)).body.enabled, false)
    await t.call(`${inst}/timer`, 'reset')
    await t.call(inst, 'start')
    // A negative check: no step in seven polling intervals.
    await new Promise((r) => setTimeout(r, 150))
    assert.equal((await t.api('GET', `${inst}/timer/time`)).body.value, 0, 'no polling while disabled')
    await t.call(inst, 'stop')

    await t.api('PUT', `${inst}/attributes/v/attr/internal_value`, { value: 5 })
    await t.call(inst, 'run')
    await t.call(inst, 'reset')
    assert.deepEqual((await t.api('GET', `${inst}/attributes/v/attr/internal_value`)).body, { value: 0 })
    assert.equal((await t.api('GET', `${inst}/timer/time`)).body.value, 0)
  })

  it('connections: after each system step `to` takes the value of `from`; bad references are a 422 naming them', async () => {
    await t.api('PUT', `${SYS}/models`, { src: { attributes: { out: 1.0 } }, dst: { attributes: { in: 0.0 } } })
    await t.api('PUT', `${SYS}/instances`, { a: 'src', z: 'dst' })
    const bad = await t.api('PUT', `${SYS}/connections`, { w: { from: 'a.attributes.nope', to: 'ghost.attributes.in' } })
    assert.equal(bad.status, 422)
    const paths = bad.body.error.details.map((d: { path: string }) => d.path)
    assert.deepEqual(paths.sort(), ['w.from', 'w.to'])
    assert.match(JSON.stringify(bad.body.error.details), /ghost/)
    assert.equal((await t.api('GET', `${SYS}/connections`)).body.children.length, 0)

    assert.equal((await t.api('PUT', `${SYS}/connections`, { w: { from: 'a.attributes.out', to: 'z.attributes.in' } })).status, 200)
    await t.api('PUT', `${SYS}/instances/a/attributes/out/attr/internal_value`, { value: 12.5 })
    assert.deepEqual((await t.call(SYS, 'run', { steps: 2, dt: 0.1 })).body, { result: true })
    assert.deepEqual((await t.api('GET', `${SYS}/instances/z/attributes/in/attr/internal_value`)).body, { value: 12.5 })
    const conn = await t.api('GET', `${SYS}/connections/w`)
    assert.equal(conn.body.from, 'a.attributes.out')
    assert.equal(conn.body.transfers, 2)
    assert.equal((await t.api('DELETE', `${SYS}/instances/a`)).status, 409, 'an instance wired by a connection cannot be deleted')
    assert.equal((await t.api('DELETE', `${SYS}/connections/w`)).status, 200)
    assert.equal((await t.api('DELETE', `${SYS}/instances/a`)).status, 200)
  })

  it('connections between types no value fits both are a 422; one that fails at run time says so in last_error and the log', async () => {
    await t.api('PUT', `${SYS}/models`, {
      texts: { attributes: { s: 'text', n: 2, free: { default: 'x', type: 'any' } } },
      floats: { attributes: { v: 1.0, flag: false } },
    })
    await t.api('PUT', `${SYS}/instances`, { tx: 'texts', fl: 'floats' })
    const bad = await t.api('PUT', `${SYS}/connections`, {
      s_to_v: { from: 'tx.attributes.s', to: 'fl.attributes.v' },
      v_to_flag: { from: 'fl.attributes.v', to: 'fl.attributes.flag' },
    })
    assert.equal(bad.status, 422)
    assert.deepEqual(
      bad.body.error.details.map((d: { path: string; message: string }) => [d.path, d.message]),
      [
        ['s_to_v.to', "'fl.attributes.v' is float and 'tx.attributes.s' is str: no value of one fits the other"],
        ['v_to_flag.to', "'fl.attributes.flag' is bool and 'fl.attributes.v' is float: no value of one fits the other"],
      ],
    )
    assert.equal((await t.api('GET', `${SYS}/connections`)).body.children.length, 0, 'nothing of a refused PUT is kept')

    // An int into a float, and `any` into a float, can carry values; a str held by `any` cannot.
    const ok = await t.api('PUT', `${SYS}/connections`, { n_to_v: { from: 'tx.attributes.n', to: 'fl.attributes.v' } })
    assert.equal(ok.status, 200, JSON.stringify(ok.body))
    await t.api('DELETE', `${SYS}/connections/n_to_v`)
    assert.equal((await t.api('PUT', `${SYS}/connections`, { free_to_v: { from: 'tx.attributes.free', to: 'fl.attributes.v' } })).status, 200)
    await t.call(SYS, 'run', { steps: 2, dt: 0.1 })
    const conn = (await t.api('GET', `${SYS}/connections/free_to_v`)).body
    assert.equal(conn.transfers, 0)
    assert.match(conn.last_error, /expected a finite number \(float\), got string/)
    const records = (await t.call(`${SYS}/logs`, 'tail', { level: 'warn' })).body.result as Array<Record<string, unknown>>
    assert.equal(
      records.filter((r) => r.msg === 'connection failed to carry its value' && r.connection === 'free_to_v').length,
      1,
      'logged once, not at every step',
    )
    await t.api('DELETE', `${SYS}/connections/free_to_v`)
    await t.api('DELETE', `${SYS}/instances/tx`)
    await t.api('DELETE', `${SYS}/instances/fl`)
  })

  it("a node's state is a property like the others: read alone, read-only", async () => {
    await t.api('PUT', `${SYS}/models`, {
      slave: {
        attributes: { v: 1.0 },
        communication: [{ modbus_slave: { port: 0, mapping: { v: { address: [0, 1], group: 'h_r', type: 'float' } } } }],
        scenarios: { sag: { overrides: { '$out(v)': 0.5 } } },
      },
    })
    await t.api('PUT', `${SYS}/instances`, { sl: 'slave' })
    const adapter = `${SYS}/instances/sl/communication/modbus_slave`
    const doc = (await t.api('GET', adapter)).body
    assert.deepEqual((await t.api('GET', `${adapter}/attr/state`)).body, { value: doc.state })
    const scenario = `${SYS}/instances/sl/scenarios/sag`
    assert.deepEqual((await t.api('GET', `${scenario}/attr/state`)).body, { value: (await t.api('GET', scenario)).body.state })
    const put = await t.api('PUT', `${adapter}/attr/state`, { value: 'RUNNING' })
    assert.equal(put.status, 422)
    assert.match(put.body.error.message, /read-only/)
    const missing = await t.api('GET', `${adapter}/attr/nope`)
    assert.equal(missing.status, 404)
    assert.match(missing.body.error.message, /properties: state, host, transport, port/)
    await t.api('DELETE', `${SYS}/instances/sl`)
  })

  it('system run validates steps and dt', async () => {
    const bad = await t.call(SYS, 'run', { steps: 0, dt: -1 })
    assert.equal(bad.status, 422)
    assert.deepEqual(
      bad.body.error.details.map((d: { path: string }) => d.path),
      ['kwargs.steps', 'kwargs.dt'],
    )
  })
})
