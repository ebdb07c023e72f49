// Run by test/ascii-vxi11.test.ts inside a network namespace of its own (`unshare -rn`), where this
// process may bind port 111 and no other program holds it: a real Mimic server serves a VXI-11
// instrument with its port mapper on 111, and PyVISA (pyvisa-py, unchanged) opens
// TCPIP::127.0.0.1::INSTR. Then an instrument that names no portmapper_port takes 111 (this
// process may bind it here), and one whose 111 another program holds runs without a port mapper.
// Prints one JSON line: PyVISA's answers, the attribute written and the port mappers taken.
import { execFile } from 'node:child_process'
import { createServer } from 'node:net'
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
  // 127.0.0.2: nothing holds 111 there. 127.0.0.3: another program holds it.
  const other = createServer()
  await new Promise<void>((resolve) => other.listen(111, '127.0.0.3', resolve))
  await t.api('PUT', `${SYS}/models`, {
    Free: instrumentModel({ transport: 'vxi11', host: '127.0.0.2' }),
    Held: instrumentModel({ transport: 'vxi11', host: '127.0.0.3' }),
  })
  await t.api('PUT', `${SYS}/instances`, { free: 'Free', held: 'Held' })
  const defaults: Record<string, unknown> = {}
  for (const name of ['free', 'held']) {
    const started = await t.call(`${SYS}/instances/${name}`, 'prepare')
    const doc = (await t.api('GET', `${SYS}/instances/${name}/communication/ascii`)).body
    defaults[name] = { status: started.status, state: doc.state, portmapper_port: doc.portmapper_port }
  }
  await new Promise((resolve) => other.close(resolve))
  const warned = t.logs.some((r) => String(r.msg).includes("VXI-11 instrument 'held.ascii' has no port mapper: port 111 on 127.0.0.3 is in use"))
  process.stdout.write(JSON.stringify({ answers: JSON.parse(answers), setpoint, portmapper_port: node.portmapper_port, defaults, warned }) + '\n')
} finally {
  await t.close()
}
