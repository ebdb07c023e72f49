// src/protocols/trace.ts AdapterTrace: the ring of fixed slots wraps around keeping the newest,
// resizes keeping the newest, clears, and gives publications (stored without objects) exactly as
// the exchange objects of other adapters are given, attributes and protocol.write events included.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AdapterTrace, MAX_RECORD_WORDS, MAX_TRACE_TEXT, TrafficJournal, traceText, type TraceEntry, type WordsLayout } from '../../../src/protocols/trace.js'

function makeTrace(size?: number) {
  const journal = new TrafficJournal()
  const trace = new AdapterTrace({ instance: 'meter', adapter: 'mqtt', kind: 'mqtt', journal, ...(size === undefined ? {} : { size }) })
  return { journal, trace }
}

const tail = (trace: AdapterTrace, kwargs: Record<string, unknown> = {}): TraceEntry[] => trace.tail({ args: [], kwargs: { limit: 10_000, ...kwargs } })
const seqs = (entries: TraceEntry[]) => entries.map((e) => e.seq)
/** The entry without its time, which only has to be ISO 8601 text. */
function withoutTime(entry: TraceEntry): Record<string, unknown> {
  const { time, ...rest } = entry
  assert.match(time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  return rest
}

describe('adapter trace ring', () => {
  it('wraps around: keeps the newest `size` exchanges, oldest first, publications and other exchanges mixed', () => {
    const { trace } = makeTrace(5)
    for (let i = 1; i <= 13; i++) {
      if (i % 3 === 0) trace.record({ operation: 'message', direction: 'in', topic: 't/in', size: 1, payload: String(i) })
      else trace.recordPublish('t/out', String(i).length, String(i))
    }
    const entries = tail(trace)
    assert.deepEqual(seqs(entries), [9, 10, 11, 12, 13])
    assert.deepEqual(entries.map(withoutTime), [
      { seq: 9, operation: 'message', direction: 'in', topic: 't/in', size: 1, payload: '9' },
      { seq: 10, operation: 'publish', direction: 'out', topic: 't/out', size: 2, payload: '10' },
      { seq: 11, operation: 'publish', direction: 'out', topic: 't/out', size: 2, payload: '11' },
      { seq: 12, operation: 'message', direction: 'in', topic: 't/in', size: 1, payload: '12' },
      { seq: 13, operation: 'publish', direction: 'out', topic: 't/out', size: 2, payload: '13' },
    ])
    assert.equal(trace.recorded, 13)
    assert.deepEqual(seqs(tail(trace, { limit: 2 })), [12, 13])
    assert.deepEqual(seqs(tail(trace, { since: 10 })), [11, 12, 13])
    assert.deepEqual(seqs(tail(trace, { operation: 'publish' })), [10, 11, 13])
    assert.deepEqual(seqs(tail(trace, { direction: 'in', limit: 1 })), [12])
    assert.deepEqual(seqs(tail(trace, { contains: 'T/OUT' })), [10, 11, 13])
  })

  it('gives payloads back exactly: any string, growing slots, and long ones cut as traceText cuts them', () => {
    const { trace } = makeTrace(4)
    const payloads = [
      '',
      '{"v":21.5}',
      'é€😀 \ud800 lone surrogates \udc00 kept',
      'x'.repeat(200),
      'y'.repeat(MAX_TRACE_TEXT + 50),
      'short again',
      'z'.repeat(MAX_TRACE_TEXT),
    ]
    const expected: Array<{ payload: string; size: number }> = []
    for (const p of payloads) {
      const size = Buffer.byteLength(p)
      trace.recordPublish('t', size, p)
      expected.push({ payload: traceText(p), size })
      // Every payload still in the ring reads back the same after each write (slots widen as payloads grow).
      const kept = expected.slice(-4)
      assert.deepEqual(
        tail(trace).map((e) => ({ payload: e.payload, size: e.size })),
        kept,
      )
    }
    assert.equal(tail(trace)[1]!.payload, 'y'.repeat(MAX_TRACE_TEXT) + '…')
  })

  it('grows its slots as it fills, wider payloads and more slots in any order, then wraps', () => {
    const { trace } = makeTrace(50)
    const expected: string[] = []
    for (let i = 0; i < 120; i++) {
      const payload = i % 7 === 0 ? 'w'.repeat(i * 3) : `p${i}`
      if (i % 5 === 0) trace.record({ operation: 'message', direction: 'in', payload })
      else trace.recordPublish('t', payload.length, payload)
      expected.push(payload)
      if (i === 30)
        assert.deepEqual(
          tail(trace).map((e) => e.payload),
          expected,
        )
    }
    assert.deepEqual(
      tail(trace).map((e) => e.payload),
      expected.slice(-50),
    )
    assert.deepEqual(
      seqs(tail(trace)),
      Array.from({ length: 50 }, (_, i) => 71 + i),
    )
  })

  it('resizes keeping the newest, grows keeping all, and 0 keeps nothing while events still go out', () => {
    const { trace, journal } = makeTrace(6)
    for (let i = 1; i <= 8; i++) trace.recordPublish('t', 1, String(i % 10))
    trace.size = 3
    assert.deepEqual(seqs(tail(trace)), [6, 7, 8])
    assert.deepEqual(
      tail(trace).map((e) => e.payload),
      ['6', '7', '8'],
    )
    trace.size = 10
    assert.deepEqual(seqs(tail(trace)), [6, 7, 8])
    for (let i = 9; i <= 20; i++) trace.record({ operation: 'read', function: 3, address: i })
    assert.deepEqual(seqs(tail(trace)), [11, 12, 13, 14, 15, 16, 17, 18, 19, 20])
    assert.deepEqual(seqs(tail(trace, { function: 3, limit: 3 })), [18, 19, 20])
    trace.size = 0
    assert.equal(trace.on, false)
    assert.deepEqual(tail(trace), [])
    trace.attributeWritten('temp', 22)
    trace.recordPublish('t', 1, 'x')
    assert.deepEqual(tail(trace), [])
    const events = journal.after(0)
    assert.equal(events.length, 1)
    assert.deepEqual(
      { ...withoutTime(events[0]!) },
      {
        seq: 21,
        operation: 'publish',
        direction: 'out',
        topic: 't',
        size: 1,
        payload: 'x',
        attributes: { temp: 22 },
        instance: 'meter',
        adapter: 'mqtt',
        kind: 'mqtt',
        event_seq: 1,
      },
    )
    assert.throws(() => (trace.size = 10_001), /trace_size/)
  })

  it('clear empties the ring and says how many it held; recording goes on after it', () => {
    const { trace } = makeTrace(3)
    for (let i = 0; i < 5; i++) trace.recordPublish('t', 1, 'a')
    assert.equal(trace.clear(), 3)
    assert.deepEqual(tail(trace), [])
    assert.equal(trace.clear(), 0)
    trace.record({ operation: 'write', direction: 'in', unit: 1 })
    trace.recordPublish('t', 1, 'b')
    assert.deepEqual(tail(trace).map(withoutTime), [
      { seq: 6, operation: 'write', direction: 'in', unit: 1 },
      { seq: 7, operation: 'publish', direction: 'out', topic: 't', size: 1, payload: 'b' },
    ])
  })

  it('keeps words records (recordWords) among publications and objects: any length up to MAX_RECORD_WORDS, resized, cleared', () => {
    const layout: WordsLayout = {
      exchange: (words, start, length, latency) => ({ operation: 'words', words: Array.from(words.subarray(start, start + length)), latency }),
    }
    const { trace, journal } = makeTrace(6)
    const latencies: number[] = []
    journal.onLatency = (labels, seconds) => latencies.push(seconds)
    const expected: Array<Record<string, unknown>> = []
    const lengths = [0, 3, 40, MAX_RECORD_WORDS, 1, 17, 200, 2, 5]
    lengths.forEach((length, i) => {
      const words = Uint16Array.from({ length: length + 3 }, (_, k) => (i * 1000 + k * 7919) & 0xffff)
      trace.recordWords(layout, words, length, i / 10)
      expected.push({ seq: expected.length + 1, operation: 'words', words: Array.from(words.subarray(0, length)), latency: i / 10 })
      const payload = 'q'.repeat(i * 30)
      trace.recordPublish('t', payload.length, payload)
      expected.push({ seq: expected.length + 1, operation: 'publish', direction: 'out', topic: 't', size: payload.length, payload })
      if (i % 3 === 0) {
        trace.record({ operation: 'read', function: 3 })
        expected.push({ seq: expected.length + 1, operation: 'read', function: 3 })
      }
      assert.deepStrictEqual(tail(trace).map(withoutTime), expected.slice(-6))
    })
    assert.deepEqual(
      latencies,
      lengths.map((_, i) => i / 10),
    )
    assert.throws(() => trace.recordWords(layout, new Uint16Array(MAX_RECORD_WORDS + 1), MAX_RECORD_WORDS + 1, 0), RangeError)
    assert.equal(trace.recorded, expected.length)
    trace.size = 4
    assert.deepStrictEqual(tail(trace).map(withoutTime), expected.slice(-4))
    trace.size = 20
    assert.deepStrictEqual(tail(trace).map(withoutTime), expected.slice(-4))
    assert.equal(trace.clear(), 4)
    trace.recordWords(layout, Uint16Array.of(9, 8), 2, 1)
    assert.deepStrictEqual(tail(trace).map(withoutTime), [{ seq: trace.recorded, operation: 'words', words: [9, 8], latency: 1 }])
  })

  it('an exchange that wrote attributes carries them in the ring and in its protocol.write event', () => {
    const { trace, journal } = makeTrace()
    assert.equal(trace.size, 200)
    trace.attributeWritten('setpoint', 5)
    trace.record({ operation: 'message', direction: 'in', topic: 't', size: 1, payload: '5' })
    trace.recordPublish('t', 1, '5')
    const [first, second] = tail(trace)
    assert.deepEqual(withoutTime(first!), { seq: 1, operation: 'message', direction: 'in', topic: 't', size: 1, payload: '5', attributes: { setpoint: 5 } })
    assert.equal(second!.attributes, undefined)
    const events = journal.after(0)
    assert.deepEqual(
      events.map((e) => [e.seq, e.event_seq, e.time]),
      [[1, 1, first!.time]],
    )
  })
})
