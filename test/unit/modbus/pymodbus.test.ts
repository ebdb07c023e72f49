import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { peerSkipReason, run, startRig } from './helpers.js'
import type { Rig } from './helpers.js'
import type { ModbusOrder, ModbusType } from '../../../src/protocols/modbus/index.js'

// Debian's python3-pymodbus as an independent client and encoder. Use the system interpreter:
// the `python3` on PATH may be a virtualenv without it.
const PYTHON = '/usr/bin/python3'
const CLIENT = fileURLToPath(new URL('./pymodbus-client.py', import.meta.url))
const skip = peerSkipReason('pymodbus', { command: PYTHON, args: ['-c', 'import pymodbus.client'] }, 'apt-get install python3-pymodbus')

interface Case {
  attr: string
  type: ModbusType
  width: number
  byte_order: ModbusOrder
  word_order: ModbusOrder
  address: number
  initial: number | string
  written: number | string
}

const SAMPLES: Record<Exclude<ModbusType, 'bool'>, { width: number; initial: number | string; written: number | string }> = {
  int_16: { width: 1, initial: -1234, written: 4321 },
  uint_16: { width: 1, initial: 54321, written: 65535 },
  int_32: { width: 2, initial: -123456789, written: 987654321 },
  uint_32: { width: 2, initial: 3000000000, written: 4294967295 },
  float: { width: 2, initial: 25.5, written: -0.75 },
  float_64: { width: 4, initial: -1234.5678, written: Math.PI },
  int_64: { width: 4, initial: -1234567890123, written: -42 },
  uint_64: { width: 4, initial: 2 ** 53 - 1, written: 123456789012 },
  str: { width: 4, initial: 'Mimic!', written: 'PLC' },
}

/** Every type in every order pymodbus can express (it does not reorder strings). */
function cases(): Case[] {
  const all: Case[] = []
  let address = 0
  for (const [type, sample] of Object.entries(SAMPLES) as Array<[Exclude<ModbusType, 'bool'>, (typeof SAMPLES)['str']]>) {
    const byteOrders: ModbusOrder[] = type === 'str' ? ['big'] : ['big', 'little']
    const wordOrders: ModbusOrder[] = sample.width > 1 && type !== 'str' ? ['big', 'little'] : ['big']
    for (const byte_order of byteOrders) {
      for (const word_order of wordOrders) {
        all.push({ attr: `${type}_${byte_order}_${word_order}`, type, byte_order, word_order, address, ...sample })
        address += sample.width
      }
    }
  }
  return all
}

const CASES = cases()
const EXTRA_BASE = 1000

