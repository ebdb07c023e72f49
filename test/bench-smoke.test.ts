import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'

// `npm run bench` is not part of `npm test`; this smoke run of every benchmark with tiny sizes
// is, so that the benchmarks cannot rot unnoticed. It asserts that each one still works end to
// end (servers, peers that are installed, load clients, the report), never how fast.
const RUN = new URL('../bench/run.mjs', import.meta.url).pathname

function runBench(args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [RUN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk))
  // SIGTERM lets run.mjs stop the servers it started before it exits.
  const timer = setTimeout(() => child.kill('SIGTERM'), timeoutMs)
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

describe('benchmarks (smoke run)', () => {
  // Twelve benchmarks of about 1-8 s each on a quiet machine (about 40 s in all); the limit leaves room for a busy one, below the runner's 240 s per file.
  it('runs every benchmark with tiny sizes and writes a report with a section for each', { timeout: 235_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mimic-bench-smoke-'))
    try {
      const out = join(dir, 'RESULTS.md')
      const { code, stdout, stderr } = await runBench(['--smoke', '--no-install', '--out', out], 225_000)
      assert.equal(code, 0, `bench/run.mjs --smoke failed:\n${stderr.slice(-4000)}`)
      assert.doesNotMatch(stdout, /FAILED/)
      for (const id of ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12']) {
        assert.match(stdout, new RegExp(`^${id} +\\| .+\\| smoke\\s*$`, 'm'), `no smoke row for benchmark ${id}:\n${stdout}`)
      }
      const report = await readFile(out, 'utf8')
      assert.match(report, /Smoke run/)
      for (const id of ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12']) assert.match(report, new RegExp(`^## ${id}\\. `, 'm'))
      assert.match(report, /\| cores \| \d+ \|/)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('refuses an unknown benchmark name with the list of known ones', async () => {
    const { code, stderr } = await runBench(['no-such-bench', '--smoke'], 20_000)
    assert.equal(code, 2)
    assert.match(stderr, /unknown benchmark no-such-bench; choose from 1\/python-step, 2\/http, 3\/modbus/)
  })
})
