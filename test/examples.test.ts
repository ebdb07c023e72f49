import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { EXAMPLE_EXTENSIONS, EXAMPLE_SYSTEM, startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

const ROOT = new URL('..', import.meta.url).pathname

/** Runs a command without blocking this process's event loop (the server lives in it). */
function run(command: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, output: `${stdout}${stderr}` })
    })
  })
}

// The client examples run the seed's flow against the example system. They can share one server:
// each changes the structure and then loads its snapshot back, leaving the system as it found it.
describe('the runnable client examples work against the example system', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ config: { system: EXAMPLE_SYSTEM, extensions: [EXAMPLE_EXTENSIONS] } })
  })
  after(async () => t.close())

  it('examples/clients/seed-flow.ts (TypeScript client)', async () => {
    const res = await run(process.execPath, ['--import', 'tsx', 'examples/clients/seed-flow.ts'], { MIMIC_URL: t.url, MIMIC_PRODUCT_KEY: TEST_KEY })
    assert.equal(res.code, 0, res.output)
    assert.match(res.output, /Modbus/i)
  })

  it('examples/clients/seed_flow.py (Python client)', async () => {
    const res = await run('python3', ['examples/clients/seed_flow.py'], { MIMIC_URL: t.url, MIMIC_PRODUCT_KEY: TEST_KEY, PYTHONPATH: `${ROOT}python` })
    assert.equal(res.code, 0, res.output)
    assert.match(res.output, /Modbus/i)
  })
})
