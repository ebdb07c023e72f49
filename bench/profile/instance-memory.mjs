/**
 * What each of benchmark 7's meters keeps: starts Mimic (compiled, from dist/) inside this
 * process, creates N meters, steps once, and prints the heap they retain per instance after full
 * garbage collections (the benchmark's RSS figure also counts garbage not yet collected and
 * pages the heap keeps). With a path, writes a heap snapshot there to see which objects hold it.
 *
 * Run: node --expose-gc bench/profile/instance-memory.mjs [instances=10000] [snapshot path]   (needs dist/)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import v8 from 'node:v8'
import pino from 'pino'

if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc')
const root = fileURLToPath(new URL('../..', import.meta.url))
const { parseConfig } = await import(`${root}dist/src/config.js`)
const { startMimic } = await import(`${root}dist/src/mimic.js`)
const { instanceMap } = await import('../lib/models.mjs')
const { meterModel } = await import('../benchmarks/declarative-step.mjs')
const instances = Number(process.argv[2] ?? 10_000)
const dir = mkdtempSync(join(tmpdir(), 'mimic-instance-memory-'))
const config = parseConfig({ port: 0, extensions: [`${root}bench/fixtures`], snapshotsDir: join(dir, 'snapshots') }, process.env)
const server = await startMimic(config, { logger: pino({ level: 'silent' }) })
/** Heap in use after full collections, with the typed arrays' buffers (the struct of arrays). */
const retained = () => {
  globalThis.gc()
  globalThis.gc()
  return v8.getHeapStatistics().used_heap_size + process.memoryUsage().arrayBuffers
}
try {
  const { system } = server
  await system.models.put({ Meter: meterModel() })
  await system.instances.put({ warm: 'Meter' })
  await system.runSteps({ args: [], kwargs: { steps: 2 } })
  const before = retained()
  for (let from = 0; from < instances; from += 5000)
    await system.instances.put(instanceMap({ prefix: 'm', from, to: Math.min(instances, from + 5000), model: () => 'Meter' }))
  await system.runSteps({ args: [], kwargs: { steps: 1 } })
  const after = retained()
  console.log(`${instances} meters: ${((after - before) / instances / 1024).toFixed(2)} KiB of heap retained per instance`)
  if (process.argv[3]) console.log(`heap snapshot: ${v8.writeHeapSnapshot(process.argv[3])}`)
} finally {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
}
