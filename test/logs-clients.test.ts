import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { connect, MimicApiError, type MimicClient } from '../src/client/index.js'
import { startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

const BIN = new URL('../bin/mimic.js', import.meta.url).pathname
const PYTHON_DIR = new URL('../python', import.meta.url).pathname

const FILES: Record<string, string> = {
  'echo.py': `
class Echo:
    def say(self, text="hi"):
        print("echo:", text)
        return text
`,
}

/** Runs a command to its end without blocking this process (the server under test lives in it). */
function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk))
    child.on('error', reject)
    child.on('close', (status) => {
      clearTimeout(timer)
      resolve({ status, stdout, stderr })
    })
  })
}

describe('logs from the TypeScript client, the Python client and `mimic logs`', () => {
  let t: TestServer
  let sim: MimicClient
  before(async () => {
    t = await startTestServer({ files: FILES })
    sim = connect({ address: t.url, productKey: TEST_KEY })
    await sim.models.set('Echo', { attributes: {}, import: { 'echo.py': { class: 'Echo', methods: { say: 'say' } } } })
    await sim.instances.set('pump', 'Echo')
    await sim.instances.set('fan', 'Echo')
    await sim.instances.at('pump').prepare()
    await sim.instances.at('fan').prepare()
  })
  after(async () => await t?.close())

  it('TypeScript client: tail with filters, clear, follow', async () => {
    const pump = sim.instances.at('pump')
    await pump.call('say', { text: 'ts one' })
    const lines = await pump.logs.tail({ contains: 'ts one', level: 'info' })
    assert.equal(lines.length, 1)
    assert.equal(lines[0]!.instance, 'pump')
    assert.equal(lines[0]!.msg, 'echo: ts one')
    assert.deepEqual(await sim.instances.at('fan').logs.tail({ contains: 'ts one' }), [])
    assert.equal((await sim.logs.tail({ contains: 'ts one' })).length, 1)

    const failed = await pump.call('nope').catch((err: unknown) => err)
    assert.ok(failed instanceof MimicApiError)
    const fault = await pump.logs.tail({ contains: failed.correlationId! })
    assert.equal(fault.length, 1)
    assert.equal(fault[0]!.level, 'warn')

    assert.ok((await pump.logs.clear()) >= 2)
    assert.deepEqual(await pump.logs.tail(), [])

    const stop = new AbortController()
    const seen: string[] = []
    const following = (async () => {
      for await (const entry of pump.logs.follow({ intervalMs: 50, signal: stop.signal })) {
        seen.push(entry.msg)
        if (entry.msg === 'echo: ts followed') stop.abort()
      }
    })()
    await pump.call('say', { text: 'ts followed' })
    await following
    assert.deepEqual(seen, ['echo: ts followed'])
  })

  it('Python client: tail and clear through the generic node, follow()', async () => {
    await sim.instances.at('fan').call('say', { text: 'py line' })
    const script = join(t.dir, 'logs_client.py')
    await writeFile(
      script,
      `
import json, os
from mimic_sdk import client as mimic
sim = mimic.init(address=os.environ["MIMIC_URL"], product_key=os.environ["MIMIC_PRODUCT_KEY"])
logs = sim["instances"]["fan"]["logs"]
seen = {"tail": [e["msg"] for e in logs.tail(contains="py line")], "capacity": logs.capacity}
seen["by_position"] = [e["msg"] for e in logs.tail(5, "info", None, "py line")]
for entry in mimic.follow(logs, contains="py line", limit=1, interval=0.05):
    seen["followed"] = entry["msg"]
    break
seen["cleared"] = logs.clear()["cleared"] > 0
seen["after_clear"] = logs.tail()
print(json.dumps(seen))
`,
    )
    const res = await run('python3', [script], { ...process.env, PYTHONPATH: PYTHON_DIR, MIMIC_URL: t.url, MIMIC_PRODUCT_KEY: TEST_KEY })
    assert.equal(res.status, 0, res.stderr)
    const seen = JSON.parse(res.stdout.trim().split('\n').pop()!)
    assert.deepEqual(seen, {
      tail: ['echo: py line'],
      capacity: 10_000,
      by_position: ['echo: py line'],
      followed: 'echo: py line',
      cleared: true,
      after_clear: [],
    })
  })

  it('`mimic logs` prints records, filtered by instance and text, and --follow prints new ones', async () => {
    await sim.instances.at('pump').call('say', { text: 'cli line' })
    const env = { ...process.env, MIMIC_URL: t.url, MIMIC_PRODUCT_KEY: TEST_KEY }
    const res = await run(process.execPath, [BIN, 'logs', '--instance', 'pump', '--contains', 'cli line'], env)
    assert.equal(res.status, 0, res.stderr)
    assert.match(res.stdout, /INFO +\[pump stdout\] echo: cli line/)
    assert.equal(res.stdout.trim().split('\n').length, 1)

    const json = await run(process.execPath, [BIN, 'logs', '--instance', 'fan', '--contains', 'cli line', '--json'], env)
    assert.equal(json.status, 0, json.stderr)
    assert.equal(json.stdout.trim(), '', 'the line is not in the other instance')

    const bad = await run(process.execPath, [BIN, 'logs', '--level', 'loud'], env)
    assert.equal(bad.status, 1)
    assert.match(bad.stderr, /kwargs\.level/)

    const child = spawn(process.execPath, [BIN, 'logs', '--follow', '--instance', 'pump', '--json', '--limit', '1'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    const got = new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk
        if (out.includes('echo: cli second')) resolve()
      })
      child.on('exit', (code) => reject(new Error(`mimic logs --follow exited with ${code}: ${out}`)))
    })
    try {
      // The first line is the newest record so far; then a new one arrives while following.
      while (!out.includes('cli line')) await new Promise((r) => setTimeout(r, 50))
      await sim.instances.at('pump').call('say', { text: 'cli second' })
      await got
    } finally {
      child.kill('SIGINT')
    }
    const lines = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string; instance: string })
    assert.deepEqual(
      lines.map((l) => l.msg),
      ['echo: cli line', 'echo: cli second'],
    )
  })
})
