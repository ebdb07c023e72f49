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

    const loop = await runProcess(
      ctx.python,
      [ctx.path('bench/peers/python-loop.py'), '--sensor', ctx.path('bench/fixtures/sensor.py'), '--instances', String(instances), '--steps', String(steps), '--rounds', String(rounds)],
      { name: 'python loop', timeoutMs: 60_000 },
    )
    if (loop.code !== 0) throw new Error(`the in-process Python loop failed: ${loop.stderr}`)
    const loopSeconds = JSON.parse(loop.stdout).seconds

    const dir = await ctx.tmpDir()
    const profiling = ctx.profileDir ? await profilingOptions(ctx) : {}
    const mimic = await startMimicProcess({ python: ctx.python, extensions: ctx.fixtures, dir, workers, ...profiling })
    ctx.onCleanup(() => mimic.stop())
    await mimic.api('PUT', '/api/v3/system/models', { Sensor: sensorModel() })
    await mimic.api('PUT', '/api/v3/system/instances', instanceMap({ prefix: 's', from: 0, to: instances, model: () => 'Sensor' }))
    let t = performance.now()
    await mimic.call('/api/v3/system', 'prepare')
    const prepareSeconds = (performance.now() - t) / 1000
    ctx.log(`prepared ${instances} instances in ${sig(prepareSeconds)} s`)
    await mimic.call('/api/v3/system', 'run', { steps: Math.min(steps, 10) }) // warm-up

    const mimicSeconds = []
    for (let round = 0; round < rounds; round++) {
      t = performance.now()
      await mimic.call('/api/v3/system', 'run', { steps })
      mimicSeconds.push((performance.now() - t) / 1000)
    }
    // The values must really come back from Python: the sensor's temperature moves every step.
    const first = await mimic.api('GET', '/api/v3/system/instances/s0/attributes/temperature')
    await mimic.call('/api/v3/system', 'run', { steps: 1 })
    const second = await mimic.api('GET', '/api/v3/system/instances/s0/attributes/temperature')
    if (first.internal_value === second.internal_value) throw new Error(`s0.temperature did not change with a step (${first.internal_value})`)

    const work = instances * steps
    const mimicRate = work / median(mimicSeconds)
    const loopRate = work / median(loopSeconds)
    const ratio = mimicRate / loopRate
    const rows = [
      {
        case: `${instances} instances x ${steps} steps (${workers} workers)`,
        mimic: `${rate(mimicRate)} instance-steps (${sig(median(mimicSeconds) * 1000)} ms per run)`,
        peer: `in-process loop ${rate(loopRate)} (${sig(median(loopSeconds) * 1000)} ms)`,
        ratio: `${sig(ratio)} of the loop`,
        target: '>= 0.25 (aim 0.5)',
        verdict: ctx.smoke ? 'smoke' : ratio >= 0.25 ? 'met' : 'missed',
      },
    ]
    const details = [
      `${instances} instances of one Python-backed model (bench/fixtures/sensor.py: \`run\` -> \`tick\`, \`temperature\` bound to a property), ` +
        `${workers} Python workers, \`POST /api/v3/system/method/run {"kwargs": {"steps": ${steps}}}\` timed end to end over HTTP; ` +
        'the peer runs `obj.tick(); obj.temperature` for every object and step in one Python process with the same interpreter.',
      '',
      `- prepare of ${instances} instances: ${sig(prepareSeconds)} s`,
      `- Mimic rounds (s): ${mimicSeconds.map((s) => sig(s)).join(', ')}; per step: ${sig((median(mimicSeconds) / steps) * 1000)} ms`,
      `- in-process loop rounds (s): ${loopSeconds.map((s) => sig(s, 3)).join(', ')}; per step: ${sig((median(loopSeconds) / steps) * 1000)} ms`,
    ]
    return { rows, details: details.join('\n') }
  },
}

