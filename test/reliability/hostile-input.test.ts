/**
 * Hostile input that test/api-faults.test.ts does not already cover: names in URLs with `/`,
 * `..`, control characters and unicode look-alikes; values a Modbus type cannot carry; and
 * `constructor` / `prototype` / Object.prototype member names anywhere in a request. Each is
 * refused with a 4xx fault and changes nothing — neither the tree, nor the registers a Modbus
 * client reads, nor Object.prototype.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from '../helpers/server.js'
import { TestClient, registersOf } from '../unit/modbus/helpers.js'
import { SYS, TEST_AUTH, rawRequest } from './helpers.js'

/** Attribute -> [Modbus type, first register, register count, extra mapping options]. */
const MAPPED: Record<string, [string, number, number, Record<string, unknown>?]> = {
  u16: ['uint_16', 0, 1],
  i16: ['int_16', 1, 1],
  u32: ['uint_32', 2, 2],
  i32: ['int_32', 4, 2],
  f32: ['float', 6, 2],
  i64: ['int_64', 8, 4],
  u64: ['uint_64', 12, 4],
  s: ['str', 16, 2],
  scaled: ['uint_16', 18, 1, { scale: 0.1 }],
  flag: ['bool', 19, 1],
}

/** Values each mapped attribute cannot take (JSON text, so NaN/Infinity spellings are raw). */
const OUT_OF_RANGE: Record<string, string[]> = {
  u16: ['-1', '65536', '1e10', '"12"', 'null', '[1]', '{"v": 1}', '1e999'],
  i16: ['32768', '-32769', '-1e999'],
  u32: ['-1', '4294967296'],
  i32: ['2147483648', '-2147483649'],
  f32: ['1e39', '-3.5e38', '"1.0"'],
  i64: ['9223372036854775808', '1e300', '-1e300'],
  u64: ['-1', '18446744073709551616'],
  s: ['"abcde"', '"\u65e5\u672c"', '42'],
  scaled: ['6553.6', '-0.1'],
  flag: ['2', '"true"', '-1'],
}

/** Bodies that are not JSON at all: each is a 400 before any handler sees it. */
const NOT_JSON = ['{"value": NaN}', '{"value": Infinity}', '{"value": -Infinity}', '{"value": 0x10}', '{"value": 1,}', "{'value': 1}"]

function mapping(): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(MAPPED).map(([name, [type, first, count, extra]]) => [
      name,
      { address: count === 1 ? first : [first, first + count - 1], group: 'h_r', type, ...extra },
    ]),
  )
}

