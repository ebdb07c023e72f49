/**
 * A Mimic server in its own process (`node bin/mimic.js serve`), so that load clients and the
 * server never share an event loop, with a small HTTP helper for the tree API.
 *
 * @example
 * const mimic = await startMimicProcess({ python, extensions: 'bench/fixtures', dir: tmp })
 * await mimic.api('PUT', '/api/v3/system/models', { m: { attributes: { x: 1 } } })
 * await mimic.stop()
 */
import { mkdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from './ports.mjs'
import { startProcess, waitFor } from './processes.mjs'

export const PRODUCT_KEY = 'bench-product-key'
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/**
 * The checkout whose server the benchmarks start: this one, or another built checkout named by
 * MIMIC_BENCH_SERVER_ROOT (`bench/run.mjs --server DIR`; bench/before-after.mjs runs the same
 * benchmarks against the code before and after a change).
 */
function serverRoot() {
  // Read when a server starts, not when this module loads: bench/run.mjs sets it from --server
  // after its imports.
  const root = process.env.MIMIC_BENCH_SERVER_ROOT
  return root ? resolve(root) : ROOT
}

/**
 * A running Mimic process.
 *
 * @typedef {object} MimicProcess
 * @property {string} url
 * @property {number} pid
 * @property {(method: string, path: string, body?: unknown) => Promise<any>} api JSON in and out; throws on a non-2xx answer
 * @property {(path: string, method: string, kwargs?: Record<string, unknown>) => Promise<any>} call POST <path>/method/<m>, returns `result`
 * @property {() => Promise<void>} stop
 */

/**
 * Starts `mimic serve` on a free port with its own snapshots directory and waits for /health.
 *
 * @example
 * const mimic = await startMimicProcess({ python: '/usr/bin/python3', extensions: 'bench/fixtures', dir: '/tmp/x', workers: 2 })
 * @param {{ python: string, extensions: string, dir: string, workers?: number, nodeArgs?: string[], env?: NodeJS.ProcessEnv, snapshotsMode?: 'durable' | 'memory', startTimeoutMs?: number }} options
 * @returns {Promise<MimicProcess>}
 */
export async function startMimicProcess(options) {
  const port = await freePort()
  const snapshots = join(options.dir, 'snapshots')
  await mkdir(snapshots, { recursive: true })
  const args = [
    ...(options.nodeArgs ?? []),
    join(serverRoot(), 'bin/mimic.js'),
    'serve',
    '--port',
    String(port),
    '--product-key',
    PRODUCT_KEY,
    '--extensions',
    resolve(options.extensions),
    '--snapshots-dir',
    snapshots,
    '--snapshots-mode',
    options.snapshotsMode ?? 'durable',
    '--python',
    options.python,
    '--python-workers',
    String(options.workers ?? 2),
    '--body-limit',
    String(64 * 1024 * 1024),
    '--python-timeout',
    '120',
    '--log-level',
    'warn',
  ]
  const proc = startProcess(process.execPath, args, { name: 'mimic', cwd: options.dir, env: { ...process.env, ...options.env } })
  const url = `http://127.0.0.1:${port}`
  const alive = () => proc.child.exitCode === null && proc.child.signalCode === null
  try {
    await waitFor(async () => (await fetch(`${url}/health`)).ok, { timeoutMs: options.startTimeoutMs ?? 20_000, what: 'Mimic to answer /health', alive })
  } catch (err) {
    await proc.stop()
    throw new Error(`${err.message}\n${proc.stderr()}`)
  }
  const api = async (method, path, body) => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${PRODUCT_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 2000)}`)
    return text ? JSON.parse(text) : undefined
  }
  return {
    url,
    pid: proc.pid,
    api,
    call: async (path, method, kwargs = {}) => (await api('POST', `${path}/method/${method}`, { kwargs })).result,
    stop: () => proc.stop(10_000),
  }
}

/**
 * With --profile: the server under `node --cpu-prof`, the workers under cProfile (through a
 * stand-in interpreter), both writing into ctx.profileDir when the server stops.
 *
 * @example
 * const mimic = await startMimicProcess({ python, extensions, dir, ...(ctx.profileDir ? await profilingOptions(ctx) : {}) })
 *
 * @param {import('./benchmark.mjs').BenchmarkContext} ctx
 */
export async function profilingOptions(ctx) {
  const dir = /** @type {string} */ (ctx.profileDir)
  await mkdir(dir, { recursive: true })
  ctx.note(
    `profiles written to ${dir} (summaries: bench/profile/summarize-cpuprofile.mjs, bench/profile/summarize-pstats.py); profiling slows both sides, so these figures are not comparable`,
  )
  return {
    python: ctx.path('bench/profile/python-cprofile'),
    nodeArgs: ['--cpu-prof', '--cpu-prof-dir', dir],
    env: { MIMIC_BENCH_REAL_PYTHON: ctx.python, MIMIC_BENCH_PROFILE_DIR: dir },
  }
}
