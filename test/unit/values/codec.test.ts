// src/values: the one codec of Python values. Parsed once at an entry, held with Python's types
// (int, float, bool, str, list, dict), written in one place; compared with what python3's json
// module reads and writes for the same texts.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { mayHoldFloats, parseJsonKeepingFloats, parseJsonTyped } from '../../../src/values/decode.js'
import { typed, typedJson, valueJson, walkTypedJson } from '../../../src/values/encode.js'
import { ExactInt, FloatMark, cloneJson, isMark, plainJson, unmarked } from '../../../src/values/number.js'
import { bodyFor, markedOf, parseValueText } from '../../../src/values/request.js'
import { parseJsonBody } from '../../../src/server/json-body.js'
import { typeProblem, inferType } from '../../../src/definition/model-schema.js'
import { generator, type Random } from '../../helpers/seeded-random.js'

/** What python3 makes of each JSON text: the type name of every number in it, and json.dumps of it. */
function python(texts: string[]): Array<{ types: string[]; dumped: string }> {
  const script = [
    'import json, sys',
    'def types(v):',
    '    if isinstance(v, list): return [t for x in v for t in types(x)]',
    '    if isinstance(v, dict): return [t for x in v.values() for t in types(x)]',
    '    return [type(v).__name__] if isinstance(v, (int, float)) and not isinstance(v, bool) else []',
    'out = [{"types": types(json.loads(t)), "dumped": json.dumps(json.loads(t), separators=(",", ":"))} for t in json.loads(sys.stdin.read())]',
    'print(json.dumps(out))',
  ].join('\n')
  const run = spawnSync('python3', ['-c', script], { input: JSON.stringify(texts), encoding: 'utf8' })
  assert.equal(run.status, 0, run.stderr)
  return JSON.parse(run.stdout) as Array<{ types: string[]; dumped: string }>
}

/** The Python type name of each number of a value the codec holds, in order. */
function ourTypes(value: unknown): string[] {
  if (value instanceof FloatMark) return ['float']
  if (value instanceof ExactInt) return ['int']
  if (typeof value === 'number') return [Number.isInteger(value) ? 'int' : 'float']
  if (value === null || typeof value !== 'object') return []
  return (Array.isArray(value) ? value : Object.values(value)).flatMap(ourTypes)
}

const TEXTS = [
  '[2.0,2,2.5,-0.0,0,1e3,1E-2,-3.0e2,100]',
  '{"big":12345678901234567890,"neg":-98765432109876543210,"edge":9007199254740991,"past":9007199254740993}',
  '{"a":[1.0,{"b":[2,3.0,123456789012345678901234567890]}],"s":"12345678901234567890 2.0 in a string"}',
  '[true,false,null,"x",{}]',
  '[1e21,123456789012.0,0.5,1.5e300]',
]