describe('hostile input', () => {
  let t: TestServer
  let modbus: TestClient
  const protoNames = Object.getOwnPropertyNames(Object.prototype).sort()

  before(async () => {
    t = await startTestServer()
    const attributes = {
      u16: 1.0,
      i16: -1.0,
      u32: 2.0,
      i32: -2.0,
      f32: 1.5,
      i64: -3.0,
      u64: 3.0,
      s: 'ab',
      scaled: 12.3,
      flag: true,
      d: { default: {}, type: 'dict' },
    }
    const res = await t.api('PUT', SYS, {
      models: { Dev: { attributes, communication: [{ modbus_slave: { host: '127.0.0.1', port: 0, unit_id: 1, mapping: mapping() } }] } },
      instances: { dev: 'Dev' },
    })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.equal((await t.call(`${SYS}/instances/dev`, 'prepare')).status, 200)
    modbus = await TestClient.connect((await t.api('GET', `${SYS}/instances/dev/communication/modbus_slave`)).body.port)
  })
  after(async () => {
    modbus.close()
    await t.close()
  })

  /** The whole observable state: structure, attribute values, and every mapped register. */
  const snapshot = async (): Promise<unknown> => {
    const models = (await t.api('GET', `${SYS}/models`)).body.children
    const instances = (await t.api('GET', `${SYS}/instances`)).body.children
    const attrs = (await t.api('GET', `${SYS}/instances/dev/attributes`)).body.children
    const values: Record<string, unknown> = {}
    for (const { name } of attrs) {
      const doc = (await t.api('GET', `${SYS}/instances/dev/attributes/${name}`)).body
      values[name] = [doc.internal_value, doc.external_value]
    }
    const registers = registersOf(await modbus.request({ fc: 3, address: 0, quantity: 20 }))
    return { models, instances, values, registers }
  }

  it('numbers a Modbus type cannot carry: 422 on every write path, registers unchanged', async (ctx) => {
    const before = await snapshot()
    let refused = 0
    for (const [attr, values] of Object.entries(OUT_OF_RANGE)) {
      for (const value of values) {
        const base = `${SYS}/instances/dev/attributes/${attr}`
        const writes: Array<[string, string, string]> = [
          ['PUT', `${base}/attr/internal_value`, `{"value": ${value}}`],
          ['PUT', `${base}/attr/external_value`, `{"value": ${value}}`],
          ['PATCH', base, `{"internal_value": ${value}}`],
          ['PATCH', base, `{"attr": {"external_value": {"value": ${value}}}}`],
          ['PUT', `${SYS}/instances/dev/attributes`, `{"${attr}": ${value}}`],
        ]
        for (const [method, path, body] of writes) {
          const res = await t.api(method, path, body)
          assert.equal(res.status, 422, `${method} ${path} ${body} -> ${res.status} ${JSON.stringify(res.body)}`)
          assert.equal(res.body.event, 'validation')
          refused++
        }
      }
    }
    for (const body of NOT_JSON) {
      const res = await t.api('PUT', `${SYS}/instances/dev/attributes/f32/attr/internal_value`, body)
      assert.equal(res.status, 400, `${body} -> ${res.status}`)
      refused++
    }
    ctx.diagnostic(`${refused} out-of-range or malformed writes refused`)
    assert.deepEqual(await snapshot(), before)
  })

  it('a model whose default its Modbus type cannot carry is refused when it is defined', async () => {
    const bad = await t.api('PUT', `${SYS}/models`, {
      Bad: { attributes: { u16: 70000.0 }, communication: [{ modbus_slave: { port: 0, mapping: { u16: { address: 0, group: 'h_r', type: 'uint_16' } } } }] },
    })
    await t.api('DELETE', `${SYS}/models/Bad`)
    assert.equal(bad.status, 422, `out-of-range default -> ${bad.status}`)
  })

  it('names in URLs with "/", "..", control characters or unicode look-alikes never reach another component', async () => {
    const before = await snapshot()
    const evil = [
      'dev%2Fattributes',
      '..',
      '%2e%2e',
      '%2E%2E%2Fmodels',
      '..%2F..%2Fmodels',
      'dev%00',
      'dev%0A',
      'dev%0d%0aX-Injected:%201',
      'd%D0%B5v', // Cyrillic small ie
      'de%CE%BD', // Greek nu
      '%EF%BD%84%EF%BD%85%EF%BD%96', // fullwidth "dev"
      'dev%E2%80%8B', // zero-width space
      '%E2%80%AEved', // right-to-left override
      'dev%20',
      '%20dev',
      'dev.attributes',
      '%252e%252e',
    ]
    for (const name of evil) {
      for (const [method, path, body] of [
        ['GET', `${SYS}/instances/${name}`, undefined],
        ['GET', `${SYS}/instances/${name}/attributes/u16`, undefined],
        ['DELETE', `${SYS}/instances/${name}`, undefined],
        ['POST', `${SYS}/instances/${name}/method/prepare`, {}],
        ['PUT', `${SYS}/instances/${name}/attributes/u16/attr/internal_value`, { value: 5 }],
        ['PUT', `${SYS}/models/${name}`, { definition: { attributes: { a: 1 } } }],
        ['PUT', `${SYS}/instances/dev/attributes/${name}/attr/internal_value`, { value: 5 }],
      ] as const) {
        const res = await rawRequest(t.url, method, path, { body, headers: TEST_AUTH })
        assert.ok([400, 404, 422].includes(res.status), `${method} ${path} -> ${res.status} ${JSON.stringify(res.body)}`)
        assert.equal(res.body.type, 'fault')
        assert.equal(res.headers['x-injected'], undefined)
      }
    }
    // The same names as keys of a body are invalid names: 422.
    const decoded = [
      'dev/attributes',
      '..',
      'dev\u0000',
      'dev\n',
      'd\u0435v',
      'de\u03bd',
      '\uff44\uff45\uff56',
      'dev\u200b',
      '\u202eved',
      'dev ',
      'dev.attributes',
      '%2e%2e',
    ]
    for (const name of decoded) {
      for (const [path, body] of [
        [`${SYS}/instances`, { [name]: 'Dev' }],
        [`${SYS}/models`, { [name]: { attributes: { a: 1 } } }],
        [`${SYS}/instances/dev/attributes`, { [name]: 1 }],
        [`${SYS}/connections`, { [name]: { from: 'dev.attributes.u16', to: 'dev.attributes.i16' } }],
      ] as const) {
        const res = await t.api('PUT', path, body)
        assert.equal(res.status, 422, `PUT ${path} ${JSON.stringify(body)} -> ${res.status}`)
      }
    }
    assert.deepEqual(await snapshot(), before)
  })

  it('constructor, prototype and Object.prototype member names: refused where they would be names, inert as data, no pollution', async () => {
    const before = await snapshot()
    const refused: Array<[string, string, unknown]> = [
      ['PUT', `${SYS}/models`, { constructor: { attributes: { a: 1 } } }],
      ['PUT', `${SYS}/models`, { prototype: { attributes: { a: 1 } } }],
      ['PUT', `${SYS}/models`, { M2: { attributes: { constructor: { prototype: { polluted: 1 } } } } }],
      ['PUT', `${SYS}/models`, { M3: { attributes: { a: 1 }, constructor: { prototype: { polluted: 1 } } } }],
      [
        'PUT',
        `${SYS}/models`,
        {
          M4: { attributes: { a: 1 }, communication: [{ modbus_slave: { port: 0, mapping: { constructor: { address: 0, group: 'h_r', type: 'uint_16' } } } }] },
        },
      ],
      [
        'PUT',
        `${SYS}/models`,
        { M5: { attributes: { a: 1 }, import: { 'x.py': { class: 'X', attributes: { prototype: { property: 'p' } }, methods: { constructor: 'c' } } } } },
      ],
      ['PUT', `${SYS}/instances`, { constructor: 'Dev' }],
      ['PUT', `${SYS}/instances`, { prototype: 'Dev' }],
      ['PUT', `${SYS}/instances/dev/attributes`, { constructor: { prototype: { polluted: 1 } } }],
      ['PUT', `${SYS}/instances/dev/attributes/prototype/attr/internal_value`, { value: 1 }],
      ['PUT', `${SYS}/connections`, { constructor: { from: 'dev.attributes.u16', to: 'dev.attributes.i16' } }],
      ['PUT', SYS, { constructor: { prototype: { polluted: 1 } } }],
      ['PUT', `${SYS}/instances/dev/timer`, { constructor: { prototype: { polluted: 1 } } }],
      ['PATCH', `${SYS}/instances/dev/timer`, { attr: { constructor: { value: { prototype: { polluted: 1 } } } } }],
      ['PATCH', `${SYS}/instances/dev/attributes/u16`, { constructor: { prototype: { polluted: 1 } } }],
      ['POST', `${SYS}/snapshots/method/save`, { kwargs: { constructor: { prototype: { polluted: 1 } } } }],
    ]
    for (const path of [
      'method/constructor',
      'method/toString',
      'method/hasOwnProperty',
      'method/__defineGetter__',
      'attr/constructor',
      'attr/__proto__',
      'attributes/toString',
      'attributes/u16/attr/constructor',
      'attributes/u16/valueOf',
    ]) {
      refused.push(['POST', `${SYS}/instances/dev/${path}`, {}], ['GET', `${SYS}/instances/dev/${path}`, undefined])
    }
    for (const [method, path, body] of refused) {
      const res = await t.api(method, path, body)
      assert.ok(res.status >= 400 && res.status < 500, `${method} ${path} ${JSON.stringify(body)} -> ${res.status} ${JSON.stringify(res.body)}`)
      assert.equal(res.body.type, 'fault')
    }
    assert.deepEqual(await snapshot(), before)

    // Root run refuses kwargs it does not know, this one included.
    assert.equal((await t.call(SYS, 'run', { steps: 1, constructor: { prototype: { polluted: 1 } } })).status, 422)
    // As data (a dict value) the same keys are just data: stored and read back exactly.
    const data = { constructor: { prototype: { polluted: 1 } }, prototype: { polluted: 2 }, toString: 'x', hasOwnProperty: 3 }
    assert.equal((await t.api('PUT', `${SYS}/instances/dev/attributes/d/attr/internal_value`, { value: data })).status, 200)
    assert.deepEqual((await t.api('GET', `${SYS}/instances/dev/attributes/d/attr/internal_value`)).body, { value: data })
    // Object.prototype member names are ordinary names for instances.
    assert.equal((await t.api('PUT', `${SYS}/instances`, { toString: 'Dev', hasOwnProperty: 'Dev', valueOf: 'Dev' })).status, 200)
    assert.equal((await t.api('GET', `${SYS}/instances/toString`)).body.type, 'Instance')
    assert.equal((await t.api('GET', `${SYS}/instances`)).body.children.length, 4)
    for (const name of ['toString', 'hasOwnProperty', 'valueOf']) assert.equal((await t.api('DELETE', `${SYS}/instances/${name}`)).status, 200)

    assert.equal(({} as Record<string, unknown>).polluted, undefined)
    assert.equal((Object.prototype as Record<string, unknown>).polluted, undefined)
    assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), protoNames)
    assert.equal(typeof ({} as { constructor: unknown }).constructor, 'function')
  })
})
