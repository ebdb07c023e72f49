// The ascii adapter's vxi11 transport against PyVISA with pyvisa-py (Debian python3-pyvisa,
// python3-pyvisa-py): TCPIP::host::INSTR finds the core channel through the port mapper and
// answers *IDN?, a measurement and a setting. pyvisa-py asks the port mapper on 111 only, so
// one case sets its PMAP_PORT (the server's port mapper on a free port), and one runs the server
// with its port mapper on 111 inside a network namespace made for the test (`unshare -rn`), where
// PyVISA is used unchanged.
import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { instrumentModel, type PyvisaAnswers } from './helpers/instrument-model.js'
import { freePort, startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const SCRIPT = join(import.meta.dirname, 'helpers', 'pyvisa_instr.py')

const pyvisa = spawnSync('/usr/bin/python3', ['-c', 'import pyvisa, pyvisa_py'])
if (pyvisa.status !== 0) throw new Error('PyVISA is missing: install the Debian packages python3-pyvisa and python3-pyvisa-py')

function run(command: string, args: string[], timeout = 60_000): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(command, args, { timeout }, (error, stdout, stderr) =>
      error ? reject(new Error(`${command} ${args.join(' ')}: ${error.message}\n${stderr}`)) : resolve(stdout),
    ),
  )
}

function checkAnswers(answers: PyvisaAnswers): void {
  assert.equal(answers.idn, 'ACME,DMM-1,0001,1.0')
  assert.equal(answers.voltage, 12.5)
  assert.equal(Number(answers.setpoint), 4.5)
  assert.match(answers.error, /^-113,"Undefined header/)
  assert.equal(answers.stb_waiting! & 0x10, 0x10, 'MAV while an answer waits')
  assert.equal(answers.stb_cleared, 0, 'nothing waits after a device clear')
}

describe('ascii over VXI-11 (TCPIP::host::INSTR), with PyVISA', () => {
  let t: TestServer
  let mapper: number
  before(async () => {
    t = await startTestServer()
    mapper = await freePort()
    const models = await t.api('PUT', `${SYS}/models`, {
      Dmm: instrumentModel({ transport: 'vxi11', portmapper_port: mapper }),
      Dmm2: instrumentModel({ transport: 'vxi11', portmapper_port: mapper }),
    })
    assert.equal(models.status, 200, JSON.stringify(models.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { dmm: 'Dmm', dmm2: 'Dmm2' })).status, 200)
    const prepared = await t.call(`${SYS}/instances/dmm`, 'prepare')
    assert.equal(prepared.status, 200, JSON.stringify(prepared.body))
  })
  after(async () => t?.close())

  it('the adapter node shows the core channel and the port mapper; GET /health lists both', async () => {
    const node = (await t.api('GET', `${SYS}/instances/dmm/communication/ascii`)).body
    assert.equal(node.state, 'RUNNING')
    assert.equal(node.transport, 'vxi11')
    assert.equal(node.portmapper_port, mapper)
    assert.equal(node.device_name, 'inst0')
    assert.equal(typeof node.port, 'number')
    const health = (await t.api('GET', '/health')).body
    const ports = (health.listeners as Array<{ port: number; holder: string }>).filter((l) => /dmm\.ascii|'dmm/.test(l.holder)).map((l) => l.port)
    assert.deepEqual(ports.sort(), [node.port, mapper].sort(), JSON.stringify(health.listeners))
  })

  it('PyVISA (its port mapper port set to the server’s) answers *IDN?, a measurement and a setting', async () => {
    const answers = JSON.parse(await run('/usr/bin/python3', [SCRIPT, 'TCPIP::127.0.0.1::INSTR', `pmap=${mapper}`])) as PyvisaAnswers
    checkAnswers(answers)
    assert.equal((await t.api('GET', `${SYS}/instances/dmm/attributes/setpoint`)).body.internal_value, 4.5)
    const node = (await t.api('GET', `${SYS}/instances/dmm/communication/ascii`)).body
    assert.ok(node.counters.queries >= 4, JSON.stringify(node.counters))
  })

  it('a device name the instrument does not have is refused at open', async () => {
    await assert.rejects(run('/usr/bin/python3', [SCRIPT, 'TCPIP::127.0.0.1::gpib0,9::INSTR', `pmap=${mapper}`]), /error creating link: 3|VI_ERROR/)
  })

  it('a second instrument on the same host and port mapper is a 409 naming the first', async () => {
    const second = await t.call(`${SYS}/instances/dmm2`, 'prepare')
    assert.equal(second.status, 409, JSON.stringify(second.body))
    assert.match(JSON.stringify(second.body), /port mapper 127\.0\.0\.1:\d+ is already served by adapter 'dmm\.ascii'/)
  })
})

describe('ascii over VXI-11, port mapper on 111 in a network namespace, PyVISA unchanged', () => {
  it('TCPIP::127.0.0.1::INSTR answers *IDN?, a measurement and a setting; an instrument without portmapper_port takes 111, or runs without one when 111 is held', async () => {
    const probe = spawnSync('unshare', ['-rn', 'true'])
    if (probe.status !== 0)
      throw new Error(`unshare -rn fails here (${String(probe.stderr).trim()}): the test needs user and network namespaces (util-linux unshare, iproute2 ip)`)
    const helper = join(import.meta.dirname, 'helpers', 'vxi11-netns.ts')
    const out = await run('unshare', ['-rn', 'sh', '-c', `ip link set lo up && exec "${process.execPath}" --import tsx "${helper}"`], 120_000)
    const result = JSON.parse(out.trim().split('\n').pop()!) as {
      answers: PyvisaAnswers
      setpoint: number
      portmapper_port: number
      defaults: Record<string, unknown>
      warned: boolean
    }
    assert.equal(result.portmapper_port, 111)
    checkAnswers(result.answers)
    assert.equal(result.setpoint, 4.5)
    // No portmapper_port: 111 where this process may bind it, and no port mapper (with a warning) where another program holds it.
    assert.deepEqual(result.defaults, {
      free: { status: 200, state: 'RUNNING', portmapper_port: 111 },
      held: { status: 200, state: 'RUNNING', portmapper_port: null },
    })
    assert.equal(result.warned, true)
  })
})
