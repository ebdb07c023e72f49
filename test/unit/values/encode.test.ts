// src/values/encode.ts: floats written as Python reads floats, and a writer that is
// JSON.stringify for everything that carries no float mark.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { typedModelDefinition, typedSystemDefinition } from '../../../src/values/definitions.js'
import { typed, typedJson, valueJson, walkTypedJson } from '../../../src/values/encode.js'
import { floatJson } from '../../../src/values/number.js'
import { generator, type Random } from '../../helpers/seeded-random.js'

const FLOATS = [30, -2, 0, -0, 0.1, -1.5, 1e21, -1e21, 1e20, 2 ** 53 + 2, 2 ** 60, 1e-7, 5e-324, Number.MAX_VALUE, -Number.MAX_VALUE, 123456789.125]

describe('floatJson', () => {
  it('writes integral floats with .0 and the others as JavaScript does', () => {
    assert.equal(floatJson(30), '30.0')
    assert.equal(floatJson(-2), '-2.0')
    assert.equal(floatJson(0), '0.0')
    assert.equal(floatJson(-0), '-0.0')
    assert.equal(floatJson(0.1), '0.1')
    assert.equal(floatJson(1e21), '1e+21')
    assert.equal(floatJson(NaN), 'null')
    assert.equal(floatJson(Infinity), 'null')
  })

  it('gives text that python3 reads as a float of the same value (sign of zero included)', () => {
    const texts = FLOATS.map(floatJson)
    const script = 'import json, sys\nfor t in json.loads(sys.stdin.read()):\n    v = json.loads(t)\n    print(type(v).__name__, v.hex())'
    const run = spawnSync('python3', ['-c', script], { input: JSON.stringify(texts), encoding: 'utf8' })
    assert.equal(run.status, 0, run.stderr)
    const lines = run.stdout.trim().split('\n')
    assert.equal(lines.length, FLOATS.length)
    FLOATS.forEach((value, i) => {
      const [type, hex] = lines[i]!.split(' ')
      assert.equal(type, 'float', `${texts[i]} read as ${type}`)
      assert.equal(hex, pythonHex(value), texts[i])
    })
  })
})

describe('valueJson and typed', () => {
  it('marks only the float type: int, any, list and dict values are written as JSON.stringify writes them', () => {
    assert.equal(valueJson(30, 'float'), '30.0')
    assert.equal(valueJson(30, 'int'), '30')
    assert.equal(valueJson(30, 'any'), '30')
    assert.equal(valueJson([30, 2.5], 'list'), '[30,2.5]')
    assert.equal(valueJson({ a: 30 }, 'dict'), '{"a":30}')
    assert.equal(valueJson(undefined, 'float'), undefined)
    assert.equal(typed(2.5, 'float'), 2.5)
    assert.equal(typed(30, 'int'), 30)
    assert.equal(typedJson({ a: typed(30, 'float'), b: [typed(-0, 'float')] }), '{"a":30.0,"b":[-0.0]}')
  })

  it('leaves the marks out when plain JSON.stringify writes a marked document', () => {
    assert.equal(JSON.stringify({ a: typed(30, 'float') }), '{"a":30}')
  })
})

describe('walkTypedJson (the reference writer)', () => {
  it('is JSON.stringify for documents without marks, at every indentation', () => {
    const random = generator(20260116)
    for (let i = 0; i < 500; i++) {
      const doc = randomJson(random, 4, false)
      for (const indent of [0, 1, 2]) assert.equal(walkTypedJson(doc, indent), JSON.stringify(doc, null, indent))
    }
  })

  it('follows JSON.stringify on undefined, functions, dates, boxed values and empty containers', () => {
    const doc = { u: undefined, f: () => 1, list: [undefined, () => 1, Symbol('s')], d: new Date(0), n: Object(3), e: {}, a: [], s: 'x\u2028"\\' }
    for (const indent of [0, 1]) assert.equal(walkTypedJson(doc, indent), JSON.stringify(doc, null, indent))
    assert.equal(walkTypedJson(undefined), undefined)
  })

  it('refuses a cycle as JSON.stringify does', () => {
    const cycle: Record<string, unknown> = {}
    cycle.self = { back: cycle }
    assert.throws(() => walkTypedJson(cycle), TypeError)
    const shared = { x: typed(1, 'float') }
    assert.equal(walkTypedJson([shared, shared]), '[{"x":1.0},{"x":1.0}]')
  })
})

