// mimic capture modbus (docs/capture.md) against a pymodbus device whose registers change
// (test/capture-device.py, Debian's python3-pymodbus for /usr/bin/python3): the captured model
// served by Mimic answers a pymodbus client with the recorded values at each recorded time of the
// simulated clock, played at 1x and at 10x.
import assert from 'node:assert/strict'
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import { runCli } from '../src/cli.js'
import { eventually, freePort, startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const PYTHON = '/usr/bin/python3'
const DEVICE = fileURLToPath(new URL('./capture-device.py', import.meta.url))
const MISSING = `pymodbus is missing for ${PYTHON}: install Debian's python3-pymodbus (apt-get install python3-pymodbus)`

/** Reads hr 0-3, ir 0-1 and coils 0-1 of 127.0.0.1:`port` with pymodbus (in a child process: the server runs in this one). */
async function readClone(port: number): Promise<{ hr: number[]; ir: number[]; co: boolean[] }> {
  const script = `
import json
from pymodbus.client import ModbusTcpClient
c = ModbusTcpClient("127.0.0.1", port=${port}, timeout=2, retries=0)
assert c.connect(), "cannot connect"
hr = c.read_holding_registers(0, 4, slave=1)
ir = c.read_input_registers(0, 2, slave=1)
co = c.read_coils(0, 2, slave=1)
assert not hr.isError() and not ir.isError() and not co.isError(), (hr, ir, co)
print(json.dumps({"hr": hr.registers, "ir": ir.registers, "co": co.bits[:2]}))
c.close()
`
  const out = await new Promise<string>((resolve, reject) =>
    execFile(PYTHON, ['-c', script], { encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(/No module named 'pymodbus'|ENOENT/.test(`${stderr}${error.message}`) ? MISSING : `pymodbus failed: ${stderr}`))
      else resolve(stdout)
    }),
  )
  return JSON.parse(out.trim().split('\n').pop()!)
}

/** The register words a row of the CSV stands for: hr_0 a float, hr_2 and hr_3 uint_16, ir_0 uint_16, ir_1 int_16, coils. */
function wordsOf(row: Record<string, string>): { hr: number[]; ir: number[]; co: boolean[] } {
  const f = Buffer.alloc(4)
  f.writeFloatBE(Number(row.hr_0))
  return {
    hr: [f.readUInt16BE(0), f.readUInt16BE(2), Number(row.hr_2), Number(row.hr_3)],
    ir: [Number(row.ir_0), Number(row.ir_1) & 0xffff],
    co: [row.co_0 === 'true', row.co_1 === 'true'],
  }
}

describe('mimic capture modbus', () => {
  let dir: string
  let device: ChildProcess | undefined
  let t: TestServer | undefined
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-capture-'))
  })
  after(async () => {
    device?.kill()
    await t?.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('captures a changing device; the clone answers the recorded values on the simulated clock at 1x and 10x', async () => {
    const devicePort = await freePort()
    device = spawn(PYTHON, [DEVICE, String(devicePort)], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    device.stderr!.on('data', (chunk) => (stderr += String(chunk)))
    const exited = new Promise<number | null>((resolve) => device!.once('exit', resolve))
    device.once('error', () => {})
    await Promise.race([
      eventually(
        () =>
          new Promise<boolean>((resolve) => {
            const socket = connect(devicePort, '127.0.0.1')
            socket.once('connect', () => (socket.destroy(), resolve(true)))
            socket.once('error', () => resolve(false))
          }),
        20_000,
        100,
      ),
      exited.then((code) => {
        throw new Error(/No module named 'pymodbus'/.test(stderr) || code === null ? MISSING : `the device exited (${code}): ${stderr}`)
      }),
    ])

    const out = join(dir, 'clone')
    await runCli([
      'node',
      'mimic',
      'capture',
      'modbus',
      '--host',
      '127.0.0.1',
      '--port',
      String(devicePort),
      '--ranges',
      'hr:0-3,ir:0-1,co:0-1',
      '--duration',
      '3s',
      '--interval',
      '0.5s',
      '--name',
      'Dev',
      '--out',
      out,
    ])
    device.kill()
    device = undefined

    const lines = (await readFile(join(out, 'Dev.csv'), 'utf8')).trim().split('\n')
    const header = lines[0]!.split(',')
    assert.deepEqual(header, ['time', 'hr_0', 'hr_2', 'hr_3', 'ir_0', 'ir_1', 'co_0', 'co_1'], 'a float on hr 0-1, an int_16 on ir 1, the rest as read')
    const rows = lines.slice(1).map((l) => Object.fromEntries(l.split(',').map((v, i) => [header[i]!, v])))
    assert.ok(rows.length >= 5, `${rows.length} samples`)
    assert.ok(new Set(rows.map((r) => r.hr_2)).size > 1, 'the registers changed while they were read')
    const model = parse(await readFile(join(out, 'Dev.yaml'), 'utf8')) as { Dev: Record<string, any> }
    assert.equal(model.Dev.communication[0].modbus_slave.mapping.ir_1.type, 'int_16')

    // Served with the capture directory as the extension directory, on ports of the OS's choice.
    t = await startTestServer({ config: { extensions: [out] } })
    const clone = (speed: number): Record<string, any> => {
      const definition = structuredClone(model.Dev)
      definition.communication[0].modbus_slave.port = 0
      definition.actions[0].speed = speed
      return definition
    }
    const defined = await t.api('PUT', `${SYS}/models`, { Dev: clone(1), Dev10: clone(10) })
    assert.equal(defined.status, 200, JSON.stringify(defined.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { dev_1: 'Dev', dev_10: 'Dev10' })).status, 200)
    assert.equal((await t.call(SYS, 'prepare')).status, 200)
    for (const [instance, speed] of [
      ['dev_1', 1],
      ['dev_10', 10],
    ] as const) {
      const port = (await t.api('GET', `${SYS}/instances/${instance}/communication/modbus_slave`)).body.port as number
      for (const row of rows) {
        // The simulated time at which this row plays: its recorded time, divided by the speed.
        assert.equal((await t.api('PUT', `${SYS}/instances/${instance}/timer/attr/time`, { value: Number(row.time) / speed })).status, 200)
        assert.equal((await t.call(`${SYS}/instances/${instance}`, 'run')).status, 200)
        assert.deepEqual(await readClone(port), wordsOf(row), `${instance} at file time ${row.time}`)
      }
    }
  })
})
