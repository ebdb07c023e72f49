/**
 * Benchmark 3: Modbus FC3 reads of 2 holding registers against Mimic, a pymodbus 3.0 TCP server
 * (the peer) and a node:net server that answers without parsing (the limit), all driven by one
 * load client that measures them in interleaved turns of 50 ms, so that the machine's drift hits
 * every server alike.
 *
 * @example
 * const result = await modbusRead.run(ctx)
 */
import { declarativeModel } from '../lib/models.mjs'
import { startMimicProcess } from '../lib/mimic-process.mjs'
import { runInterleavedModbusLoad, runModbusLoad } from '../lib/modbus-load.mjs'
import { freePort } from '../lib/ports.mjs'
import { canConnect, startProcess, waitFor } from '../lib/processes.mjs'
import { median, rate, sig } from '../lib/stats.mjs'

const SCENARIOS = [
  { label: '1 connection, 1 in flight', connections: 1, depth: 1 },
  { label: '1 connection, 8 in flight', connections: 1, depth: 8 },
  { label: '16 connections, 1 in flight each', connections: 16, depth: 1 },
]

/** @type {import('../lib/benchmark.mjs').Benchmark} */
export const modbusRead = {
  id: '3',
  key: 'modbus',
  title: 'Modbus FC3 read of 2 holding registers',
  async run(ctx) {
    const roundMs = ctx.smoke ? 100 : 700
    const warmupMs = ctx.smoke ? 50 : 150
    const rounds = ctx.smoke ? 1 : 9
    const dir = await ctx.tmpDir()
    const [mimicPort, peerPort, echoPort] = [await freePort(), await freePort(), await freePort()]
    // The three servers start side by side; each is checked before any load runs.
    const startMimic = async () => {
      const mimic = await startMimicProcess({ python: ctx.python, extensions: ctx.fixtures, dir, workers: 1 })
      ctx.onCleanup(() => mimic.stop())
      await mimic.api('PUT', '/api/v3/system/models', { Device: declarativeModel({ modbus: { port: mimicPort, unitId: 1 } }) })
      await mimic.api('PUT', '/api/v3/system/instances', { device: 'Device' })
      await mimic.call('/api/v3/system', 'prepare')
      await mimic.api('PUT', '/api/v3/system/instances/device/attributes', { temperature: 21.5 })
      return { name: 'mimic', port: mimicPort }
    }
    const startPeer = async () => {
      if (!ctx.tools.pymodbus) {
        ctx.note('pymodbus is not installed: no peer column')
        return undefined
      }
      const peer = startProcess(ctx.systemPython, [ctx.path('bench/peers/pymodbus-server.py'), '--port', String(peerPort)], { name: 'pymodbus' })
      ctx.onCleanup(() => peer.stop())
      await waitFor(() => canConnect('127.0.0.1', peerPort), { timeoutMs: 15_000, what: 'the pymodbus server', alive: () => peer.child.exitCode === null })
      return { name: 'pymodbus', port: peerPort }
    }
    const startEcho = async () => {
      const echo = startProcess(process.execPath, [ctx.path('bench/peers/echo-server.mjs'), '--port', String(echoPort)], { name: 'echo' })
      ctx.onCleanup(() => echo.stop())
      await waitFor(() => canConnect('127.0.0.1', echoPort), { timeoutMs: 10_000, what: 'the echo server', alive: () => echo.child.exitCode === null })
      return { name: 'echo', port: echoPort }
    }
    const servers = (await Promise.all([startMimic(), startPeer(), startEcho()])).filter((s) => s !== undefined)
    // The C client polls without sleeping, so a pipelined connection measures the server rather
    // than the client's wake-ups; without a compiler the node:net client stands in.
    const compiled = ctx.tools.cc
    if (!compiled) ctx.note('no C compiler: the node:net load client ran instead of bench/lib/modbus-load.c, and it bounds the rates it measures')
    /**
     * One round of a scenario: with the C client every server in one run, in interleaved turns
     * of 50 ms, so that all of them see the same machine (its speed drifts within a second);
     * the node:net client measures them one after the other.
     * @returns {Promise<import('../lib/modbus-load.mjs').ModbusLoadResult[]>}
     */
    const load = async (order, scenario) => {
      const spec = { connections: scenario.connections, depth: scenario.depth, warmupMs, durationMs: roundMs }
      if (compiled) return await runInterleavedModbusLoad({ ...spec, ports: order.map((s) => s.port) })
      const out = []
      for (const server of order) out.push(await runModbusLoad({ ...spec, host: '127.0.0.1', port: server.port, processes: 1 }))
      return out
    }

    /** @type {Record<string, Record<string, Array<{ rate: number, p50Ms: number, p99Ms: number }>>>} */
    const results = {}
    // Which server takes the first turn alternates by round, so that no position is favoured.
    const byName = Object.fromEntries(servers.map((s) => [s.name, s]))
    const forward = ['mimic', 'echo', 'pymodbus'].map((name) => byName[name]).filter((s) => s !== undefined)
    const backward = [...forward].reverse()
    for (let round = 0; round < rounds; round++) {
      for (const scenario of SCENARIOS) {
        const order = round % 2 === 0 ? forward : backward
        const measured = await load(order, scenario)
        order.forEach((server, i) => {
          const r = measured[i]
          if (!r || r.failures > 0 || r.responses === 0)
            throw new Error(`${server.name}, ${scenario.label}: ${r?.failures} failures, ${r?.responses} answers: ${r?.problems.join('; ')}`)
          ;((results[scenario.label] ??= {})[server.name] ??= []).push(r)
        })
      }
    }

    const rows = []
    const lines = ['| case | server | rounds (answers/s) | median | p50 latency | p99 latency |', '|---|---|---|---|---|---|']
    for (const scenario of SCENARIOS) {
      const byServer = results[scenario.label]
      const med = (name) => (byServer[name] ? median(byServer[name].map((r) => r.rate)) : Number.NaN)
      for (const server of servers) {
        const runs = byServer[server.name]
        lines.push(
          `| ${scenario.label} | ${server.name} | ${runs.map((r) => Math.round(r.rate)).join(', ')} | ${rate(med(server.name))} | ${sig(median(runs.map((r) => r.p50Ms)))} ms | ${sig(median(runs.map((r) => r.p99Ms)))} ms |`,
        )
      }
      const m = med('mimic')
      // Ratios are paired by round (the servers measured in the same run) and their median taken:
      // this machine's speed drifts by 2x within a minute, which a ratio of two medians would absorb.
      const paired = (name) => (byServer[name] ? median(byServer.mimic.map((r, i) => r.rate / byServer[name][i].rate)) : Number.NaN)
      const vsPeer = paired('pymodbus')
      const vsEcho = paired('echo')
      const pipelined = scenario.depth === 8
      const peerOk = !pipelined || !Number.isFinite(vsPeer) || vsPeer >= 2.5
      rows.push({
        case: scenario.label,
        mimic: `${rate(m)} (p50 ${sig(median(byServer.mimic.map((r) => r.p50Ms)))} ms)`,
        peer: `pymodbus ${Number.isFinite(med('pymodbus')) ? rate(med('pymodbus')) : 'n/a'}; echo ${rate(med('echo'))}`,
        ratio: `${Number.isFinite(vsPeer) ? `${sig(vsPeer)}x pymodbus` : 'no peer'}; ${sig(vsEcho)} of echo`,
        target: pipelined ? '>= 2.5x pymodbus, >= 0.8 of echo' : '>= 0.8 of echo',
        verdict: ctx.smoke ? 'smoke' : peerOk && vsEcho >= 0.8 ? 'met' : 'missed',
      })
    }
    const client = compiled
      ? "Load: bench/lib/modbus-load.c (non-blocking sockets polled without sleeping: one core for the client, the other for the server under test), closed loop, one client for all servers: it measures them in interleaved turns of 50 ms (each turn's answers drained before the next server's turn), for 0.7 s of turns per server and round."
      : 'Load: bench/lib/modbus-load-worker.mjs (node:net), closed loop, the same client for every server.'
    const pairing = compiled
      ? 'The first turn goes to mimic in one round and to pymodbus in the next (mimic, echo, pymodbus, then the other way round); the ratios in the summary are the medians of the per-round ratios.'
      : 'Each round runs every server once, one after the other; the ratios in the summary are the medians of the per-round ratios.'
    return { rows, details: [client, pairing, '', ...lines].join('\n') }
  },
}
