/**
 * Benchmark 1: N Python-backed sensor instances (tick + one bound property) stepped by the system
 * for a number of steps, against the same class called in a plain in-process Python loop (the
 * physical limit: no process boundary, no encoding).
 *
 * @example
 * const result = await pythonStep.run(ctx)
 */
import { profilingOptions, startMimicProcess } from '../lib/mimic-process.mjs'
import { instanceMap, sensorModel } from '../lib/models.mjs'
import { runProcess } from '../lib/processes.mjs'
import { median, rate, sig } from '../lib/stats.mjs'

/** @type {import('../lib/benchmark.mjs').Benchmark} */
export const pythonStep = {
  id: '1',
  key: 'python-step',
  title: 'System steps of Python-backed instances vs an in-process Python loop',
  async run(ctx) {
    const instances = ctx.smoke ? 20 : 1000
    const steps = ctx.smoke ? 5 : 100
    const rounds = ctx.smoke ? 1 : 5
    const workers = 2

    const runLoop = async () => {
      const loop = await runProcess(
        ctx.python,
        [
          ctx.path('bench/peers/python-loop.py'),
          '--sensor',
          ctx.path('bench/fixtures/sensor.py'),
          '--instances',
          String(instances),
          '--steps',
          String(steps),
          '--rounds',
          '2',
        ],
        { name: 'python loop', timeoutMs: 60_000 },
      )
      if (loop.code !== 0) throw new Error(`the in-process Python loop failed: ${loop.stderr}`)
      return JSON.parse(loop.stdout).seconds[1] // the second round: a warm interpreter, like the servers'
    }

    // Two servers: the default, where run(steps=N) hands up to 100 steps to a worker in one
    // message, and --step-batch 1, where every step goes through the server (what the system
    // loop and any system with connections or MimicComponents do).
    const variants = [
      { key: 'batched', label: 'run(steps) batched (default --step-batch 100)', env: {} },
      { key: 'single', label: 'every step through the server (--step-batch 1)', env: { MIMIC_STEP_BATCH: '1' } },
    ]
    const servers = []
    for (const variant of variants) {
      const dir = await ctx.tmpDir()
      const profiling = ctx.profileDir ? await profilingOptions(ctx) : {}
      const mimic = await startMimicProcess({ python: ctx.python, extensions: ctx.fixtures, dir, workers, env: variant.env, ...profiling })
      ctx.onCleanup(() => mimic.stop())
      await mimic.api('PUT', '/api/v3/system/models', { Sensor: sensorModel() })
      await mimic.api('PUT', '/api/v3/system/instances', instanceMap({ prefix: 's', from: 0, to: instances, model: () => 'Sensor' }))
      const t = performance.now()
      await mimic.call('/api/v3/system', 'prepare')
      const prepareSeconds = (performance.now() - t) / 1000
      ctx.log(`${variant.key}: prepared ${instances} instances in ${sig(prepareSeconds)} s`)
      await mimic.call('/api/v3/system', 'run', { steps: Math.min(steps, 10) }) // warm-up
      servers.push({ ...variant, mimic, prepareSeconds, seconds: [] })
    }

    // Rounds interleave the loop and both servers, so a noisy moment hits all of them alike.
    const loopSeconds = []
    for (let round = 0; round < rounds; round++) {
      loopSeconds.push(await runLoop())
      for (const server of servers) {
        const t = performance.now()
        await server.mimic.call('/api/v3/system', 'run', { steps })
        server.seconds.push((performance.now() - t) / 1000)
      }
    }
    for (const { key, mimic } of servers) {
      // The values must really come back from Python: the sensor's temperature moves every step,
      // and every step ran (the tick count is the same in both servers).
      const first = await mimic.api('GET', '/api/v3/system/instances/s0/attributes/temperature')
      await mimic.call('/api/v3/system', 'run', { steps: 1 })
      const second = await mimic.api('GET', '/api/v3/system/instances/s0/attributes/temperature')
      if (first.internal_value === second.internal_value) throw new Error(`${key}: s0.temperature did not change with a step (${first.internal_value})`)
    }
    const last = `/api/v3/system/instances/s${instances - 1}/attributes/temperature`
    const [batchedTemperature, singleTemperature] = await Promise.all(servers.map(async ({ mimic }) => (await mimic.api('GET', last)).internal_value))
    if (batchedTemperature !== singleTemperature) throw new Error(`the batched run ended at ${batchedTemperature}, single steps at ${singleTemperature}`)

    const work = instances * steps
    const loopRate = work / median(loopSeconds)
    const rows = servers.map((server) => {
      const mimicRate = work / median(server.seconds)
      // Paired by round (the loop ran just before the servers), then the median: see benchmark 3.
      const ratio = median(server.seconds.map((seconds, i) => loopSeconds[i] / seconds))
      return {
        case: `${instances} instances x ${steps} steps (${workers} workers), ${server.label}`,
        mimic: `${rate(mimicRate)} instance-steps (${sig(median(server.seconds) * 1000)} ms per run)`,
        peer: `in-process loop ${rate(loopRate)} (${sig(median(loopSeconds) * 1000)} ms)`,
        ratio: `${sig(ratio)} of the loop`,
        target: server.key === 'batched' ? '>= 0.25 (aim 0.5)' : 'reported',
        verdict: ctx.smoke ? 'smoke' : server.key === 'batched' ? (ratio >= 0.25 ? 'met' : 'missed') : 'info',
      }
    })
    const details = [
      `${instances} instances of one Python-backed model (bench/fixtures/sensor.py: \`run\` -> \`tick\`, \`temperature\` bound to a property), ` +
        `${workers} Python workers, \`POST /api/v3/system/method/run {"kwargs": {"steps": ${steps}}}\` timed end to end over HTTP; ` +
        'the peer runs `obj.tick(); obj.temperature` for every object and step in one Python process with the same interpreter. ' +
        'Both servers end every round with the same temperatures (checked). The ratios are medians of the per-round ratios.',
      '',
      ...servers.map(
        (s) =>
          `- ${s.label}: prepare of ${instances} instances ${sig(s.prepareSeconds)} s; rounds (s): ${s.seconds.map((x) => sig(x)).join(', ')}; per step: ${sig((median(s.seconds) / steps) * 1000)} ms`,
      ),
      `- in-process loop rounds (s): ${loopSeconds.map((s) => sig(s, 3)).join(', ')}; per step: ${sig((median(loopSeconds) / steps) * 1000)} ms`,
    ]
    return { rows, details: details.join('\n') }
  },
}
