// Traffic traces (docs/traces.md) through a running server: a pymodbus client (Debian's
// python3-pymodbus for /usr/bin/python3) writes with FC 16 and reads with FC 3; the write arrives
// on the event stream as a `protocol.write` event, the adapter's `tail` shows both exchanges, and
// /metrics has the adapter's latency histogram.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { get as httpGet, type IncomingMessage } from 'node:http'
import { connect } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { parse } from 'yaml'
import { SseParser, type SseEvent } from '../ui/src/sse-parser.ts'
import { startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const PYTHON = '/usr/bin/python3'

const METER = `
attributes:
  setpoint: { default: 0.0, type: float }
  mode: { default: 0, type: int }
communication:
  - modbus_slave:
      host: 127.0.0.1
      port: 0
      unit_id: 3
      mapping:
        setpoint: { address: [10, 11], group: h_r, type: float }
        mode: { address: 12, group: h_r, type: uint_16 }
`

/** Runs a pymodbus script against 127.0.0.1:`port` (in a child process: the server runs in this one); its last line of output is JSON. */
async function pymodbus(port: number, body: string): Promise<unknown> {
  const script = `
import json, struct
from pymodbus.client import ModbusTcpClient
c = ModbusTcpClient("127.0.0.1", port=${port}, timeout=2, retries=0)
assert c.connect(), "cannot connect"
${body}
c.close()
`
  const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    execFile(PYTHON, ['-c', script], { encoding: 'utf8' }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr: stderr || String(error?.message ?? '') }),
    ),
  )
  if (run.code !== 0) {
    const missing = /No module named 'pymodbus'|ENOENT/.test(run.stderr)
    throw new Error(
      missing ? `pymodbus is missing for ${PYTHON}: install Debian's python3-pymodbus (apt-get install python3-pymodbus)` : `pymodbus failed:\n${run.stderr}`,
    )
  }
  return JSON.parse(run.stdout.trim().split('\n').pop()!)
}

/** An event stream that hands each `protocol.write` event to whoever waits for one. */
class WriteEvents {
  readonly #abort = new AbortController()
  readonly #seen: SseEvent[] = []
  #waiters: Array<(e: SseEvent) => void> = []

  static async open(url: string): Promise<WriteEvents> {
    const events = new WriteEvents()
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpGet(
        `${url}/api/v3/events?hz=20`,
        { agent: false, headers: { authorization: `Bearer ${TEST_KEY}` }, signal: events.#abort.signal },
        resolve,
      )
      req.once('error', reject)
    })
    assert.equal(res.statusCode, 200)
    const parser = new SseParser()
    res.setEncoding('utf8')
    res.on('data', (chunk: string) => {
      for (const e of parser.push(chunk)) {
        if (e.event !== 'protocol.write') continue
        const waiter = events.#waiters.shift()
        if (waiter) waiter(e)
        else events.#seen.push(e)
      }
    })
    res.on('error', () => {})
    return events
  }

  /** The next `protocol.write` event (one already received, or the next to come). */
  next(): Promise<Record<string, any>> {
    const ready = this.#seen.shift()
    if (ready) return Promise.resolve(JSON.parse(ready.data))
    return new Promise((resolve) => this.#waiters.push((e) => resolve(JSON.parse(e.data))))
  }

  close(): void {
    this.#abort.abort()
  }
}