describe('the value codec against python3', () => {
  it('holds every number with the type python3 reads it as, and writes back what python3 writes', () => {
    const theirs = python(TEXTS)
    TEXTS.forEach((text, i) => {
      const value = parseJsonKeepingFloats(text)
      assert.deepEqual(ourTypes(value), theirs[i]!.types, text)
      assert.equal(typedJson(value), theirs[i]!.dumped, text)
    })
  })

  it('keeps an int past 2**53 exactly, as its digits, and gives its nearest number to code that wants one', () => {
    const value = parseJsonKeepingFloats('{"n": 12345678901234567890, "xs": [9007199254740993]}') as { n: ExactInt; xs: ExactInt[] }
    assert.ok(value.n instanceof ExactInt)
    assert.equal(value.n.digits, '12345678901234567890')
    assert.equal(unmarked(value.n), 12345678901234567000)
    assert.deepEqual(plainJson(value), { n: 12345678901234567000, xs: [9007199254740992] })
    // Plain JSON.stringify writes the numbers, as before there were marks.
    assert.equal(JSON.stringify(value), '{"n":12345678901234567000,"xs":[9007199254740992]}')
    assert.equal(typedJson(value), '{"n":12345678901234567890,"xs":[9007199254740993]}')
    assert.equal(walkTypedJson(value), typedJson(value))
    assert.ok(isMark(value.n) && isMark(new FloatMark(2)) && !isMark(2))
  })

  it('leaves a safe int a number and a float with a fraction a number', () => {
    assert.deepEqual(parseJsonKeepingFloats('[9007199254740991, -9007199254740991, 2.5, 1e-3]'), [9007199254740991, -9007199254740991, 2.5, 0.001])
  })

  it('parses text without such a number with JSON.parse itself', () => {
    for (const text of ['{"value": [1, 2], "s": "a.b"}', '[2.5, 21.05, 3.10, 0.25]', '[123456789012345]']) {
      assert.equal(mayHoldFloats(text), false, text)
      assert.deepEqual(parseJsonKeepingFloats(text), JSON.parse(text))
    }
    for (const text of ['[2.0]', '[1e3]', '[1234567890123456]']) assert.equal(mayHoldFloats(text), true, text)
  })

  it('tells the texts that may hold such a number as the regular expression it stands for does', () => {
    const REFERENCE = /\d\.0+(?![0-9])|\d[eE]|\d{16}/
    const random = generator(20261130)
    const alphabet = ['0', '0', '0', '1', '5', '9', '.', '.', 'e', 'E', '-', '+', ',', '"', ' ', 'x', '[']
    let yes = 0
    for (let i = 0; i < 50_000; i++) {
      const length = random.int(i % 10 === 0 ? 40 : 12)
      // Long runs of digits now and then, to reach sixteen in a row.
      const text = Array.from({ length }, () => (random.int(8) === 0 ? '1234567' : random.pick(alphabet))).join('')
      const want = REFERENCE.test(text)
      assert.equal(mayHoldFloats(text), want, JSON.stringify(text))
      if (want) yes++
    }
    assert.ok(yes > 10_000 && yes < 40_000, `${yes} of 50,000 texts may hold such a number`)
    for (const text of [
      '1.0',
      '1.00',
      '1.0x',
      '1.',
      '.0',
      '1.05',
      '1.000000000000001',
      '12345678901234.0',
      '0e',
      'e1',
      '123456789012345.6',
      '{"t":21.370873591563547}',
    ]) {
      assert.equal(mayHoldFloats(text), REFERENCE.test(text), text)
    }
  })

  it('takes the last of duplicate keys as JSON.parse does, or refuses two differing values when asked', () => {
    assert.deepEqual(plainJson(parseJsonKeepingFloats('{"a": 1.0, "a": 2.5}')), { a: 2.5 })
    assert.throws(() => parseJsonKeepingFloats('{"a": 1, "a": 2}', 'refuse'), /Duplicate key 'a'/)
    assert.deepEqual(parseJsonKeepingFloats('{"a": 1, "a": 1}', 'refuse'), { a: 1 })
  })
})

/** A JSON text of numbers Python tells apart, strings with quotes, escapes and number-like text, and nesting. */
function randomJson(random: Random, depth = 0): string {
  const numbers = ['2.0', '-0.0', '1e3', '2.5E-2', '12345678901234567890', '-9007199254740993', '7', '0', '21.05', '1.000', '3.10', '1234567890123456']
  const strings = ['"2.0"', '"a \\"quoted\\" 1.0"', '"back\\\\"', '"~number~"', '"\\u0032.0"', '""']
  const kind = random.int(depth > 3 ? 2 : 4)
  if (kind === 0) return random.pick(numbers)
  if (kind === 1) return random.pick([...strings, 'true', 'null'])
  const n = random.int(4)
  const ws = (): string => random.pick(['', ' ', '\n  '])
  if (kind === 2) return `[${Array.from({ length: n }, () => ws() + randomJson(random, depth + 1)).join(',')}]`
  return `{${Array.from({ length: n }, (_, i) => `${ws()}"k${i}"${ws()}:${ws()}${randomJson(random, depth + 1)}`).join(',')}}`
}

