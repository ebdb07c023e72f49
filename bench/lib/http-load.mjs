/**
 * The HTTP load of benchmark 2: `c` connections, each alternating `POST <runPath>` and
 * `GET <readPath>` with the bearer key, for a fixed time. Uses wrk when installed; otherwise a
 * small built-in client (keep-alive, one request in flight per connection) that is only good for
 * smoke runs, since it shares this process's event loop.
 *
 * @example
 * const r = await runHttpLoad({ url, runPath, readPath, key, connections: 32, seconds: 5, wrk: true })
 * console.log(r.rate, r.p50Ms, r.p99Ms)
 */
import { Agent, request } from 'node:http'
import { fileURLToPath } from 'node:url'
import { compiledClient } from './compile.mjs'
import { runProcess } from './processes.mjs'
import { percentile } from './stats.mjs'

const SCRIPT = fileURLToPath(new URL('./wrk-alternate.lua', import.meta.url))

/**
 * @typedef {object} HttpLoadResult
 * @property {number} rate requests per second (both routes together)
 * @property {number} requests
 * @property {number} p50Ms
 * @property {number} p99Ms
 * @property {number} errors non-2xx answers, socket errors and timeouts
 * @property {string} tool 'http-load.c', 'wrk' or 'built-in'
 */

/**
 * Runs the alternating load.
 *
 * @example
 * await runHttpLoad({ url: 'http://127.0.0.1:8000', runPath: '/api/v3/system/instances/sensor/method/run', readPath: '/api/v3/system/instances/sensor/attributes/temperature', key: 'k', connections: 32, seconds: 5, wrk: true })
 * @param {{ url: string, runPath: string, readPath: string, key: string, connections: number, seconds: number, wrk: boolean, threads?: number }} options
 * @returns {Promise<HttpLoadResult>}
 */
export async function runHttpLoad(options) {
  if (!options.wrk) return builtInLoad(options)
  const args = [
    `-t${options.threads ?? 1}`,
    `-c${options.connections}`,
    // wrk takes whole seconds (it refuses `-d0.25s`, a smoke run's turn); its rate is over the
    // time it measured.
    `-d${Math.max(1, Math.round(options.seconds))}s`,
    '--timeout',
    '10s',
    '-s',
    SCRIPT,
    options.url,
    '--',
    options.runPath,
    options.readPath,
    options.key,
  ]
  const { code, stdout, stderr } = await runProcess('wrk', args, { name: 'wrk', timeoutMs: (Math.max(1, options.seconds) + 20) * 1000 })
  const line = stdout.split('\n').find((l) => l.startsWith('{'))
  if (code !== 0 || !line) throw new Error(`wrk failed (exit ${code}): ${stderr}\n${stdout}`)
  const r = JSON.parse(line)
  const errors = Object.values(r.errors).reduce((a, b) => a + b, 0)
  return { rate: r.requests / (r.duration_us / 1e6), requests: r.requests, p50Ms: r.p50_us / 1000, p99Ms: r.p99_us / 1000, errors, tool: 'wrk' }
}

/**
 * Several servers under the same load, measured by one run of bench/lib/http-load.c in
 * interleaved turns of 250 ms (only one server has requests in flight at a time), so that all of
 * them see the same machine; `seconds` is each server's measured time. The results come in the
 * order of `ports`. `client` says how the client waits for answers: it `spins` on one core (the
 * default) or `waits` in epoll as wrk does (see the head of http-load.c). `requests` may be `runs`
 * or `reads` instead of `both` (the default, alternating): for profiles. Needs a C compiler.
 *
 * @example
 * const [mimic, peer] = await runInterleavedHttpLoad({ ports: [8000, 8001], runPath, readPath, key: 'k', connections: 32, warmupMs: 500, seconds: 2, client: 'waits' })
 * @param {{ ports: number[], runPath: string, readPath: string, key: string, connections: number, warmupMs: number, seconds: number, client?: 'spins' | 'waits', requests?: 'both' | 'runs' | 'reads' }} options
 * @returns {Promise<HttpLoadResult[]>}
 */
export async function runInterleavedHttpLoad(options) {
  const client = await compiledClient('http-load')
  const args = [
    options.ports.join(','),
    options.connections,
    options.warmupMs,
    options.seconds * 1000,
    options.runPath,
    options.readPath,
    options.key,
    options.client ?? 'spins',
    options.requests ?? 'both',
  ].map(String)
  const timeoutMs = options.warmupMs + options.seconds * 1000 * options.ports.length * 2 + 20_000
  const { code, stdout, stderr } = await runProcess(client, args, { name: 'HTTP load client (C)', timeoutMs })
  const line = stdout.split('\n').find((l) => l.startsWith('{'))
  if (code !== 0 || !line) throw new Error(`the HTTP load client failed (exit ${code}): ${stderr}\n${stdout}`)
  const r = JSON.parse(line)
  if (r.failures > 0) throw new Error(`the HTTP load client saw ${r.failures} failures: ${r.problem}`)
  return r.targets.map((t) => ({ rate: t.rate, requests: t.requests, p50Ms: t.p50Ms, p99Ms: t.p99Ms, errors: t.errors, tool: 'http-load.c' }))
}

/** @param {{ url: string, runPath: string, readPath: string, key: string, connections: number, seconds: number }} options */
async function builtInLoad(options) {
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections })
  const target = new URL(options.url)
  const body = '{"kwargs":{}}'
  const latencies = []
  let errors = 0
  const once = (method, path) =>
    new Promise((resolve) => {
      const headers = {
        authorization: `Bearer ${options.key}`,
        ...(method === 'POST' ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
      }
      const req = request({ host: target.hostname, port: target.port, method, path, headers, agent }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode >= 200 && res.statusCode < 300))
      })
      req.on('error', () => resolve(false))
      req.end(method === 'POST' ? body : undefined)
    })
  const end = performance.now() + options.seconds * 1000
  const begin = performance.now()
  await Promise.all(
    Array.from({ length: options.connections }, async () => {
      for (let i = 0; performance.now() < end; i++) {
        const t = performance.now()
        const ok = await once(i % 2 ? 'GET' : 'POST', i % 2 ? options.readPath : options.runPath)
        latencies.push(performance.now() - t)
        if (!ok) errors++
      }
    }),
  )
  agent.destroy()
  const seconds = (performance.now() - begin) / 1000
  return {
    rate: latencies.length / seconds,
    requests: latencies.length,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    errors,
    tool: 'built-in',
  }
}
