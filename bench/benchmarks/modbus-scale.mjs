/**
 * Benchmark 6: 1,000 Python-backed instances, each published over Modbus (a few shared ports,
 * one unit id per instance), the system stepping them at 10 Hz while a client polls every
 * instance at 10 Hz. Reports the achieved step and read rates and the CPU it takes.
 *
 * @example
 * const result = await modbusScale.run(ctx)
 */
import { startMimicProcess } from '../lib/mimic-process.mjs'
import { instanceMap, sensorModel } from '../lib/models.mjs'
import { runModbusLoad } from '../lib/modbus-load.mjs'
import { freePort } from '../lib/ports.mjs'
import { processTree } from '../lib/proc-stats.mjs'
import { rate, sig } from '../lib/stats.mjs'

const UNITS_PER_PORT = 200
const HZ = 10

/** @type {import('../lib/benchmark.mjs').Benchmark} */
export const modbusScale = {
  id: '6',
  key: 'scale',
  title: 'Scale: 1,000 instances over Modbus, stepped and polled at 10 Hz',
  async run(ctx) {
    const instances = ctx.smoke ? 20 : 1000
    const seconds = ctx.smoke ? 0.8 : 15
    const workers = 2
    const ports = []
    for (let p = 0; p < Math.ceil(instances / UNITS_PER_PORT); p++) ports.push(await freePort())
    const placement = (i) => ({ port: ports[Math.floor(i / UNITS_PER_PORT)], unitId: (i % UNITS_PER_PORT) + 1 })

    const dir = await ctx.tmpDir()
    const mimic = await startMimicProcess({ python: ctx.python, extensions: ctx.fixtures, dir, workers })
    ctx.onCleanup(() => mimic.stop())
    // A model fixes its unit id, so each instance has a model of its own.
    const models = {}
    for (let i = 0; i < instances; i++) models[`Sensor${i}`] = sensorModel({ modbus: placement(i) })
    await mimic.api('PUT', '/api/v3/system/models', models)
    await mimic.api('PUT', '/api/v3/system/instances', instanceMap({ prefix: 's', from: 0, to: instances, model: (i) => `Sensor${i}` }))
    let t = performance.now()
    await mimic.call('/api/v3/system', 'prepare')
    const prepareSeconds = (performance.now() - t) / 1000
    await mimic.api('PUT', '/api/v3/system/polling', { interval: 1 / HZ })
    await mimic.call('/api/v3/system', 'start')

    const targets = ports
      .map((port, p) => ({ port, units: Array.from({ length: Math.min(UNITS_PER_PORT, instances - p * UNITS_PER_PORT) }, (_, u) => u + 1) }))
      .map((t) => ({ ...t, rate: t.units.length * HZ }))
    const wanted = instances * HZ
    const stepsBefore = (await mimic.api('GET', '/api/v3/system')).steps
    const cpuBefore = processTree(mimic.pid)
    t = performance.now()
    const load = await runModbusLoad({
      host: '127.0.0.1',
      targets,
      connections: targets.length,
      depth: 64,
      warmupMs: ctx.smoke ? 200 : 1000,
      durationMs: seconds * 1000,
      processes: 1,
    })
    const wall = (performance.now() - t) / 1000
    const cpuAfter = processTree(mimic.pid)
    const stepsAfter = (await mimic.api('GET', '/api/v3/system')).steps
    await mimic.call('/api/v3/system', 'stop')
    if (load.failures > 0) throw new Error(`${load.failures} Modbus failures: ${load.problems.join('; ')}`)

    const stepRate = (stepsAfter - stepsBefore) / wall
    const serverCpu = ((cpuAfter.main.cpuSeconds - cpuBefore.main.cpuSeconds) / wall) * 100
    const workerCpu = ((cpuAfter.cpuSeconds - cpuAfter.main.cpuSeconds - (cpuBefore.cpuSeconds - cpuBefore.main.cpuSeconds)) / wall) * 100
    const rows = [
      {
        case: `${instances} instances on ${ports.length} ports, ${HZ} Hz steps + ${HZ} Hz reads each`,
        mimic: `reads ${rate(load.rate)} of ${rate(wanted)} (p99 ${sig(load.p99Ms)} ms); steps ${sig(stepRate)}/s of ${HZ}/s`,
        peer: '—',
        ratio: `CPU: server ${sig(serverCpu)}%, workers ${sig(workerCpu)}%, client ${sig(load.cpuPercent)}% of one core`,
        target: 'runs on 2 cores; rate and CPU reported',
        verdict: ctx.smoke ? 'smoke' : load.rate >= wanted * 0.95 && stepRate >= HZ * 0.9 ? 'met' : 'missed',
      },
    ]
    const details = [
      `${instances} instances of the Python-backed sensor, each its own model (a model fixes its unit id), ${UNITS_PER_PORT} unit ids per port; ` +
        `prepare took ${sig(prepareSeconds)} s. The system loop runs with polling.interval ${1 / HZ} s; one client connection per port asks every unit ` +
        `for its 2 holding registers ${HZ} times a second (open loop, at most 64 unanswered per connection) for ${seconds} s.`,
      '',
      `- Modbus answers: ${load.responses} (${rate(load.rate)}, wanted ${rate(wanted)}; ${load.skipped} requests skipped for lack of answers), p50 ${sig(load.p50Ms)} ms, p99 ${sig(load.p99Ms)} ms`,
      `- system steps: ${stepsAfter - stepsBefore} in ${sig(wall)} s = ${sig(stepRate)}/s (wanted ${HZ}/s; each step also waits for the polling interval)`,
      `- CPU in % of one core: server ${sig(serverCpu)}, Python workers ${sig(workerCpu)}, load client ${sig(load.cpuPercent)}`,
      `- RSS: server ${Math.round(cpuAfter.main.rssBytes / 2 ** 20)} MiB, workers ${cpuAfter.children.map((c) => Math.round(c.rssBytes / 2 ** 20)).join(' + ')} MiB`,
    ]
    return { rows, details: details.join('\n') }
  },
}
