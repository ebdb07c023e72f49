import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Instrument, asciiSchema } from '../../../src/protocols/ascii/index.js'
import type { AdapterSubject, AttributeAccessor } from '../../../src/protocols/adapter.js'

const SUBJECT: AdapterSubject = {
  instance: 'psu',
  model: 'PowerSupply',
  attributes: [
    { name: 'setpoint', type: 'float', default: 0 },
    { name: 'limit', type: 'float', default: 1 },
    { name: 'output', type: 'bool', default: false },
    { name: 'count', type: 'int', default: 0 },
    { name: 'label', type: 'str', default: '' },
    { name: 'voltage', type: 'float', default: 0 },
    { name: 'locked', type: 'float', default: 0 },
  ],
}

/** Attributes in a map; `locked` is read-only, `limit` refuses values above 3 (as another adapter's range would). */
function rig(settings: unknown, options: { asyncWrites?: boolean } = {}) {
  const values = new Map<string, unknown>(SUBJECT.attributes.map((a) => [a.name, a.default]))
  const writes: Array<[string, unknown]> = []
  const accessor: AttributeAccessor = {
    read: (a) => values.get(a),
    write: (a, v) => {
      writes.push([a, v])
      if (!options.asyncWrites) return void values.set(a, v)
      return new Promise<void>((resolve) => setTimeout(() => (values.set(a, v), resolve()), 5))
    },
    writable: (a) => a !== 'locked',
    valueProblem: (a, v) => (a === 'limit' && typeof v === 'number' && v > 3 ? `${v} is above 3` : null),
  }
  const instrument = new Instrument({ definition: asciiSchema.parse(settings), accessor, subject: SUBJECT, version: '9.9.9' })
  return { instrument, values, writes }
}

/** Sends a line whose answer is not looked at, and checks that it came at once (no write waited). */
function sent(instrument: Instrument, line: string): void {
  assert.ok(!(instrument.execute(line) instanceof Promise), `'${line}' was answered at once`)
}

const PSU = {
  mappings: {
    'SOUR:VOLT {value}': { '#attr(setpoint)': 'value', response: 'VOLT {value}' },
    'SOUR:VOLT?': '#attr(setpoint)',
    'APPL {v},{i}': { '#attr(setpoint)': 'v', '$in(limit)': 'i' },
    'OUTP ON': { '#attr(output)': 'ON' },
    'OUTP OFF': { '#attr(output)': false },
    'OUTP?': 'output',
    'MEAS:VOLT?': '#out(voltage)',
    'COUNT {n}': { count: 'n' },
    'COUNT?': '$ext(count)',
    'LOCK {v}': { '#attr(locked)': 'v' },
    'LABEL {text}': { '#attr(label)': 'text' },
    'SUMMARY?': { response: '{setpoint} V, {#attr(limit)} A, out={output}' },
  },
}

