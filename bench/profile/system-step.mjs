/**
 * A system step in-process, without HTTP: starts Mimic (compiled, from dist/) inside this
 * process, creates N sensor instances and times a system step, with the CPU this process
 * used per step. Compared with bench/profile/pool-step.mjs it isolates the cost of the System
 * around the bridge (step requests, applying values, timers, connections).
 *
 * With `connections` > 0, connection i copies s<2i>.temperature into s<2i+1>.temperature (a
 * Python-bound property) after every step.
 *
 * Run: node bench/profile/system-step.mjs [instances=1000] [workers=2] [steps=200] [connections=0]
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
const [instances = 1000, workers = 2, steps = 200, connections = 0] = process.argv.slice(2).map(Number)
const python = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim()
const dir = mkdtempSync(join(tmpdir(), 'mimic-system-step-'))
const config = parseConfig({ port: 0, extensions: [`${root}bench/fixtures`], snapshotsDir: join(dir, 'snapshots'), python, pythonWorkers: workers }, {})
const server = await startMimic(config, { logger: pino({ level: 'silent' }) })
try {
  const { system } = server
  await system.models.put({ Sensor: sensorModel() })
  await system.instances.put(instanceMap({ prefix: 's', from: 0, to: instances, model: () => 'Sensor' }))
  const wires = Array.from({ length: Math.min(connections, Math.floor(instances / 2)) }, (_, i) => [
    `c${i}`,
    { from: `s${2 * i}.attributes.temperature`, to: `s${2 * i + 1}.attributes.temperature` },
  ])
  if (wires.length) await system.connections.put(Object.fromEntries(wires))
  await system.prepare()
  // A system step is the engine's (`system.step()` in checkouts from before the architecture step,
  // so that a copy of this script measures those too).
  const step = typeof system.step === 'function' ? () => system.step() : () => system.engine.step()
  for (let i = 0; i < 20; i++) await step()
  const cpu = process.cpuUsage()
  const begin = performance.now()
  for (let i = 0; i < steps; i++) await step()
  const wall = (performance.now() - begin) / steps
  const used = process.cpuUsage(cpu)
  console.log(
    `system.step of ${instances} instances on ${workers} workers, ${wires.length} connections: ${wall.toFixed(2)} ms per step, Node CPU ${((used.user + used.system) / 1000 / steps).toFixed(2)} ms per step`,
  )
  const failing = [...system.connections.all()].filter((c) => c.lastError !== null || c.transfers === 0)
  if (failing.length) throw new Error(`${failing.length} connections did not transfer: ${failing[0].lastError}`)
} finally {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
}
