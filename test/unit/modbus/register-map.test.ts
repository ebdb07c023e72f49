import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { RegisterMap, parseModbusSlave } from '../../../src/protocols/modbus/index.js'

describe('RegisterMap', () => {
  const { mapping } = parseModbusSlave({
    mapping: {
      temperature: { address: [100, 101], group: 'h_r', type: 'float' },
      name: { address: [103, 106], group: 'h_r', type: 'str' },
      status: { address: 100, group: 'i_r', type: 'uint_16' },
      alarm: { address: 7, group: 'c_o', type: 'bool' },
    },
  })
  const map = RegisterMap.compile(mapping)

  it('finds the attribute and word offset of every mapped address, per group', () => {
    const holding = map.group('h_r')
    assert.deepEqual(
      [100, 101, 102, 103, 106, 107].map((a) => holding.entryAt(a)?.attribute),
      ['temperature', 'temperature', undefined, 'name', 'name', undefined],
    )
    assert.deepEqual(
      [100, 101, 103, 104, 106].map((a) => holding.wordOffset(a)),
      [0, 1, 0, 1, 3],
    )
    assert.equal(map.group('i_r').entryAt(100)?.attribute, 'status')
    assert.equal(map.group('i_r').entryAt(101), undefined)
    assert.equal(map.group('c_o').entryAt(7)?.attribute, 'alarm')
    assert.equal(map.group('d_i').entryAt(0), undefined)
  })

  it('answers addresses outside the mapped span, including 0 and 65535', () => {
    const holding = map.group('h_r')
    for (const address of [0, 99, 65535]) assert.equal(holding.indexAt(address), -1)
  })

  it('covers() is true only when every address of a range is mapped', () => {
    const holding = map.group('h_r')
    assert.equal(holding.covers(100, 2), true)
    assert.equal(holding.covers(100, 3), false)
    assert.equal(holding.covers(103, 4), true)
    assert.equal(holding.covers(103, 5), false)
  })

  it('compiles encoding specs with the width of each attribute', () => {
    assert.equal(map.attribute('name')?.spec.width, 4)
    assert.equal(map.attribute('name')?.scratch.length, 8)
    assert.equal(map.attribute('temperature')?.spec.wordOrder, 'big')
    assert.equal(map.attribute('missing'), undefined)
  })
})
