import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { checkValue, decodeWords, encodeWords, encodingSpec } from '../../../src/protocols/modbus/index.js'
import type { EncodableEntry, ModbusOrder, ModbusType } from '../../../src/protocols/modbus/index.js'
import { ValidationError } from '../../../src/errors.js'

type Case = [ModbusType, number | [number, number], unknown, { byte?: ModbusOrder; word?: ModbusOrder; scale?: number }, number[]]

const entry = (type: ModbusType, address: number | [number, number], o: Case[3] = {}): EncodableEntry => ({
  type,
  address,
  byte_order: o.byte,
  word_order: o.word,
  scale: o.scale,
})

// Known vectors, worked out by hand from IEEE 754 and two's complement.
const VECTORS: Case[] = [
  ['float', [0, 1], 25.0, {}, [0x41c8, 0x0000]],
  ['float', [0, 1], 25.0, { word: 'little' }, [0x0000, 0x41c8]],
  ['float', [0, 1], 25.0, { byte: 'little' }, [0xc841, 0x0000]],
  ['float', [0, 1], 25.0, { byte: 'little', word: 'little' }, [0x0000, 0xc841]],
  ['float', [0, 1], -2.5, {}, [0xc020, 0x0000]],
  ['float', [0, 1], 2.5, { scale: 0.1 }, [0x41c8, 0x0000]],
  ['float_64', [0, 3], 1.0, {}, [0x3ff0, 0, 0, 0]],
  ['float_64', [0, 3], 25.0, { word: 'little' }, [0, 0, 0, 0x4039]],
  ['float_64', [0, 3], 25.0, { byte: 'little' }, [0x3940, 0, 0, 0]],
  ['int_16', 0, -2, {}, [0xfffe]],
  ['int_16', 0, -2, { byte: 'little' }, [0xfeff]],
  ['int_16', 0, -1.23, { scale: 0.01 }, [0xff85]],
  ['int_16', 0, 7, { word: 'little' }, [0x0007]],
  ['uint_16', 0, 65535, {}, [0xffff]],
  ['uint_16', 0, 258, { byte: 'little' }, [0x0201]],
  ['uint_16', 0, 21.5, { scale: 0.1 }, [0x00d7]],
  ['int_32', [0, 1], -2, {}, [0xffff, 0xfffe]],
  ['int_32', [0, 1], -2, { word: 'little' }, [0xfffe, 0xffff]],
  ['int_32', [0, 1], 123450, { scale: 10 }, [0x0000, 0x3039]],
  ['uint_32', [0, 1], 0x12345678, {}, [0x1234, 0x5678]],
  ['uint_32', [0, 1], 0x12345678, { word: 'little' }, [0x5678, 0x1234]],
  ['uint_32', [0, 1], 0x12345678, { byte: 'little' }, [0x3412, 0x7856]],
  ['uint_32', [0, 1], 0x12345678, { byte: 'little', word: 'little' }, [0x7856, 0x3412]],
  ['int_64', [0, 3], -1, {}, [0xffff, 0xffff, 0xffff, 0xffff]],
  ['int_64', [0, 3], 281483566841860, {}, [1, 2, 3, 4]],
  ['int_64', [0, 3], 281483566841860, { word: 'little' }, [4, 3, 2, 1]],
  ['int_64', [0, 3], 281483566841860, { byte: 'little' }, [0x0100, 0x0200, 0x0300, 0x0400]],
  ['int_64', [0, 3], -(2 ** 63), {}, [0x8000, 0, 0, 0]],
  ['uint_64', [0, 3], 2 ** 53 - 1, {}, [0x001f, 0xffff, 0xffff, 0xffff]],
  ['uint_64', [0, 3], 2 ** 53 - 1, { word: 'little', byte: 'little' }, [0xffff, 0xffff, 0xffff, 0x1f00]],
  ['str', [0, 1], 'ABC', {}, [0x4142, 0x4300]],
  ['str', [0, 1], 'ABC', { byte: 'little' }, [0x4241, 0x0043]],
  ['str', [0, 2], 'ABCDEF', {}, [0x4142, 0x4344, 0x4546]],
  ['str', [5, 5], '', {}, [0x0000]],
  ['bool', 0, true, {}, [0x0001]],
  ['bool', 0, false, {}, [0x0000]],
  ['bool', 0, 1, {}, [0x0001]],
]

