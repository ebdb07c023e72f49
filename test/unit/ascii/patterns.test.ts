import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { compilePattern, isQuery, matchPattern, splitCommands } from '../../../src/protocols/ascii/index.js'

const loose = { caseSensitive: false }
const strict = { caseSensitive: true }
const match = (pattern: string, command: string, options = loose) => matchPattern(compilePattern(pattern, options), command, options)

describe('ascii command patterns', () => {
  it('an exact command matches in any case, with a leading colon and any white space', () => {
    assert.deepEqual(match('MEAS:VOLT?', 'meas:volt?'), {})
    assert.deepEqual(match('MEAS:VOLT?', ':MEAS:VOLT?'), {})
    assert.deepEqual(match('OUTP ON', '  outp    on '), {})
    assert.equal(match('MEAS:VOLT?', 'MEAS:CURR?'), null)
    assert.equal(match('MEAS:VOLT?', 'MEAS:VOLT'), null)
    assert.equal(match('OUTP ON', 'OUTP OFF'), null)
  })

  it('case_sensitive makes case matter', () => {
    assert.deepEqual(match('MEAS:VOLT?', 'MEAS:VOLT?', strict), {})
    assert.equal(match('MEAS:VOLT?', 'meas:volt?', strict), null)
    assert.equal(match('VOLT {v}', 'volt 5', strict), null)
    assert.deepEqual(match('VOLT {v}', 'VOLT abc', strict), { v: 'abc' })
  })

  it('placeholders capture the text between the literal parts, trimmed, case kept', () => {
    assert.deepEqual(match('SOUR:VOLT {value}', 'sour:volt 5.0'), { value: '5.0' })
    assert.deepEqual(match('APPL {volts},{amps}', 'APPL 5, 0.25'), { volts: '5', amps: '0.25' })
    assert.deepEqual(match('APPL {volts},{amps}', 'APPL 5 ,0.25'), { volts: '5', amps: '0.25' })
    assert.deepEqual(match('DISP:TEXT {text}', 'DISP:TEXT Hello  World'), { text: 'Hello  World' })
    assert.deepEqual(match('CH{n}:SCALE {v}', 'ch2:scale 0.5'), { n: '2', v: '0.5' })
    assert.equal(match('SOUR:VOLT {value}', 'SOUR:VOLT'), null)
    assert.equal(match('SOUR:VOLT {value}', 'SOUR:VOLT?'), null)
  })

  it('SCPI long and short forms and optional parts in the header', () => {
    for (const command of ['MEAS:VOLT?', 'MEASURE:VOLTAGE?', 'measure:volt?', 'MEAS:VOLT:DC?', 'Measure:Voltage:DC?']) {
      assert.deepEqual(match('MEASure:VOLTage[:DC]?', command), {}, command)
    }
    for (const command of ['MEASU:VOLT?', 'MEAS:VOLTAG?', 'MEAS:VOLT:AC?']) assert.equal(match('MEASure:VOLTage[:DC]?', command), null, command)
    assert.deepEqual(match('SOURce:VOLTage {value}', 'source:volt 3'), { value: '3' })
  })

  it('regular-expression characters in a pattern are literal, {{ and }} are braces', () => {
    assert.deepEqual(match('*IDN?', '*idn?'), {})
    assert.equal(match('A.B', 'AxB'), null)
    assert.deepEqual(match('SET {{x}} {v}', 'SET {x} 1'), { v: '1' })
  })

  it('splits a line at ; outside quotes and knows queries by their header', () => {
    assert.deepEqual(splitCommands('VOLT 5;:MEAS:VOLT?; ;DISP:TEXT "a;b";X \'c;d\''), ['VOLT 5', ':MEAS:VOLT?', 'DISP:TEXT "a;b"', "X 'c;d'"])
    assert.deepEqual(splitCommands('   '), [])
    assert.equal(isQuery('MEAS:VOLT? DEF'), true)
    assert.equal(isQuery('DISP:TEXT what?'), false)
  })
})
