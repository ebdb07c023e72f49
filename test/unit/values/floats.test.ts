// src/values (number.ts, decode.ts, encode.ts): integral floats inside list, dict and `any` values, from the text
// a writer sent (JSON or YAML) to the text Mimic answers, compared with what python3's json
// module reads and writes for the same values.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { mayHoldFloats, parseJsonKeepingFloats } from '../../../src/values/decode.js'
import { cloneJson, FloatMark, floatValue, plainJson, unmarked } from '../../../src/values/number.js'
import { parseDefinitionText } from '../../../src/definition/load-file.js'
import { resolveParameters, substituteParameters } from '../../../src/definition/parameters.js'
import { typeProblem } from '../../../src/definition/model-schema.js'
import { typedJson, valueJson } from '../../../src/values/encode.js'
import { mqttSchema } from '../../../src/definition/mqtt-schema.js'
import { fromPy, toPy } from '../../../src/language/model/convert.js'
import { convertValue, formatValue } from '../../../src/protocols/ascii/values.js'
import { formatPayload, PayloadReader } from '../../../src/protocols/mqtt/payload.js'
import { toVariantValue } from '../../../src/protocols/opcua/data-types.js'

/** What python3 writes for each JSON text after reading it: json.dumps(json.loads(text)), compact. */
function pythonRoundTrip(texts: string[]): string[] {
  const script = 'import json, sys\nfor t in json.loads(sys.stdin.read()):\n    print(json.dumps(json.loads(t), separators=(",", ":")))'
  const run = spawnSync('python3', ['-c', script], { input: JSON.stringify(texts), encoding: 'utf8' })
  assert.equal(run.status, 0, run.stderr)
  return run.stdout.trim().split('\n')
}

const TEXTS = [
  '[2.0,2,2.5,-0.0,0,1e3,1E-2,-3.0e2,100]',
  '{"a":1.0,"b":{"c":[0.0,{"d":7.00}]},"e":"2.0 in a string","f":null,"g":true}',
  '5.0',
  '5',
  '[[],{},[1.0],{"x":[1,1.0]}]',
  '[1e21,123456789012.0,0.5]',
]

describe('parseJsonKeepingFloats and typedJson', () => {
  it('write back what python3 writes for the same text: floats with their point, ints without', () => {
    const ours = TEXTS.map((text) => typedJson(parseJsonKeepingFloats(text)))
    assert.deepEqual(ours, pythonRoundTrip(TEXTS))
  })

  it('mark only integral floats; plain JSON.stringify writes the numbers as before', () => {
    const value = parseJsonKeepingFloats('[2.0, 2, 2.5, {"k": 1e3}]') as unknown[]
    assert.ok(value[0] instanceof FloatMark)
    assert.equal(value[1], 2)
    assert.equal(value[2], 2.5)
    assert.ok((value[3] as { k: unknown }).k instanceof FloatMark)
    assert.equal(JSON.stringify(value), '[2,2,2.5,{"k":1000}]')
  })

  it('parse as JSON.parse does: the last of duplicate keys wins, a __proto__ key stays a key, bad text throws', () => {
    assert.deepEqual(plainJson(parseJsonKeepingFloats('{"a": 1.0, "a": 2.5}')), { a: 2.5 })
    const proto = parseJsonKeepingFloats('{"__proto__": 1.0}') as Record<string, unknown>
    assert.ok(Object.hasOwn(proto, '__proto__'))
    assert.equal(Object.getPrototypeOf(proto), Object.prototype)
    assert.throws(() => parseJsonKeepingFloats('[1.0,'))
    assert.throws(() => parseJsonKeepingFloats('[1,'))
  })

  it('leave text without an integral float to JSON.parse, and read what JSON.parse reads', () => {
    for (const text of ['{"value": [1, 2], "s": "a.b"}', '[2.5, 21.05, 3.10, 0.25]']) assert.equal(mayHoldFloats(text), false, text)
    for (const text of ['[1.0]', '[1.00]', '[-0.0]', '[1e3]', '[2.5E2]', '[21.0]']) assert.equal(mayHoldFloats(text), true, text)
    for (const text of TEXTS) assert.deepEqual(plainJson(parseJsonKeepingFloats(text)), JSON.parse(text))
  })
})

