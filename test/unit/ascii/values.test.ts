import { execFileSync } from 'node:child_process'
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { convertValue, formatValue, pyFloat } from '../../../src/protocols/ascii/index.js'

describe('ascii values: text to attribute types as Python constructors convert', () => {
  it('int() takes whole decimal numbers with sign, spaces and underscores, and truncates numbers', () => {
    assert.deepEqual(convertValue('int', '5'), { value: 5 })
    assert.deepEqual(convertValue('int', ' -12 '), { value: -12 })
    assert.deepEqual(convertValue('int', '+007'), { value: 7 })
    assert.deepEqual(convertValue('int', '1_000'), { value: 1000 })
    assert.deepEqual(convertValue('int', 3.7), { value: 3 })
    assert.deepEqual(convertValue('int', -3.7), { value: -3 })
    assert.deepEqual(convertValue('int', true), { value: 1 })
  })

  it('int() refuses what Python refuses, and what a double cannot hold exactly', () => {
    for (const text of ['5.0', '1e3', 'abc', '', '0x10', '1__0', '_1', '5 5']) {
      assert.match(convertValue('int', text).problem ?? '', /invalid literal for int\(\) with base 10/, text)
    }
    assert.match(convertValue('int', '99999999999999999999').problem ?? '', /outside/)
    assert.ok(convertValue('int', Infinity).problem)
  })

  it('float() takes decimals, exponents, inf and nan; bool and numbers as they are', () => {
    assert.deepEqual(convertValue('float', '2'), { value: 2 })
    assert.deepEqual(convertValue('float', ' 1.5e-3 '), { value: 0.0015 })
    assert.deepEqual(convertValue('float', '.5'), { value: 0.5 })
    assert.deepEqual(convertValue('float', '5.'), { value: 5 })
    assert.deepEqual(convertValue('float', '1_0.2_5'), { value: 10.25 })
    assert.deepEqual(convertValue('float', '-inf'), { value: -Infinity })
    assert.ok(Number.isNaN(convertValue('float', 'NaN').value))
    assert.deepEqual(convertValue('float', false), { value: 0 })
    for (const text of ['abc', '1.2.3', '', '1e', 'e5', '5V'])
      assert.match(convertValue('float', text).problem ?? '', /could not convert string to float/, text)
  })

  it('bool reads ON/OFF, 1/0 and true/false in any case, and nothing else', () => {
    for (const text of ['ON', 'on', '1', 'TRUE', 'true', ' On ']) assert.deepEqual(convertValue('bool', text), { value: true }, text)
    for (const text of ['OFF', 'off', '0', 'False']) assert.deepEqual(convertValue('bool', text), { value: false }, text)
    for (const text of ['yes', '2', '', 'onn']) assert.ok(convertValue('bool', text).problem, text)
    assert.deepEqual(convertValue('bool', 0), { value: false })
  })

  it('str keeps text, list and dict read JSON, any keeps the input', () => {
    assert.deepEqual(convertValue('str', ' hello '), { value: ' hello ' })
    assert.deepEqual(convertValue('str', true), { value: 'True' })
    assert.deepEqual(convertValue('list', '[1, 2]'), { value: [1, 2] })
    assert.ok(convertValue('list', '{"a": 1}').problem)
    assert.deepEqual(convertValue('dict', '{"a": 1}'), { value: { a: 1 } })
    assert.deepEqual(convertValue('any', '5'), { value: '5' })
  })
})

describe('ascii values: replies', () => {
  it('answers floats as Python str(float) does, checked against python3', () => {
    const samples = [
      2,
      0.1,
      1 / 3,
      -0.0,
      0,
      1e16,
      1e15,
      123456789012345680,
      1e-4,
      1e-5,
      1.5e-5,
      2.5e-7,
      1e22,
      1.7976931348623157e308,
      5e-324,
      -42.125,
      100,
      0.30000000000000004,
    ]
    // As text, since JSON has no -0; Python's float() reads JavaScript's shortest form exactly.
    const texts = samples.map((n) => (Object.is(n, -0) ? '-0' : String(n)))
    const script = 'import json,sys; print(json.dumps([str(float(x)) for x in json.loads(sys.argv[1])]))'
    const expected = JSON.parse(execFileSync('python3', ['-c', script, JSON.stringify(texts)], { encoding: 'utf8' })) as string[]
    assert.deepEqual(
      samples.map((n) => pyFloat(n)),
      expected,
    )
    assert.equal(pyFloat(Infinity), 'inf')
    assert.equal(pyFloat(NaN), 'nan')
  })

  it('formats by the attribute type: floats with a fraction, ints whole, bools 1/0, text as is, lists as Python', () => {
    assert.equal(formatValue(2, 'float'), '2.0')
    assert.equal(formatValue(2, 'int'), '2')
    assert.equal(formatValue(2.5, 'any'), '2.5')
    assert.equal(formatValue(true, 'bool'), '1')
    assert.equal(formatValue(false, 'bool'), '0')
    assert.equal(formatValue('CV', 'str'), 'CV')
    assert.equal(formatValue([1, 'a', null, true], 'list'), "[1, 'a', None, True]")
    assert.equal(formatValue({ k: 1.5 }, 'dict'), "{'k': 1.5}")
  })
})
