/**
 * Declarative stepping in-process, without HTTP: starts Mimic (compiled, from dist/) inside this
 * process, creates N instances of benchmark 7's meter model (16 `function` actions) and times
 * `system.run(steps)`, with the CPU per instance step. Run it under `node --cpu-prof` to see
 * where a step goes.
 *
 * Run: node bench/profile/declarative-step.mjs [instances=10000] [steps=100]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pino from 'pino'

const root = fileURLToPath(new URL('../..', import.meta.url))
const { parseConfig } = await import(`${root}dist/src/config.js`)
const { startMimic } = await import(`${root}dist/src/mimic.js`)
const { instanceMap } = await import('../lib/models.mjs')
const { meterModel } = await import('../benchmarks/declarative-step.mjs')
const [instances = 10_000, steps = 100] = process.argv.slice(2).map(Number)
const dir = mkdtempSync(join(tmpdir(), 'mimic-declarative-step-'))
// The environment reaches the server's settings (MIMIC_FUSED=0 steps every instance alone).
const config = parseConfig({ port: 0, extensions: [`${root}bench/fixtures`], snapshotsDir: join(dir, 'snapshots') }, process.env)
const server = await startMimic(config, { logger: pino({ level: 'silent' }) })
try {
  const { system } = server
  await system.models.put({ Meter: meterModel() })
  await system.instances.put(instanceMap({ prefix: 'm', from: 0, to: instances, model: () => 'Meter' }))
  await system.runSteps({ args: [], kwargs: { steps: 5 } })
  for (let round = 0; round < 3; round++) {
    const cpu = process.cpuUsage()
    const begin = performance.now()
    await system.runSteps({ args: [], kwargs: { steps } })
    const wall = performance.now() - begin
    const used = process.cpuUsage(cpu)
    const perStep = ((used.user + used.system) * 1000) / (instances * steps)
    console.log(`run(${steps}) of ${instances} meters: ${wall.toFixed(0)} ms, ${perStep.toFixed(0)} ns CPU per instance step`)
  }
} finally {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
}
