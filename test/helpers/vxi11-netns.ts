// Run by test/ascii-vxi11.test.ts inside a network namespace of its own (`unshare -rn`), where this
// process may bind port 111 and no other program holds it: a real Mimic server serves a VXI-11
// instrument with its port mapper on 111, and PyVISA (pyvisa-py, unchanged) opens
// TCPIP::127.0.0.1::INSTR. Prints one JSON line: PyVISA's answers and the attribute written.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { instrumentModel } from './instrument-model.js'
import { startTestServer } from './server.js'

const SYS = '/api/v3/system'
const t = await startTestServer()
try {
  await t.api('PUT', `${SYS}/models`, { Dmm: instrumentModel({ transport: 'vxi11', portmapper_port: 111 }) })
  await t.api('PUT', `${SYS}/instances`, { dmm: 'Dmm' })
  const prepared = await t.call(`${SYS}/instances/dmm`, 'prepare')
  if (prepared.status !== 200) throw new Error(`prepare: ${JSON.stringify(prepared.body)}`)
  const node = (await t.api('GET', `${SYS}/instances/dmm/communication/ascii`)).body
  const script = join(import.meta.dirname, 'pyvisa_instr.py')
  const answers = await new Promise<string>((resolve, reject) =>
    execFile('/usr/bin/python3', [script, 'TCPIP::127.0.0.1::INSTR'], { timeout: 30_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
    ),
  )
  const setpoint = (await t.api('GET', `${SYS}/instances/dmm/attributes/setpoint`)).body.internal_value
  process.stdout.write(JSON.stringify({ answers: JSON.parse(answers), setpoint, portmapper_port: node.portmapper_port }) + '\n')
} finally {
  await t.close()
}
