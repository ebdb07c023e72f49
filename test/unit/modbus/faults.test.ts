// The fault registry (src/protocols/modbus/faults/) and the faults value's schema: which requests
// a fault hits (function codes, address ranges, every Nth, a seeded probability), clear_after and
// disconnect, and the 422 paths of bad values. Then each fault through a real listener, seen by a
// raw client on 127.0.0.1.
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, before, describe, it } from 'node:test'
import {
  FaultPlan,
  MODBUS_FAULT_KINDS,
  corruption,
  emptyFaultCounters,
  encodeRequest,
  parseModbusFaults,
  seededRandom,
  swapRegisterBytes,
  touches,
} from '../../../src/protocols/modbus/index.js'
import type { FaultAction, ModbusRequest } from '../../../src/protocols/modbus/index.js'
import { ValidationError } from '../../../src/errors.js'
import { eventually } from '../../helpers/wait.js'
import { TestClient, exceptionOf, registersOf, startRig } from './helpers.js'
import type { Rig } from './helpers.js'

/** The PDU of a request (what the plan reads). */
function pdu(request: ModbusRequest): Buffer {
  return encodeRequest({ transactionId: 1, unitId: 1, request }).subarray(7)
}

const READ_0 = pdu({ fc: 3, address: 0, quantity: 1 })
const READ_50 = pdu({ fc: 3, address: 50, quantity: 2 })
const WRITE_5 = pdu({ fc: 6, address: 5, value: 1 })
const COILS_0 = pdu({ fc: 1, address: 0, quantity: 8 })

/** The actions of a plan over a list of requests. */
function actions(plan: FaultPlan, requests: Buffer[]): FaultAction[] {
  return requests.map((p) => plan.decide(p, 0, p.length).action)
}

function problems(value: unknown): Array<{ path: string; message: string }> {
  try {
    parseModbusFaults(value)
  } catch (error) {
    assert.ok(error instanceof ValidationError)
    return error.details.map(({ path, message }) => ({ path, message }))
  }
  assert.fail(`expected ${JSON.stringify(value)} to be refused`)
}

describe('the faults value', () => {
  it('takes the shape of the issue, every key optional; true, numbers and null are shorthands', () => {
    const value = parseModbusFaults({
      exception: { code: 6, functions: [3], addresses: [[0, 9]], probability: 1.0 },
      no_response: { every: 1 },
      corrupt: { kind: 'transaction_id' },
      split_frames: true,
      disconnect: { after: 0 },
      clear_after: { requests: 2 },
    })
    assert.equal(value.exception?.code, 6)
    assert.deepEqual(value.split_frames, {})
    assert.deepEqual(parseModbusFaults({ response_delay: 0.25 }).response_delay, { seconds: 0.25 })
    assert.deepEqual(parseModbusFaults({ no_response: false, split_frames: null }), {})
    assert.deepEqual(parseModbusFaults(null), {})
    assert.deepEqual(parseModbusFaults({}), {})
  })

  it('names every problem with its path under value.', () => {
    assert.deepEqual(
      problems({ exception: { code: 0, functions: [200] }, no_response: { every: 0 }, corrupt: { kind: 'crc' }, bogus: 1 }).map((p) => p.path),
      ['value.exception.code', 'value.exception.functions.0', 'value.no_response.every', 'value.corrupt.kind', 'value.bogus'],
    )
    assert.deepEqual(problems({ exception: { code: 4, colour: 'red' } }), [{ path: 'value.exception.colour', message: 'unknown key' }])
    assert.deepEqual(
      problems({ exception: { code: 4, addresses: [[9, 0]] } }).map((p) => p.path),
      ['value.exception.addresses.0'],
    )
    assert.deepEqual(
      problems({ response_delay: -1, clear_after: {}, seed: 1.5, split_frames: { parts: 1 } }).map((p) => p.path),
      ['value.response_delay.seconds', 'value.split_frames.parts', 'value.clear_after', 'value.seed'],
    )
    assert.deepEqual(problems('often'), [{ path: 'value', message: 'faults is an object (or {} / null for none)' }])
    assert.deepEqual(problems({ exception: { code: 1, probability: 2 } }), [{ path: 'value.exception.probability', message: 'a probability is from 0 to 1' }])
  })
})

