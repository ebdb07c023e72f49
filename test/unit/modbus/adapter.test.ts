import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ConflictError } from '../../../src/errors.js'
import { ModbusHub, encodeRequest, ModbusSlaveAdapter, checkMappedValue, parseModbusSlave } from '../../../src/protocols/modbus/index.js'
import { MapAccessor, TestClient, exceptionOf, registersOf, silentLogger, startRig, wordsToBuffer } from './helpers.js'
import type { Rig } from './helpers.js'
import type { ModbusRequest } from '../../../src/protocols/modbus/index.js'

const MAPPING = {
  temperature: { address: [0, 1], group: 'h_r', type: 'float' },
  setpoint: { address: [2, 3], group: 'h_r', type: 'float', word_order: 'little' },
  counter: { address: [4, 5], group: 'h_r', type: 'int_32' },
  level: { address: 6, group: 'h_r', type: 'int_16', scale: 0.1 },
  label: { address: [20, 23], group: 'h_r', type: 'str' },
  total: { address: [30, 33], group: 'h_r', type: 'uint_64' },
  readonly_reg: { address: 40, group: 'h_r', type: 'uint_16' },
  slow_reg: { address: 41, group: 'h_r', type: 'uint_16' },
  failing_reg: { address: 42, group: 'h_r', type: 'uint_16' },
  flag: { address: 43, group: 'h_r', type: 'bool' },
  status: { address: 10, group: 'i_r', type: 'uint_16', scale: 0.1 },
  energy: { address: [11, 14], group: 'i_r', type: 'float_64', byte_order: 'little' },
  alarm: { address: 0, group: 'c_o', type: 'bool' },
  pump: { address: 1, group: 'c_o', type: 'bool' },
  fan: { address: 2, group: 'c_o', type: 'bool' },
  door: { address: 5, group: 'd_i', type: 'bool' },
  window: { address: 6, group: 'd_i', type: 'bool' },
}

const INITIAL = {
  temperature: 25.0,
  setpoint: 25.0,
  counter: -2,
  level: 21.5,
  label: 'PT100',
  total: 2 ** 40,
  readonly_reg: 7,
  slow_reg: 0,
  failing_reg: 0,
  flag: false,
  status: 6553.5,
  energy: 1.0,
  alarm: true,
  pump: false,
  fan: true,
  door: false,
  window: true,
}

