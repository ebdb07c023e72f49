import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { modbusSlaveSchema, parseModbusSlave } from '../../../src/protocols/modbus/index.js'
import { ValidationError } from '../../../src/errors.js'

/** The issues of a failed parse as "path: message" lines. */
function problems(input: unknown): Array<{ path: string; message: string }> {
  const result = modbusSlaveSchema.safeParse(input)
  assert.equal(result.success, false, 'expected the definition to be refused')
  return result.error!.issues.map((i) => ({ path: i.path.join('.'), message: i.message }))
}

function pathsOf(input: unknown): string[] {
  return problems(input).map((p) => p.path)
}

describe('modbusSlaveSchema', () => {
  it('fills defaults: host, unit_id, response_delay, byte and word order; port stays optional', () => {
    const d = modbusSlaveSchema.parse({ mapping: { t: { address: [0, 1], group: 'h_r', type: 'float' } } })
    assert.equal(d.host, '127.0.0.1')
    assert.equal(d.unit_id, 1)
    assert.equal(d.response_delay, 0)
    assert.equal(d.port, undefined)
    assert.deepEqual(d.mapping.t, { address: [0, 1], group: 'h_r', type: 'float', byte_order: 'big', word_order: 'big' })
  })

  it('accepts the full example of the contract', () => {
    const d = modbusSlaveSchema.parse({
      host: '127.0.0.1',
      port: 5020,
      unit_id: 1,
      response_delay: 0.25,
      mapping: {
        temperature: { address: [0, 1], group: 'h_r', type: 'float' },
        setpoint: { address: [2, 3], group: 'h_r', type: 'float', word_order: 'little' },
        alarm: { address: 0, group: 'c_o', type: 'bool' },
        status: { address: 10, group: 'i_r', type: 'uint_16', scale: 0.1 },
        name: { address: [20, 23], group: 'h_r', type: 'str' },
        big: { address: [30, 33], group: 'i_r', type: 'uint_64' },
        flag: { address: 40, group: 'h_r', type: 'bool' },
        di: { address: 0, group: 'd_i', type: 'bool' },
      },
    })
    assert.equal(d.mapping.setpoint!.word_order, 'little')
    assert.equal(d.response_delay, 0.25)
  })

  it('refuses unknown keys at the top and in an entry', () => {
    assert.deepEqual(pathsOf({ mapping: {}, prot: 1 }), [''])
    assert.match(problems({ mapping: {}, prot: 1 })[0]!.message, /prot/)
    assert.deepEqual(pathsOf({ mapping: { t: { address: 0, group: 'h_r', type: 'int_16', scal: 2 } } }), ['mapping.t'])
  })

  it('reports a width that does not match the type at mapping.<attr>.address', () => {
    const found = problems({
      mapping: {
        temperature: { address: 0, group: 'h_r', type: 'float' },
        counter: { address: [4, 5], group: 'h_r', type: 'int_16' },
        total: { address: [6, 8], group: 'h_r', type: 'int_64' },
      },
    })
    assert.deepEqual(found.map((p) => p.path).sort(), ['mapping.counter.address', 'mapping.temperature.address', 'mapping.total.address'])
    assert.match(found.find((p) => p.path === 'mapping.temperature.address')!.message, /float takes 2 addresses, got 1/)
  })

  it('reports a reversed address pair', () => {
    assert.deepEqual(pathsOf({ mapping: { s: { address: [5, 2], group: 'h_r', type: 'str' } } }), ['mapping.s.address'])
  })

  it('allows only bool (or uint_16) in coils and discrete inputs, reported at mapping.<attr>.type', () => {
    const found = problems({
      mapping: {
        a: { address: 0, group: 'c_o', type: 'int_16' },
        b: { address: [0, 1], group: 'd_i', type: 'str' },
      },
    })
    assert.deepEqual(found.map((p) => p.path).sort(), ['mapping.a.type', 'mapping.b.type'])
    assert.match(found[0]!.message, /only type bool \(or uint_16, as 0 and 1\)/)
  })

  it('takes uint_16 for a coil or a discrete input, one address wide and without scale', () => {
    const d = modbusSlaveSchema.parse({
      mapping: { power_on: { address: [6, 6], group: 'c_o', type: 'uint_16' }, door: { address: 0, group: 'd_i', type: 'uint_16' } },
    })
    assert.equal(d.mapping.power_on!.type, 'uint_16')
    assert.deepEqual(pathsOf({ mapping: { a: { address: [0, 1], group: 'c_o', type: 'uint_16' } } }), ['mapping.a.address'])
    assert.deepEqual(pathsOf({ mapping: { a: { address: 0, group: 'c_o', type: 'uint_16', scale: 0.1 } } }), ['mapping.a.scale'])
  })

  it('accepts poll_interval (seconds, ignored: registers are read from the attribute on each request) and checks it', () => {
    assert.equal(modbusSlaveSchema.parse({ mapping: {}, poll_interval: 0.25 }).poll_interval, 0.25)
    assert.deepEqual(pathsOf({ mapping: {}, poll_interval: -1 }), ['poll_interval'])
    assert.deepEqual(pathsOf({ mapping: {}, poll_interval: 'fast' }), ['poll_interval'])
    assert.deepEqual(pathsOf({ mapping: {}, poll_interval: 3601 }), ['poll_interval'])
  })

  it('reports overlapping addresses within a group, but not across groups', () => {
    const found = problems({
      mapping: {
        a: { address: [0, 3], group: 'h_r', type: 'float_64' },
        b: { address: [2, 3], group: 'h_r', type: 'float' },
        c: { address: 3, group: 'h_r', type: 'uint_16' },
        d: { address: 0, group: 'i_r', type: 'uint_16' },
        e: { address: 0, group: 'c_o', type: 'bool' },
      },
    })
    assert.deepEqual(found.map((p) => p.path).sort(), ['mapping.b.address', 'mapping.c.address'])
    assert.match(found.find((p) => p.path === 'mapping.b.address')!.message, /overlap 'a' \(0\.\.3\) in group h_r/)
  })

  it('checks ranges: addresses 0..65535, unit id 0..255, port 0..65535, delay >= 0', () => {
    assert.deepEqual(pathsOf({ mapping: { a: { address: 65536, group: 'h_r', type: 'uint_16' } } }), ['mapping.a.address'])
    assert.deepEqual(pathsOf({ mapping: { a: { address: [65535, 65536], group: 'h_r', type: 'float' } } }), ['mapping.a.address.1'])
    assert.deepEqual(pathsOf({ mapping: { a: { address: -1, group: 'h_r', type: 'uint_16' } } }), ['mapping.a.address'])
    assert.deepEqual(pathsOf({ mapping: {}, unit_id: 256 }), ['unit_id'])
    assert.deepEqual(pathsOf({ mapping: {}, unit_id: 1.5 }), ['unit_id'])
    assert.deepEqual(pathsOf({ mapping: {}, port: 70000 }), ['port'])
    assert.deepEqual(pathsOf({ mapping: {}, response_delay: -1 }), ['response_delay'])
  })

  it('connection settings: defaults 300 s idle, 10 s per frame, 256 connections; idle 0 means never; bad values at their fields', () => {
    const d = modbusSlaveSchema.parse({ mapping: {} })
    assert.deepEqual([d.idle_timeout, d.frame_timeout, d.max_connections], [300, 10, 256])
    const never = modbusSlaveSchema.parse({ mapping: {}, idle_timeout: 0, frame_timeout: 0.25, max_connections: 1 })
    assert.deepEqual([never.idle_timeout, never.frame_timeout, never.max_connections], [0, 0.25, 1])
    assert.deepEqual(pathsOf({ mapping: {}, idle_timeout: -1 }), ['idle_timeout'])
    assert.deepEqual(pathsOf({ mapping: {}, idle_timeout: 86_401 }), ['idle_timeout'])
    assert.deepEqual(pathsOf({ mapping: {}, idle_timeout: '30' }), ['idle_timeout'])
    assert.deepEqual(pathsOf({ mapping: {}, frame_timeout: 0 }), ['frame_timeout'])
    assert.deepEqual(pathsOf({ mapping: {}, frame_timeout: 3601 }), ['frame_timeout'])
    assert.deepEqual(pathsOf({ mapping: {}, max_connections: 0 }), ['max_connections'])
    assert.deepEqual(pathsOf({ mapping: {}, max_connections: 2.5 }), ['max_connections'])
    assert.deepEqual(pathsOf({ mapping: {}, max_connections: 65_536 }), ['max_connections'])
    assert.match(problems({ mapping: {}, frame_timeout: 0 })[0]!.message, /frame_timeout is seconds > 0/)
  })

  it('refuses unknown groups, types and orders at their fields', () => {
    assert.deepEqual(pathsOf({ mapping: { a: { address: 0, group: 'x_y', type: 'int_8', byte_order: 'middle' } } }).sort(), [
      'mapping.a.byte_order',
      'mapping.a.group',
      'mapping.a.type',
    ])
  })

  it('refuses scale on bool and str, and a scale of 0', () => {
    assert.deepEqual(pathsOf({ mapping: { a: { address: 0, group: 'c_o', type: 'bool', scale: 2 } } }), ['mapping.a.scale'])
    assert.deepEqual(pathsOf({ mapping: { a: { address: 0, group: 'h_r', type: 'int_16', scale: 0 } } }), ['mapping.a.scale'])
  })

  it('refuses attribute names that are not names', () => {
    assert.equal(pathsOf({ mapping: { 'a.b': { address: 0, group: 'h_r', type: 'int_16' } } })[0], 'mapping.a.b')
  })

  it('parseModbusSlave throws a ValidationError listing every problem with its path', () => {
    try {
      parseModbusSlave({ unit_id: 300, mapping: { t: { address: 0, group: 'h_r', type: 'float' } } }, "Model 'pt100' modbus_slave")
      assert.fail('expected a ValidationError')
    } catch (error) {
      assert.ok(error instanceof ValidationError)
      assert.equal(error.status, 422)
      assert.match(error.message, /^Model 'pt100' modbus_slave: 2 errors/)
      assert.deepEqual(error.details.map((d) => d.path).sort(), ['mapping.t.address', 'unit_id'])
    }
  })
})