describe('which requests a fault hits', () => {
  it('address ranges: a request matches when any address it reads or writes lies in a range', () => {
    const ranges: Array<number | [number, number]> = [[10, 20], 40]
    assert.equal(touches(pdu({ fc: 3, address: 8, quantity: 3 }), 0, 5, ranges), true, '8..10 touches 10..20')
    assert.equal(touches(pdu({ fc: 3, address: 8, quantity: 2 }), 0, 5, ranges), false, '8..9 does not')
    assert.equal(touches(pdu({ fc: 4, address: 21, quantity: 19 }), 0, 5, ranges), false, '21..39 falls between')
    assert.equal(touches(pdu({ fc: 4, address: 21, quantity: 20 }), 0, 5, ranges), true, '21..40 reaches 40')
    assert.equal(touches(pdu({ fc: 6, address: 40, value: 3 }), 0, 5, ranges), true, 'a single write')
    assert.equal(touches(pdu({ fc: 5, address: 41, value: true }), 0, 5, ranges), false)
    const readWrite = pdu({ fc: 23, readAddress: 0, readQuantity: 2, writeAddress: 15, writeQuantity: 1, data: Buffer.from([0, 1]) })
    assert.equal(touches(readWrite, 0, readWrite.length, ranges), true, 'FC23 by its write range')
    assert.equal(touches(pdu({ pdu: Buffer.from([0x07]) } as never), 0, 1, ranges), false, 'no addresses, no match')
  })

  it('exception for chosen function codes and address ranges only', () => {
    const plan = new FaultPlan(parseModbusFaults({ exception: { code: 6, functions: [3], addresses: [[0, 9]] } }))
    const decisions = [READ_0, READ_50, WRITE_5, COILS_0].map((p) => plan.decide(p, 0, p.length))
    assert.deepEqual(
      decisions.map((d) => [d.action, d.code]),
      [
        ['exception', 6],
        ['answer', 0],
        ['answer', 0],
        ['answer', 0],
      ],
    )
  })

  it('every Nth request of those that match', () => {
    const plan = new FaultPlan(parseModbusFaults({ no_response: { every: 3 } }))
    assert.deepEqual(actions(plan, Array(7).fill(READ_0)), ['answer', 'answer', 'drop', 'answer', 'answer', 'drop', 'answer'])
    // Counted among the matching requests only: the writes in between do not advance it.
    const writes = new FaultPlan(parseModbusFaults({ no_response: { every: 2, functions: [6] } }))
    assert.deepEqual(actions(writes, [WRITE_5, READ_0, READ_0, WRITE_5, WRITE_5, READ_0, WRITE_5]), [
      'answer',
      'answer',
      'answer',
      'drop',
      'answer',
      'answer',
      'drop',
    ])
  })

  it('probability with a seed: the same seed gives the same choices, another seed others, about p of them hit', () => {
    const run = (seed: number): FaultAction[] => actions(new FaultPlan(parseModbusFaults({ no_response: { probability: 0.3 }, seed })), Array(400).fill(READ_0))
    const first = run(42)
    assert.deepEqual(run(42), first)
    assert.notDeepEqual(run(43), first)
    const dropped = first.filter((a) => a === 'drop').length
    assert.ok(dropped > 80 && dropped < 160, `${dropped} of 400 dropped at p = 0.3`)
    assert.equal(actions(new FaultPlan(parseModbusFaults({ no_response: { probability: 0 } })), Array(50).fill(READ_0)).includes('drop'), false)
  })

  it('jitter is seeded too, and stays within seconds .. seconds + jitter', () => {
    const delays = (seed: number): number[] => {
      const plan = new FaultPlan(parseModbusFaults({ response_delay: { seconds: 0.1, jitter: 0.05 }, seed }))
      return Array.from({ length: 50 }, () => plan.decide(READ_0, 0, 5).shape!.delayMs!)
    }
    const a = delays(7)
    assert.deepEqual(delays(7), a)
    assert.ok(a.every((ms) => ms >= 100 && ms <= 150))
    assert.ok(new Set(a).size > 10, 'the delays vary')
  })

  it('clear_after requests: the plan is spent after N requests', () => {
    const plan = new FaultPlan(parseModbusFaults({ exception: { code: 4 }, clear_after: { requests: 2 } }))
    plan.decide(READ_0, 0, 5)
    assert.equal(plan.spent, false)
    plan.decide(READ_0, 0, 5)
    assert.equal(plan.spent, true)
  })

  it('clear_after seconds: the remaining time counts down from when the plan was made', () => {
    const plan = new FaultPlan(parseModbusFaults({ no_response: true, clear_after: { seconds: 2 } }), 1000)
    assert.equal(plan.remainingMs(1500), 1500)
    assert.equal(plan.remainingMs(3000), 0)
    assert.equal(new FaultPlan(parseModbusFaults({ no_response: true })).remainingMs(), null)
  })

  it('disconnect after N requests, once', () => {
    const plan = new FaultPlan(parseModbusFaults({ disconnect: { after: 2 } }))
    assert.equal(plan.disconnectNow, false)
    assert.deepEqual(actions(plan, [READ_0, READ_0, READ_0]), ['answer', 'answer', 'disconnect'])
    plan.disconnected()
    assert.equal(plan.empty, true)
    assert.equal(new FaultPlan(parseModbusFaults({ disconnect: true })).disconnectNow, true)
  })

  it('corruptions: transaction id inverted, length field one too long, junk that is never a valid header', () => {
    const adu = (): Buffer => Buffer.from('12340000000501030200', 'hex')
    assert.equal(corruption('transaction_id', Math.random)(adu()).readUInt16BE(0), 0xedcb)
    assert.equal(corruption('length', Math.random)(adu()).readUInt16BE(4), 6)
    for (let seed = 0; seed < 50; seed++) {
      const junk = corruption('junk', seededRandom(seed))(adu())
      assert.equal(junk.length, 10)
      assert.notEqual(junk.readUInt16BE(2), 0)
    }
    assert.deepEqual(corruption('junk', seededRandom(5))(adu()), corruption('junk', seededRandom(5))(adu()))
  })
})

