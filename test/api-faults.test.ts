import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { FAULT_KINDS, MimicError, type FaultCode } from '../src/errors.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

/** The fault document shape of API.md section 6. */
function assertFault(body: any, status: number, event?: string): void {
  assert.equal(body.type, 'fault', JSON.stringify(body))
  assert.equal(body.http_status, status)
  if (event) assert.equal(body.event, event)
  assert.equal(typeof body.correlation_id, 'string')
  assert.match(body.when, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
  assert.equal(typeof body.error.message, 'string')
  assert.ok(Array.isArray(body.error.details))
  assert.ok('component' in body)
  assert.equal(typeof body.action, 'string')
}

describe('fault catalogue', () => {
  it('each fault kind has one status, event and type name', () => {
    const statuses: Record<string, number> = {
      BAD_REQUEST: 400,
      UNAUTHORIZED: 401,
      FORBIDDEN: 403,
      NOT_FOUND: 404,
      CONFLICT: 409,
      PAYLOAD_TOO_LARGE: 413,
      UNSUPPORTED_MEDIA_TYPE: 415,
      VALIDATION: 422,
      USER_CODE: 500,
      INTERNAL: 500,
      WORKER_GONE: 503,
      SHUTTING_DOWN: 503,
      STORE_UNAVAILABLE: 503,
      WORKER_TIMEOUT: 504,
    }
    assert.deepEqual(Object.keys(FAULT_KINDS).sort(), Object.keys(statuses).sort())
    for (const code of Object.keys(FAULT_KINDS) as FaultCode[]) {
      const err = new MimicError(code, 'x')
      assert.equal(err.status, statuses[code])
      assert.equal(err.name, FAULT_KINDS[code].type)
      assert.match(err.event, /^[a-z_]+$/)
    }
  })
})

describe('HTTP faults: bad input gets a clear fault and changes nothing', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ config: { bodyLimit: 64 * 1024 } })
    await t.api('PUT', `${SYS}/models`, { m: { attributes: { a: 1.0 } } })
    await t.api('PUT', `${SYS}/instances`, { i1: 'm' })
  })
  after(async () => t.close())

  const structure = async (): Promise<unknown> => {
    const [models, instances, connections, value] = await Promise.all([
      t.api('GET', `${SYS}/models/m`),
      t.api('GET', `${SYS}/instances`),
      t.api('GET', `${SYS}/connections`),
      t.api('GET', `${SYS}/instances/i1/attributes/a/attr/internal_value`),
    ])
    return [models.body.definition, instances.body.children, connections.body.children, value.body]
  }

  it('400 for a body that is not JSON, a wrong envelope, or __proto__ keys', async () => {
    const before = await structure()
    const cases: Array<[string, string, unknown]> = [
      ['PUT', `${SYS}/models`, '{"m": {'],
      ['PUT', `${SYS}/models`, '[1, 2]'],
      ['PUT', `${SYS}/instances/i1/attributes/a/attr/internal_value`, { val: 1 }],
      ['POST', `${SYS}/instances/i1/method/run`, { kwargs: [] }],
      ['POST', `${SYS}/instances/i1/method/run`, { what: 1 }],
      ['PUT', `${SYS}/models`, '{"m2": {"attributes": {"__proto__": {"polluted": 1}}}}'],
      ['PATCH', `${SYS}/instances/i1/attributes/a`, { attr: { internal_value: 3 } }],
      ['GET', `${SYS}/instances/i1/method/run`, undefined],
    ]
    for (const [method, path, body] of cases) {
      const res = await t.api(method, path, body)
      assert.equal(res.status, 400, `${method} ${path} ${JSON.stringify(body)} -> ${JSON.stringify(res.body)}`)
      assertFault(res.body, 400, 'bad_request')
    }
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
    assert.deepEqual(await structure(), before)
  })

  it('400 for JSON nested too deep', async () => {
    const deep = '['.repeat(5000) + ']'.repeat(5000)
    const res = await t.api('PUT', `${SYS}/models`, deep)
    assert.equal(res.status, 400)
    assert.match(res.body.error.message, /deeper/)
  })

  it('413 for a body over the limit', async () => {
    const res = await t.api('PUT', `${SYS}/models`, { big: { attributes: { s: 'x'.repeat(100 * 1024) } } })
    assert.equal(res.status, 413)
    assertFault(res.body, 413, 'payload_too_large')
    assert.equal((await t.api('GET', `${SYS}/models/big`)).status, 404)
  })

  it('404 for unknown paths, properties, methods and models, naming what exists', async () => {
    const notFound: Array<[string, string, unknown?]> = [
      ['GET', `${SYS}/nothing`],
      ['GET', `${SYS}/instances/ghost`],
      ['GET', `${SYS}/instances/i1/attributes/ghost/attr/internal_value`],
      ['GET', `${SYS}/instances/i1/attr/nope`],
      ['POST', `${SYS}/instances/i1/method/fly`, {}],
      ['PUT', `${SYS}/instances`, { i2: 'no_such_model' }],
      ['GET', '/api/v2/system'],
      ['DELETE', `${SYS}/models/ghost`],
    ]
    for (const [method, path, body] of notFound) {
      const res = await t.api(method, path, body)
      assert.equal(res.status, 404, `${method} ${path} -> ${JSON.stringify(res.body)}`)
      assertFault(res.body, 404, 'not_found')
    }
    const res = await t.api('GET', `${SYS}/instances/ghost`)
    assert.match(res.body.error.message, /i1/, 'lists the existing children')
    const method = await t.api('POST', `${SYS}/instances/i1/method/fly`, {})
    assert.match(method.body.error.message, /prepare/)
    assert.equal(method.body.component.path, 'instances.i1')
    assert.equal(method.body.action, 'fly')
  })

  it('422 for invalid definitions with every problem and its path', async () => {
    const before = await structure()
    const res = await t.api('PUT', `${SYS}/models`, {
      pt100: {
        attributes: { 'bad.name': 1, t: { default: 'warm', type: 'float' } },
        import: { 'extensions/x.py': { attributes: { t: { property: 'temp' } } }, 'y.txt': { class: 'Y' } },
        communication: [{ modbus_slave: { mapping: { t: { address: [0, 2], group: 'h_r', type: 'float' } } } }, { can_bus: {} }],
        colour: 'red',
      },
    })
    assert.equal(res.status, 422)
    assertFault(res.body, 422, 'validation')
    assert.deepEqual(res.body.component, { name: 'pt100', path: 'models.pt100', state: null })
    assert.equal(res.body.action, 'upsert')
    const paths = res.body.error.details.map((d: { path: string }) => d.path)
    for (const expected of [
      'attributes.bad.name',
      'attributes.t.default',
      'import.extensions/x.py.class',
      'import.y.txt',
      'communication[1].can_bus',
      'colour',
    ]) {
      assert.ok(paths.includes(expected), `missing ${expected} in ${JSON.stringify(paths)}`)
    }
    assert.ok(
      paths.some((p: string) => p.startsWith('communication[0].modbus_slave.mapping.t')),
      JSON.stringify(paths),
    )
    // The first line names the model and its first problem; the count of the others follows.
    const [firstDetail] = res.body.error.details
    assert.ok(res.body.error.message.startsWith(`Model 'pt100' schema validation failed: ${firstDetail.path}: ${firstDetail.message}`), res.body.error.message)
    assert.match(res.body.error.message, /\((\d+) errors\)/)
    assert.equal(res.body.error.message.includes('\n'), false)
    assert.deepEqual(await structure(), before)
  })

  it('422 for names that are invalid or collide with method names', async () => {
    for (const name of ['run', 'prepare', 'a.b', 'a/b', '1abc', 'x'.repeat(129), 'caf\u00e9', 'tab\there', 'constructor', '__proto__']) {
      const res = await t.api('PUT', `${SYS}/instances`, { [name]: 'm' })
      assert.equal(res.status, name === '__proto__' ? 400 : 422, `${JSON.stringify(name)} -> ${res.status}`)
    }
    const attr = await t.api('PUT', `${SYS}/models`, { m3: { attributes: { start: 1 } } })
    assert.equal(attr.status, 422)
    assert.equal(attr.body.error.details[0].path, 'attributes.start')
    const method = await t.api('PUT', `${SYS}/models`, { m4: { attributes: { t: 1 }, import: { 'a.py': { class: 'A', methods: { attributes: 'x' } } } } })
    assert.equal(method.status, 422)
    assert.equal(method.body.error.details[0].path, 'import.a.py.methods.attributes')
    assert.equal((await t.api('GET', `${SYS}/instances`)).body.children.length, 1)
  })

  it('a PUT or PATCH of several properties with one refused sets none of them, and names each refused', async () => {
    const attribute = `${SYS}/instances/i1/attributes/a`
    const before = (await t.api('GET', attribute)).body
    const both = await t.api('PATCH', attribute, { internal_value: 5.0, external_value: 'hot' })
    assert.equal(both.status, 422)
    assertFault(both.body, 422, 'validation')
    assert.deepEqual(
      both.body.error.details.map((d: { path: string }) => d.path),
      ['external_value'],
    )
    assert.deepEqual((await t.api('GET', attribute)).body, before)

    const polling = `${SYS}/instances/i1/polling`
    const interval = (await t.api('GET', polling)).body.attr.interval.value
    const refused = await t.api('PATCH', polling, { interval: 0.5, enabled: 'yes' })
    assert.equal(refused.status, 422)
    assert.deepEqual(refused.body.error.details, [{ path: 'enabled', message: 'expected true or false' }])
    assert.equal((await t.api('GET', polling)).body.attr.interval.value, interval)

    const timer = `${SYS}/timer`
    const time = (await t.api('GET', timer)).body.attr.time.value
    const two = await t.api('PUT', timer, { time: 42, dt: 0, pinned: 'no' })
    assert.equal(two.status, 422)
    assert.deepEqual(
      two.body.error.details.map((d: { path: string }) => d.path),
      ['dt', 'pinned'],
    )
    assert.equal((await t.api('GET', timer)).body.attr.time.value, time)
    // A read-only property among writable ones: nothing is set either.
    const readOnly = await t.api('PATCH', attribute, { internal_value: 5.0, type: 'int' })
    assert.equal(readOnly.status, 422)
    assert.deepEqual(readOnly.body.error.details, [{ path: 'type', message: 'read-only' }])
    assert.deepEqual((await t.api('GET', attribute)).body, before)
  })

  it('an adapter whose settings are refused one of several keeps the others as they were, and names every refused one', async () => {
    const model = {
      attributes: { level: { default: 7, type: 'int' } },
      communication: [{ modbus_slave: { port: 0, mapping: { level: { address: 0, group: 'h_r', type: 'uint_16' } } } }],
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Plc: model })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { plc: 'Plc' })).status, 200)
    const node = `${SYS}/instances/plc/communication/modbus_slave`
    const delay = (await t.api('GET', node)).body.attr.response_delay.value
    const refused = await t.api('PATCH', node, { response_delay: 0.25, faults: { nonsense: true } })
    assert.equal(refused.status, 422, JSON.stringify(refused.body))
    assert.equal((await t.api('GET', node)).body.attr.response_delay.value, delay)
    assert.deepEqual((await t.api('GET', node)).body.attr.faults.value, {})
    // Every refused setting is named, not only the first, and the valid faults beside them are not set.
    const both = await t.api('PUT', node, { faults: { disconnect: {} }, response_delay: -1, port: 1502 })
    assert.equal(both.status, 422)
    assert.deepEqual(
      both.body.error.details.map((d: { path: string; message: string }) => [d.path, d.message]),
      [
        ['response_delay', "'response_delay' must be a number of seconds from 0 to 3600"],
        ['port', 'read-only'],
      ],
    )
    assert.deepEqual((await t.api('GET', node)).body.attr.faults.value, {})
    assert.equal((await t.api('PATCH', node, { response_delay: 0.25 })).status, 200)
    assert.equal((await t.api('GET', node)).body.attr.response_delay.value, 0.25)
    assert.equal((await t.api('DELETE', `${SYS}/instances/plc`)).status, 200)
    assert.equal((await t.api('DELETE', `${SYS}/models/Plc`)).status, 200)
  })

  it('a method that takes no arguments refuses any, naming each, and does nothing', async () => {
    const timer = `${SYS}/instances/i1/timer`
    assert.equal((await t.api('PUT', timer, { time: 7 })).status, 200)
    const refused = await t.api('POST', `${timer}/method/reset`, { kwargs: { tim: 0 }, args: [0] })
    assert.equal(refused.status, 422)
    assertFault(refused.body, 422, 'validation')
    assert.deepEqual(refused.body.error.details, [
      { path: 'kwargs.tim', message: 'unknown argument (reset takes none)' },
      { path: 'args', message: 'reset takes no arguments' },
    ])
    assert.equal((await t.api('GET', timer)).body.attr.time.value, 7, 'the timer was not reset')
    for (const [node, method] of [
      [`${SYS}/instances/i1`, 'prepare'],
      [`${SYS}/instances/i1`, 'stop'],
      [SYS, 'reset'],
      [`${SYS}/polling`, 'disable'],
      [`${SYS}/snapshots`, 'list'],
    ]) {
      const res = await t.api('POST', `${node}/method/${method}`, { kwargs: { force: true } })
      assert.equal(res.status, 422, `${method}: ${JSON.stringify(res.body)}`)
      assert.equal(res.body.error.details[0].path, 'kwargs.force')
    }
    assert.equal((await t.api('GET', `${SYS}/polling`)).body.attr.enabled.value, true, 'polling is still on')
    assert.equal((await t.api('POST', `${timer}/method/reset`, { kwargs: {} })).status, 200, 'empty arguments are no arguments')
    assert.equal((await t.api('GET', timer)).body.attr.time.value, 0)
  })

  it('409 for deleting what is in use; the root cannot be deleted', async () => {
    const res = await t.api('DELETE', `${SYS}/models/m`)
    assert.equal(res.status, 409)
    assertFault(res.body, 409, 'conflict')
    assert.equal((await t.api('DELETE', SYS)).status, 409)
    assert.equal((await t.api('DELETE', `${SYS}/instances/i1/timer`)).status, 409)
  })

  it('structural changes are serialized: concurrent PUTs and DELETEs leave a consistent tree', async () => {
    await t.api('PUT', `${SYS}/models`, { c: { attributes: { v: 0.0 } } })
    const ops = []
    for (let i = 0; i < 40; i++) {
      ops.push(t.api('PUT', `${SYS}/instances`, { [`c${i}`]: 'c' }))
      if (i % 3 === 0) ops.push(t.api('PUT', `${SYS}/models`, { c: { attributes: { v: i * 1.0, w: 0.0 } } }))
      if (i % 4 === 0) ops.push(t.api('DELETE', `${SYS}/instances/c${i}`))
      ops.push(t.api('GET', `${SYS}/instances`))
    }
    const results = await Promise.all(ops)
    for (const r of results) assert.ok([200, 404].includes(r.status), JSON.stringify(r.body))
    const instances = (await t.api('GET', `${SYS}/instances`)).body.children.map((c: { name: string }) => c.name)
    for (const name of instances.filter((n: string) => n.startsWith('c'))) {
      const doc = await t.api('GET', `${SYS}/instances/${name}/attributes`)
      assert.deepEqual(
        doc.body.children.map((c: { name: string }) => c.name),
        // Every instance lists the read-only __timer after its model's attributes.
        ['v', 'w', '__timer'],
        `${name} was rebuilt from the final model`,
      )
    }
  })
})
