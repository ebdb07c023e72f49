/**
 * Benchmark 2's load (POST run / GET temperature alternating on 32 connections) against one or
 * more Mimic checkouts and the bare node:http server, measured by bench/lib/http-load.c in
 * interleaved turns, with the CPU time and the context switches of each Mimic server and of its
 * Python worker per request (from /proc). Given two checkouts (each built: `dist/`), it runs
 * both side by side in the same turns: how a change shows on the machine as it is now, where
 * figures from two runs cannot be compared.
 *
 * Run: node bench/profile/http-run-read.mjs [rounds=5] [seconds=2] [checkout ...]
 * Environment: MIMIC_PYTHON (the workers' interpreter, else `python3` resolved once),
 * HTTP_BENCH_CONNECTIONS (32), HTTP_BENCH_ENV_<i>="NAME=value ..." (extra environment of the
 * i-th checkout's server, counted from 0: two servers of one checkout with different settings),
 * HTTP_BENCH_NODE_ARGS (node's flags for every Mimic server, e.g. "--cpu-prof --cpu-prof-dir=/tmp/p"),
 * HTTP_BENCH_CLIENT (`spins`, the default, or `waits`: how the load client waits, see http-load.c),
 * HTTP_BENCH_REQUESTS (`both`, the default, alternating; `runs` or `reads` to take them apart).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runInterleavedHttpLoad } from '../lib/http-load.mjs'
import { sensorModel } from '../lib/models.mjs'
import { freePort } from '../lib/ports.mjs'
import { startProcess, waitFor } from '../lib/processes.mjs'
import { median } from '../lib/stats.mjs'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const KEY = 'bench-product-key'
const RUN_PATH = '/api/v3/system/instances/sensor/method/run'
const READ_PATH = '/api/v3/system/instances/sensor/attributes/temperature'

const [roundsArg, secondsArg, ...checkoutArgs] = process.argv.slice(2)
const rounds = Number(roundsArg ?? 5)
const seconds = Number(secondsArg ?? 2)
const checkouts = (checkoutArgs.length ? checkoutArgs : [ROOT]).map((c) => resolve(c))
const connections = Number(process.env.HTTP_BENCH_CONNECTIONS ?? 32)
const python = process.env.MIMIC_PYTHON ?? execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim()

const CLK_TCK = 100

/** utime + stime in seconds, and the context switches, of one process. */
function usage(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const count = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0)
  return {
    cpu: (Number(fields[11]) + Number(fields[12])) / CLK_TCK,
    sys: Number(fields[12]) / CLK_TCK,
    voluntary: count('voluntary_ctxt_switches'),
    involuntary: count('nonvoluntary_ctxt_switches'),
  }
}

/** The child processes of `pid` (the Python workers of a server). */
function childrenOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

const dir = mkdtempSync(join(tmpdir(), 'mimic-http-profile-'))
const stops = []
process.on('exit', () => rmSync(dir, { recursive: true, force: true }))

async function startMimic(checkout, index) {
  const port = await freePort()
  const extra = Object.fromEntries(
    (process.env[`HTTP_BENCH_ENV_${index}`] ?? '')
      .split(/\s+/)
      .filter(Boolean)
      .map((pair) => pair.split('=')),
  )
  const args = [
    ...(process.env.HTTP_BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean),
    join(checkout, 'bin/mimic.js'),
    'serve',
    '--port',
    String(port),
    '--product-key',
    KEY,
    '--extensions',
    join(ROOT, 'bench/fixtures'),
    '--snapshots-mode',
    'memory',
    '--python',
    python,
    '--python-workers',
    '1',
    '--log-level',
    'warn',
  ]
  const proc = startProcess(process.execPath, args, { name: `mimic ${index}`, cwd: dir, env: { ...process.env, ...extra } })
  stops.push(() => proc.stop())
  const url = `http://127.0.0.1:${port}`
  await waitFor(async () => (await fetch(`${url}/health`)).ok, {
    // A loaded machine takes long to start an older checkout (it loaded every SDK at start).
    timeoutMs: 90_000,
    what: `mimic ${index} (${checkout})`,
    alive: () => proc.child.exitCode === null,
  })
  const api = async (method, path, body) => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
    return res.json()
  }
  await api('PUT', '/api/v3/system/models', { Sensor: sensorModel() })
  await api('PUT', '/api/v3/system/instances', { sensor: 'Sensor' })
  await api('POST', '/api/v3/system/instances/sensor/method/prepare', { kwargs: {} })
  const before = (await api('GET', READ_PATH)).internal_value
  await api('POST', RUN_PATH, { kwargs: {} })
  if ((await api('GET', READ_PATH)).internal_value === before) throw new Error(`mimic ${index}: run did not move the temperature`)
  return { name: `mimic ${index}`, checkout, port, pid: proc.pid, workers: childrenOf(proc.pid), extra }
}

