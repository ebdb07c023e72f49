#!/usr/bin/env node
/**
 * `npm run bench`: runs the benchmarks of issue 7 against their peers, prints a table and
 * rewrites bench/RESULTS.md (a run of some benchmarks keeps the others' results in it).
 *
 *   node bench/run.mjs                 every benchmark, full sizes, installs missing peers
 *   node bench/run.mjs modbus http     only these (keys or numbers, see bench/README.md)
 *   node bench/run.mjs --smoke         tiny sizes, about 40 s, no verdicts, RESULTS.md left alone
 *   --no-install                       never call apt-get (peers that are missing are skipped)
 *   --out FILE                         write the report elsewhere (with --smoke: write one at all)
 *   --server DIR                       start the server of another built checkout (bench/before-after.mjs)
 *   --profile                          benchmarks 1 and 2 also record a V8 CPU profile of the server and
 *                                      cProfile files of the Python workers in bench/profiles/
 *
 * Each benchmark runs under a hard time limit; whatever it started is stopped when it ends.
 * The exit code is 1 when any benchmark failed.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describeEnvironment, ensurePeers, realPython, SYSTEM_PYTHON } from './lib/environment.mjs'
import { killAll } from './lib/processes.mjs'
import { renderConsoleTable, renderReport } from './lib/report.mjs'
import { pythonStep } from './benchmarks/python-step.mjs'
import { httpRoundTrip } from './benchmarks/http-round-trip.mjs'
import { modbusRead } from './benchmarks/modbus-read.mjs'
import { snapshots } from './benchmarks/snapshots.mjs'
import { memory } from './benchmarks/memory.mjs'
import { modbusScale } from './benchmarks/modbus-scale.mjs'
import { declarativeStep } from './benchmarks/declarative-step.mjs'
import { asciiQuery } from './benchmarks/ascii-query.mjs'
import { opcuaSubscription } from './benchmarks/opcua-subscription.mjs'
import { mqttPublish } from './benchmarks/mqtt-publish.mjs'
import { shards } from './benchmarks/shards.mjs'
import { modbusTransports } from './benchmarks/modbus-transports.mjs'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** @type {import('./lib/benchmark.mjs').Benchmark[]} */
const BENCHMARKS = [
  pythonStep,
  httpRoundTrip,
  modbusRead,
  snapshots,
  memory,
  modbusScale,
  declarativeStep,
  asciiQuery,
  opcuaSubscription,
  mqttPublish,
  shards,
  modbusTransports,
]
const LIMIT_MS = { full: 90_000, smoke: 30_000 }

const argv = process.argv.slice(2)
const smoke = argv.includes('--smoke')
const install = !argv.includes('--no-install') && !smoke
const outIndex = argv.indexOf('--out')
const out = outIndex >= 0 ? argv[outIndex + 1] : smoke ? undefined : join(ROOT, 'bench/RESULTS.md')
const profile = argv.includes('--profile') ? join(ROOT, 'bench/profiles') : undefined
const serverIndex = argv.indexOf('--server')
if (serverIndex >= 0) process.env.MIMIC_BENCH_SERVER_ROOT = argv[serverIndex + 1]
const wanted = argv.filter((a, i) => !a.startsWith('--') && argv[i - 1] !== '--out' && argv[i - 1] !== '--server')
const unknown = wanted.filter((w) => !BENCHMARKS.some((b) => b.key === w || b.id === w))
if (unknown.length) {
  console.error(`unknown benchmark ${unknown.join(', ')}; choose from ${BENCHMARKS.map((b) => `${b.id}/${b.key}`).join(', ')}`)
  process.exit(2)
}
const selected = wanted.length ? BENCHMARKS.filter((b) => wanted.includes(b.key) || wanted.includes(b.id)) : BENCHMARKS

process.on('exit', killAll)
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    killAll()
    process.exit(130)
  })
}

const log = (text) => console.error(text)
if (!existsSync(join(ROOT, 'dist/cli/cli.js'))) {
  console.error('Mimic is not built: run `npm run build` first')
  process.exit(2)
}
const started = new Date()
const tools = await ensurePeers({ install, log })
const python = await realPython()
const environment = await describeEnvironment({ python, tools })
log(`machine: ${environment.cores} cores, ${environment.cpu}, load ${environment['load average at start']}; python ${python}`)

const sections = []
let failed = 0
for (const bench of selected) {
  const began = Date.now()
  // A benchmark that starts several servers per configuration may need longer (bench.limitMs).
  const limit = { ...LIMIT_MS, ...bench.limitMs }[smoke ? 'smoke' : 'full']
  const cleanups = []
  const dirs = []
  const notes = []
  /** @type {import('./lib/benchmark.mjs').BenchmarkContext} */
  const ctx = {
    smoke,
    profileDir: profile,
    python,
    systemPython: SYSTEM_PYTHON,
    tools,
    fixtures: join(ROOT, 'bench/fixtures'),
    path: (relative) => join(ROOT, relative),
    tmpDir: async () => {
      const dir = await mkdtemp(join(tmpdir(), `mimic-bench-${bench.key}-`))
      dirs.push(dir)
      return dir
    },
    onCleanup: (fn) => cleanups.push(fn),
    log: (text) => log(`  [${bench.id} ${bench.key}] ${text}`),
    note: (text) => notes.push(text),
    deadline: began + limit * 0.75,
  }
  log(`benchmark ${bench.id} (${bench.key}): ${bench.title}`)
  let timer
  try {
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`ran past its ${limit / 1000} s limit`)), limit)
    })
    const result = await Promise.race([bench.run(ctx), timeout])
    sections.push({ bench, result, notes, seconds: (Date.now() - began) / 1000 })
  } catch (err) {
    failed++
    log(`  [${bench.id} ${bench.key}] FAILED: ${err?.stack ?? err}`)
    sections.push({ bench, error: String(err?.message ?? err), notes, seconds: (Date.now() - began) / 1000 })
  } finally {
    clearTimeout(timer)
    for (const fn of cleanups.reverse())
      await Promise.resolve()
        .then(fn)
        .catch(() => {})
    killAll()
    for (const dir of dirs) await rm(dir, { recursive: true, force: true })
  }
  log(`  done in ${((Date.now() - began) / 1000).toFixed(1)} s`)
}

console.log(renderConsoleTable(sections))
if (out) {
  const analysisFile = join(ROOT, 'bench/ANALYSIS.md')
  const analysis = existsSync(analysisFile) ? await readFile(analysisFile, 'utf8') : ''
  const command = `node bench/run.mjs ${argv.join(' ')}`.trim()
  // A run of some benchmarks keeps the others' results from the file it replaces.
  const previous = selected.length < BENCHMARKS.length && existsSync(out) ? await readFile(out, 'utf8') : undefined
  await writeFile(out, renderReport({ sections, environment, command, started, smoke, analysis, previous }))
  log(`wrote ${out}`)
}
if (failed) {
  log(`${failed} benchmark(s) failed`)
  process.exitCode = 1
}
