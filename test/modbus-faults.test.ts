// Modbus faults through the running server (docs/modbus-faults.md): set with PUT on the adapter
// node's `faults` property, seen by two independent clients (Debian's pymodbus and mbpoll) as a
// real device's misbehaviour would be, counted in the node and the event stream, refused with a
// 422 naming each problem; and a seeded fuzz of faults values that must answer 200 or 422 only.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { generator } from './helpers/seeded-random.js'
import { TEST_KEY, eventually, startTestServer, type TestServer } from './helpers/server.js'
import { TestClient, peerSkipReason, registersOf, run } from './unit/modbus/helpers.js'
import type { ModbusFaultCounters, ModbusSlaveCounters } from '../src/protocols/modbus/index.js'

const SYS = '/api/v3/system'
const NODE = `${SYS}/instances/plc/communication/modbus_slave`
const FAULTS = `${NODE}/attr/faults`
const PYTHON = '/usr/bin/python3'
const PYMODBUS = new URL('./unit/modbus/pymodbus-client.py', import.meta.url).pathname
const MBPOLL = '/usr/bin/mbpoll'

const pySkip = peerSkipReason('pymodbus', { command: PYTHON, args: ['-c', 'import pymodbus.client'] }, 'apt-get install python3-pymodbus')
const mbSkip = peerSkipReason('mbpoll', { command: MBPOLL, args: ['-V'] }, 'apt-get install mbpoll')

const READ = { op: 'read', group: 'h_r', address: 0, count: 1 }

