import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { connect } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { parse } from 'yaml'
import { serveProcess, type ServerProcess } from './helpers/process.js'
import { FIXTURES } from './protocols/fixtures.js'
import { eventually, startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

// GET /metrics: what a Prometheus scraping Mimic sees after a client used it, checked by
// Prometheus' own promtool when the machine has it (CI installs Debian's prometheus).
const SYS = '/api/v3/system'
const PROMTOOL = '/usr/bin/promtool'

const METER = `
attributes:
  power: { default: 1500.0, type: float }
actions:
  - function: $out(power)
    call: $in(power) + 1.0
communication:
  - modbus_slave:
      host: 127.0.0.1
      port: 0
      mapping:
        power: { address: [0, 1], group: h_r, type: float }
`
const PY_MODEL = `
attributes:
  level: { default: 0.0, type: float }
import:
  counter.py:
    class: Counter
    attributes: { level: { property: level } }
    methods: { run: tick }
`
const COUNTER_PY = `
from mimic_sdk import MimicComponent


class Counter(MimicComponent):
    def __init__(self):
        self.level = 0.0

    def tick(self):
        self.level += 1.0
`

/** The value of one series of a scrape, by its name and labels as written. */
function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1))
  return undefined
}

/** Reads holding registers 0-1 `times` times; answers how many came back as exceptions. */
async function modbusReads(port: number, times: number): Promise<number> {
  const socket = connect(port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  let exceptions = 0
  try {
    for (let id = 1; id <= times; id++) {
      const answer = await new Promise<Buffer>((resolve) => {
        socket.once('data', resolve)
        socket.write(Buffer.from([0, id, 0, 0, 0, 6, 1, 3, 0, 0, 0, 2]))
      })
      if (answer[7] === 0x83) exceptions++
    }
  } finally {
    socket.destroy()
  }
  return exceptions
}

describe('GET /metrics', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ files: { 'counter.py': COUNTER_PY } })
    assert.equal((await t.api('PUT', `${SYS}/models`, { Meter: parse(METER), Counter: parse(PY_MODEL) })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { meter_1: 'Meter', counter_1: 'Counter' })).status, 200)
    await t.call(SYS, 'prepare')
  })
  after(async () => t?.close())

  it('asks for the product key as the API does', async () => {
    assert.equal((await fetch(`${t.url}/metrics`)).status, 401)
    assert.equal((await fetch(`${t.url}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status, 401)
  })

  it('counts steps, HTTP answers, Modbus requests and injected faults, Python workers and the process', async () => {
    await t.call(SYS, 'run', { steps: 7, dt: 1.0 })
    for (let i = 0; i < 3; i++) await t.api('GET', `${SYS}/instances/meter_1/attributes/power/attr/internal_value`)
    await t.api('GET', `${SYS}/instances/nope`)
    const port = (await t.api('GET', `${SYS}/instances/meter_1/communication/modbus_slave`)).body.port as number
    await t.api('PUT', `${SYS}/instances/meter_1/communication/modbus_slave/attr/faults`, { value: { exception: { code: 6, every: 2 } } })
    assert.equal(await modbusReads(port, 6), 3)

    const res = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${TEST_KEY}` } })
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
    const text = await res.text()
    assert.equal(sample(text, 'mimic_steps_total'), 7)
    assert.ok((sample(text, 'mimic_step_duration_seconds_count') ?? 0) >= 1, 'step durations observed')
    // Both HTTP paths count: node:http and the fast lane answer the tree under one route.
    assert.ok((sample(text, 'mimic_http_requests_total{route="/api/v3/system/*",method="GET",status="200"}') ?? 0) >= 4)
    assert.ok((sample(text, 'mimic_http_requests_total{route="/api/v3/system/*",method="GET",status="404"}') ?? 0) >= 1)
    assert.ok((sample(text, 'mimic_http_request_duration_seconds_count{route="/api/v3/system/*",method="GET"}') ?? 0) >= 5)
    // A method call is answered after a promise: counted and timed when its answer is made.
    assert.ok((sample(text, 'mimic_http_requests_total{route="/api/v3/system/*",method="POST",status="200"}') ?? 0) >= 2, 'prepare and run')
    assert.ok((sample(text, 'mimic_http_request_duration_seconds_count{route="/api/v3/system/*",method="POST"}') ?? 0) >= 2)
    const meter = 'instance="meter_1",adapter="modbus_slave",kind="modbus_slave"'
    assert.equal(sample(text, `mimic_adapter_requests_total{${meter}}`), 6)
    assert.equal(sample(text, `mimic_adapter_faults_injected_total{${meter},fault="exceptions"}`), 3)
    assert.equal(sample(text, 'mimic_instances{state="PREPARED"}'), 2)
    assert.equal(sample(text, 'mimic_python_workers'), 1)
    assert.ok((sample(text, 'mimic_python_requests_total') ?? 0) >= 2, 'load and steps went to the worker')
    assert.ok((sample(text, 'process_cpu_seconds_total') ?? 0) > 0)
    assert.ok(sample(text, 'nodejs_eventloop_lag_seconds') !== undefined)

    if (existsSync(PROMTOOL) || process.env.CI) {
      const check = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' })
      assert.equal(check.status, 0, `promtool check metrics:\n${check.stdout}${check.stderr}`)
    }
  })
})

