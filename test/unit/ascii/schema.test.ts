import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { asciiSchema } from '../../../src/protocols/ascii/index.js'
import { modelDefinitionSchema } from '../../../src/definition/model-schema.js'

const issues = (input: unknown) => {
  const result = modelDefinitionSchema.safeParse(input)
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)
}

describe('ascii schema', () => {
  it('fills in the defaults', () => {
    const d = asciiSchema.parse({})
    assert.equal(d.host, '127.0.0.1')
    assert.equal(d.port, undefined)
    assert.equal(d.transport, 'tcp')
    assert.equal(d.terminator, '\n')
    assert.equal(d.case_sensitive, false)
    assert.equal(d.response_delay, 0)
    assert.deepEqual(d.bindings, [])
  })

  it('a model checks that every referenced attribute is declared, with the path of each reference', () => {
    const model = {
      attributes: { voltage: 0.0, setpoint: 0.0 },
      communication: {
        ascii: {
          mappings: {
            'MEAS:VOLT?': '#out(voltage)',
            'MEAS:CURR?': '#out(current)',
            'VOLT {v}': { '#attr(setpoint)': 'v', '$in(limit)': '2', response: '{v} {#attr(unit)}' },
          },
          bindings: [{ command: 'X?', attribute: 'nothing' }],
        },
      },
    }
    assert.deepEqual(issues(model).sort(), [
      "communication.ascii.bindings.0.attribute: 'nothing' is not an attribute of this model",
      "communication.ascii.mappings.MEAS:CURR?: 'current' is not an attribute of this model",
      "communication.ascii.mappings.VOLT {v}.$in(limit): 'limit' is not an attribute of this model",
      "communication.ascii.mappings.VOLT {v}.response: 'unit' is not an attribute of this model",
    ])
    assert.deepEqual(issues({ attributes: { voltage: 0.0 }, communication: { ascii: { mappings: { 'MEAS:VOLT?': 'voltage' } } } }), [])
  })

  it('reports malformed mappings and bindings where they are', () => {
    const found = issues({
      attributes: { v: 0.0 },
      communication: [
        {
          ascii: {
            transport: 'serial',
            terminator: 'END',
            mappings: {
              'A {x} {x}': { v: 'x' },
              'B {1x}': { v: '1' },
              'C {a}{b}': { v: 'a' },
              'E {x}': { v: '{y}', '#nope(v)': 1 },
            },
            bindings: [{ command: 'F {a},{b}', attribute: 'v' }, { command: 'G' }, { command: 'H', value: 1 }],
          },
        },
      ],
    })
    const expect = [
      /transport/,
      /terminator: the terminator is made of control or space characters/,
      /A \{x\} \{x\}: placeholder \{x\} appears twice/,
      /B \{1x\}: '\{1x\}' is not a placeholder/,
      /C \{a\}\{b\}: two placeholders need text between them/,
      /E \{x\}.#nope\(v\): '#nope\(v\)' is neither 'response' nor a reference/,
      /bindings.0.value: the command has several placeholders/,
      /bindings.1: a binding reads or writes an attribute, or replies/,
      /bindings.2.value: a value is written to an attribute: give attribute too/,
    ]
    for (const pattern of expect)
      assert.ok(
        found.some((f) => pattern.test(f)),
        `${pattern} in ${found.join('\n')}`,
      )
  })
})
