import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { LineClient, udpQuery } from './helpers/line-client.js'
import { eventually, startTestServer, type TestServer } from './helpers/server.js'

const ROOT = new URL('..', import.meta.url).pathname
const SYSTEM = `${ROOT}examples/instruments/system.yaml`
const EXTENSIONS = `${ROOT}examples/instruments/extensions`
const PSU = '/api/v3/system/instances/psu'
const DMM = '/api/v3/system/instances/dmm'

function run(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, output: `${stdout}${stderr}` })
    })
  })
}

describe('ascii adapter: the example instruments over real sockets', () => {
  let t: TestServer
  let psuPort: number
  let dmmPort: number
  let psu: LineClient

  before(async () => {
    t = await startTestServer({ config: { system: SYSTEM, extensions: [EXTENSIONS] } })
    const prepared = await t.call('/api/v3/system', 'prepare')
    assert.equal(prepared.status, 200, JSON.stringify(prepared.body))
    psuPort = (await t.api('GET', `${PSU}/communication/ascii`)).body.port
    dmmPort = (await t.api('GET', `${DMM}/communication/ascii`)).body.port
    psu = await LineClient.connect(psuPort)
  })
  after(async () => {
    psu?.close()
    await t?.close()
  })

  it('listens on the first free ports from 5025 up, shown in the adapter node', async () => {
    const node = (await t.api('GET', `${PSU}/communication/ascii`)).body
    assert.equal(node.type, 'AsciiInstrument')
    assert.equal(node.state, 'RUNNING')
    assert.ok(psuPort >= 5025 && dmmPort > psuPort, `${psuPort} ${dmmPort}`)
    assert.equal(node.transport, 'tcp')
  })

  it('answers *IDN? from the model and instance names', async () => {
    assert.equal(await psu.query('*IDN?'), `Mimic,PowerSupply,psu,${(await t.api('GET', '/')).body.server_version}`)
  })

  it('sets a parameter with a command and reads it back over SCPI and HTTP', async () => {
    psu.send('SOUR:VOLT 5\n')
    assert.equal(await psu.query('SOUR:VOLT?'), '5.0')
    assert.equal((await t.api('GET', `${PSU}/attributes/voltage_setpoint`)).body.internal_value, 5)
    await t.api('PUT', `${PSU}/attributes/current_limit/attr/internal_value`, { value: 0.75 })
    assert.equal(await psu.query('source:current?'), '0.75')
  })

  it('answers the commands of a line in order, replies joined by ;', async () => {
    assert.equal(await psu.query('APPL 12,0.5;OUTP ON;APPL?;OUTP?;SOUR:VOLT?'), '"12.0,0.5";1;12.0')
  })

  it('an unknown command answers nothing and queues -113 for SYST:ERR?', async () => {
    psu.send('FOO:BAR 1\n')
    // The next line's reply is the first to come back: the unknown command had none.
    assert.equal(await psu.query('SYST:ERR?'), '-113,"Undefined header;FOO:BAR 1"')
    assert.equal(await psu.query('SYST:ERR?'), '0,"No error"')
  })

  it('a value that does not fit is an error and is not applied, in part or whole', async () => {
    psu.send('APPL 7,abc\n')
    psu.send('OUTP maybe\n')
    assert.match(await psu.query('SYST:ERR?'), /^-104,"Data type error;current_limit: could not convert string to float: 'abc'"$/)
    assert.match(await psu.query('SYST:ERR?'), /^-104,"Data type error;output: 'maybe' is not a bool/)
    assert.equal(await psu.query('APPL?'), '"12.0,0.5"')
    const attrs = (await t.api('GET', `${PSU}/attributes/voltage_setpoint`)).body
    assert.equal(attrs.internal_value, 12)
  })

  it("the meter's reading follows the supply with noise as the simulation runs", async () => {
    psu.send('APPL 5,0.2;OUTP ON\n')
    assert.equal(await psu.query('*OPC?'), '1')
    await t.call('/api/v3/system', 'run', { steps: 2 })
    // 5 V into 10 ohm wants 0.5 A: the 0.2 A limit holds the supply at 2 V in constant current.
    assert.equal(await psu.query('MEAS:VOLT?;MEAS:CURR?;SOUR:MODE?'), '2.0;0.2;CC')
    const dmm = await LineClient.connect(dmmPort)
    try {
      const first = Number(await dmm.query('MEAS:VOLT:DC?'))
      await t.call('/api/v3/system', 'run', { steps: 1 })
      const second = Number(await dmm.query('measure:voltage?'))
      for (const reading of [first, second]) assert.ok(Math.abs(reading - 2) < 0.01, String(reading))
      assert.notEqual(first, second)
      assert.notEqual(first, 2)
      // An int attribute takes whole numbers only, as Python's int() does.
      dmm.send('VOLT:NPLC 1.5\n')
      assert.match(await dmm.query('SYST:ERR?'), /^-104,.*invalid literal for int\(\) with base 10: '1.5'/)
      assert.equal(await dmm.query('VOLT:NPLC 1;VOLT:NPLC?'), '1')
      assert.equal(await dmm.query('DISP:TEXT Hello, bench;DISP:TEXT?'), '"Hello, bench"')
    } finally {
      dmm.close()
    }
  })

  it('reads a command split across TCP segments and lines ending in \\r\\n', async () => {
    psu.send('SOUR:')
    await new Promise((resolve) => setTimeout(resolve, 50))
    psu.send('VOLT?')
    await new Promise((resolve) => setTimeout(resolve, 50))
    psu.send('\r\n*OPC?\r\n')
    assert.deepEqual(await psu.lines(2), ['5.0', '1'])
  })

  it('detach keeps the port open and answers nothing; attach answers again', async () => {
    assert.equal((await t.call(`${PSU}/communication/ascii`, 'detach')).status, 200)
    assert.equal((await t.api('GET', `${PSU}/communication/ascii`)).body.state, 'DETACHED')
    psu.send('OUTP OFF;*IDN?\n')
    await assert.rejects(psu.lines(1, 300), /no 1 lines/)
    assert.equal((await t.call(`${PSU}/communication/ascii`, 'attach')).status, 200)
    // The command sent while detached did nothing.
    assert.equal(await psu.query('OUTP?'), '1')
  })

  it('response_delay is settable while running, and checked', async () => {
    const path = `${PSU}/communication/ascii`
    assert.equal((await t.api('PUT', `${path}/attr/response_delay`, { value: 0.05 })).status, 200)
    assert.equal(await psu.query('*OPC?'), '1')
    const bad = await t.api('PUT', `${path}/attr/response_delay`, { value: -1 })
    assert.equal(bad.status, 422)
    assert.equal(bad.body.error.details[0].path, 'response_delay')
    assert.equal((await t.api('PUT', `${path}/attr/terminator`, { value: '\r' })).status >= 400, true)
    assert.equal((await t.api('PUT', `${path}/attr/response_delay`, { value: 0 })).status, 200)
    assert.equal((await t.api('GET', path)).body.response_delay, 0)
  })

  it('counts commands, queries, errors and clients, and shows the latest exchanges', async () => {
    const before = (await t.api('GET', `${PSU}/communication/ascii`)).body.counters
    const other = await LineClient.connect(psuPort)
    try {
      assert.equal(await other.query('SOUR:VOLT 1;SOUR:VOLT?;NOPE?'), '1.0')
      const node = (await t.api('GET', `${PSU}/communication/ascii`)).body
      assert.equal(node.counters.requests - before.requests, 3)
      assert.equal(node.counters.commands - before.commands, 1)
      assert.equal(node.counters.queries - before.queries, 2)
      assert.equal(node.counters.errors - before.errors, 1)
      assert.equal(node.counters.clients, 2)
      assert.deepEqual(node.error_queue, ['-113,"Undefined header;NOPE?"'])
      const last = node.recent.at(-1)
      assert.equal(last.command, 'SOUR:VOLT 1;SOUR:VOLT?;NOPE?')
      assert.equal(last.reply, '1.0')
      assert.match(last.client, /^127\.0\.0\.1:\d+$/)
    } finally {
      other.close()
    }
    await eventually(async () => (await t.api('GET', `${PSU}/communication/ascii`)).body.counters.clients === 1)
  })

  it('the event stream carries the counters', async () => {
    const controller = new AbortController()
    const res = await fetch(`${t.url}/api/v3/events?instances=psu`, { headers: { authorization: 'Bearer test-product-key' }, signal: controller.signal })
    const reader = res.body!.getReader()
    let text = ''
    while (!/"queries":\d+/.test(text)) text += new TextDecoder().decode((await reader.read()).value)
    controller.abort()
    assert.match(text, /"ascii":\{[^}]*"state":"RUNNING"/)
    assert.match(text, /"commands":\d+/)
    assert.match(text, /"clients":\d+/)
  })

  it('a Python client using only socket drives both instruments', async () => {
    const res = await run('python3', ['examples/instruments/scpi_client.py', '127.0.0.1', String(psuPort), String(dmmPort)])
    assert.equal(res.code, 0, res.output)
    assert.match(res.output, /^supply: Mimic,PowerSupply,psu,/m)
    assert.match(res.output, /^supply set to "5.0,0.2" output 1$/m)
    assert.match(res.output, /^bad value: -104,"Data type error;voltage_setpoint: could not convert string to float: 'fast'"$/m)
    assert.match(res.output, /^setpoint kept: 5.0$/m)
    assert.match(res.output, /^meter reads: -?\d/m)
  })

  it("PyVISA's raw-socket resource talks to it (Debian's python3-pyvisa-py)", async (ctx) => {
    const probe = await run('/usr/bin/python3', ['-c', 'import pyvisa, pyvisa_py'])
    if (probe.code !== 0) {
      if (process.env.CI) assert.fail('python3-pyvisa-py is not installed (.ci/run installs it)')
      ctx.skip('python3-pyvisa and python3-pyvisa-py are not installed')
      return
    }
    const res = await run('/usr/bin/python3', ['test/helpers/pyvisa_check.py', '127.0.0.1', String(psuPort)])
    assert.equal(res.code, 0, res.output)
    assert.match(res.output, /^IDN Mimic,PowerSupply,psu,/m)
    assert.match(res.output, /^APPL "3.3,0.5"$/m)
    assert.match(res.output, /^VOLT 3.3$/m)
    assert.match(res.output, /^ERR -104,"Data type error;current_limit: could not convert string to float: '1e9x'"$/m)
    assert.match(res.output, /^BOTH 3.3;0.5$/m)
    // NOPE is a command error (ESR bit 5) and waits in the error queue (STB bit 2).
    assert.match(res.output, /^COMMON \*ESR\? 32$/m)
    assert.match(res.output, /^COMMON \*STB\? 4$/m)
    assert.match(res.output, /^COMMON \*OPC\? 1$/m)
    assert.match(res.output, /^COMMON \*TST\? 0$/m)
    assert.match(res.output, /^COMMON \*ESE\? 0$/m)
    assert.match(res.output, /^COMMON \*SRE\? 0$/m)
    // *CLS empties both, *OPC sets bit 0 afterwards: not enabled by *ESE 60, so STB stays 0.
    assert.match(res.output, /^AFTER 1;0;60;32$/m)
  })
})

describe('ascii adapter: transports and terminators of a model defined over HTTP', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
    const model = {
      attributes: { level: { default: 1.5, type: 'float' }, name: { default: 'tank', type: 'str' } },
      communication: [
        { ascii: { port: 0, terminator: '\r\n', mappings: { 'LEVEL?': 'level', 'LEVEL {v}': { level: 'v' }, 'NAME?': 'name' } } },
        { ascii: { port: 0, transport: 'udp', mappings: { 'LEVEL?': '#out(level)', 'LEVEL {v}': { '#attr(level)': 'v', response: 'OK {v}' } } } },
      ],
    }
    assert.equal((await t.api('PUT', '/api/v3/system/models', { Tank: model })).status, 200)
    assert.equal((await t.api('PUT', '/api/v3/system/instances', { tank: 'Tank' })).status, 200)
    assert.equal((await t.call('/api/v3/system/instances/tank', 'prepare')).status, 200)
  })
  after(async () => t?.close())

  it('a \\r\\n terminator ends every reply, and \\n alone still ends a command', async () => {
    const port = (await t.api('GET', '/api/v3/system/instances/tank/communication/ascii')).body.port
    const client = await LineClient.connect(port)
    try {
      client.send('LEVEL?\r\nLEVEL 2\nLEVEL?;NAME?\r\n')
      assert.deepEqual(await client.lines(2), ['1.5\r', '2.0;tank\r'])
    } finally {
      client.close()
    }
  })

  it('UDP: each datagram is answered with one datagram', async () => {
    const node = (await t.api('GET', '/api/v3/system/instances/tank/communication/ascii_1')).body
    assert.equal(node.transport, 'udp')
    assert.equal(await udpQuery(node.port, 'LEVEL 3.25\n'), 'OK 3.25\n')
    assert.equal(await udpQuery(node.port, 'LEVEL?;*OPC?\nLEVEL?'), '3.25;1\n3.25\n')
    assert.equal((await t.api('GET', '/api/v3/system/instances/tank/attributes/level')).body.internal_value, 3.25)
    const counters = (await t.api('GET', '/api/v3/system/instances/tank/communication/ascii_1')).body.counters
    assert.equal(counters.clients, 2)
    assert.equal(counters.requests, 4)
  })

  it('a model whose mapping names a missing attribute is a 422 with the path', async () => {
    const res = await t.api('PUT', '/api/v3/system/models', { Bad: { attributes: { a: 0.0 }, communication: { ascii: { mappings: { 'B?': '#out(b)' } } } } })
    assert.equal(res.status, 422)
    assert.deepEqual(
      res.body.error.details.map((d: { path: string }) => d.path),
      ['communication.ascii.mappings.B?'],
    )
  })

  it('a port another adapter serves is a conflict, and that adapter keeps serving', async () => {
    const port = (await t.api('GET', '/api/v3/system/instances/tank/communication/ascii')).body.port
    const model = { attributes: { x: 0.0 }, communication: { ascii: { port, mappings: { 'X?': 'x' } } } }
    assert.equal((await t.api('PUT', '/api/v3/system/models', { Clash: model })).status, 200)
    assert.equal((await t.api('PUT', '/api/v3/system/instances', { clash: 'Clash' })).status, 200)
    const res = await t.call('/api/v3/system/instances/clash', 'prepare')
    assert.equal(res.status, 409)
    assert.match(res.body.error.message, /already served by adapter 'tank.ascii'/)
    const client = await LineClient.connect(port)
    try {
      assert.equal(await client.query('NAME?'), 'tank\r')
    } finally {
      client.close()
    }
  })
})