describe('the fault registry', () => {
  it('each fault of the list is a key of the schema and a counter, in the list order', () => {
    const keys = MODBUS_FAULT_KINDS.map((kind) => kind.key)
    assert.deepEqual(keys, ['response_delay', 'exception', 'no_response', 'corrupt', 'split_frames', 'swap_bytes', 'disconnect', 'clear_after'])
    assert.deepEqual(
      Object.keys(emptyFaultCounters()),
      MODBUS_FAULT_KINDS.map((kind) => kind.counter),
    )
    assert.equal(new Set(MODBUS_FAULT_KINDS.map((kind) => kind.counter)).size, MODBUS_FAULT_KINDS.length)
  })

  it('no_response and exception decide before the faults that shape an answer, whatever the list order', () => {
    const plan = new FaultPlan(parseModbusFaults({ response_delay: 1, exception: { code: 6 }, swap_bytes: true }))
    const decision = plan.decide(READ_0, 0, READ_0.length)
    assert.equal(decision.action, 'exception')
    assert.deepEqual(decision.hits, ['fault_exceptions', 'fault_delays', 'fault_swaps'])
    const dropped = new FaultPlan(parseModbusFaults({ response_delay: 1, no_response: true })).decide(READ_0, 0, READ_0.length)
    assert.deepEqual([dropped.action, dropped.hits], ['drop', ['fault_no_responses']])
  })

  it('swap_bytes: swaps the bytes of each register of a read answer, leaves others alone, and counts only register reads for every', () => {
    const adu = Buffer.from('00000000000701030401020304', 'hex')
    swapRegisterBytes(adu, 0, adu.length)
    assert.equal(adu.toString('hex'), '00000000000701030402010403')
    const exception = Buffer.from('000000000003018302', 'hex')
    swapRegisterBytes(exception, 0, exception.length)
    assert.equal(exception.toString('hex'), '000000000003018302')
    const plan = new FaultPlan(parseModbusFaults({ swap_bytes: { every: 2 } }))
    const hit = (request: Buffer): boolean => plan.decide(request, 0, request.length).shape?.edit != null
    assert.deepEqual([hit(READ_0), hit(WRITE_5), hit(COILS_0), hit(READ_50)], [false, false, false, true])
  })
})