describe('parseJsonTyped, the parse of large texts (snapshot files)', () => {
  const tricky = [
    ...TEXTS,
    '{"s":"a \\"quoted\\" 2.0 and \\\\","t":1.0,"__proto__":2.0,"x":{"1":3.0,"0":[4.0,12345678901234567890]}}',
    '2.0',
    '"2.0"',
    '[{"a":[[[1e3]]]}, -0.0, 1.5]',
  ]

  it('reads what lossless-json reads (the refusing parse of definition files), marks and strings alike', () => {
    const random = generator(39)
    const texts = [...tricky, ...Array.from({ length: 3000 }, () => randomJson(random))]
    for (const text of texts) {
      // No text here has a key twice, so the refusing parse reads each one whole.
      const lossless = parseJsonKeepingFloats(text, 'refuse')
      assert.equal(typedJson(parseJsonTyped(text)), typedJson(lossless), text)
      assert.deepEqual(ourTypes(parseJsonTyped(text)), ourTypes(lossless), text)
      assert.equal(typedJson(parseJsonKeepingFloats(text)), typedJson(lossless), text)
    }
    const value = parseJsonTyped('{"__proto__": 2.0}') as Record<string, unknown>
    assert.ok(Object.hasOwn(value, '__proto__') && value['__proto__'] instanceof FloatMark, 'a key named __proto__ stays a key')
  })

  it("refuses what JSON.parse refuses, with JSON.parse's message for the text as given", () => {
    for (const bad of ['{1.0: 2}', '[1.0, 2.0', '[01.0]', '[1.]', '{"a": 2.0 "b"}', '[2.0, 12345678901234567890,']) {
      let expected = ''
      try {
        JSON.parse(bad)
      } catch (err) {
        expected = (err as Error).message
      }
      assert.throws(
        () => parseJsonTyped(bad),
        (err: Error) => err instanceof SyntaxError && err.message === expected,
        bad,
      )
    }
  })

  it('reads text nested deeper than a recursive parser could', () => {
    const depth = 50_000
    const value = parseJsonTyped(`${'['.repeat(depth)}2.0${']'.repeat(depth)}`)
    let inner: unknown = value
    for (let i = 0; i < depth; i++) inner = (inner as unknown[])[0]
    assert.ok(inner instanceof FloatMark)
  })
})

describe('the encoder', () => {
  it('writes a float attribute value with its point and other types as JSON does', () => {
    assert.equal(valueJson(30, 'float'), '30.0')
    assert.equal(valueJson(-0, 'float'), '-0.0')
    assert.equal(valueJson(30, 'int'), '30')
    assert.equal(valueJson([new FloatMark(1), new ExactInt('123456789012345678901')], 'list'), '[1.0,123456789012345678901]')
    assert.equal(valueJson(undefined, 'any'), undefined)
  })

  it('changes no state outside the call: a document written while another is being written comes out whole', () => {
    // A value whose toJSON writes a document of its own while the outer one is written.
    const inner = { toJSON: () => typedJson({ x: typed(3, 'float') }) }
    const text = typedJson({ a: typed(1, 'float'), inner, b: [new FloatMark(2)] })
    assert.equal(text, '{"a":1.0,"inner":"{\\"x\\":3.0}","b":[2.0]}')
    // A plain JSON.stringify around it writes bare numbers, as it always did.
    assert.equal(JSON.stringify({ a: new FloatMark(1) }), '{"a":1}')
  })

  it('writes a mark or a scalar alone, and indents as JSON.stringify does', () => {
    assert.equal(typedJson(new FloatMark(5)), '5.0')
    assert.equal(typedJson(new ExactInt('99999999999999999999')), '99999999999999999999')
    assert.equal(typedJson('x'), '"x"')
    assert.equal(typedJson({ t: typed(25, 'float'), n: 3 }, 1), '{\n "t": 25.0,\n "n": 3\n}')
  })

  it('copies values with the marks shared, and gives the plain view without copying what holds none', () => {
    const value = { a: [new FloatMark(2)], b: { c: 1 } }
    const copy = cloneJson(value)
    assert.notEqual(copy.a, value.a)
    assert.equal(copy.a[0], value.a[0])
    const plain = plainJson(value) as typeof value
    assert.deepEqual(plain, { a: [2], b: { c: 1 } })
    assert.equal(plain.b, value.b)
    const none = { a: [1, 2] }
    assert.equal(plainJson(none), none)
  })
})