describe('encoding: known vectors', () => {
  for (const [type, address, value, orders, words] of VECTORS) {
    const label = `${type} ${JSON.stringify(value)} ${JSON.stringify(orders)} -> ${words.map((w) => '0x' + w.toString(16)).join(' ')}`
    it(label, () => {
      const spec = encodingSpec(entry(type, address, orders))
      assert.deepEqual(encodeWords(value, spec), words)
      const back = decodeWords(words, spec)
      const expected = type === 'bool' ? Boolean(value) : value
      if (typeof expected === 'number' && !Number.isInteger(expected)) assert.ok(Math.abs((back as number) - expected) < 1e-6, `${back} != ${expected}`)
      else assert.equal(back, expected)
    })
  }

  it('accepts a bigint for 64-bit types', () => {
    const spec = encodingSpec(entry('uint_64', [0, 3]))
    assert.deepEqual(encodeWords(2n ** 64n - 1n, spec), [0xffff, 0xffff, 0xffff, 0xffff])
    assert.deepEqual(encodeWords(-(2n ** 63n), encodingSpec(entry('int_64', [0, 3]))), [0x8000, 0, 0, 0])
  })

  it('decodes scaled integers without binary noise (215 * 0.1 is 21.5, not 21.500000000000004)', () => {
    assert.equal(decodeWords([215], encodingSpec(entry('uint_16', 0, { scale: 0.1 }))), 21.5)
    assert.equal(decodeWords([0xff85], encodingSpec(entry('int_16', 0, { scale: 0.01 }))), -1.23)
  })

  it('cuts a string at the first NUL and reads latin-1', () => {
    const spec = encodingSpec(entry('str', [0, 2]))
    assert.equal(decodeWords([0x4100, 0x4243, 0x0000], spec), 'A')
    assert.deepEqual(encodeWords('é', spec), [0xe900, 0, 0])
    assert.equal(decodeWords([0xe900, 0, 0], spec), 'é')
  })

  it('a bool register other than 0 or 1 decodes as undefined (not a bool)', () => {
    assert.equal(decodeWords([2], encodingSpec(entry('bool', 0))), undefined)
  })

  it('rounds integer raw values to the nearest step', () => {
    assert.deepEqual(encodeWords(21.54, encodingSpec(entry('uint_16', 0, { scale: 0.1 }))), [215])
    assert.deepEqual(encodeWords(2.5, encodingSpec(entry('int_16', 0))), [3])
  })

  it('round-trips random values for every type and order', () => {
    let seed = 12345
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      return seed / 0x7fffffff
    }
    const ranges: Partial<Record<ModbusType, [number, number]>> = {
      int_16: [-32768, 32767],
      uint_16: [0, 65535],
      int_32: [-(2 ** 31), 2 ** 31 - 1],
      uint_32: [0, 2 ** 32 - 1],
      int_64: [-(2 ** 53) + 1, 2 ** 53 - 1],
      uint_64: [0, 2 ** 53 - 1],
    }
    const orders: ModbusOrder[] = ['big', 'little']
    for (const type of ['int_16', 'uint_16', 'int_32', 'uint_32', 'int_64', 'uint_64', 'float', 'float_64', 'str'] as ModbusType[]) {
      for (const byte of orders) {
        for (const word of orders) {
          const width = { int_16: 1, uint_16: 1, int_32: 2, uint_32: 2, float: 2, float_64: 4, int_64: 4, uint_64: 4, str: 3, bool: 1 }[type]
          const spec = encodingSpec(entry(type, width === 1 ? 0 : [0, width - 1], { byte, word }))
          for (let i = 0; i < 50; i++) {
            let value: number | string
            if (type === 'str') value = Array.from({ length: Math.floor(random() * 7) }, () => String.fromCharCode(32 + Math.floor(random() * 95))).join('')
            else if (type === 'float') value = Math.fround((random() - 0.5) * 1e6)
            else if (type === 'float_64') value = (random() - 0.5) * 1e12
            else {
              const [low, high] = ranges[type]!
              value = Math.floor(low + random() * (high - low))
            }
            assert.equal(decodeWords(encodeWords(value, spec), spec), value, `${type} ${byte}/${word} ${value}`)
          }
        }
      }
    }
  })
})

describe('checkValue', () => {
  const cases: Array<[ModbusType, number | [number, number], unknown, number | undefined, RegExp | null]> = [
    ['uint_16', 0, 65535, undefined, null],
    ['uint_16', 0, 70000, undefined, /out of range for uint_16 \(0\.\.65535\)/],
    ['uint_16', 0, -1, undefined, /out of range/],
    ['int_16', 0, 32767, undefined, null],
    ['int_16', 0, -32768, undefined, null],
    ['int_16', 0, 32768, undefined, /out of range for int_16/],
    ['uint_16', 0, 6553.5, 0.1, null],
    ['uint_16', 0, 6553.6, 0.1, /after scale 0\.1/],
    ['int_32', [0, 1], 2 ** 31, undefined, /out of range/],
    ['uint_32', [0, 1], 2 ** 32 - 1, undefined, null],
    ['int_64', [0, 3], 2 ** 63, undefined, /out of range for int_64/],
    ['uint_64', [0, 3], -1, undefined, /out of range/],
    ['uint_64', [0, 3], 2 ** 64, undefined, /out of range/],
    ['int_16', 0, Number.NaN, undefined, /NaN/],
    ['int_16', 0, Number.POSITIVE_INFINITY, undefined, /out of range/],
    ['int_16', 0, '5', undefined, /takes a number, got the string "5"/],
    ['float', [0, 1], null, undefined, /takes a number, got null/],
    ['float', [0, 1], 1e39, undefined, /out of range for float/],
    ['float', [0, 1], 3e38, undefined, null],
    ['float_64', [0, 3], 1e39, undefined, null],
    ['float', [0, 1], Number.NaN, undefined, null],
    ['bool', 0, true, undefined, null],
    ['bool', 0, 0, undefined, null],
    ['bool', 0, 2, undefined, /true or false/],
    ['bool', 0, 'true', undefined, /true or false/],
    ['str', [0, 1], 'ABCD', undefined, null],
    ['str', [0, 1], 'ABCDE', undefined, /5 characters, more than the 4/],
    ['str', [0, 1], '€', undefined, /latin-1/],
    ['str', [0, 1], 42, undefined, /takes a string/],
  ]
  for (const [type, address, value, scale, expected] of cases) {
    it(`${type}${scale ? ` scale ${scale}` : ''} ${String(value)} -> ${expected ?? 'ok'}`, () => {
      const problem = checkValue(value, entry(type, address, { scale }))
      if (expected === null) assert.equal(problem, null)
      else assert.match(problem ?? '', expected)
    })
  }

  it('encodeWords refuses what checkValue refuses, with a ValidationError', () => {
    assert.throws(() => encodeWords(70000, encodingSpec(entry('uint_16', 0))), ValidationError)
  })
})
