/**
 * Benchmark 7: query round trips (`MEAS:VOLT?` answered from an attribute) against Mimic's ascii
 * adapter and a node:net line server that answers without parsing (the limit), on one connection
 * and on 16, measured in alternating turns by the same load client (bench/lib/line-load-worker.mjs).
 *
 * @example
 * const result = await asciiQuery.run(ctx)
 */
import { startMimicProcess } from '../lib/mimic-process.mjs'
import { freePort } from '../lib/ports.mjs'
import { canConnect, runProcess, startProcess, waitFor } from '../lib/processes.mjs'
import { median, rate, sig } from '../lib/stats.mjs'

const SCENARIOS = [
  { label: '1 connection', connections: 1 },
  { label: '16 connections', connections: 16 },
]

/** @type {import('../lib/benchmark.mjs').Benchmark} */
export const asciiQuery = {
  id: '8',
  key: 'ascii',
  title: 'Text instrument query round trips (ascii adapter)',
  async run(ctx) {
    const roundMs = ctx.smoke ? 100 : 700
    const warmupMs = ctx.smoke ? 50 : 150
    const rounds = ctx.smoke ? 1 : 9
    const dir = await ctx.tmpDir()
    const [mimicPort, echoPort] = [await freePort(), await freePort()]
    const mimic = await startMimicProcess({ python: ctx.python, extensions: ctx.fixtures, dir, workers: 1 })
    ctx.onCleanup(() => mimic.stop())
    const model = { attributes: { voltage: 21.5 }, communication: { ascii: { port: mimicPort, mappings: { 'MEASure:VOLTage?': '#out(voltage)' } } } }
    await mimic.api('PUT', '/api/v3/system/models', { Meter: model })
    await mimic.api('PUT', '/api/v3/system/instances', { meter: 'Meter' })
    await mimic.call('/api/v3/system', 'prepare')
    const echo = startProcess(process.execPath, [ctx.path('bench/peers/line-echo-server.mjs'), '--port', String(echoPort)], { name: 'line-echo' })
    ctx.onCleanup(() => echo.stop())
    await waitFor(() => canConnect('127.0.0.1', echoPort), { timeoutMs: 10_000, what: 'the line echo server', alive: () => echo.child.exitCode === null })
    const servers = [
      { name: 'mimic', port: mimicPort },
      { name: 'echo', port: echoPort },
    ]
    const load = async (port, connections) => {
      const spec = { port, connections, warmupMs, durationMs: roundMs, query: 'MEAS:VOLT?', expect: '21.5' }
      const { code, stdout, stderr } = await runProcess(process.execPath, [ctx.path('bench/lib/line-load-worker.mjs'), JSON.stringify(spec)], {
        name: 'line-load',
        timeoutMs: 60_000,
      })
      if (code !== 0) throw new Error(`the load client failed: ${stderr}`)
      return JSON.parse(stdout.trim().split('\n').pop())
    }

    /** @type {Record<string, Record<string, Array<{ rate: number, p50Ms: number, p99Ms: number }>>>} */
    const results = {}
    for (let round = 0; round < rounds; round++) {
      for (const scenario of SCENARIOS) {
        // Which server goes first alternates by round, so that no position is favoured.
        const order = round % 2 === 0 ? servers : [...servers].reverse()
        for (const server of order) {
          const r = await load(server.port, scenario.connections)
          if (r.failures > 0 || r.responses === 0)
            throw new Error(`${server.name}, ${scenario.label}: ${r.failures} failures, ${r.responses} answers: ${r.problems.join('; ')}`)
          ;((results[scenario.label] ??= {})[server.name] ??= []).push(r)
        }
      }
    }

    const rows = []
    const lines = ['| case | server | rounds (replies/s) | median | p50 latency | p99 latency |', '|---|---|---|---|---|---|']
    for (const scenario of SCENARIOS) {
      const byServer = results[scenario.label]
      for (const server of servers) {
        const runs = byServer[server.name]
        lines.push(
          `| ${scenario.label} | ${server.name} | ${runs.map((r) => Math.round(r.rate)).join(', ')} | ${rate(median(runs.map((r) => r.rate)))} | ${sig(median(runs.map((r) => r.p50Ms)))} ms | ${sig(median(runs.map((r) => r.p99Ms)))} ms |`,
        )
      }
      // Paired by round (measured back to back), then the median: the machine's speed drifts.
      const ratio = median(byServer.mimic.map((r, i) => r.rate / byServer.echo[i].rate))
      rows.push({
        case: scenario.label,
        mimic: `${rate(median(byServer.mimic.map((r) => r.rate)))} (p50 ${sig(median(byServer.mimic.map((r) => r.p50Ms)))} ms)`,
        peer: `line echo ${rate(median(byServer.echo.map((r) => r.rate)))}`,
        ratio: `${sig(ratio)} of echo`,
        target: '>= 0.8 of echo',
        verdict: ctx.smoke ? 'smoke' : ratio >= 0.8 ? 'met' : 'missed',
      })
    }
    const about =
      'Load: bench/lib/line-load-worker.mjs (node:net, one process), closed loop, one `MEAS:VOLT?` in flight per connection; Mimic answers it from a declarative attribute through a mapping `MEASure:VOLTage?: #out(voltage)`, the limit (bench/peers/line-echo-server.mjs) answers every line with a canned reply. Each round measures both servers back to back, first one then the other alternately; the ratios are the medians of the per-round ratios.'
    return { rows, details: [about, '', ...lines].join('\n') }
  },
}