describe('Modbus faults on the adapter node', () => {
  let t: TestServer
  let port: number

  /** Runs operations with pymodbus (2 s time-out, no retries) and returns one result each. */
  const pymodbus = async (operations: unknown[]): Promise<Array<Record<string, any>>> => {
    const res = await run(PYTHON, [PYMODBUS, String(port)], { input: JSON.stringify(operations), timeoutMs: 60_000 })
    assert.equal(res.code, 0, res.stderr)
    return JSON.parse(res.stdout)
  }
  /** One mbpoll read of holding register 0 (PDU addressing), with a time-out in seconds. */
  const mbpoll = (timeout = 1, extra: string[] = ['-1']) =>
    run(MBPOLL, ['-m', 'tcp', '-p', String(port), '-a', '1', '-0', '-o', String(timeout), '-r', '0', '-c', '1', '-t', '4', ...extra, '127.0.0.1'], {
      timeoutMs: 20_000,
    })
  const mbpollValue = (stdout: string): string | undefined => /^\[0\]:\s+(\S+)/m.exec(stdout)?.[1]
  const setFaults = async (value: unknown): Promise<void> => {
    const res = await t.api('PUT', FAULTS, { value })
    assert.equal(res.status, 200, JSON.stringify(res.body))
  }
  const counters = async (): Promise<ModbusFaultCounters & ModbusSlaveCounters> => (await t.api('GET', NODE)).body.counters

  before(async () => {
    t = await startTestServer()
    const model = {
      attributes: { level: { default: 7, type: 'int' }, other: { default: 9, type: 'int' } },
      communication: [
        {
          modbus_slave: {
            port: 0,
            mapping: { level: { address: 0, group: 'h_r', type: 'uint_16' }, other: { address: 20, group: 'h_r', type: 'uint_16' } },
          },
        },
      ],
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Plc: model })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { plc: 'Plc' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/plc`, 'prepare')).status, 200)
    port = (await t.api('GET', NODE)).body.port
  })
  after(async () => t.close())

  it('faults is a property of the node: {} at first, readable, settable with PUT and PATCH, cleared by {} and null', async () => {
    assert.deepEqual((await t.api('GET', FAULTS)).body, { value: {} })
    const value = { exception: { code: 6, functions: [3], addresses: [[0, 9]], probability: 1.0 }, clear_after: { requests: 2 } }
    const put = await t.api('PUT', FAULTS, { value })
    assert.equal(put.status, 200)
    assert.deepEqual(put.body, { value })
    assert.deepEqual((await t.api('GET', NODE)).body.faults, value)
    assert.deepEqual((await t.api('PUT', FAULTS, { value: null })).body, { value: {} })
    assert.equal((await t.api('PATCH', NODE, { faults: { no_response: true } })).status, 200)
    assert.deepEqual((await t.api('GET', FAULTS)).body, { value: { no_response: true } })
    assert.deepEqual((await t.api('PUT', FAULTS, { value: {} })).body, { value: {} })
    // The adapter's records carry their instance, so the instance's own logs show them.
    const tail = (await t.call(`${SYS}/instances/plc/logs`, 'tail', { level: 'info' })).body.result as Array<Record<string, unknown>>
    const set = tail.filter((r) => r.msg === 'modbus faults set')
    assert.equal(set.length, 2, JSON.stringify(tail.map((r) => r.msg)))
    assert.ok(set.every((r) => r.instance === 'plc' && r.adapter === 'plc.modbus_slave'))
  })

  it('a bad value is a 422 naming each problem by its path, and the faults in force stay', async () => {
    await setFaults({ no_response: { every: 3 } })
    const bad = await t.api('PUT', FAULTS, {
      value: { exception: { code: 300, functions: ['x'] }, corrupt: { kind: 'crc' }, clear_after: { requests: 0 }, colour: 1 },
    })
    assert.equal(bad.status, 422, JSON.stringify(bad.body))
    assert.equal(bad.body.error.type, 'ValidationError')
    assert.deepEqual(bad.body.error.details.map((d: { path: string }) => d.path).sort(), [
      'value.clear_after.requests',
      'value.colour',
      'value.corrupt.kind',
      'value.exception.code',
      'value.exception.functions.0',
    ])
    assert.deepEqual((await t.api('GET', FAULTS)).body, { value: { no_response: { every: 3 } } })
    await setFaults({})
  })

  it('exception: pymodbus gets code 6 for the chosen function and range, then normal service after clear_after', { skip: pySkip }, async () => {
    const before = await counters()
    await setFaults({ exception: { code: 6, functions: [3], addresses: [[0, 9]] }, clear_after: { requests: 3 } })
    const results = await pymodbus([READ, { ...READ, address: 20 }, READ, READ])
    assert.deepEqual(
      results.map((r) => r.exception ?? r.registers),
      [6, [9], 6, [7]],
    )
    assert.deepEqual((await t.api('GET', FAULTS)).body, { value: {} })
    const now = await counters()
    assert.equal(now.fault_exceptions - before.fault_exceptions, 2)
    assert.equal(now.fault_clears - before.fault_clears, 1)
    assert.equal(now.errors, before.errors, 'chosen exceptions are not counted as errors of the device')
  })

  it('exception: mbpoll reports the busy device (code 6), and reads again once the faults are cleared', { skip: mbSkip }, async () => {
    await setFaults({ exception: { code: 6 } })
    const busy = await mbpoll()
    assert.notEqual(busy.code, 0)
    assert.match(busy.stderr, /busy/i)
    await setFaults({})
    assert.equal(mbpollValue((await mbpoll()).stdout), '7')
  })

  it('no_response: pymodbus times out on every other request; mbpoll times out; stats count the swallowed requests', { skip: pySkip || mbSkip }, async () => {
    const before = await counters()
    await setFaults({ no_response: { every: 2 } })
    const results = await pymodbus([READ, READ, READ])
    assert.deepEqual(results[0]!.registers, [7])
    assert.match(results[1]!.error, /No Response/i)
    assert.deepEqual(results[2]!.registers, [7])
    await setFaults({ no_response: true })
    const silent = await mbpoll(0.3)
    assert.notEqual(silent.code, 0)
    assert.match(silent.stderr, /timed out/i)
    await setFaults({})
    assert.equal(mbpollValue((await mbpoll()).stdout), '7')
    assert.equal((await counters()).fault_no_responses - before.fault_no_responses, 2)
  })

  it('response_delay with jitter: mbpoll with a short time-out times out, and not once the delay is gone', { skip: mbSkip }, async () => {
    await setFaults({ response_delay: { seconds: 1, jitter: 0.2 }, seed: 5 })
    const late = await mbpoll(0.3)
    assert.match(late.stderr, /timed out/i)
    await setFaults({})
    assert.equal(mbpollValue((await mbpoll(0.3)).stdout), '7')
    assert.ok((await counters()).fault_delays >= 1)
  })

  it('corrupt: mbpoll rejects a wrong transaction id and junk; pymodbus rejects a wrong length and junk', { skip: pySkip || mbSkip }, async () => {
    const before = await counters()
    await setFaults({ corrupt: { kind: 'transaction_id' } })
    assert.match((await mbpoll()).stderr, /Invalid data/)
    await setFaults({ corrupt: { kind: 'junk' }, seed: 11 })
    assert.match((await mbpoll()).stderr, /Invalid data/)
    const [junk] = await pymodbus([READ])
    assert.match(junk!.error, /No Response|decode/i)
    await setFaults({ corrupt: { kind: 'length' } })
    const [length] = await pymodbus([READ])
    assert.match(length!.error, /No Response|decode/i)
    await setFaults({})
    assert.deepEqual((await pymodbus([READ]))[0]!.registers, [7])
    assert.equal((await counters()).fault_corruptions - before.fault_corruptions, 4)
  })

  it(
    'swap_bytes: both clients read each register with its two bytes swapped, only where the fault says; writes are untouched',
    { skip: pySkip || mbSkip },
    async () => {
      const before = await counters()
      await setFaults({ swap_bytes: true })
      // 7 is 0x0007 on the wire; swapped it reads 0x0700.
      assert.deepEqual((await pymodbus([READ]))[0]!.registers, [0x0700])
      assert.equal(mbpollValue((await mbpoll()).stdout), String(0x0700))
      await setFaults({ swap_bytes: { addresses: [[20, 20]] } })
      const [level, other] = await pymodbus([READ, { ...READ, address: 20 }])
      assert.deepEqual(level!.registers, [7])
      assert.deepEqual(other!.registers, [0x0900])
      // A write while the fault is on sets the value as sent; only the read answer is swapped.
      await setFaults({ swap_bytes: true })
      const [written, read] = await pymodbus([{ op: 'write_register', address: 0, value: 0x0102 }, READ])
      assert.equal(written!.ok, true)
      assert.deepEqual(read!.registers, [0x0201])
      await setFaults({})
      assert.deepEqual((await pymodbus([READ]))[0]!.registers, [0x0102])
      assert.equal((await counters()).fault_swaps - before.fault_swaps, 4)
      await pymodbus([{ op: 'write_register', address: 0, value: 7 }])
    },
  )

  it('split_frames: both clients put the pieces together; the node counts split answers', { skip: pySkip || mbSkip }, async () => {
    const before = await counters()
    await setFaults({ split_frames: { parts: 3, gap: 0.02 } })
    assert.deepEqual((await pymodbus([READ]))[0]!.registers, [7])
    assert.equal(mbpollValue((await mbpoll()).stdout), '7')
    await setFaults({})
    assert.equal((await counters()).fault_splits - before.fault_splits, 2)
  })

  it('disconnect after N requests: pymodbus sees the connection closed and reconnects on its own', { skip: pySkip }, async () => {
    const before = await counters()
    await setFaults({ disconnect: { after: 1 } })
    const results = await pymodbus([READ, READ, READ])
    assert.deepEqual(results[0]!.registers, [7])
    assert.match(results[1]!.error, /closed/i)
    assert.deepEqual(results[2]!.registers, [7])
    assert.deepEqual((await t.api('GET', FAULTS)).body, { value: {} }, 'a disconnect happens once')
    assert.equal((await counters()).fault_disconnects - before.fault_disconnects, 1)
  })

  it('disconnect now: a polling mbpoll loses its connection (it does not reconnect); a new one is served', { skip: mbSkip }, async () => {
    const asked = (await counters()).requests
    const polling = run(MBPOLL, ['-m', 'tcp', '-p', String(port), '-a', '1', '-0', '-o', '1', '-l', '100', '-r', '0', '-c', '1', '-t', '4', '127.0.0.1'], {
      timeoutMs: 2500,
    })
    const client = await TestClient.connect(port)
    assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 1 })), [7])
    // mbpoll is connected and polling once it has asked too.
    await eventually(async () => (await counters()).requests >= asked + 2)
    await setFaults({ disconnect: true })
    await client.closed
    const { stderr } = await polling
    assert.match(stderr, /Connection reset by peer|Broken pipe/)
    assert.equal(mbpollValue((await mbpoll()).stdout), '7')
  })

  it('the event stream carries the faults in force and their counters', async () => {
    const abort = new AbortController()
    const res = await fetch(`${t.url}/api/v3/events?hz=20`, { headers: { authorization: `Bearer ${TEST_KEY}` }, signal: abort.signal })
    assert.equal(res.status, 200)
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    let text = ''
    const waitFor = async (pattern: RegExp): Promise<void> => {
      const deadline = Date.now() + 10_000
      while (!pattern.test(text)) {
        assert.ok(Date.now() < deadline, `no ${pattern} in the stream`)
        const { value, done } = await reader.read()
        if (done) break
        text += value
      }
    }
    try {
      await waitFor(/"active_faults":""/)
      await setFaults({ no_response: true })
      await waitFor(/"active_faults":"no_response"/)
      const client = await TestClient.connect(port)
      await assert.rejects(client.request({ fc: 3, address: 0, quantity: 1 }, { timeoutMs: 200 }))
      client.close()
      const swallowed = (await counters()).fault_no_responses
      await waitFor(new RegExp(`"fault_no_responses":${swallowed}\\b`))
    } finally {
      abort.abort()
      await setFaults({})
    }
  })

  it('fuzz (seeded): random faults values answer 200 or 422, never more, and the server keeps serving Modbus', async () => {
    const random = generator(20260117)
    const pick = <T>(xs: readonly T[]): T => random.pick(xs)
    const scalar = (): unknown => pick([0, 1, -1, 2.5, 1e9, 65536, 'x', true, false, null, [], {}, [0, 9], [[0, 9]], [[9, 0]], { every: 2 }])
    const selector = (): Record<string, unknown> => {
      const s: Record<string, unknown> = {}
      if (random.int(3) === 0) s.functions = pick([[3], [1, 2, 3, 4], [], [0], [200], 'x'])
      if (random.int(3) === 0) s.addresses = pick([[[0, 9]], [0], [[9, 0]], [[0, 70000]], [], 'x'])
      if (random.int(3) === 0) s.every = pick([1, 2, 0, -1, 1.5])
      if (random.int(3) === 0) s.probability = pick([0, 0.5, 1, 2, -0.1])
      if (random.int(8) === 0) s[pick(['bogus', 'code', 'kind'])] = scalar()
      return s
    }
    const generators: Record<string, () => unknown> = {
      response_delay: () => pick([0, 0.05, -1, 4000, 'x', { seconds: 0.05, jitter: 0.05 }, { jitter: 1 }, { seconds: 0.01, ...selector() }]),
      exception: () => (random.int(5) === 0 ? scalar() : { code: pick([1, 2, 4, 6, 11, 0, 256, 'x']), ...selector() }),
      no_response: () => (random.int(3) === 0 ? scalar() : selector()),
      corrupt: () => (random.int(5) === 0 ? scalar() : { kind: pick(['transaction_id', 'length', 'junk', 'crc', 1]), ...selector() }),
      split_frames: () => (random.int(3) === 0 ? scalar() : { parts: pick([2, 3, 64, 1, 65]), gap: pick([0, 0.01, -1, 11]), ...selector() }),
      disconnect: () => (random.int(3) === 0 ? scalar() : { after: pick([0, 1, 5, -1, 'x']) }),
      clear_after: () => (random.int(3) === 0 ? scalar() : pick([{ requests: 1 }, { seconds: 0.05 }, {}, { requests: 0 }, { seconds: -1 }])),
      seed: () => pick([1, 0, -1, 2 ** 33, 1.5, 'x']),
      bogus: () => scalar(),
    }
    const statuses = new Map<number, number>()
    const client = await TestClient.connect(port)
    for (let i = 0; i < 80; i++) {
      let value: unknown
      if (random.int(10) === 0) value = scalar()
      else {
        const faults: Record<string, unknown> = {}
        for (const [key, make] of Object.entries(generators)) if (random.int(key === 'bogus' ? 12 : 4) === 0) faults[key] = make()
        value = faults
      }
      const res = await t.api('PUT', FAULTS, { value })
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      assert.ok(res.status === 200 || res.status === 422, `${JSON.stringify(value)} answered ${res.status}: ${JSON.stringify(res.body)}`)
      if (res.status === 422) assert.ok(res.body.error.details.every((d: { path: string }) => d.path === 'value' || d.path.startsWith('value.')))
      // A request under whatever faults are set: any answer, a time-out or a closed connection are all fine.
      if (i % 8 === 0) await client.request({ fc: 3, address: 0, quantity: 1 }, { timeoutMs: 100 }).catch(() => undefined)
    }
    client.close()
    assert.ok((statuses.get(200) ?? 0) > 5 && (statuses.get(422) ?? 0) > 5, JSON.stringify([...statuses]))
    await setFaults({})
    const fresh = await TestClient.connect(port)
    assert.deepEqual(registersOf(await fresh.request({ fc: 3, address: 0, quantity: 1 })), [7])
    fresh.close()
    assert.equal((await t.api('GET', '/health')).status, 200)
  })
})