describe('typedJson', () => {
  it('writes what the reference writer writes, marks and all, at every indentation', () => {
    const random = generator(16)
    let marks = 0
    for (let i = 0; i < 500; i++) {
      const doc = randomJson(random, 4, true)
      for (const indent of [0, 1, 2]) assert.equal(typedJson(doc, indent), walkTypedJson(doc, indent))
      marks += (typedJson(doc).match(/\d\.0\b/g) ?? []).length
    }
    assert.ok(marks > 100, `only ${marks} marked floats were written`)
    assert.equal(typedJson({ t: typed(25, 'float'), n: 3 }, 1), '{\n "t": 25.0,\n "n": 3\n}')
  })

  it('finds a mark at any place in a document small enough to be written without a replacer, and beyond', () => {
    // Documents of 1 to 80 values (the fast path looks at 64), nested two deep, with one mark at
    // each place in turn, or one value that JSON.stringify would write otherwise.
    const others: Array<[unknown, string]> = [
      [typed(2, 'float'), '2.0'],
      // A toJSON's result is written as JSON.stringify writes it; what it holds is looked at again.
      [{ toJSON: () => typed(3, 'float') }, '{"value":3}'],
      [[{ toJSON: () => ({ x: typed(4, 'float') }) }], '[{"x":4.0}]'],
      [new Date(0), JSON.stringify(new Date(0))],
      [Object(5), '5'],
      [Object.assign(Object.create(null) as object, { n: typed(6, 'float') }), '{"n":6.0}'],
      [
        new (class Point {
          x = typed(7, 'float')
        })(),
        '{"x":7.0}',
      ],
    ]
    for (const size of [1, 2, 10, 63, 64, 65, 80]) {
      for (let at = 0; at < size; at++) {
        for (const [odd, text] of others) {
          const values: unknown[] = Array.from({ length: size }, (_, i) => (i === at ? odd : i))
          const inner = values.slice(0, size >> 1)
          const doc = { head: 1, inner: { list: inner }, rest: values.slice(size >> 1) }
          const written = typedJson(doc)
          assert.equal(written, walkTypedJson(doc), `size ${size}, at ${at}`)
          assert.ok(written.includes(text), `size ${size}, at ${at}: ${text} in ${written}`)
        }
      }
    }
    // Without marks, plain JSON.stringify's text whatever the size; a cycle still throws.
    for (const size of [0, 1, 64, 65, 500]) {
      const doc = { list: Array.from({ length: size }, (_, i) => ({ i, s: `v${i}`, f: i / 3 })), none: null, t: true }
      for (const indent of [0, 2]) assert.equal(typedJson(doc, indent), JSON.stringify(doc, null, indent))
    }
    const cycle: Record<string, unknown> = { a: 1 }
    cycle.self = cycle
    assert.throws(() => typedJson(cycle), TypeError)
  })

  it('keeps a string of the document that looks like one of its placeholders as the string it is', () => {
    let lookalike = ''
    typedJson({ probe: { toJSON: () => (lookalike = String((typed(5, 'float') as { toJSON(): unknown }).toJSON())) } })
    assert.notEqual(lookalike, '')
    const doc = { a: typed(1, 'float'), s: lookalike, list: [lookalike, typed(2, 'float')] }
    assert.equal(typedJson(doc), `{"a":1.0,"s":${JSON.stringify(lookalike)},"list":[${JSON.stringify(lookalike)},2.0]}`)
  })
})

describe('typedModelDefinition', () => {
  it('marks the defaults of declared and inferred float attributes, and nothing else', () => {
    const definition = {
      description: 'meter 1',
      attributes: {
        t: 25,
        v: { default: 3, type: 'float', unit: 'V' },
        n: { default: 3, type: 'int' },
        a: { default: 4, type: 'any' },
        l: [1, 2],
        d: { k: 5 },
      },
      import: { 'm.py': { class: 'M', init: { kwargs: { start: 7 } } } },
    }
    const before = structuredClone(definition)
    assert.equal(
      typedJson(typedModelDefinition(definition)),
      '{"description":"meter 1","attributes":{"t":25.0,"v":{"default":3.0,"type":"float","unit":"V"},"n":{"default":3,"type":"int"},' +
        '"a":{"default":4,"type":"any"},"l":[1,2],"d":{"k":5}},"import":{"m.py":{"class":"M","init":{"kwargs":{"start":7}}}}}',
    )
    assert.deepEqual(definition, before)
  })

  it('takes what is not a definition with attributes as it is', () => {
    for (const odd of [null, 5, 'x', [], {}, { attributes: 5 }]) assert.equal(typedModelDefinition(odd), odd)
  })

  it('marks the defaults of float meta parameters', () => {
    const definition = { meta_parameters: { gain: { type: 'float', default: 2 }, n: { type: 'int', default: 2 }, req: { type: 'float', required: true } } }
    assert.equal(
      typedJson(typedModelDefinition(definition)),
      '{"meta_parameters":{"gain":{"type":"float","default":2.0},"n":{"type":"int","default":2},"req":{"type":"float","required":true}}}',
    )
  })
})