describe('ModbusSlaveAdapter over TCP', () => {
  let rig: Rig
  let client: TestClient

  before(async () => {
    rig = await startRig({ mapping: MAPPING }, INITIAL)
    rig.accessor.readOnly.add('readonly_reg')
    rig.accessor.failing.add('failing_reg')
    rig.accessor.slow.set('slow_reg', 30)
    client = await TestClient.connect(rig.port)
  })
  after(async () => {
    client.close()
    await rig.close()
  })

  it('FC3 reads registers carrying the current values in each encoding', async () => {
    assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 7 })), [
      0x41c8,
      0x0000, // temperature 25.0
      0x0000,
      0x41c8, // setpoint 25.0, low word first
      0xffff,
      0xfffe, // counter -2
      215, // level 21.5 at scale 0.1
    ])
    assert.deepEqual(registersOf(await client.request({ fc: 3, address: 20, quantity: 4 })), [0x5054, 0x3130, 0x3000, 0])
    assert.deepEqual(registersOf(await client.request({ fc: 3, address: 30, quantity: 4 })), [0, 0x0100, 0, 0])
  })

  it('FC3 reads part of a multi-register attribute', async () => {
    assert.deepEqual(registersOf(await client.request({ fc: 3, address: 1, quantity: 2 })), [0x0000, 0x0000])
    assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 1 })), [0x41c8])
  })

  it('registers follow the attribute value, also back to an earlier one, after one that cannot be encoded, and from 0 to -0', async () => {
    const read = async (): Promise<number[]> => registersOf(await client.request({ fc: 3, address: 0, quantity: 2 }))
    assert.deepEqual(await read(), [0x41c8, 0])
    rig.accessor.values.set('temperature', 1.5)
    assert.deepEqual(await read(), [0x3fc0, 0])
    rig.accessor.values.set('temperature', 'warm')
    assert.equal(exceptionOf(await client.request({ fc: 3, address: 0, quantity: 2 })), 4)
    rig.accessor.values.set('temperature', 1.5)
    assert.deepEqual(await read(), [0x3fc0, 0])
    rig.accessor.values.set('temperature', 0)
    assert.deepEqual(await read(), [0, 0])
    rig.accessor.values.set('temperature', -0)
    assert.deepEqual(await read(), [0x8000, 0], '-0 has its own encoding')
    rig.accessor.values.set('temperature', 25.0)
    assert.deepEqual(await read(), [0x41c8, 0])
  })

  it('FC4 reads input registers (scale, little-endian bytes)', async () => {
    assert.deepEqual(registersOf(await client.request({ fc: 4, address: 10, quantity: 5 })), [0xffff, 0xf03f, 0, 0, 0])
  })

  it('FC1 and FC2 read coils and discrete inputs', async () => {
    const coils = await client.request({ fc: 1, address: 0, quantity: 3 })
    assert.ok('bits' in coils)
    assert.deepEqual(coils.bits.slice(0, 3), [true, false, true])
    assert.ok(coils.bits.slice(3).every((b) => !b))
    const inputs = await client.request({ fc: 2, address: 5, quantity: 2 })
    assert.ok('bits' in inputs)
    assert.deepEqual(inputs.bits.slice(0, 2), [false, true])
  })

  it('reading an unmapped address answers 02; a bad count answers 03; an unknown function answers 01', async () => {
    assert.equal(exceptionOf(await client.request({ fc: 3, address: 6, quantity: 2 })), 2) // 7 is a gap
    assert.equal(exceptionOf(await client.request({ fc: 3, address: 100, quantity: 1 })), 2)
    assert.equal(exceptionOf(await client.request({ fc: 4, address: 0, quantity: 1 })), 2) // h_r is not i_r
    assert.equal(exceptionOf(await client.request({ fc: 1, address: 2, quantity: 2 })), 2)
    assert.equal(exceptionOf(await client.request({ fc: 2, address: 0, quantity: 1 })), 2)
    assert.equal(exceptionOf(await client.request({ fc: 3, address: 0, quantity: 126 })), 3)
    assert.equal(exceptionOf(await client.request({ fc: 3, address: 0, quantity: 0 })), 3)
    assert.equal(exceptionOf(await client.request({ pdu: Buffer.from([0x2b, 0x0e, 0x01, 0x00]) })), 1)
    assert.equal(exceptionOf(await client.request({ pdu: Buffer.from([0x08, 0, 0, 0, 0]) })), 1)
  })

  it('FC6 writes a single register through the accessor (scale applied)', async () => {
    const response = await client.request({ fc: 6, address: 6, value: 0xff85 })
    assert.deepEqual(response, { transactionId: response.transactionId, unitId: 1, fc: 6, address: 6, word: 0xff85 })
    assert.equal(rig.accessor.values.get('level'), -12.3)
  })

  it('FC16 writes a float and a word-swapped float', async () => {
    const response = await client.request({ fc: 16, address: 0, quantity: 4, data: wordsToBuffer([0xc020, 0, 0, 0x3fc0]) })
    assert.ok('word' in response && response.word === 4)
    assert.equal(rig.accessor.values.get('temperature'), -2.5)
    assert.equal(rig.accessor.values.get('setpoint'), 1.5)
  })

  it('FC16 writes a string and a 64-bit integer', async () => {
    await client.request({ fc: 16, address: 20, quantity: 4, data: wordsToBuffer([0x4869, 0, 0, 0]) })
    assert.equal(rig.accessor.values.get('label'), 'Hi')
    await client.request({ fc: 16, address: 30, quantity: 4, data: wordsToBuffer([0, 0, 1, 2]) })
    assert.equal(rig.accessor.values.get('total'), 65538)
  })

  it('a write covering part of a multi-register attribute merges with the current value', async () => {
    rig.accessor.values.set('counter', 0x12345678)
    await client.request({ fc: 6, address: 5, value: 0xabcd })
    assert.equal(rig.accessor.values.get('counter'), 0x1234abcd)
    await client.request({ fc: 16, address: 5, quantity: 2, data: wordsToBuffer([0x0001, 0xffff]) })
    assert.equal(rig.accessor.values.get('counter'), 0x12340001)
    assert.equal(rig.accessor.values.get('level'), -0.1)
  })

  it('a bool register accepts 0 or 1 only (03 otherwise)', async () => {
    await client.request({ fc: 6, address: 43, value: 1 })
    assert.equal(rig.accessor.values.get('flag'), true)
    assert.equal(exceptionOf(await client.request({ fc: 6, address: 43, value: 2 })), 3)
    assert.equal(rig.accessor.values.get('flag'), true)
  })

  it('FC5 and FC15 write coils', async () => {
    const echo = await client.request({ fc: 5, address: 1, value: true })
    assert.ok('word' in echo && echo.word === 0xff00)
    assert.equal(rig.accessor.values.get('pump'), true)
    const multi = await client.request({ fc: 15, address: 0, quantity: 3, values: [false, false, false] })
    assert.ok('word' in multi && multi.word === 3)
    assert.deepEqual(
      ['alarm', 'pump', 'fan'].map((a) => rig.accessor.values.get(a)),
      [false, false, false],
    )
  })

  it('FC23 writes then reads in one request', async () => {
    const response = await client.request({ fc: 23, readAddress: 0, readQuantity: 2, writeAddress: 0, writeQuantity: 2, data: wordsToBuffer([0x41c8, 0]) })
    assert.deepEqual(registersOf(response), [0x41c8, 0])
    assert.equal(rig.accessor.values.get('temperature'), 25)
    assert.equal(
      exceptionOf(await client.request({ fc: 23, readAddress: 7, readQuantity: 1, writeAddress: 0, writeQuantity: 2, data: wordsToBuffer([0, 0]) })),
      2,
    )
  })

  it('writes to unmapped, read-only or input addresses are refused with 02 and change nothing', async () => {
    const before = rig.accessor.writes.length
    assert.equal(exceptionOf(await client.request({ fc: 6, address: 40, value: 1 })), 2)
    assert.equal(rig.accessor.values.get('readonly_reg'), 7)
    // Spans a writable attribute and the read-only one: nothing may change.
    assert.equal(exceptionOf(await client.request({ fc: 16, address: 39, quantity: 2, data: wordsToBuffer([1, 1]) })), 2)
    assert.equal(exceptionOf(await client.request({ fc: 16, address: 6, quantity: 2, data: wordsToBuffer([1, 1]) })), 2)
    assert.equal(exceptionOf(await client.request({ fc: 6, address: 10, value: 1 })), 2) // status is an input register
    assert.equal(exceptionOf(await client.request({ fc: 5, address: 5, value: true })), 2) // door is a discrete input
    assert.equal(exceptionOf(await client.request({ fc: 15, address: 2, quantity: 2, values: [true, true] })), 2)
    assert.equal(rig.accessor.writes.length, before)
  })

  it('an accessor that throws answers 04', async () => {
    assert.equal(exceptionOf(await client.request({ fc: 6, address: 42, value: 1 })), 4)
  })

  it('a value the attribute does not take answers 03 (illegal data value), and nothing of the request is written', async () => {
    rig.accessor.finite.add('setpoint')
    const before = rig.accessor.writes.length
    // temperature 1.0 (big-endian words) and setpoint NaN (low word first): one request, both refused.
    const data = wordsToBuffer([0x3f80, 0x0000, 0x0000, 0x7fc0])
    assert.equal(exceptionOf(await client.request({ fc: 16, address: 0, quantity: 4, data })), 3)
    assert.equal(rig.accessor.writes.length, before)
    assert.equal(rig.accessor.values.get('temperature'), 25.0)
    rig.accessor.finite.delete('setpoint')
  })

  it('a value that cannot be encoded answers 04 on read', async () => {
    rig.accessor.values.set('readonly_reg', 70000)
    assert.equal(exceptionOf(await client.request({ fc: 3, address: 40, quantity: 1 })), 4)
    rig.accessor.values.set('alarm', 'yes')
    assert.equal(exceptionOf(await client.request({ fc: 1, address: 0, quantity: 1 })), 4)
    rig.accessor.values.set('readonly_reg', 7)
    rig.accessor.values.set('alarm', false)
  })

  it('an async write completes before the next pipelined request runs, answers stay in order', async () => {
    const first = client.request({ fc: 6, address: 41, value: 99 })
    const second = client.request({ fc: 3, address: 41, quantity: 1 })
    const [write, read] = await Promise.all([first, second])
    assert.ok('word' in write && write.word === 99)
    assert.deepEqual(registersOf(read), [99])
    assert.equal(client.unmatched.length, 0)
  })

  it('one packet mixing reads, slow writes, exceptions and an unknown unit is answered in request order', async () => {
    const requests: Array<{ request: ModbusRequest | { pdu: Buffer }; unitId?: number }> = [
      { request: { fc: 3, address: 0, quantity: 2 } },
      { request: { fc: 6, address: 41, value: 5 } }, // slow: answered later
      { request: { fc: 3, address: 41, quantity: 1 } },
      { request: { fc: 3, address: 100, quantity: 1 } }, // unmapped: 02
      { request: { fc: 3, address: 0, quantity: 2 }, unitId: 9 }, // no such unit: 0B
      { request: { fc: 6, address: 41, value: 6 } },
      { request: { pdu: Buffer.from([0x2b, 0x0e, 0x01, 0x00]) } }, // unknown function: 01
      { request: { fc: 1, address: 0, quantity: 3 } },
    ]
    const ids = requests.map((_, i) => 500 + i)
    const answers = ids.map((id) => client.expect(id))
    const first = client.arrivals.length
    client.send(Buffer.concat(requests.map((r, i) => encodeRequest({ transactionId: ids[i]!, unitId: r.unitId ?? 1, request: r.request }))))
    const responses = await Promise.all(answers)
    assert.deepEqual(client.arrivals.slice(first), ids, 'answers arrive in request order')
    assert.deepEqual(registersOf(responses[0]!), [0x41c8, 0])
    assert.ok('word' in responses[1]! && responses[1].word === 5)
    assert.deepEqual(registersOf(responses[2]!), [5])
    assert.equal(exceptionOf(responses[3]!), 2)
    assert.equal(exceptionOf(responses[4]!), 0x0b)
    assert.ok('word' in responses[5]! && responses[5].word === 6)
    assert.equal(exceptionOf(responses[6]!), 1)
    const bits = responses[7]!
    assert.ok('bits' in bits)
    assert.deepEqual(
      bits.bits.slice(0, 3),
      ['alarm', 'pump', 'fan'].map((a) => rig.accessor.values.get(a) === true),
    )
    assert.equal(rig.accessor.values.get('slow_reg'), 6)
  })

  it('counts requests and exception answers', () => {
    const { counters } = rig.adapter.info()
    assert.ok(counters.requests >= 30, `requests ${counters.requests}`)
    assert.ok(counters.errors >= 15 && counters.errors < counters.requests, `errors ${counters.errors}`)
  })
})