describe('traffic traces', () => {
  let t: TestServer
  let port: number
  const adapter = `${SYS}/instances/meter_1/communication/modbus_slave`
  before(async () => {
    t = await startTestServer()
    assert.equal((await t.api('PUT', `${SYS}/models`, { Meter: parse(METER) })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { meter_1: 'Meter' })).status, 200)
    await t.call(SYS, 'prepare')
    port = (await t.api('GET', adapter)).body.port as number
  })
  after(async () => t?.close())

  it("a pymodbus FC 16 write is a protocol.write event with its values, and the trace's tail shows it", async () => {
    const events = await WriteEvents.open(t.url)
    try {
      // The stream has started once its first frame came; the event is awaited, not polled for.
      const written = events.next()
      const reply = await pymodbus(
        port,
        `
words = list(struct.unpack(">HH", struct.pack(">f", 21.5))) + [5]
r = c.write_registers(10, words, slave=3)
assert not r.isError(), r
r = c.read_holding_registers(10, 3, slave=3)
print(json.dumps(r.registers))
`,
      )
      assert.deepEqual(reply, [16812, 0, 5])
      const event = await written
      assert.equal(event.instance, 'meter_1')
      assert.equal(event.adapter, 'modbus_slave')
      assert.equal(event.kind, 'modbus_slave')
      assert.equal(event.operation, 'write')
      assert.equal(event.unit, 3)
      assert.equal(event.function, 16)
      assert.equal(event.address, 10)
      assert.equal(event.count, 3)
      assert.deepEqual(event.values, [16812, 0, 5])
      assert.deepEqual(event.attributes, { setpoint: 21.5, mode: 5 })
      assert.equal(typeof event.latency, 'number')
    } finally {
      events.close()
    }

    const tail = await t.call(adapter, 'tail', { limit: 10 })
    assert.equal(tail.status, 200, JSON.stringify(tail.body))
    const entries = tail.body.result as Array<Record<string, any>>
    assert.deepEqual(
      entries.map((e) => [e.function, e.operation, e.address, e.count, e.values]),
      [
        [16, 'write', 10, 3, [16812, 0, 5]],
        [3, 'read', 10, 3, [16812, 0, 5]],
      ],
    )
    assert.ok(entries.every((e) => e.error === undefined && e.unit === 3 && typeof e.latency === 'number' && typeof e.time === 'string'))
    const writes = (await t.call(adapter, 'tail', { function: 16 })).body.result as unknown[]
    assert.equal(writes.length, 1)
    const since = (await t.call(adapter, 'tail', { since: entries[0]!.seq })).body.result as Array<Record<string, any>>
    assert.deepEqual(
      since.map((e) => e.function),
      [3],
    )
  })

  it('an exception is in the trace with its name', async () => {
    const reply = await pymodbus(port, `r = c.read_holding_registers(100, 2, slave=3)\nprint(json.dumps(r.exception_code))`)
    assert.equal(reply, 2)
    const last = ((await t.call(adapter, 'tail', { limit: 1 })).body.result as Array<Record<string, any>>)[0]!
    assert.equal(last.function, 3)
    assert.equal(last.address, 100)
    assert.equal(last.exception, 2)
    assert.equal(last.error, 'ILLEGAL_DATA_ADDRESS')
  })

  it('tail refuses unknown arguments with a 422 naming them; trace_size bounds the ring', async () => {
    const bad = await t.call(adapter, 'tail', { limit: 0, colour: 'red' })
    assert.equal(bad.status, 422)
    const paths = (bad.body.error.details as Array<{ path: string }>).map((d) => d.path).sort()
    assert.deepEqual(paths, ['kwargs.colour', 'kwargs.limit'])
    assert.equal((await t.api('PUT', `${adapter}/attr/trace_size`, { value: 100_000 })).status, 422)
    assert.equal((await t.api('PUT', `${adapter}/attr/trace_size`, { value: 1 })).status, 200)
    assert.equal((await t.api('GET', adapter)).body.trace_size, 1)
    assert.equal(((await t.call(adapter, 'tail')).body.result as unknown[]).length, 1)
  })

  it('a text instrument: each command and its answer is in the trace; a setting command is a protocol.write event', async () => {
    const defined = await t.api('PUT', `${SYS}/models`, {
      Supply: {
        attributes: { setpoint: 0.0 },
        communication: [
          {
            ascii: {
              host: '127.0.0.1',
              port: 0,
              mappings: { 'VOLT {value}': { '#attr(setpoint)': 'value' }, 'VOLT?': '#attr(setpoint)' },
            },
          },
        ],
      },
    })
    assert.equal(defined.status, 200, JSON.stringify(defined.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { psu: 'Supply' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/psu`, 'prepare')).status, 200)
    const ascii = `${SYS}/instances/psu/communication/ascii`
    const asciiPort = (await t.api('GET', ascii)).body.port as number
    const events = await WriteEvents.open(t.url)
    try {
      const written = events.next()
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(asciiPort, '127.0.0.1', () => socket.write('VOLT 12.5\nVOLT?\n'))
        socket.setEncoding('utf8')
        socket.on('data', (text: string) => (socket.destroy(), resolve(text.trim())))
        socket.on('error', reject)
      })
      assert.equal(answer, '12.5')
      const event = await written
      assert.equal(event.instance, 'psu')
      assert.equal(event.command, 'VOLT 12.5')
      assert.deepEqual(event.attributes, { setpoint: 12.5 })
    } finally {
      events.close()
    }
    const entries = (await t.call(ascii, 'tail')).body.result as Array<Record<string, any>>
    assert.deepEqual(
      entries.map((e) => [e.operation, e.command, e.answer]),
      [
        ['command', 'VOLT 12.5', null],
        ['command', 'VOLT?', '12.5'],
      ],
    )
  })

  it('/metrics has the adapter latency histogram', async () => {
    const text = await (await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${TEST_KEY}` } })).text()
    const count = /^mimic_adapter_request_duration_seconds_count\{instance="meter_1",adapter="modbus_slave",kind="modbus_slave"\} (\d+)$/m.exec(text)
    assert.ok(count && Number(count[1]) >= 3, 'latencies observed')
    // Cumulative buckets, the last (+Inf) holding every answer.
    const series = 'instance="meter_1",adapter="modbus_slave",kind="modbus_slave"'
    const buckets = [...text.matchAll(/^mimic_adapter_request_duration_seconds_bucket\{le="([^"]+)",(.*)\} (\d+)$/gm)]
      .filter((m) => m[2] === series)
      .map((m) => [m[1], Number(m[3])] as const)
    assert.equal(buckets.at(-1)?.[0], '+Inf')
    assert.equal(buckets.at(-1)?.[1], Number(count[1]))
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]![1] >= buckets[i - 1]![1], `${buckets[i]![0]} below ${buckets[i - 1]![0]}`)
    // A deleted instance's series leave the scrape (the histogram does not grow with every name a client ever used).
    assert.equal((await t.api('DELETE', `${SYS}/instances/meter_1`)).status, 200)
    const after = await (await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${TEST_KEY}` } })).text()
    assert.doesNotMatch(after, /mimic_adapter_request_duration_seconds_count\{instance="meter_1"/)
  })
})