describe('marks in values', () => {
  it('plainJson replaces marks and keeps what holds none', () => {
    const inner = { s: 'x' }
    const value = [floatValue(2), inner, floatValue(2.5)]
    const plain = plainJson(value) as unknown[]
    assert.deepEqual(plain, [2, { s: 'x' }, 2.5])
    assert.equal(plain[1], inner)
    assert.equal(plainJson(inner), inner)
    assert.equal(unmarked(floatValue(3)), 3)
    assert.equal(unmarked(value), value)
  })

  it('cloneJson copies lists and objects and keeps the marks (structuredClone would not)', () => {
    const value = { xs: [floatValue(2), 3], d: { e: floatValue(-0) } }
    const copy = cloneJson(value)
    assert.notEqual(copy.xs, value.xs)
    assert.equal(typedJson(copy), '{"xs":[2.0,3],"d":{"e":-0.0}}')
    assert.equal(typedJson(structuredClone(value)), '{"xs":[{"value":2},3],"d":{"e":{"value":0}}}')
  })

  it('a mark is a float to type checks: it fits float and any, not dict or list', () => {
    assert.equal(typeProblem('float', floatValue(2)), null)
    assert.equal(typeProblem('any', floatValue(2)), null)
    assert.equal(typeProblem('dict', floatValue(2)), 'expected an object (dict), got float')
    assert.equal(typeProblem('list', floatValue(2)), 'expected a list, got float')
  })

  it('valueJson writes marks inside list, dict and any values', () => {
    assert.equal(valueJson([floatValue(1), 1], 'list'), '[1.0,1]')
    assert.equal(valueJson(floatValue(4), 'any'), '4.0')
    assert.equal(valueJson({ a: floatValue(0) }, 'dict'), '{"a":0.0}')
  })

  it('a float parameter is a mark to expressions and a plain number to adapter settings', () => {
    const model = { attributes: {}, meta_parameters: { rate: { type: 'float' as const, default: 2 }, port: { type: 'int' as const, default: 5020 } } }
    const { values, problems } = resolveParameters(model as never, { rate: 4 })
    assert.deepEqual(problems, [])
    assert.deepEqual(values, { rate: new FloatMark(4), port: 5020 })
    assert.deepEqual(substituteParameters({ interval: '$param(rate)', topic: 'at/$param(rate)/$param(port)' }, values), { interval: 4, topic: 'at/4/5020' })
  })

  it('expressions read marks as floats and store integral float results marked', () => {
    const py = toPy([floatValue(2), 2, { a: floatValue(1) }], 'list') as unknown[]
    assert.equal(py[0], 2)
    assert.equal(py[1], 2n)
    assert.equal((py[2] as Map<string, unknown>).get('a'), 1)
    assert.equal(typedJson(fromPy(py as never, 'list')), '[2.0,2,{"a":1.0}]')
    assert.equal(typedJson(fromPy(2, 'any')), '2.0')
    assert.equal(typedJson(fromPy(2n, 'any')), '2')
  })
})

