// The ascii adapter's serial transport against PyVISA with pyvisa-py (Debian python3-pyvisa,
// python3-pyvisa-py, python3-serial): the instrument on one end of a pseudo-terminal pair made
// with socat, PyVISA on the other as ASRL/dev/pts/N::INSTR, answering *IDN?, a measurement and a
// setting with the same mappings as the TCP transport.
import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { instrumentModel, type PyvisaAnswers } from './helpers/instrument-model.js'
import { ptyPair, requirePeer, type PtyPair } from './helpers/pty.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const SCRIPT = join(import.meta.dirname, 'helpers', 'pyvisa_instr.py')

requirePeer('socat', ['-V'], 'socat')
if (spawnSync('/usr/bin/python3', ['-c', 'import pyvisa, pyvisa_py, serial']).status !== 0) {
  throw new Error('PyVISA over serial is missing: install the Debian packages python3-pyvisa, python3-pyvisa-py and python3-serial')
}

describe('ascii over a serial line (ASRL/dev/pts/N::INSTR), with PyVISA', () => {
  let t: TestServer
  let pair: PtyPair
  let instrumentSide: string
  let clientSide: string
  before(async () => {
    pair = await ptyPair()
    instrumentSide = pair.a
    clientSide = pair.b
    t = await startTestServer()
    const models = await t.api('PUT', `${SYS}/models`, {
      Dmm: instrumentModel({ transport: 'serial', device: instrumentSide, baudrate: 19200 }),
      Other: instrumentModel({ transport: 'serial', device: instrumentSide }),
      Missing: instrumentModel({ transport: 'serial', device: '/dev/no-such-tty' }),
    })
    assert.equal(models.status, 200, JSON.stringify(models.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { dmm: 'Dmm', other: 'Other', missing: 'Missing' })).status, 200)
    const prepared = await t.call(`${SYS}/instances/dmm`, 'prepare')
    assert.equal(prepared.status, 200, JSON.stringify(prepared.body))
  })
  after(async () => {
    await t?.close()
    await pair?.close()
  })

  it('the adapter node shows the line and its settings', async () => {
    const node = (await t.api('GET', `${SYS}/instances/dmm/communication/ascii`)).body
    assert.equal(node.state, 'RUNNING')
    assert.equal(node.transport, 'serial')
    assert.equal(node.device, instrumentSide)
    assert.equal(node.baudrate, 19200)
    assert.equal(node.parity, 'none')
    assert.equal(node.port, null)
  })

  it('PyVISA answers *IDN?, a measurement and a setting', async () => {
    const out = await new Promise<string>((resolve, reject) =>
      execFile('/usr/bin/python3', [SCRIPT, `ASRL${clientSide}::INSTR`, 'baud=19200'], { timeout: 60_000 }, (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
      ),
    )
    const answers = JSON.parse(out) as PyvisaAnswers
    assert.equal(answers.idn, 'ACME,DMM-1,0001,1.0')
    assert.equal(answers.voltage, 12.5)
    assert.equal(Number(answers.setpoint), 4.5)
    assert.match(answers.error, /^-113,"Undefined header/)
    assert.equal((await t.api('GET', `${SYS}/instances/dmm/attributes/setpoint`)).body.internal_value, 4.5)
  })

  it('a device another adapter serves is a 409 naming it; a missing device is a 409 naming the path', async () => {
    const busy = await t.call(`${SYS}/instances/other`, 'prepare')
    assert.equal(busy.status, 409, JSON.stringify(busy.body))
    assert.match(JSON.stringify(busy.body), new RegExp(`serial device ${instrumentSide} is already served by adapter 'dmm\\.ascii'`))
    const missing = await t.call(`${SYS}/instances/missing`, 'prepare')
    assert.equal(missing.status, 409, JSON.stringify(missing.body))
    assert.match(JSON.stringify(missing.body), /no-such-tty: no such device/)
  })
})