describe('a request body, parsed once', () => {
  it('gives handlers the plain body and the node the Python values it takes', () => {
    const body = parseJsonBody('{"value": [2.0, 12345678901234567890], "x": 1.0}')
    assert.deepEqual(body, { value: [2, 12345678901234567000], x: 1 })
    const values = bodyFor(body, 'values') as { value: unknown[] }
    assert.ok(values.value[0] instanceof FloatMark)
    assert.ok(values.value[1] instanceof ExactInt)
    assert.equal(bodyFor(body, 'none'), body)
    // A text without such a number is one value for both.
    const plain = parseValueText('{"value": [2.5]}')
    assert.equal(markedOf(plain), plain)
  })

  it('keeps floats where a definition has no declared type, and plain numbers where a schema reads them', () => {
    const system = parseValueText(
      '{"models": {"m": {"attributes": {"xs": [1.0], "t": 2.0}}}, "instances": [{"a": {"type": "m", "parameters": {"g": 2.0}}}]}',
    ) as { models: { m: { attributes: { xs: unknown[]; t: unknown } } }; instances: Array<{ a: { parameters: { g: unknown } } }> }
    bodyFor(system, 'system')
    assert.ok(system.models.m.attributes.xs[0] instanceof FloatMark)
    assert.equal(system.models.m.attributes.t, 2)
    assert.ok(system.instances[0]!.a.parameters.g instanceof FloatMark)

    const model = parseValueText('{"definition": {"attributes": {"xs": [3.0]}, "actions": [{"set": "$out(x)", "value": 2.0}]}}') as {
      definition: { attributes: { xs: unknown[] }; actions: Array<{ value: unknown }> }
    }
    bodyFor(model, 'model')
    assert.ok(model.definition.attributes.xs[0] instanceof FloatMark)
    assert.ok(model.definition.actions[0]!.value instanceof FloatMark)

    const instances = parseValueText('{"a": {"type": "m", "parameters": {"g": 4.0}}}') as { a: { parameters: { g: unknown } } }
    bodyFor(instances, 'instances')
    assert.ok(instances.a.parameters.g instanceof FloatMark)
  })

  it("answers JSON.parse's message for text that is not JSON, whichever parser read it", () => {
    for (const text of ['{"a": 2.0,', '[1,']) {
      let expected = ''
      try {
        JSON.parse(text)
      } catch (err) {
        expected = (err as Error).message
      }
      assert.throws(
        () => parseJsonBody(text),
        (err: Error) => err.message === `Body is not valid JSON: ${expected}`,
      )
    }
  })
})

describe('types of held values', () => {
  it('checks an int past 2**53 as the number it is: an int attribute refuses it naming the range, an any attribute holds it', () => {
    const big = new ExactInt('12345678901234567890')
    assert.match(typeProblem('int', big) ?? '', /2\*\*53 - 1/)
    assert.equal(typeProblem('any', big), null)
    assert.equal(typeProblem('float', big), null)
    assert.equal(inferType(big), inferType(Number(big.digits)))
  })
})

describe('bodies nested too deep', () => {
  it('are refused by the shape check with the depth, with or without a float in them', () => {
    for (const inner of ['', '2.0']) {
      const text = '['.repeat(20000) + inner + ']'.repeat(20000)
      assert.throws(
        () => parseJsonBody(text),
        (err: Error) => /deeper than 64/.test(err.message),
      )
    }
  })
})
