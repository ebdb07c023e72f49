/**
 * Benchmark 10's publishing path alone, under `node --cpu-prof`: a local mosquitto, one `mimic
 * serve` process (started with --cpu-prof) holding benchmark 10's 1,000 meters (5 bindings each)
 * publishing at `hz`, and the benchmark's subscriber counting what is delivered for `seconds`. It
 * prints the delivered rate, the CPU of the server, the broker and the subscriber, and messages
 * per CPU-second of the server; the profile is written to `dir` when the server stops. Summarize
 * it with `node bench/profile/summarize-cpuprofile.mjs <dir>/CPU.*.cpuprofile`.
 *
 * Run (built checkout, Debian's mosquitto): node bench/profile/mqtt-publish.mjs [instances=1000] [hz=40] [seconds=10] [dir=bench/profiles] [trace_size]
 * (`trace_size` set on every adapter, e.g. 0 to keep no trace; the default keeps 200 exchanges.)
 */
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { meterModel } from '../benchmarks/mqtt-publish.mjs'
import { startMimicProcess } from '../lib/mimic-process.mjs'
import { instanceMap } from '../lib/models.mjs'
import { mosquittoInstalled, startMosquitto } from '../lib/mosquitto.mjs'
import { killAll, runProcess, waitFor } from '../lib/processes.mjs'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const [instances = 1000, hz = 40, seconds = 10] = process.argv.slice(2, 5).map(Number)
const profileDir = resolve(process.argv[5] ?? join(ROOT, 'bench/profiles'))
const traceSize = process.argv[6] === undefined ? {} : { trace_size: Number(process.argv[6]) }
if (!mosquittoInstalled()) throw new Error("mosquitto is not installed (Debian's `mosquitto`)")
await mkdir(profileDir, { recursive: true })
const before = new Set(await readdir(profileDir))
const dir = await mkdtemp(join(tmpdir(), 'mimic-mqtt-profile-'))
try {
  const broker = await startMosquitto({ dir })
  const python = process.env.MIMIC_PYTHON ?? 'python3'
  const mimic = await startMimicProcess({
    python,
    extensions: join(ROOT, 'bench/fixtures'),
    dir,
    workers: 1,
    nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profileDir],
  })
  await mimic.api('PUT', '/api/v3/system/models', { Meter: meterModel(broker.port) })
  await mimic.api('PUT', '/api/v3/system/instances', instanceMap({ prefix: 's', from: 0, to: instances, model: () => 'Meter' }))
  await mimic.call('/api/v3/system/polling', 'disable')
  await mimic.call('/api/v3/system', 'prepare')
  let next = 0
  const lane = async () => {
    while (next < instances) await mimic.api('PUT', `/api/v3/system/instances/s${next++}/communication/mqtt`, { publish_interval: 1 / hz, ...traceSize })
  }
  await Promise.all(Array.from({ length: 64 }, lane))
  const spec = {
    port: broker.port,
    filter: 'bench/mimic/#',
    topics: instances * 5,
    warmupMs: 500,
    durationMs: seconds * 1000,
    pids: { publisher: mimic.pid, broker: broker.pid },
  }
  const { code, stdout, stderr } = await runProcess(process.execPath, [join(ROOT, 'bench/lib/mqtt-count-worker.mjs'), JSON.stringify(spec)], {
    name: 'mqtt-count',
    timeoutMs: 120_000,
  })
  if (code !== 0) throw new Error(`the subscriber failed: ${stderr}`)
  const r = JSON.parse(stdout.trim().split('\n').pop())
  // The profile is written as the server exits: give it the time a shutdown of 1,000 clients takes under load.
  process.kill(mimic.pid, 'SIGTERM')
  await waitFor(() => !existsSync(`/proc/${mimic.pid}`), { timeoutMs: 60_000, what: 'the server to exit' })
  await broker.stop()
  const cpu = r.cpuPercent
  console.log(
    `${instances} instances x 5 bindings at ${hz} Hz (${instances * 5 * hz}/s offered): ${Math.round(r.rate)}/s delivered, ` +
      `${Math.round(r.brokerInRate)}/s received by the broker; CPU server ${cpu.publisher.toFixed(1)}%, broker ${cpu.broker.toFixed(1)}%, ` +
      `subscriber ${cpu.subscriber.toFixed(1)}%; ${Math.round(r.rate / (cpu.publisher / 100))} delivered per CPU-second of the server`,
  )
  const written = (await readdir(profileDir)).filter((f) => f.endsWith('.cpuprofile') && !before.has(f))
  for (const f of written) console.log(`profile: ${join(profileDir, f)}`)
} finally {
  killAll()
  await rm(dir, { recursive: true, force: true })
}
