import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { describe, it } from 'node:test'

const BIN = new URL('../bin/mimic.js', import.meta.url).pathname

interface Run {
  stdout: string
  /** The logs node's records while the server ran: structured whatever the stdout format. */
  tail: Array<Record<string, unknown>>
}

/** Runs `mimic serve` with stdout a pipe, asks it for one missing node (a logged 404) and its logs, then stops it with SIGTERM. */
async function serveOnce(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const base = { ...process.env }
  delete base.MIMIC_LOG_FORMAT
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--snapshots-mode', 'memory', '--python-workers', '1', ...args], {
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk))
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start:\n${stdout}${stderr}`)), 60_000)
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk
        const m = /Mimic listening on (http:\/\/[^"\s]+)/.exec(stdout)
        if (m) {
          clearTimeout(timer)
          resolve(m[1]!)
        }
      })
      void exited.then((code) => reject(new Error(`server exited with ${code}:\n${stdout}${stderr}`)))
    })
    assert.equal((await fetch(`${url}/api/v3/system/no_such_node`)).status, 404)
    const res = await fetch(`${url}/api/v3/system/logs/method/tail`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kwargs: { limit: 100 } }),
    })
    assert.equal(res.status, 200)
    const { result: tail } = (await res.json()) as { result: Array<Record<string, unknown>> }
    child.kill('SIGTERM')
    assert.equal(await exited, 0, stderr)
    return { stdout, tail }
  } finally {
    child.kill('SIGKILL')
  }
}

const lines = (text: string): string[] => text.split('\n').filter((line) => line.trim() !== '')

function assertStructuredTail(tail: Array<Record<string, unknown>>): void {
  const listening = tail.find((entry) => typeof entry.msg === 'string' && entry.msg.startsWith('Mimic listening on'))
  assert.ok(listening, JSON.stringify(tail))
  assert.equal(listening.level, 'info')
  assert.equal(typeof listening.port, 'number')
  assert.ok(tail.some((entry) => entry.level === 'warn' && entry.status === 404))
}

// The tests are independent (each server its own process on port 0), so they run at once: most of
// their time is spent starting and stopping `mimic serve`.
describe('mimic serve --log-format', { concurrency: true }, () => {
  it('pretty prints lines for people: a clock time, the level, the message and the fields; the logs node keeps structured records', async () => {
    const { stdout, tail } = await serveOnce(['--log-format', 'pretty'])
    for (const line of lines(stdout)) assert.throws(() => JSON.parse(line) as unknown, SyntaxError, `not JSON: ${line}`)
    assert.match(stdout, /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: Mimic listening on http:\/\/127\.0\.0\.1:\d+ \{.*"port":\d+/m)
    assert.match(stdout, /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] WARN: .*"status":404/m)
    assert.match(stdout, /INFO: shutting down \{"signal":"SIGTERM"\}/)
    // Not a terminal: no colour codes, and none of pino's bookkeeping fields.
    assert.doesNotMatch(stdout, /\u001b\[/)
    assert.doesNotMatch(stdout, /"(time|pid|hostname|service)":/)
    assertStructuredTail(tail)
  })

  it('json, and MIMIC_LOG_FORMAT=pretty, choose the format as the flag does', async () => {
    const [json, pretty] = await Promise.all([
      serveOnce(['--log-format', 'json'], { MIMIC_LOG_FORMAT: 'pretty' }),
      serveOnce([], { MIMIC_LOG_FORMAT: 'pretty' }),
    ])
    const records = lines(json.stdout).map((line) => JSON.parse(line) as Record<string, unknown>)
    assert.ok(records.some((r) => typeof r.msg === 'string' && r.msg.startsWith('Mimic listening on') && typeof r.time === 'number'))
    assertStructuredTail(json.tail)

    assert.match(pretty.stdout, /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: Mimic listening on /m)
  })

  it('auto, the default, writes JSON lines into a pipe', async () => {
    const { stdout, tail } = await serveOnce([])
    const records = lines(stdout).map((line) => JSON.parse(line) as Record<string, unknown>)
    assert.ok(records.some((r) => r.msg === 'shutting down' && r.signal === 'SIGTERM'))
    assertStructuredTail(tail)
  })

  it('refuses an unknown format, naming the flag', async () => {
    const child = spawn(process.execPath, [BIN, 'serve', '--log-format', 'fancy'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk))
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
    assert.notEqual(code, 0)
    assert.match(stderr, /--log-format.*'fancy' is invalid.*pretty, json, auto/)
  })
})