async function startBare() {
  const port = await freePort()
  const proc = startProcess(process.execPath, [join(ROOT, 'bench/peers/bare-node-http.mjs'), '--port', String(port)], { name: 'bare node:http' })
  stops.push(() => proc.stop())
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}${READ_PATH}`)).ok, { timeoutMs: 10_000, what: 'bare node:http' })
  return { name: 'node:http', port, pid: proc.pid, workers: [] }
}

try {
  const servers = [...(await Promise.all(checkouts.map(startMimic))), await startBare()]
  for (const s of servers.slice(0, -1)) console.log(`${s.name}: ${s.checkout} ${JSON.stringify(s.extra)} (server ${s.pid}, workers ${s.workers.join(' ')})`)
  /** @type {Record<string, Array<{ rate: number, serverUs: number, workerUs: number, switches: number, workerSwitches: number }>>} */
  const results = {}
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? servers : [...servers].reverse()
    const before = order.map((s) => ({ server: usage(s.pid), workers: s.workers.map(usage) }))
    const measured = await runInterleavedHttpLoad({
      ports: order.map((s) => s.port),
      runPath: RUN_PATH,
      readPath: READ_PATH,
      key: KEY,
      connections,
      warmupMs: 500,
      seconds,
      client: process.env.HTTP_BENCH_CLIENT === 'waits' ? 'waits' : 'spins',
      requests: /** @type {'both' | 'runs' | 'reads'} */ (process.env.HTTP_BENCH_REQUESTS ?? 'both'),
    })
    order.forEach((s, i) => {
      const after = usage(s.pid)
      const workersAfter = s.workers.map(usage)
      const r = measured[i]
      if (r.errors > 0) throw new Error(`${s.name}: ${r.errors} errors`)
      // The warm-up's requests are not counted in `requests`: the CPU of the warm-up is, so the
      // figures per request are a little high, alike for every server.
      const sum = (list, key) => list.reduce((a, u) => a + u[key], 0)
      ;(results[s.name] ??= []).push({
        rate: r.rate,
        requests: r.requests,
        p50: r.p50Ms,
        serverUs: ((after.cpu - before[i].server.cpu) / r.requests) * 1e6,
        serverSysUs: ((after.sys - before[i].server.sys) / r.requests) * 1e6,
        workerUs: ((sum(workersAfter, 'cpu') - sum(before[i].workers, 'cpu')) / r.requests) * 1e6,
        switches: (after.voluntary + after.involuntary - before[i].server.voluntary - before[i].server.involuntary) / r.requests,
        preempted: (after.involuntary - before[i].server.involuntary) / r.requests,
        workerSwitches:
          (sum(workersAfter, 'voluntary') + sum(workersAfter, 'involuntary') - sum(before[i].workers, 'voluntary') - sum(before[i].workers, 'involuntary')) /
          r.requests,
      })
    })
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
    console.log(`round ${round + 1} (load ${load}): ${servers.map((s) => `${s.name} ${Math.round(results[s.name][round].rate)}/s`).join(', ')}`)
  }
  const bare = results['node:http']
  console.log('\nmedians (ratios: medians of per-round ratios)')
  console.log('server | requests/s | of node:http | server CPU us/req (kernel) | worker CPU us/req | server switches/req (preempted) | worker switches/req')
  for (const s of servers) {
    const list = results[s.name]
    const m = (key) => median(list.map((r) => r[key]))
    const ofBare = median(list.map((r, i) => r.rate / bare[i].rate))
    console.log(
      `${s.name} | ${Math.round(m('rate'))} | ${ofBare.toFixed(3)} | ${m('serverUs').toFixed(1)} (${m('serverSysUs').toFixed(1)}) | ${m('workerUs').toFixed(1)} | ${m('switches').toFixed(2)} (${m('preempted').toFixed(2)}) | ${m('workerSwitches').toFixed(2)}`,
    )
  }
  console.log(`requests measured: ${servers.map((s) => `${s.name} ${results[s.name].reduce((a, r) => a + r.requests, 0)}`).join(', ')}`)
  const mimics = servers.filter((s) => s.name !== 'node:http')
  if (mimics.length > 1) {
    const first = results[mimics[0].name]
    for (const s of mimics.slice(1)) {
      const ratio = median(results[s.name].map((r, i) => r.rate / first[i].rate))
      console.log(`${s.name} / ${mimics[0].name}: ${ratio.toFixed(3)} (median of per-round ratios)`)
    }
  }
} finally {
  for (const stop of stops) await stop()
}
