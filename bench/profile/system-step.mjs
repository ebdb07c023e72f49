/**
 * A system step in-process, without HTTP: starts Mimic (compiled, from dist/) inside this
 * process, creates N sensor instances and times `system.step()`, with the CPU this process
 * used per step. Compared with bench/profile/pool-step.mjs it isolates the cost of the System
 * around the bridge (step requests, applying values, timers, connections).
 *
 * Run: node bench/profile/system-step.mjs [instances=1000] [workers=2] [steps=200]
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pino from 'pino'

const root = fileURLToPath(new URL('../..', import.meta.url))
const { parseConfig } = await import(`${root}dist/src/config.js`)
const { startMimic } = await import(`${root}dist/src/mimic.js`)
const { sensorModel, instanceMap } = await import('../lib/models.mjs')
const [instances = 1000, workers = 2, steps = 200] = process.argv.slice(2).map(Number)
const python = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim()
const dir = mkdtempSync(join(tmpdir(), 'mimic-system-step-'))
const config = parseConfig({ port: 0, extensions: [`${root}bench/fixtures`], snapshotsDir: join(dir, 'snapshots'), python, pythonWorkers: workers }, {})
const server = await startMimic(config, { logger: pino({ level: 'silent' }) })
try {
  const { system } = server
  await system.models.put({ Sensor: sensorModel() })
  await system.instances.put(instanceMap({ prefix: 's', from: 0, to: instances, model: () => 'Sensor' }))
  await system.prepare()
  for (let i = 0; i < 20; i++) await system.step()
  const cpu = process.cpuUsage()
  const begin = performance.now()
  for (let i = 0; i < steps; i++) await system.step()
  const wall = (performance.now() - begin) / steps
  const used = process.cpuUsage(cpu)
  console.log(`system.step of ${instances} instances on ${workers} workers: ${wall.toFixed(2)} ms per step, Node CPU ${((used.user + used.system) / 1000 / steps).toFixed(2)} ms per step`)
} finally {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
}