describe('definition files', () => {
  it('keep the integral floats of list, dict and any defaults as written in YAML, and nothing else marked', () => {
    const text = [
      'models:',
      '  m:',
      '    attributes:',
      '      xs: [1.0, 1, 2.5]',
      '      d: {default: {a: 3.0, b: [4.0]}, type: dict}',
      '      v: {default: 1e3, type: any}',
      '      t: 25.0',
      '      quoted: ["1.0"]',
      '    polling: {interval: 1.0}',
    ].join('\n')
    const { data } = parseDefinitionText(text) as { data: { models: { m: Record<string, any> } } }
    const m = data.models.m
    assert.equal(typedJson(m.attributes.xs), '[1.0,1,2.5]')
    assert.equal(typedJson(m.attributes.d.default), '{"a":3.0,"b":[4.0]}')
    assert.equal(typedJson(m.attributes.v.default), '1000.0')
    // A float attribute's number, and numbers outside attribute values, stay plain numbers.
    assert.equal(m.attributes.t, 25)
    assert.deepEqual(m.attributes.quoted, ['1.0'])
    assert.equal(m.polling.interval, 1)
  })

  it('read a single model file the same way', () => {
    const { data } = parseDefinitionText('attributes:\n  xs: [2.0]\n') as { data: { attributes: Record<string, unknown> } }
    assert.equal(typedJson(data.attributes.xs), '[2.0]')
  })

  it('keep the integral floats of behaviour and untyped parameter defaults, in YAML and strict JSON alike, and nothing of settings', () => {
    const yaml = [
      'meta_parameters: {gain: {default: 2.0}, rate: {type: float, default: 2.0}, ids: {type: list, default: [1.0]}}',
      'attributes:',
      '  x: {default: &two 2.0, type: float, hooks: {on_set: [{set_attr: {attribute: $out(y), value: 3.0}}]}}',
      '  y: {default: null, type: any}',
      '  hexes: {default: [0x1E, 0o17], type: list}',
      'actions:',
      '  - {set: $out(y), value: *two}',
      '  - {ramp: $out(x), start_value: 0.0, stop_value: 1.0, duration: 5.0}',
      'conditions:',
      '  - if: "True"',
      '    actions: [{set: $out(y), value: 4.0}]',
      '  - else:',
      '    actions: [{set: $out(y), value: 5.0}]',
      'scenarios: {s: {duration: 6.0, overrides: {$in(y): 7.0}}}',
      'timer: {time_step: 1.0}',
    ].join('\n')
    const json = JSON.stringify({
      meta_parameters: { gain: { default: 2 }, rate: { type: 'float', default: 2 }, ids: { type: 'list', default: [1] } },
      attributes: {
        x: { default: 2, type: 'float', hooks: { on_set: [{ set_attr: { attribute: '$out(y)', value: 3 } }] } },
        y: { default: null, type: 'any' },
        hexes: { default: [30, 15], type: 'list' },
      },
      actions: [
        { set: '$out(y)', value: 2 },
        { ramp: '$out(x)', start_value: 0, stop_value: 1, duration: 5 },
      ],
      conditions: [
        { if: 'True', actions: [{ set: '$out(y)', value: 4 }] },
        { else: null, actions: [{ set: '$out(y)', value: 5 }] },
      ],
      scenarios: { s: { duration: 6, overrides: { '$in(y)': 7 } } },
      timer: { time_step: 1 },
    })
      .replace(/(start_value|"default|value|duration|time_step)":(\d)/g, '$1":$2.0')
      .replace('"$in(y)":7', '"$in(y)":7.0')
      .replace('"hexes":{"default":[30.0', '"hexes":{"default":[30')
      .replace('"ids":{"type":"list","default":[1]', '"ids":{"type":"list","default":[1.0]')
    for (const [format, text] of [
      ['yaml', yaml],
      ['json', json],
    ] as const) {
      const { data, details } = parseDefinitionText(text, { format }) as { data: Record<string, any>; details: unknown[] }
      assert.deepEqual(details, [], format)
      const behaviour = typedJson({ p: data.meta_parameters, h: data.attributes.x.hooks, a: data.actions, c: data.conditions, s: data.scenarios })
      assert.match(behaviour, /"gain":\{"default":2\.0\}/, format)
      assert.match(behaviour, /"ids":\{"type":"list","default":\[1\.0\]\}/, format)
      assert.match(behaviour, /"value":3\.0/, format)
      assert.match(behaviour, /"value":2\.0.*"value":4\.0.*"value":5\.0.*"\$in\(y\)":7\.0/, format)
      // Typed parameters and settings outside the behaviour stay plain numbers; an action's own
      // settings (`duration: 5.0`) are marked here and read plainly by the compiler.
      assert.equal(data.meta_parameters.rate.default, 2, format)
      assert.equal(data.timer.time_step, 1, format)
      // Hex and octal are ints in YAML: no mark, though 0x1E holds an E.
      assert.equal(typedJson(data.attributes.hexes.default), '[30,15]', format)
    }
  })
})

describe('protocol payloads', () => {
  const binding = (format: 'raw' | 'json', template?: string) =>
    mqttSchema.parse({ bindings: [{ attribute: 'x', topic: 'x', format, ...(template === undefined ? {} : { template }) }] }).bindings[0]!
  const fields = { instance: 'i', topic: 't' }

  it('MQTT json payloads write a float attribute and the floats of a list as floats; a received [2.0] stays a float', () => {
    assert.equal(formatPayload(binding('json'), 230, fields, 'float'), '230.0')
    assert.equal(formatPayload(binding('json', '{"v": {{value}}}'), 230, fields, 'float'), '{"v": 230.0}')
    assert.equal(formatPayload(binding('json'), 230, fields, 'int'), '230')
    assert.equal(formatPayload(binding('json'), [floatValue(2), 2], fields, 'list'), '[2.0,2]')
    assert.equal(formatPayload(binding('raw'), [floatValue(2), 2], fields, 'list'), '[2.0,2]')
    const read = PayloadReader.for(binding('json')).read('[2.0, 2]', 'list')
    assert.ok('value' in read)
    assert.equal(typedJson(read.value), '[2.0,2]')
    assert.deepEqual(PayloadReader.for(binding('json')).read('2.0', 'float'), { value: 2 })
    assert.deepEqual(PayloadReader.for(binding('json')).read('2.0', 'dict'), { problem: 'expected an object (dict), got a number' })
  })

  it('text instruments answer a list with its floats as Python prints it; a written [2.0] stays a float', () => {
    assert.equal(formatValue([floatValue(2), 2, 2.5], 'list'), '[2.0, 2, 2.5]')
    const converted = convertValue('list', '[2.0, 2]')
    assert.equal(typedJson(converted.value), '[2.0,2]')
  })

  it('OPC UA String variables of a list carry its floats', () => {
    assert.deepEqual(toVariantValue([floatValue(2), 2], 'String'), { value: '[2.0,2]' })
  })
})