describe('pymodbus against the server', { skip }, () => {
  let rig: Rig
  let results: Array<Record<string, unknown>>
  const ops: Array<Record<string, unknown>> = []
  /** Index of each named operation in `ops`. */
  const at = new Map<string, number>()
  const op = (name: string, operation: Record<string, unknown>): void => {
    at.set(name, ops.length)
    ops.push(operation)
  }
  const result = (name: string): Record<string, unknown> => results[at.get(name)!]!

  before(async () => {
    const mapping: Record<string, unknown> = {}
    const initial: Record<string, unknown> = {}
    for (const c of CASES) {
      mapping[c.attr] = {
        address: c.width === 1 ? c.address : [c.address, c.address + c.width - 1],
        group: 'h_r',
        type: c.type,
        byte_order: c.byte_order,
        word_order: c.word_order,
      }
      initial[c.attr] = c.initial
    }
    Object.assign(mapping, {
      level: { address: EXTRA_BASE, group: 'h_r', type: 'int_16', scale: 0.1 },
      locked: { address: EXTRA_BASE + 1, group: 'h_r', type: 'uint_16' },
      flag: { address: EXTRA_BASE + 2, group: 'h_r', type: 'bool' },
      status: { address: EXTRA_BASE + 5, group: 'i_r', type: 'uint_16', scale: 0.5 },
      alarm: { address: 0, group: 'c_o', type: 'bool' },
      pump: { address: 1, group: 'c_o', type: 'bool' },
      fan: { address: 2, group: 'c_o', type: 'bool' },
      door: { address: 3, group: 'd_i', type: 'bool' },
    })
    Object.assign(initial, { level: -12.3, locked: 5, flag: true, status: 21, alarm: true, pump: false, fan: true, door: true })
    rig = await startRig({ mapping }, initial)
    rig.accessor.readOnly.add('locked')

    for (const c of CASES) {
      const codec = { type: c.type, byte_order: c.byte_order, word_order: c.word_order, width: c.width }
      op(`read ${c.attr}`, { op: 'read', group: 'h_r', address: c.address, count: c.width, ...codec })
      op(`write ${c.attr}`, { op: 'write', address: c.address, value: c.written, ...codec })
      op(`reread ${c.attr}`, { op: 'read', group: 'h_r', address: c.address, count: c.width, ...codec })
    }
    op('read scaled', { op: 'read', group: 'h_r', address: EXTRA_BASE, count: 3 })
    op('write scaled', { op: 'write_register', address: EXTRA_BASE, value: 250 })
    op('read input', { op: 'read', group: 'i_r', address: EXTRA_BASE + 5, count: 1 })
    op('read coils', { op: 'read', group: 'c_o', address: 0, count: 3 })
    op('write coil', { op: 'write_coil', address: 1, value: true })
    op('write coils', { op: 'write_coils', address: 0, values: [false, true, false] })
    op('read inputs', { op: 'read', group: 'd_i', address: 3, count: 1 })
    op('readwrite', { op: 'readwrite', read_address: EXTRA_BASE, read_count: 1, write_address: EXTRA_BASE, values: [0xfff6] })
    op('unit 0 reaches the only unit', { op: 'read', group: 'i_r', address: EXTRA_BASE + 5, count: 1, unit: 0 })
    op('unmapped', { op: 'read', group: 'h_r', address: 5000, count: 1 })
    op('count 126', { op: 'raw_read', address: 0, count: 126 })
    op('unsupported function', { op: 'read_exception_status' })
    op('write input register', { op: 'write_register', address: EXTRA_BASE + 5, value: 1 })
    op('write read-only', { op: 'write_register', address: EXTRA_BASE + 1, value: 9 })
    op('write discrete input', { op: 'write_coil', address: 3, value: true })
    op('unknown unit', { op: 'read', group: 'h_r', address: 0, count: 1, unit: 9 })

    const { code, stdout, stderr } = await run(PYTHON, [CLIENT, String(rig.port)], { input: JSON.stringify(ops), timeoutMs: 30_000 })
    assert.equal(code, 0, stderr)
    results = JSON.parse(stdout) as Array<Record<string, unknown>>
    assert.equal(results.length, ops.length)
  })
  after(async () => {
    await rig?.close()
  })

  const close = (actual: unknown, expected: number | string, label: string): void => {
    if (typeof expected === 'number' && !Number.isInteger(expected)) {
      assert.ok(Math.abs((actual as number) - expected) < 1e-9 * Math.max(1, Math.abs(expected)), `${label}: ${actual} != ${expected}`)
    } else {
      assert.equal(actual, expected, label)
    }
  }

  it('reads every type in every byte and word order as pymodbus decodes it', () => {
    for (const c of CASES) close(result(`read ${c.attr}`).value, c.initial, `read ${c.attr}`)
  })

  it('takes writes of every type in every order as pymodbus encodes them', () => {
    for (const c of CASES) {
      assert.equal(result(`write ${c.attr}`).ok, true, `write ${c.attr}: ${JSON.stringify(result(`write ${c.attr}`))}`)
      close(rig.accessor.values.get(c.attr), c.written, `attribute ${c.attr}`)
      close(result(`reread ${c.attr}`).value, c.written, `reread ${c.attr}`)
    }
  })

  it('applies scale, bool registers and input registers', () => {
    assert.deepEqual(result('read scaled').registers, [0xff85, 5, 1])
    assert.deepEqual(result('read input').registers, [42])
    assert.deepEqual(result('unit 0 reaches the only unit').registers, [42])
  })

  it('reads and writes coils, reads discrete inputs', () => {
    assert.deepEqual(result('read coils').bits, [true, false, true])
    assert.equal(result('write coil').ok, true)
    assert.equal(result('write coils').ok, true)
    assert.deepEqual(
      ['alarm', 'pump', 'fan'].map((a) => rig.accessor.values.get(a)),
      [false, true, false],
    )
    assert.deepEqual(result('read inputs').bits, [true])
  })

  it('FC6 and FC23 write the scaled register (the later write wins)', () => {
    assert.equal(result('write scaled').ok, true)
    assert.deepEqual(result('readwrite').registers, [0xfff6])
    assert.equal(rig.accessor.values.get('level'), -1)
  })

  it('answers exceptions pymodbus understands: 02 unmapped/read-only/input, 03 bad count, 01 unknown function, 0B unknown unit', () => {
    assert.equal(result('unmapped').exception, 2)
    assert.equal(result('count 126').exception, 3)
    assert.equal(result('unsupported function').exception, 1)
    assert.equal(result('write input register').exception, 2)
    assert.equal(result('write read-only').exception, 2)
    assert.equal(rig.accessor.values.get('locked'), 5)
    assert.equal(result('write discrete input').exception, 2)
    assert.equal(result('unknown unit').exception, 0x0b)
  })
})
