// src/protocols/modbus/trace.ts: a Modbus exchange answered at once is kept in the ring's slots as
// words (no object) and read back as the same entry, field for field and in the same key order, as
// the object the decoder makes for an answer that waits: every function code, refusals, exceptions,
// no answer, wrap-around among publications and exchange objects, resize, clear, protocol.write
// events and the latency given to /metrics.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { describeRequest, finish, recordExchange } from '../../../src/protocols/modbus/trace.js'
import { AdapterTrace, TrafficJournal, type TraceEntry } from '../../../src/protocols/trace.js'

const UNIT = 7
const LATENCY = 0.000123

function makeTrace(size?: number) {
  const journal = new TrafficJournal()
  const latencies: Array<[string, number]> = []
  journal.onLatency = (labels, seconds) => latencies.push([labels.adapter, seconds])
  const trace = new AdapterTrace({ instance: 'meter', adapter: 'modbus_slave', kind: 'modbus_slave', journal, ...(size === undefined ? {} : { size }) })
  return { journal, trace, latencies }
}

const tail = (trace: AdapterTrace, kwargs: Record<string, unknown> = {}): TraceEntry[] => trace.tail({ args: [], kwargs: { limit: 10_000, ...kwargs } })

/** The entry without its time (ISO 8601 text, checked) and its key order as a list. */
function shape(entry: TraceEntry): { keys: string[]; fields: Record<string, unknown> } {
  const { time, ...fields } = entry
  assert.match(time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  return { keys: Object.keys(entry), fields }
}

const pdu = (...bytes: number[]) => Buffer.from(bytes)
const hi = (n: number) => (n >> 8) & 0xff
const lo = (n: number) => n & 0xff

/** An answer ADU at offset `at` of a connection's out buffer: MBAP header, then `body` (function code first). */
function answer(body: number[], at = 3): { adu: Buffer; at: number } {
  const adu = Buffer.alloc(300, 0xee)
  Buffer.from(body).copy(adu, at + 7)
  return { adu, at }
}
const exception = (fc: number, code: number) => answer([fc | 0x80, code])
const readWords = (fc: number, words: number[]) => answer([fc, words.length * 2, ...words.flatMap((w) => [hi(w), lo(w)])])
const readBits = (fc: number, bits: boolean[]) => {
  const bytes = new Array<number>(Math.ceil(bits.length / 8)).fill(0)
  bits.forEach((b, i) => (bytes[i >> 3]! |= b ? 1 << (i & 7) : 0))
  return answer([fc, bytes.length, ...bytes])
}

/** The request PDU placed at offset 5 of a larger frame, as a connection's buffer holds it. */
function framed(body: Buffer): { frame: Buffer; offset: number } {
  const frame = Buffer.alloc(body.length + 20, 0xdd)
  body.copy(frame, 5)
  return { frame, offset: 5 }
}

type Answer = { adu: Buffer; at: number } | null

/** Records the exchange both ways (slots, and the object an answer that waits gets) and returns both entries. */
function bothWays(request: Buffer, reply: Answer): { slot: TraceEntry; object: TraceEntry } {
  const { frame, offset } = framed(request)
  const a = makeTrace()
  recordExchange(a.trace, UNIT, frame, offset, request.length, reply?.adu ?? null, reply?.at ?? 0, LATENCY)
  const b = makeTrace()
  finish(b.trace, describeRequest(UNIT, frame, offset, request.length), reply?.adu ?? null, reply?.at ?? 0, LATENCY)
  assert.deepEqual(a.latencies, [['modbus_slave', LATENCY]])
  return { slot: tail(a.trace)[0]!, object: tail(b.trace)[0]! }
}

/** The slot's entry equals the object's, field for field and in key order, and equals `expected` (seq and time aside). */
function same(request: Buffer, reply: Answer, expected: Record<string, unknown>): void {
  const { slot, object } = bothWays(request, reply)
  const [s, o] = [shape(slot), shape(object)]
  assert.deepStrictEqual(s.fields, o.fields)
  assert.deepStrictEqual(s.keys, o.keys)
  assert.deepStrictEqual(JSON.stringify(slot), JSON.stringify({ ...object, time: slot.time }))
  assert.deepStrictEqual(s.fields, { seq: 1, ...expected })
}

const base = { direction: 'in', unit: UNIT }

describe('Modbus exchanges kept in the ring as words', () => {
  it('FC 1 and 2: bits read, answered, refused by an exception, and without an answer', () => {
    const bits = [true, false, true, true, false, false, false, true, true, false, true]
    same(pdu(1, 0, 10, 0, 11), readBits(1, bits), {
      operation: 'read',
      ...base,
      function: 1,
      table: 'coils',
      address: 10,
      count: 11,
      values: bits,
      latency: LATENCY,
    })
    same(pdu(2, 0xff, 0xfe, 0, 2), readBits(2, [false, true]), {
      operation: 'read',
      ...base,
      function: 2,
      table: 'discrete_inputs',
      address: 0xfffe,
      count: 2,
      values: [false, true],
      latency: LATENCY,
    })
    same(pdu(2, 0, 0, 0, 3), exception(2, 2), {
      operation: 'read',
      ...base,
      function: 2,
      table: 'discrete_inputs',
      address: 0,
      count: 3,
      values: undefined,
      latency: LATENCY,
      exception: 2,
      error: 'ILLEGAL_DATA_ADDRESS',
    })
    same(pdu(1, 0, 0, 0, 1), null, {
      operation: 'read',
      ...base,
      function: 1,
      table: 'coils',
      address: 0,
      count: 1,
      values: undefined,
      latency: LATENCY,
      error: 'NO_ANSWER',
    })
  })

  it('FC 3 and 4: register words read, an exception of any code', () => {
    same(pdu(3, 0, 100, 0, 3), readWords(3, [0, 0xffff, 16800]), {
      operation: 'read',
      ...base,
      function: 3,
      table: 'holding_registers',
      address: 100,
      count: 3,
      values: [0, 0xffff, 16800],
      latency: LATENCY,
    })
    const words = Array.from({ length: 125 }, (_, i) => (i * 523) & 0xffff)
    same(pdu(4, 0, 1, 0, 125), readWords(4, words), {
      operation: 'read',
      ...base,
      function: 4,
      table: 'input_registers',
      address: 1,
      count: 125,
      values: words,
      latency: LATENCY,
    })
    for (const [code, error] of [
      [4, 'SERVER_DEVICE_FAILURE'],
      [11, 'GATEWAY_TARGET_FAILED'],
      [0, 'EXCEPTION_0'],
      [0x42, 'EXCEPTION_66'],
    ] as const) {
      same(pdu(4, 0, 1, 0, 2), exception(4, code), {
        operation: 'read',
        ...base,
        function: 4,
        table: 'input_registers',
        address: 1,
        count: 2,
        values: undefined,
        latency: LATENCY,
        exception: code,
        error,
      })
    }
  })

  it('FC 5 and 6: one coil or register written', () => {
    same(pdu(5, 0, 9, 0xff, 0), answer([5, 0, 9, 0xff, 0]), {
      operation: 'write',
      ...base,
      function: 5,
      table: 'coils',
      address: 9,
      count: 1,
      values: [true],
      latency: LATENCY,
    })
    same(pdu(5, 0, 9, 0, 0), null, {
      operation: 'write',
      ...base,
      function: 5,
      table: 'coils',
      address: 9,
      count: 1,
      values: [false],
      latency: LATENCY,
      error: 'NO_ANSWER',
    })
    same(pdu(6, 1, 2, 0xab, 0xcd), answer([6, 1, 2, 0xab, 0xcd]), {
      operation: 'write',
      ...base,
      function: 6,
      table: 'holding_registers',
      address: 0x102,
      count: 1,
      values: [0xabcd],
      latency: LATENCY,
    })
    same(pdu(6, 0, 2, 0, 1), exception(6, 3), {
      operation: 'write',
      ...base,
      function: 6,
      table: 'holding_registers',
      address: 2,
      count: 1,
      values: [1],
      latency: LATENCY,
      exception: 3,
      error: 'ILLEGAL_DATA_VALUE',
    })
  })

  it('FC 15 and 16: coils and registers written', () => {
    same(pdu(15, 0, 20, 0, 10, 2, 0b1100_1101, 0b01), answer([15, 0, 20, 0, 10]), {
      operation: 'write',
      ...base,
      function: 15,
      table: 'coils',
      address: 20,
      count: 10,
      values: [true, false, true, true, false, false, true, true, true, false],
      latency: LATENCY,
    })
    same(pdu(16, 0, 0, 0, 2, 4, 0x41, 0xa0, 0, 0), answer([16, 0, 0, 0, 2]), {
      operation: 'write',
      ...base,
      function: 16,
      table: 'holding_registers',
      address: 0,
      count: 2,
      values: [16800, 0],
      latency: LATENCY,
    })
    const words = Array.from({ length: 123 }, (_, i) => (i * 997) & 0xffff)
    same(pdu(16, 0, 5, 0, 123, 246, ...words.flatMap((w) => [hi(w), lo(w)])), exception(16, 2), {
      operation: 'write',
      ...base,
      function: 16,
      table: 'holding_registers',
      address: 5,
      count: 123,
      values: words,
      latency: LATENCY,
      exception: 2,
      error: 'ILLEGAL_DATA_ADDRESS',
    })
  })

  it('FC 23: registers written and read in one request', () => {
    const request = pdu(23, 0, 10, 0, 3, 0, 20, 0, 2, 4, 0, 1, 0xff, 0xff)
    same(request, readWords(23, [7, 8, 9]), {
      operation: 'read_write',
      ...base,
      function: 23,
      table: 'holding_registers',
      address: 20,
      count: 2,
      values: [1, 0xffff],
      latency: LATENCY,
      read_address: 10,
      read_count: 3,
      read_values: [7, 8, 9],
    })
    same(request, exception(23, 1), {
      operation: 'read_write',
      ...base,
      function: 23,
      table: 'holding_registers',
      address: 20,
      count: 2,
      values: [1, 0xffff],
      latency: LATENCY,
      read_address: 10,
      read_count: 3,
      exception: 1,
      error: 'ILLEGAL_FUNCTION',
    })
    same(request, null, {
      operation: 'read_write',
      ...base,
      function: 23,
      table: 'holding_registers',
      address: 20,
      count: 2,
      values: [1, 0xffff],
      latency: LATENCY,
      read_address: 10,
      read_count: 3,
      error: 'NO_ANSWER',
    })
  })

  it('refused requests: no table, address, count or values, whatever the answer', () => {
    const refused = (fc: number, rest: Record<string, unknown>) => ({
      operation: 'refused',
      ...base,
      function: fc,
      values: undefined,
      latency: LATENCY,
      ...rest,
    })
    same(pdu(43, 14, 1, 0), exception(43, 1), refused(43, { exception: 1, error: 'ILLEGAL_FUNCTION' }))
    same(pdu(3, 0, 0, 0, 0), exception(3, 3), refused(3, { exception: 3, error: 'ILLEGAL_DATA_VALUE' }))
    same(pdu(3, 0xff, 0xff, 0, 2), exception(3, 2), refused(3, { exception: 2, error: 'ILLEGAL_DATA_ADDRESS' }))
    same(pdu(5, 0, 1, 0x12, 0x34), null, refused(5, { error: 'NO_ANSWER' }))
    same(pdu(6, 0, 1, 0), exception(6, 3), refused(6, { exception: 3, error: 'ILLEGAL_DATA_VALUE' }))
    same(pdu(15, 0, 0, 0, 9, 1, 0xff), exception(15, 3), refused(15, { exception: 3, error: 'ILLEGAL_DATA_VALUE' }))
    same(pdu(16, 0, 0, 0, 1, 2, 0, 1, 9), exception(16, 3), refused(16, { exception: 3, error: 'ILLEGAL_DATA_VALUE' }))
    same(pdu(23, 0, 0, 0, 1, 0, 0, 0, 1, 2, 0), exception(23, 3), refused(23, { exception: 3, error: 'ILLEGAL_DATA_VALUE' }))
    // An answer that is not an exception adds nothing to a refused request.
    same(pdu(0x80, 1), readWords(3, [1]), refused(0x80, {}))
  })

  it('random requests and answers give the same entry both ways', () => {
    // mulberry32: a small seeded generator, so that a failure can be replayed.
    let state = 12345
    const random = (n: number) => {
      state = (state + 0x6d2b79f5) | 0
      let t = Math.imul(state ^ (state >>> 15), 1 | state)
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
      return (((t ^ (t >>> 14)) >>> 0) % n) | 0
    }
    const seen = new Map<string, number>()
    const fcs = [1, 2, 3, 4, 5, 6, 15, 16, 23, 0, 7, 43, 0x83]
    for (let round = 0; round < 3000; round++) {
      const fc = fcs[random(fcs.length)]!
      const quantity = random(4) === 0 ? random(2100) : 1 + random(12)
      const address = random(3) === 0 ? 0xffff - random(20) : random(1000)
      let body: number[]
      if (fc === 15) {
        const bytes = Math.ceil(quantity / 8) + (random(8) === 0 ? 1 : 0)
        body = [fc, hi(address), lo(address), hi(quantity), lo(quantity), bytes, ...Array.from({ length: bytes }, () => random(256))]
      } else if (fc === 16) {
        const bytes = quantity * 2 + (random(8) === 0 ? 1 : 0)
        body = [fc, hi(address), lo(address), hi(quantity), lo(quantity), bytes & 0xff, ...Array.from({ length: bytes }, () => random(256))]
      } else if (fc === 23) {
        const readCount = 1 + random(130)
        const bytes = quantity * 2
        body = [fc, hi(address), lo(address), hi(readCount), lo(readCount), 0, random(2), hi(quantity), lo(quantity), bytes & 0xff]
        body.push(...Array.from({ length: bytes }, () => random(256)))
      } else if (fc === 5) {
        body = [
          fc,
          hi(address),
          lo(address),
          ...[
            [0xff, 0],
            [0, 0],
            [1, 2],
          ][random(3)]!,
        ]
      } else {
        body = [fc, hi(address), lo(address), hi(quantity), lo(quantity)]
      }
      if (random(10) === 0) body = body.slice(0, random(body.length) + 1)
      const kind = random(3)
      const reply: Answer =
        kind === 0 ? null : kind === 1 ? exception(fc, random(256)) : answer([fc, 250, ...Array.from({ length: 250 }, () => random(256))], random(4))
      const { slot, object } = bothWays(Buffer.from(body), reply)
      assert.deepStrictEqual(shape(slot), shape(object), `request ${Buffer.from(body).toString('hex')}`)
      const outcome = slot.error === undefined ? 'answered' : slot.error === 'NO_ANSWER' ? 'none' : 'exception'
      const key = `${String(slot.operation)} ${String(slot.function)} ${outcome}`
      seen.set(key, (seen.get(key) ?? 0) + 1)
    }
    // Every function code was read, written or refused, with each kind of answer.
    for (const fc of [1, 2, 3, 4, 5, 6, 15, 16, 23]) {
      const operation = fc <= 4 ? 'read' : fc === 23 ? 'read_write' : 'write'
      for (const outcome of ['answered', 'none', 'exception']) {
        assert.ok((seen.get(`${operation} ${fc} ${outcome}`) ?? 0) >= 5, `${operation} ${fc} ${outcome}: ${seen.get(`${operation} ${fc} ${outcome}`)}`)
        assert.ok((seen.get(`refused ${fc} ${outcome}`) ?? 0) >= 3, `refused ${fc} ${outcome}`)
      }
    }
  })

  it('wraps around among publications and exchange objects, resizes and clears', () => {
    const { trace, journal } = makeTrace(7)
    const expected: Array<Record<string, unknown>> = []
    for (let i = 1; i <= 40; i++) {
      const kind = i % 4
      if (kind === 0) {
        const payload = 'p'.repeat(i * 5)
        trace.recordPublish('t', payload.length, payload)
        expected.push({ seq: i, operation: 'publish', direction: 'out', topic: 't', size: payload.length, payload })
      } else if (kind === 1) {
        trace.record({ operation: 'write', direction: 'in' })
        expected.push({ seq: i, operation: 'write', direction: 'in' })
      } else {
        // Narrow and wide Modbus records: 2 registers read, or as many as i.
        const count = kind === 2 ? 2 : i
        const words = Array.from({ length: count }, (_, k) => i * 100 + k)
        const { frame, offset } = framed(pdu(3, 0, i, 0, count))
        const reply = readWords(3, words)
        recordExchange(trace, UNIT, frame, offset, 5, reply.adu, reply.at, i / 1000)
        expected.push({ seq: i, operation: 'read', ...base, function: 3, table: 'holding_registers', address: i, count, values: words, latency: i / 1000 })
      }
      assert.deepStrictEqual(
        tail(trace).map((e) => shape(e).fields),
        expected.slice(-7),
      )
    }
    assert.deepEqual(
      tail(trace, { function: 3 }).map((e) => e.seq),
      [34, 35, 38, 39],
    )
    assert.deepEqual(
      tail(trace, { operation: 'publish' }).map((e) => e.seq),
      [36, 40],
    )
    assert.deepEqual(
      tail(trace, { contains: '3902' }).map((e) => e.seq),
      [39],
    )
    trace.size = 3
    assert.deepStrictEqual(
      tail(trace).map((e) => shape(e).fields),
      expected.slice(-3),
    )
    trace.size = 50
    for (let i = 41; i <= 45; i++) {
      const { frame, offset } = framed(pdu(6, 0, i, 0, i))
      recordExchange(trace, UNIT, frame, offset, 5, null, 0, 0.5)
      expected.push({
        seq: i,
        operation: 'write',
        ...base,
        function: 6,
        table: 'holding_registers',
        address: i,
        count: 1,
        values: [i],
        latency: 0.5,
        error: 'NO_ANSWER',
      })
    }
    assert.deepStrictEqual(
      tail(trace).map((e) => shape(e).fields),
      [...expected.slice(37, 40), ...expected.slice(40)],
    )
    assert.equal(trace.clear(), 8)
    assert.deepEqual(tail(trace), [])
    const { frame, offset } = framed(pdu(3, 0, 1, 0, 1))
    const five = readWords(3, [5])
    recordExchange(trace, UNIT, frame, offset, 5, five.adu, five.at, 0.25)
    assert.deepStrictEqual(
      tail(trace).map((e) => shape(e).fields),
      [{ seq: 46, operation: 'read', ...base, function: 3, table: 'holding_registers', address: 1, count: 1, values: [5], latency: 0.25 }],
    )
    assert.deepEqual(journal.after(0), [])
    trace.size = 0
    recordExchange(trace, UNIT, frame, offset, 5, null, 0, 0.25)
    assert.deepEqual(tail(trace), [])
    assert.equal(trace.recorded, 47)
  })

  it('a write that set attributes carries them in its slot and its protocol.write event, also with the ring off', () => {
    const { trace, journal, latencies } = makeTrace()
    const request = pdu(16, 0, 4, 0, 1, 2, 0, 42)
    const { frame, offset } = framed(request)
    trace.attributeWritten('setpoint', 42)
    const reply = answer([16, 0, 4, 0, 1])
    recordExchange(trace, UNIT, frame, offset, request.length, reply.adu, reply.at, 0.001)
    const written = { operation: 'write', ...base, function: 16, table: 'holding_registers', address: 4, count: 1, values: [42], latency: 0.001 }
    const [entry] = tail(trace)
    assert.deepStrictEqual(shape(entry!).fields, { seq: 1, ...written, attributes: { setpoint: 42 } })
    trace.size = 0
    trace.attributeWritten('setpoint', 43)
    recordExchange(trace, UNIT, frame, offset, request.length, null, 0, 0.002)
    const events = journal.after(0)
    assert.deepStrictEqual(
      events.map((e) => shape(e).fields),
      [
        { seq: 1, ...written, attributes: { setpoint: 42 }, instance: 'meter', adapter: 'modbus_slave', kind: 'modbus_slave', event_seq: 1 },
        {
          seq: 2,
          ...written,
          latency: 0.002,
          error: 'NO_ANSWER',
          attributes: { setpoint: 43 },
          instance: 'meter',
          adapter: 'modbus_slave',
          kind: 'modbus_slave',
          event_seq: 2,
        },
      ],
    )
    assert.equal(events[0]!.time, entry!.time)
    assert.deepEqual(latencies, [
      ['modbus_slave', 0.001],
      ['modbus_slave', 0.002],
    ])
  })

  it('thousands of coils in one request are kept too (as an object, wider than a slot)', () => {
    const bits = Array.from({ length: 2000 }, (_, i) => i % 3 === 0)
    same(pdu(1, 0, 0, hi(2000), lo(2000)), readBits(1, bits), {
      operation: 'read',
      ...base,
      function: 1,
      table: 'coils',
      address: 0,
      count: 2000,
      values: bits,
      latency: LATENCY,
    })
    const written = Array.from({ length: 1968 }, (_, i) => i % 5 === 0)
    const bytes = new Array<number>(246).fill(0)
    written.forEach((b, i) => (bytes[i >> 3]! |= b ? 1 << (i & 7) : 0))
    same(pdu(15, 0, 0, hi(1968), lo(1968), 246, ...bytes), null, {
      operation: 'write',
      ...base,
      function: 15,
      table: 'coils',
      address: 0,
      count: 1968,
      values: written,
      latency: LATENCY,
      error: 'NO_ANSWER',
    })
  })
})
