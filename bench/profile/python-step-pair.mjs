/**
 * Benchmark 1's load (1,000 Python-backed sensors, `run(steps)` on the system) against two or more
 * Mimic checkouts side by side, in interleaved turns, with the wall time of each run and the CPU
 * time of each server and of its Python workers (from /proc). bench/before-after.mjs starts new
 * servers for every round, whose runs differ by up to 1.8x from round to round; here each server
 * is started once and the turns alternate, so a change shows against the machine as it is now.
 *
 * Run: node bench/profile/python-step-pair.mjs [rounds=16] [steps=500] checkout [checkout ...]
 * Environment: MIMIC_PYTHON (the workers' interpreter, else `python3` resolved once),
 * MIMIC_STEP_BATCH (1: every step through the server; default 100).
 */
import { execFileSync } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startMimicProcess } from '../lib/mimic-process.mjs'
import { instanceMap, sensorModel } from '../lib/models.mjs'
import { processTree } from '../lib/proc-stats.mjs'
import { median } from '../lib/stats.mjs'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const [roundsArg, stepsArg, ...checkoutArgs] = process.argv.slice(2)
const rounds = Number(roundsArg ?? 16)
const steps = Number(stepsArg ?? 500)
const checkouts = (checkoutArgs.length ? checkoutArgs : [ROOT]).map((c) => resolve(c))
const python = process.env.MIMIC_PYTHON ?? execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim()
/** CPU seconds of a server and of its workers (its children), from /proc. */
function cpu(pid) {
  const tree = processTree(pid)
  return { server: tree.main.cpuSeconds, workers: tree.cpuSeconds - tree.main.cpuSeconds }
}

const servers = []
try {
  for (const root of checkouts) {
    // bench/lib/mimic-process.mjs starts the server of the checkout this variable names.
    process.env.MIMIC_BENCH_SERVER_ROOT = root
    const dir = await mkdtemp(join(tmpdir(), 'mimic-python-step-pair-'))
    const mimic = await startMimicProcess({ python, extensions: join(ROOT, 'bench/fixtures'), dir, workers: 2 })
    servers.push({ root, dir, mimic, wall: [], server: [], workers: [] })
    await mimic.api('PUT', '/api/v3/system/models', { Sensor: sensorModel() })
    await mimic.api('PUT', '/api/v3/system/instances', instanceMap({ prefix: 's', from: 0, to: 1000, model: () => 'Sensor' }))
    await mimic.call('/api/v3/system', 'prepare')
    await mimic.call('/api/v3/system', 'run', { steps: 10 }) // warm-up
  }
  for (let round = 0; round < rounds; round++) {
    for (const s of round % 2 === 0 ? servers : [...servers].reverse()) {
      const before = cpu(s.mimic.pid)
      const t = performance.now()
      await s.mimic.call('/api/v3/system', 'run', { steps })
      s.wall.push(performance.now() - t)
      const after = cpu(s.mimic.pid)
      s.server.push((after.server - before.server) * 1000)
      s.workers.push((after.workers - before.workers) * 1000)
    }
  }
  console.log(`1000 instances x ${steps} steps, 2 workers, ${rounds} rounds in turn (medians; CPU from /proc, in 10 ms ticks)`)
  for (const s of servers) {
    const each = s.wall.map((ms) => ms.toFixed(0)).join(' ')
    console.log(
      `${s.root}: ${median(s.wall).toFixed(0)} ms per run, server CPU ${median(s.server).toFixed(0)} ms, workers CPU ${median(s.workers).toFixed(0)} ms (runs: ${each})`,
    )
  }
  if (servers.length > 1) console.log(`wall time of the last against the first: ${(median(servers.at(-1).wall) / median(servers[0].wall)).toFixed(3)}`)
} finally {
  for (const s of servers) {
    await s.mimic.stop()
    await rm(s.dir, { recursive: true, force: true })
  }
}