describe('ModbusSlaveAdapter lifecycle', () => {
  it('start and stop are idempotent; info shows host, effective port, state and mapping', async () => {
    const hub = new ModbusHub({ logger: silentLogger })
    const definition = parseModbusSlave({ port: 0, unit_id: 3, response_delay: 0.01, mapping: { v: { address: 0, group: 'h_r', type: 'uint_16' } } })
    const adapter = new ModbusSlaveAdapter({ hub, definition, accessor: new MapAccessor({ v: 1 }), logger: silentLogger })
    try {
      assert.equal(adapter.state, 'STOPPED')
      assert.equal(adapter.info().port, 0)
      await Promise.all([adapter.start(), adapter.start()])
      await adapter.start()
      assert.equal(hub.listeners().length, 1)
      const info = adapter.info()
      assert.equal(info.state, 'RUNNING')
      assert.ok(info.port! > 0)
      assert.equal(info.host, '127.0.0.1')
      assert.equal(info.unit_id, 3)
      assert.equal(info.response_delay, 0.01)
      assert.deepEqual(info.mapping, { v: { address: 0, group: 'h_r', type: 'uint_16', byte_order: 'big', word_order: 'big' } })
      assert.deepEqual(info.counters, {
        requests: 0,
        errors: 0,
        idle_timeouts: 0,
        frame_timeouts: 0,
        evictions: 0,
        refusals: 0,
        fault_delays: 0,
        fault_exceptions: 0,
        fault_no_responses: 0,
        fault_corruptions: 0,
        fault_splits: 0,
        fault_swaps: 0,
        fault_disconnects: 0,
        fault_clears: 0,
      })
      assert.deepEqual(info.faults, {})
      assert.deepEqual([info.idle_timeout, info.frame_timeout, info.max_connections], [300, 10, 256])
      await adapter.stop()
      await adapter.stop()
      assert.equal(adapter.state, 'STOPPED')
      assert.equal(hub.listeners().length, 0)
      assert.throws(() => adapter.detach(), ConflictError)
      assert.throws(() => adapter.attach(), ConflictError)
    } finally {
      await hub.close()
    }
  })

  it('info().port is null when no port is configured and the adapter is stopped', () => {
    const adapter = new ModbusSlaveAdapter({
      hub: new ModbusHub(),
      definition: parseModbusSlave({ mapping: {} }),
      accessor: new MapAccessor(),
      logger: silentLogger,
    })
    assert.equal(adapter.info().port, null)
  })

  it('response_delay holds every answer back', async () => {
    const rig = await startRig({ response_delay: 0.5, mapping: { v: { address: 0, group: 'h_r', type: 'uint_16' } } }, { v: 5 })
    const client = await TestClient.connect(rig.port)
    try {
      const started = Date.now()
      const answers = await Promise.all([0, 1, 2].map(() => client.request({ fc: 3, address: 0, quantity: 1 })))
      const elapsed = Date.now() - started
      assert.ok(elapsed >= 490, `answered after ${elapsed} ms`)
      // Delayed, not serialised: three pipelined requests take one delay, not three (1.5 s). The
      // delay is long enough that a loaded machine's slack does not reach the serialised time.
      assert.ok(elapsed < 1400, `answered after ${elapsed} ms`)
      assert.deepEqual(answers.map(registersOf), [[5], [5], [5]])
      assert.deepEqual(
        answers.map((a) => a.transactionId),
        [1, 2, 3],
      )
    } finally {
      client.close()
      await rig.close()
    }
  })

  it('checkMappedValue says why a value cannot be published, and ignores unmapped attributes', () => {
    const definition = parseModbusSlave({ mapping: { status: { address: 0, group: 'i_r', type: 'uint_16', scale: 0.1 } } })
    assert.match(checkMappedValue(definition, 'status', 7000)!, /out of range for uint_16/)
    assert.equal(checkMappedValue(definition, 'status', 12.5), null)
    assert.equal(checkMappedValue(definition, 'other', 'anything'), null)
    assert.equal(checkMappedValue(definition, 'toString', 1), null)
  })
})

