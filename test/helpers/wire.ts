// What a user sees on the wire: the raw text of an answer, an event-stream frame, and the values a
// Python script with the SDK saw (its repr and type travel as JSON, which would blur 2.0 and 2).
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { get as httpGet } from 'node:http'
import { httpRequest } from './http.js'
import { TEST_KEY, type TestServer } from './server.js'

const PYTHON_DIR = new URL('../../python', import.meta.url).pathname

/**
 * A request and its answer as text, exactly as it came over the wire. A string body is sent as
 * written (JSON.stringify would write 2.0 as 2); anything else as JSON.
 */
export async function rawRequest(t: TestServer, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const res = await httpRequest(`${t.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TEST_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
  return { status: res.status, text: res.text }
}

/** Reads the event stream until a frame's data line matches `pattern`; returns that line. */
export async function frameMatching(t: TestServer, pattern: RegExp): Promise<string> {
  const abort = new AbortController()
  let text = ''
  try {
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no frame matched ${pattern} within 5 s; got:\n${text}`)), 5000)
      const req = httpGet(`${t.url}/api/v3/events`, { agent: false, headers: { authorization: `Bearer ${TEST_KEY}` }, signal: abort.signal }, (res) => {
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          text += chunk
          const line = text.split('\n').find((l) => l.startsWith('data: ') && pattern.test(l))
          if (line) {
            clearTimeout(timer)
            resolve(line.slice('data: '.length))
          }
        })
      })
      req.once('error', (err) => (abort.signal.aborted ? undefined : reject(err)))
    })
  } finally {
    abort.abort()
  }
}

/** Runs a Python script with the SDK on PYTHONPATH, killed if it outlives 20 s. */
export async function runPythonWithSdk(scriptPath: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('python3', [scriptPath], { env: { ...process.env, PYTHONPATH: PYTHON_DIR, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  clearTimeout(timer)
  return { code, stdout, stderr }
}

/** Runs a Python script with the SDK that must succeed; its last stdout line is JSON, returned parsed. */
export async function pythonSeen(scriptPath: string, env: Record<string, string>): Promise<Record<string, any>> {
  const { code, stdout, stderr } = await runPythonWithSdk(scriptPath, env)
  assert.equal(code, 0, `python failed:\n${stderr}`)
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '')
}