describe('faults on a real listener', () => {
  let rig: Rig
  before(async () => {
    rig = await startRig(
      { mapping: { level: { address: 0, group: 'h_r', type: 'uint_16' }, other: { address: 20, group: 'h_r', type: 'uint_16' } } },
      { level: 7, other: 9 },
    )
  })
  after(async () => rig.close())

  const read = (client: TestClient, address = 0, timeoutMs = 2000) => client.request({ fc: 3, address, quantity: 1 }, { timeoutMs })

  // The raw client takes only the exception codes the server itself answers (1..4, 0x0B) as valid
  // frames; the peer clients in test/modbus-faults.test.ts see others, such as 6.
  it('exception for a range, clear_after 2 requests, then normal service; counted', async () => {
    rig.adapter.set('faults', { exception: { code: 3, addresses: [[0, 9]] }, clear_after: { requests: 2 } })
    const client = await TestClient.connect(rig.port)
    assert.equal(exceptionOf(await read(client)), 3)
    assert.deepEqual(registersOf(await read(client, 20)), [9], 'outside the range: answered, but counts toward clear_after')
    assert.deepEqual(registersOf(await read(client)), [7])
    assert.deepEqual(rig.adapter.settings().faults, {})
    const stats = rig.adapter.stats()
    assert.equal(stats.fault_exceptions, 1)
    assert.equal(stats.fault_clears, 1)
    assert.equal(stats.active_faults, '')
    client.close()
  })

  it('no_response every 2nd: the client times out on those, and the others are answered in order', async () => {
    rig.adapter.set('faults', { no_response: { every: 2 } })
    const client = await TestClient.connect(rig.port)
    const before = rig.adapter.stats().fault_no_responses as number
    assert.deepEqual(registersOf(await read(client)), [7])
    await assert.rejects(read(client, 0, 300), /time-out/)
    assert.deepEqual(registersOf(await read(client)), [7])
    assert.equal(rig.adapter.stats().fault_no_responses, before + 1)
    rig.adapter.set('faults', {})
    client.close()
  })

  it('a wrong transaction id never matches the request; junk is a frame the client cannot read', async () => {
    rig.adapter.set('faults', { corrupt: { kind: 'transaction_id' } })
    const client = await TestClient.connect(rig.port)
    await assert.rejects(read(client, 0, 300), /time-out/)
    // The answer came, under a transaction id nobody asked for.
    await eventually(() => client.unmatched.length >= 1, 2000, 5)
    assert.equal(client.unmatched.length, 1)
    rig.adapter.set('faults', { corrupt: { kind: 'junk' }, seed: 3 })
    await assert.rejects(read(client, 0, 300), /time-out/)
    assert.ok(client.problems.length >= 1, 'the junk was seen as a bad frame')
    client.close()
    rig.adapter.set('faults', null)
    const fresh = await TestClient.connect(rig.port)
    assert.deepEqual(registersOf(await read(fresh)), [7])
    fresh.close()
  })

  it('split_frames: the answer arrives in several pieces that make the usual answer', async () => {
    rig.adapter.set('faults', { split_frames: { parts: 3, gap: 0.05 } })
    const socket = connect({ host: '127.0.0.1', port: rig.port })
    const chunks: Buffer[] = []
    socket.on('data', (c: Buffer) => chunks.push(c))
    await new Promise((r) => socket.once('connect', r))
    socket.write(encodeRequest({ transactionId: 9, unitId: 1, request: { fc: 3, address: 0, quantity: 1 } }))
    const deadline = Date.now() + 3000
    while (Buffer.concat(chunks).length < 11 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    socket.destroy()
    assert.equal(Buffer.concat(chunks).toString('hex'), '0009000000050103020007')
    // Three writes, 50 ms apart; a busy machine may still deliver two of them in one read.
    assert.ok(chunks.length >= 2, `${chunks.length} chunk(s)`)
    rig.adapter.set('faults', {})
  })

  it('response_delay: the answer comes later than a short client time-out, then normal again', async () => {
    rig.adapter.set('faults', { response_delay: { seconds: 0.4, jitter: 0.1 }, seed: 1 })
    const client = await TestClient.connect(rig.port)
    await assert.rejects(read(client, 0, 150), /time-out/)
    rig.adapter.set('faults', {})
    // The late answer arrives (to a request the client gave up on) before the next is asked.
    const late = client.unmatched.length
    await eventually(() => client.unmatched.length > late, 3000, 10)
    assert.deepEqual(registersOf(await read(client, 0, 150)), [7])
    assert.ok((rig.adapter.stats().fault_delays as number) >= 1)
    client.close()
  })

  it('disconnect now closes open connections; a new connection is served', async () => {
    const client = await TestClient.connect(rig.port)
    assert.deepEqual(registersOf(await read(client)), [7])
    const before = rig.adapter.stats().fault_disconnects as number
    rig.adapter.set('faults', { disconnect: true })
    await client.closed
    assert.ok((rig.adapter.stats().fault_disconnects as number) >= before + 1)
    assert.deepEqual(rig.adapter.settings().faults, {}, 'a disconnect that happened is gone')
    const again = await TestClient.connect(rig.port)
    assert.deepEqual(registersOf(await read(again)), [7])
    again.close()
  })

  it('clear_after seconds ends the faults by itself', async () => {
    rig.adapter.set('faults', { no_response: true, clear_after: { seconds: 0.2 } })
    assert.equal(rig.adapter.stats().active_faults, 'no_response,clear_after')
    const deadline = Date.now() + 5000
    while (rig.adapter.stats().active_faults !== '' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25))
    assert.equal(rig.adapter.stats().active_faults, '')
    const client = await TestClient.connect(rig.port)
    assert.deepEqual(registersOf(await read(client)), [7])
    client.close()
  })

  it('answers that wait on an asynchronous write are shaped too: split, then corrupted', async () => {
    rig.accessor.slow.set('level', 30)
    const client = await TestClient.connect(rig.port)
    try {
      const splits = rig.adapter.stats().fault_splits as number
      rig.adapter.set('faults', { split_frames: { gap: 0.02 } })
      const written = await client.request({ fc: 6, address: 0, value: 8 })
      assert.deepEqual([written.fc, 'word' in written && written.word], [6, 8])
      assert.equal(rig.adapter.stats().fault_splits, splits + 1)
      rig.adapter.set('faults', { corrupt: { kind: 'transaction_id' } })
      await assert.rejects(client.request({ fc: 6, address: 0, value: 7 }, { timeoutMs: 400 }), /time-out/)
      assert.equal(rig.accessor.values.get('level'), 7, 'the write itself was carried out')
      assert.equal(client.unmatched.length, 1)
    } finally {
      rig.accessor.slow.delete('level')
      rig.adapter.set('faults', {})
      client.close()
    }
  })

  it('a bad value is refused and the faults in force stay', async () => {
    rig.adapter.set('faults', { exception: { code: 4 } })
    assert.throws(() => rig.adapter.set('faults', { exception: { code: 'x' } }), ValidationError)
    assert.deepEqual(rig.adapter.settings().faults, { exception: { code: 4 } })
    const client = await TestClient.connect(rig.port)
    assert.equal(exceptionOf(await read(client)), 4)
    rig.adapter.set('faults', {})
    assert.deepEqual(registersOf(await read(client)), [7])
    client.close()
  })
})