describe('typedSystemDefinition', () => {
  it("marks the models, and the instances' float start values and float parameters by their model's types", () => {
    const models = {
      m: {
        meta_parameters: { gain: { type: 'float', default: 1 }, k: { type: 'int' } },
        attributes: { t: 25, n: { default: 3, type: 'int' }, x: { default: 1, type: 'any' } },
      },
    }
    const definition = {
      models,
      instances: [
        { a: 'm' },
        { b: { type: 'm', parameters: { gain: 2, k: 3 }, init_parameters: { t: 30, n: 4, x: 5 } } },
        { c: { type: 'gone', init_parameters: { t: 1 } } },
      ],
      connections: { c1: { from: 'a.attributes.t', to: 'b.attributes.t' } },
    }
    const before = structuredClone(definition)
    assert.equal(
      typedJson(typedSystemDefinition(definition)),
      '{"models":{"m":{"meta_parameters":{"gain":{"type":"float","default":1.0},"k":{"type":"int"}},"attributes":{"t":25.0,"n":{"default":3,"type":"int"},"x":{"default":1,"type":"any"}}}},' +
        '"instances":[{"a":"m"},{"b":{"type":"m","parameters":{"gain":2.0,"k":3},"init_parameters":{"t":30.0,"n":4,"x":5}}},{"c":{"type":"gone","init_parameters":{"t":1}}}],' +
        '"connections":{"c1":{"from":"a.attributes.t","to":"b.attributes.t"}}}',
    )
    assert.deepEqual(definition, before)
  })
})

/** float.hex() of a number, as Python writes it. */
function pythonHex(value: number): string {
  if (value === 0) return 1 / value < 0 ? '-0x0.0p+0' : '0x0.0p+0'
  const sign = value < 0 ? '-' : ''
  const bits = new DataView(new ArrayBuffer(8))
  bits.setFloat64(0, Math.abs(value))
  const high = bits.getUint32(0)
  const low = bits.getUint32(4)
  const exponent = (high >>> 20) & 0x7ff
  const mantissa = (BigInt(high & 0xfffff) << 32n) | BigInt(low)
  const digits = mantissa.toString(16).padStart(13, '0')
  if (exponent === 0) return `${sign}0x0.${digits}p-1022`
  const e = exponent - 1023
  return `${sign}0x1.${digits}p${e >= 0 ? '+' : ''}${e}`
}

/** A random JSON document: nested objects and lists of strings, numbers, booleans, null and (with `marks`) marked floats. */
function randomJson(random: Random, depth: number, marks: boolean): unknown {
  const kind = random.int(depth > 0 ? 8 : 5)
  switch (kind) {
    case 0:
      return random.pick(['', 'a', 'ü "q" \\ \n', '\u2028', '𝔘', '</script>', '1'])
    case 1:
      return random.pick([0, -0, 1, -7, 30, 2.5, 1e21, 1e-7, 0.1, Number.MAX_SAFE_INTEGER, NaN])
    case 2:
      return random.int(2) === 0
    case 3:
      return null
    case 4:
      return marks ? typed(random.pick([0, -0, 30, -2, 2.5, 1e21, 4096]), 'float') : random.int(1000) / 8
    case 5:
    case 6: {
      const obj: Record<string, unknown> = {}
      for (let i = random.int(5); i > 0; i--) obj[random.pick(['a', 'b', 'long key', '2', '10', 'ü', '"'])] = randomJson(random, depth - 1, marks)
      return obj
    }
    default:
      return Array.from({ length: random.int(5) }, () => randomJson(random, depth - 1, marks))
  }
}
