import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { test } from 'node:test'

const ROOT = new URL('..', import.meta.url).pathname

/** Runs the Python SDK's unittest suite with one interpreter; its own output is shown on failure. */
function unittest(python: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(python, ['-m', 'unittest', 'discover', '-s', 'python/tests', '-t', 'python'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => (output += d))
    child.on('error', (err) => resolve({ code: -1, output: String(err) }))
    child.on('close', (code) => resolve({ code, output }))
  })
}

for (const python of ['python3', '/usr/bin/python3']) {
  test(`Python SDK unittest suite passes on ${python}`, async (t) => {
    const { code, output } = await unittest(python)
    if (code === -1 && python !== 'python3' && !process.env.CI) return t.skip(`${python} is not installed`)
    const ran = /Ran (\d+) tests?/.exec(output)
    t.diagnostic(ran ? `${ran[1]} Python tests` : 'no Python test count found')
    assert.equal(code, 0, output)
    assert.ok(ran && Number(ran[1]) > 0, `the suite ran tests:\n${output}`)
  })
}
