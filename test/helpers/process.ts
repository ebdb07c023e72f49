import { spawn, type ChildProcess } from 'node:child_process'
import { httpRequest } from './http.js'
import { TEST_KEY } from './server.js'

const BIN = new URL('../../bin/mimic.js', import.meta.url).pathname

/** A `mimic serve` process and what it printed. */
export interface ServerProcess {
  child: ChildProcess
  url: string
  /** Everything it wrote to stdout and stderr so far. */
  output(): string
  /** GET/PUT/... a path with the product key; the parsed JSON body and the status. */
  api<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T; text: string }>
  /** POST <path>/method/<m> with kwargs; the `result`, or a failure naming the fault. */
  call<T = any>(path: string, method: string, kwargs?: Record<string, unknown>): Promise<T>
  /** Sends `signal` and resolves with the exit code once the process ended. */
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/**
 * Starts `mimic serve` (the compiled command, as a user runs it) on a free port with the test
 * product key and resolves once it logs its URL.
 *
 * @example
 * const server = await serveProcess(['--snapshots-dir', dir, '--extensions', ext])
 * await server.stop('SIGTERM')
 */
export function serveProcess(args: string[], env: Record<string, string> = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], {
    env: { ...process.env, MIMIC_PRODUCT_KEY: TEST_KEY, MIMIC_PYTHON_WORKERS: '1', MIMIC_START: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let started = false
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 60_000)
    const onData = (chunk: Buffer): void => {
      out += chunk
      const m = /Mimic listening on (http:\/\/[^"\s]+)/.exec(out)
      if (m && !started) {
        started = true
        clearTimeout(timer)
        const url = m[1]!
        const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: any; text: string }> => {
          const res = await httpRequest(`${url}${path}`, {
            method,
            headers: { authorization: `Bearer ${TEST_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
            body: body === undefined ? undefined : JSON.stringify(body),
          })
          const text = res.text
          return { status: res.status, body: text ? JSON.parse(text) : undefined, text }
        }
        resolve({
          child,
          url,
          output: () => out,
          api,
          call: async (path, method, kwargs = {}) => {
            const res = await api('POST', `${path}/method/${method}`, { kwargs })
            if (res.status !== 200) throw new Error(`${method} on ${path} answered ${res.status}: ${res.text}`)
            return res.body.result
          },
          stop: async (signal = 'SIGTERM') => {
            if (child.exitCode === null && child.signalCode === null) child.kill(signal)
            return await exited
          },
        })
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    void exited.then((code) => {
      if (started) return
      clearTimeout(timer)
      reject(new Error(`server exited with ${code}:\n${out}`))
    })
  })
}