describe('ascii instrument: mappings', () => {
  it('answers a reference with the value in the attribute type format', () => {
    const { instrument, values } = rig(PSU)
    values.set('voltage', 2)
    assert.equal(instrument.execute('MEAS:VOLT?'), '2.0')
    values.set('count', 3)
    assert.equal(instrument.execute('count?'), '3')
    assert.equal(instrument.execute('OUTP?'), '0')
  })

  it('writes a captured value converted to the attribute type and replies with the template', () => {
    const { instrument, values } = rig(PSU)
    assert.equal(instrument.execute('SOUR:VOLT 5'), 'VOLT 5')
    assert.equal(values.get('setpoint'), 5)
    assert.equal(instrument.execute('SOUR:VOLT?'), '5.0')
    assert.equal(instrument.execute('OUTP ON'), null)
    assert.equal(values.get('output'), true)
    assert.equal(instrument.execute('OUTP OFF'), null)
    assert.equal(values.get('output'), false)
    assert.equal(instrument.execute('LABEL Hello there'), null)
    assert.equal(values.get('label'), 'Hello there')
    assert.equal(instrument.execute('SUMMARY?'), '5.0 V, 1.0 A, out=0')
  })

  it("takes mappings as the reference product's instrument models write them: a `name` label, a fixed reply string", () => {
    const { instrument, values, writes } = rig({
      mappings: {
        '*IDN?': 'KEYSIGHT TECHNOLOGIES,DSOX1000X,MY00000000,01.20.0000',
        'CONF {v}': { name: 'configure', description: 'sets the setpoint', '#attr(setpoint)': 'v' },
        'BRACES?': 'a {b} c',
        'LABEL?': { name: 'query_label', response: '#attr(label)' },
      },
    })
    assert.equal(instrument.execute('*IDN?'), 'KEYSIGHT TECHNOLOGIES,DSOX1000X,MY00000000,01.20.0000')
    assert.equal(instrument.execute('BRACES?'), 'a {b} c')
    assert.equal(instrument.execute('CONF 4'), null)
    assert.deepEqual(writes, [['setpoint', 4]])
    assert.equal(values.get('setpoint'), 4)
    values.set('label', 'bench')
    assert.equal(instrument.execute('LABEL?'), 'bench')
    // A label is a string; a name that is a reference still reads its attribute.
    assert.throws(() => asciiSchema.parse({ mappings: { 'X?': { name: 3, response: 'x' } } }), /name is a label/)
  })

  it('runs the commands of a line in order and joins the replies with ;', () => {
    const { instrument, values } = rig(PSU)
    values.set('voltage', 1.25)
    assert.equal(instrument.execute('APPL 12,0.5;SOUR:VOLT?;MEAS:VOLT?;OUTP ON;OUTP?'), '12.0;1.25;1')
    assert.deepEqual([values.get('setpoint'), values.get('limit')], [12, 0.5])
  })

  it('a value that does not fit is an SCPI error and nothing of the command is written', () => {
    const { instrument, values, writes } = rig(PSU)
    assert.equal(instrument.execute('APPL 7,abc'), null)
    assert.equal(instrument.execute('APPL 7,9'), null)
    assert.equal(instrument.execute('COUNT 1.5'), null)
    assert.equal(instrument.execute('LOCK 1'), null)
    assert.deepEqual(writes, [])
    assert.equal(values.get('setpoint'), 0)
    assert.match(instrument.execute('SYST:ERR?') as string, /^-104,"Data type error;limit: could not convert string to float: 'abc'"$/)
    assert.match(instrument.execute('SYST:ERR?') as string, /^-222,"Data out of range;limit: 9 is above 3"$/)
    assert.match(instrument.execute('SYST:ERR?') as string, /^-104,"Data type error;count: invalid literal for int\(\) with base 10: '1.5'"$/)
    assert.match(instrument.execute('SYST:ERR?') as string, /^-200,"Execution error;locked is read-only"$/)
    assert.equal(instrument.execute('SYST:ERR?'), '0,"No error"')
    assert.equal(instrument.counters.errors, 4)
  })

  it('an unknown command queues -113 and answers nothing, or unknown_response', () => {
    const { instrument } = rig(PSU)
    assert.equal(instrument.execute('FOO:BAR?'), null)
    assert.equal(instrument.execute('SYST:ERR:COUN?'), '1')
    assert.equal(instrument.execute('SYST:ERR?;SYST:ERR?'), '-113,"Undefined header;FOO:BAR?";0,"No error"')
    const other = rig({ ...PSU, unknown_response: 'ERR' }).instrument
    assert.equal(other.execute('FOO;OUTP?'), 'ERR;0')
  })

  it('keeps at most 20 errors, the last one saying the queue overflowed; *CLS empties it', () => {
    const { instrument } = rig(PSU)
    for (let i = 0; i < 25; i++) sent(instrument, `NOPE${i}`)
    const errors = Array.from({ length: 21 }, () => instrument.execute('SYST:ERR?'))
    assert.match(errors[0] as string, /NOPE0/)
    assert.equal(errors[19], '-350,"Queue overflow"')
    assert.equal(errors[20], '0,"No error"')
    sent(instrument, 'NOPE')
    sent(instrument, '*CLS')
    assert.equal(instrument.execute('SYST:ERR?'), '0,"No error"')
  })

  it('built-ins answer unless a mapping takes the command', () => {
    const { instrument, values } = rig(PSU)
    assert.equal(instrument.execute('*IDN?'), 'Mimic,PowerSupply,psu,9.9.9')
    assert.equal(instrument.execute('*OPC?;*TST?'), '1;0')
    assert.equal(instrument.execute('SYSTem:ERRor:NEXT?'), '0,"No error"')
    sent(instrument, 'APPL 3,2;OUTP ON;COUNT 4')
    assert.equal(instrument.execute('*RST'), null)
    // Attributes that commands write go back to their defaults; the others are left alone.
    values.set('voltage', 9)
    assert.deepEqual([values.get('setpoint'), values.get('limit'), values.get('output'), values.get('count'), values.get('voltage')], [0, 1, false, 0, 9])
    const own = rig({ identity: 'ACME,PS-1,42,1.0', mappings: { '*OPC?': { response: 'DONE' } } }).instrument
    assert.equal(own.execute('*IDN?;*OPC?'), 'ACME,PS-1,42,1.0;DONE')
  })

  it('keeps the IEEE 488.2 status registers: *ESR? by error class, *STB?, the enable masks, *CLS', () => {
    const { instrument } = rig(PSU)
    assert.equal(instrument.execute('*ESR?;*STB?'), '0;0')
    sent(instrument, 'NOPE') // -113: a command error, ESR bit 5
    assert.equal(instrument.execute('*STB?'), '4', 'an error waits in the queue')
    assert.equal(instrument.execute('*ESR?'), '32')
    assert.equal(instrument.execute('*ESR?'), '0', 'reading the register clears it')
    sent(instrument, 'SOUR:VOLT abc') // -104: a command error
    sent(instrument, 'APPL 1,9') // -222: limit refuses 9, an execution error, bit 4
    sent(instrument, '*OPC') // operation complete, bit 0
    sent(instrument, '*ESE 16;*SRE 32')
    assert.equal(instrument.execute('*ESE?;*SRE?'), '16;32')
    // Errors wait (bit 2), an enabled event is set (bit 5), and the status request is enabled for bit 5 (bit 6).
    assert.equal(instrument.execute('*STB?'), String(4 + 32 + 64))
    assert.equal(instrument.execute('*ESR?'), String(32 + 16 + 1))
    sent(instrument, '*CLS')
    assert.equal(instrument.execute('*STB?;*ESR?;SYST:ERR?'), '0;0;0,"No error"')
    assert.equal(instrument.execute('*ESE 256'), null)
    assert.match(instrument.execute('SYST:ERR?') as string, /^-224,"Illegal parameter value;\*ESE takes a mask of 0 to 255, got '256'"$/)
    assert.equal(instrument.execute('*ESE?'), '16', 'a refused mask changes nothing')
    assert.equal(instrument.execute('*ESR?'), '16', 'the refusal is an execution error')
  })

  it('waits for asynchronous writes, in order, and answers the whole line once', async () => {
    const { instrument, values } = rig(PSU, { asyncWrites: true })
    const result = instrument.execute('SOUR:VOLT 4;SOUR:VOLT?;APPL 6,0.5;SOUR:VOLT?')
    assert.ok(result instanceof Promise)
    assert.equal(await result, 'VOLT 4;4.0;6.0')
    assert.equal(values.get('limit'), 0.5)
  })

  it('counts commands and queries', () => {
    const { instrument } = rig(PSU)
    sent(instrument, 'SOUR:VOLT 1;SOUR:VOLT?;*IDN?;BAD')
    assert.deepEqual(instrument.counters, { requests: 4, commands: 2, queries: 2, errors: 1 })
  })
})

describe('ascii instrument: bindings', () => {
  it('reads, writes the one placeholder, writes literals and more attributes, and replies', () => {
    const { instrument, values } = rig({
      bindings: [
        { name: 'read', command: 'MEASure:VOLTage?', attribute: '#out(voltage)' },
        { command: 'SETP {x}', attribute: 'setpoint', response: 'SET {value}' },
        { command: 'ARM', attribute: 'output', value: 'on', writes: { count: 1 } },
        { command: 'LIM?', attribute: 'limit', response: 'LIMIT {value} A' },
      ],
    })
    values.set('voltage', 0.1)
    assert.equal(instrument.execute('measure:voltage?'), '0.1')
    assert.equal(instrument.execute('SETP 2'), 'SET 2.0')
    assert.equal(values.get('setpoint'), 2)
    assert.equal(instrument.execute('ARM'), null)
    assert.deepEqual([values.get('output'), values.get('count')], [true, 1])
    assert.equal(instrument.execute('LIM?'), 'LIMIT 1.0 A')
  })
})