describe('ModbusSlaveAdapter: bits mapped as uint_16 (the reference product library spelling)', () => {
  let rig: Rig
  let client: TestClient
  before(async () => {
    rig = await startRig(
      {
        poll_interval: 0.25,
        mapping: {
          do_1: { address: [4, 4], group: 'c_o', type: 'uint_16' },
          do_2: { address: [5, 5], group: 'c_o', type: 'uint_16' },
          do_3: { address: [6, 6], group: 'c_o', type: 'uint_16' },
          di_1: { address: 0, group: 'd_i', type: 'uint_16' },
        },
      },
      { do_1: 0, do_2: 1.0, do_3: 7, di_1: 0 },
    )
    client = await TestClient.connect(rig.port)
  })
  after(async () => {
    client.close()
    await rig.close()
  })

  it('reads a coil as on when the number is not 0', async () => {
    const coils = await client.request({ fc: 1, address: 4, quantity: 3 })
    assert.ok('bits' in coils)
    assert.deepEqual(coils.bits.slice(0, 3), [false, true, true])
    const inputs = await client.request({ fc: 2, address: 0, quantity: 1 })
    assert.ok('bits' in inputs)
    assert.equal(inputs.bits[0], false)
  })

  it('a client writing the coil sets the attribute to the number 1 or 0', async () => {
    await client.request({ fc: 5, address: 4, value: true })
    assert.equal(rig.accessor.values.get('do_1'), 1)
    await client.request({ fc: 15, address: 4, quantity: 3, values: [false, false, true] })
    assert.deepEqual(
      ['do_1', 'do_2', 'do_3'].map((a) => rig.accessor.values.get(a)),
      [0, 0, 1],
    )
  })

  it('a value uint_16 cannot carry answers 04 on read; checkMappedValue refuses it', async () => {
    rig.accessor.values.set('do_2', -1)
    assert.equal(exceptionOf(await client.request({ fc: 1, address: 5, quantity: 1 })), 4)
    rig.accessor.values.set('do_2', 0)
    const definition = parseModbusSlave({ mapping: { do_1: { address: 0, group: 'c_o', type: 'uint_16' } } })
    assert.match(checkMappedValue(definition, 'do_1', 70000)!, /out of range for uint_16/)
    assert.equal(checkMappedValue(definition, 'do_1', 1), null)
  })
})