describe('GET /metrics with every served protocol in use', () => {
  // One instance per case of the protocols' conformance suite (test/protocols/fixtures.ts), each
  // read once by a real client of its protocol: the scrape must still satisfy promtool and show
  // every adapter's requests.
  const cases = Object.values(FIXTURES).flat()
  let t: TestServer
  before(async () => {
    t = await startTestServer()
    const models = Object.fromEntries(
      cases.map((fixture, i) => [`Dev${i}`, { attributes: { level: { default: 7, type: 'int' } }, communication: [{ [fixture.kind]: fixture.settings(0) }] }]),
    )
    assert.equal((await t.api('PUT', `${SYS}/models`, models)).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, Object.fromEntries(cases.map((_, i) => [`dev_${i}`, `Dev${i}`])))).status, 200)
    const prepared = await t.call(SYS, 'prepare')
    assert.equal(prepared.status, 200, JSON.stringify(prepared.body))
  })
  after(async () => {
    for (const fixture of cases) await fixture.close?.()
    await t?.close()
  })

  it(`promtool accepts the scrape after a modbus_master and ${cases.length} adapters of ${Object.values(FIXTURES).filter((f) => f.length).length} kinds answered a client`, async () => {
    await t.call(SYS, 'run', { steps: 3 })
    for (const [i, fixture] of cases.entries()) {
      const instance = `dev_${i}`
      const node = (await t.api('GET', `${SYS}/instances/${instance}/communication/${fixture.kind}`)).body as Record<string, any>
      assert.equal(await fixture.probe({ t, instance, port: node.port as number, node }), 7, `${fixture.label} read through its protocol`)
    }
    // And a modbus_master (a client, so no fixture of its own there) polling the first Modbus device.
    const device = cases.findIndex((fixture) => fixture.kind === 'modbus_slave')
    const port = (await t.api('GET', `${SYS}/instances/dev_${device}/communication/modbus_slave`)).body.port as number
    const master = { host: '127.0.0.1', port, poll_interval: 0.1, bindings: [{ area: 'h_r', address: 0, codec: 'uint_16', attribute: 'mirrored' }] }
    const Master = { attributes: { mirrored: { default: 0, type: 'int' } }, communication: [{ modbus_master: master }] }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Master })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { master: 'Master' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/master`, 'start')).status, 200)
    await eventually(async () => (await t.api('GET', `${SYS}/instances/master/attributes/mirrored`)).body.internal_value === 7, 10_000)

    const text = await (await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${TEST_KEY}` } })).text()
    assert.ok((sample(text, 'mimic_adapter_requests_total{instance="master",adapter="modbus_master",kind="modbus_master"}') ?? 0) >= 1)
    for (const [i, fixture] of cases.entries())
      assert.ok(
        (sample(text, `mimic_adapter_requests_total{instance="dev_${i}",adapter="${fixture.kind}",kind="${fixture.kind}"}`) ?? 0) >= 1,
        `${fixture.label} counted in mimic_adapter_requests_total`,
      )
    if (existsSync(PROMTOOL) || process.env.CI) {
      const check = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' })
      assert.equal(check.status, 0, `promtool check metrics:\n${check.stdout}${check.stderr}`)
    }
  })
})

describe('--metrics', () => {
  let servers: ServerProcess[] = []
  after(async () => {
    for (const s of servers) await s.stop('SIGTERM')
    servers = []
  })

  it('open answers without the key; off serves no /metrics', async () => {
    const open = await serveProcess(['--metrics', 'open', '--snapshots-mode', 'memory'])
    servers.push(open)
    const res = await fetch(`${open.url}/metrics`)
    assert.equal(res.status, 200)
    assert.match(await res.text(), /^# HELP /m)
    const off = await serveProcess(['--snapshots-mode', 'memory'], { MIMIC_METRICS: 'off' })
    servers.push(off)
    assert.equal((await fetch(`${off.url}/metrics`, { headers: { authorization: `Bearer ${TEST_KEY}` } })).status, 404)
  })
})
