/**
 * Benchmark 2: `POST .../method/run` then `GET .../attributes/temperature` on one Python-backed
 * instance over 32 connections, against a FastAPI + uvicorn app that holds the same class
 * in-process and serves the same two routes (the architecture of the reference product).
 *
 * @example
 * const result = await httpRoundTrip.run(ctx)
 */
import { PRODUCT_KEY, profilingOptions, startMimicProcess } from '../lib/mimic-process.mjs'
import { runHttpLoad, runInterleavedHttpLoad } from '../lib/http-load.mjs'
import { sensorModel } from '../lib/models.mjs'
import { freePort } from '../lib/ports.mjs'
import { startProcess, waitFor } from '../lib/processes.mjs'
import { median, rate, sig } from '../lib/stats.mjs'

const RUN_PATH = '/api/v3/system/instances/sensor/method/run'
const READ_PATH = '/api/v3/system/instances/sensor/attributes/temperature'

/** @type {import('../lib/benchmark.mjs').Benchmark} */
export const httpRoundTrip = {
  id: '2',
  key: 'http',
  title: 'HTTP run + read of one Python-backed instance, 32 connections',
  // Every round measures four servers twice (the client waiting, then spinning): about 140 s.
  limitMs: { full: 180_000 },
  async run(ctx) {
    const connections = ctx.smoke ? 4 : 32
    // Many short rounds rather than a few long ones: the machine's speed drifts within a minute,
    // and the median of more per-round ratios is moved less by one slow round.
    // A smoke run's turns are short: each keeps the two cores busy (server, worker and client).
    const seconds = ctx.smoke ? 0.25 : 2
    const rounds = ctx.smoke ? 1 : 7
    // The C client measures all servers in interleaved turns, so that they see the same machine;
    // wrk measures one server at a time.
    const compiled = ctx.tools.cc
    const wrk = ctx.tools.wrk
    if (!compiled)
      ctx.note(
        `no C compiler: ${wrk ? 'wrk' : 'the built-in load client (smoke quality only)'} measured the servers one after the other instead of bench/lib/http-load.c in interleaved turns`,
      )

    const dir = await ctx.tmpDir()
    const startMimic = async () => {
      const profiling = ctx.profileDir ? await profilingOptions(ctx) : {}
      const mimic = await startMimicProcess({ python: ctx.python, extensions: ctx.fixtures, dir, workers: 1, ...profiling })
      ctx.onCleanup(() => mimic.stop())
      await mimic.api('PUT', '/api/v3/system/models', { Sensor: sensorModel() })
      await mimic.api('PUT', '/api/v3/system/instances', { sensor: 'Sensor' })
      await mimic.call('/api/v3/system/instances/sensor', 'prepare')
      return { name: 'mimic', url: mimic.url }
    }
    const startPeer = async () => {
      if (!ctx.tools.fastapi) {
        ctx.note('fastapi/uvicorn are not installed: no peer column')
        return undefined
      }
      const port = await freePort()
      const peer = startProcess(
        ctx.systemPython,
        [ctx.path('bench/peers/fastapi-app.py'), '--port', String(port), '--sensor', ctx.path('bench/fixtures/sensor.py'), '--key', PRODUCT_KEY],
        { name: 'fastapi' },
      )
      ctx.onCleanup(() => peer.stop())
      const url = `http://127.0.0.1:${port}`
      await waitFor(async () => (await fetch(url + READ_PATH, { headers: { authorization: `Bearer ${PRODUCT_KEY}` } })).ok, {
        timeoutMs: 20_000,
        what: 'the FastAPI peer',
        alive: () => peer.child.exitCode === null,
      })
      return { name: 'fastapi', url }
    }
    const startLimit = async () => {
      const port = await freePort()
      const bare = startProcess(process.execPath, [ctx.path('bench/peers/bare-node-http.mjs'), '--port', String(port)], { name: 'bare node:http' })
      ctx.onCleanup(() => bare.stop())
      const url = `http://127.0.0.1:${port}`
      await waitFor(async () => (await fetch(url + READ_PATH)).ok, {
        timeoutMs: 10_000,
        what: 'the bare node:http server',
        alive: () => bare.child.exitCode === null,
      })
      return { name: 'node:http', url }
    }
    const startSocketLimit = async () => {
      const port = await freePort()
      const bare = startProcess(process.execPath, [ctx.path('bench/peers/bare-socket-http.mjs'), '--port', String(port)], { name: 'bare socket' })
      ctx.onCleanup(() => bare.stop())
      const url = `http://127.0.0.1:${port}`
      await waitFor(async () => (await fetch(url + READ_PATH)).ok, {
        timeoutMs: 10_000,
        what: 'the bare socket server',
        alive: () => bare.child.exitCode === null,
      })
      return { name: 'socket', url }
    }
    const servers = (await Promise.all([startMimic(), startPeer(), startLimit(), startSocketLimit()])).filter((s) => s !== undefined)

    // Both must really step the sensor: the temperature moves with every run.
    for (const server of servers.filter((s) => s.name !== 'node:http' && s.name !== 'socket')) {
      const read = async () => (await (await fetch(server.url + READ_PATH, { headers: { authorization: `Bearer ${PRODUCT_KEY}` } })).json()).internal_value
      const before = await read()
      const res = await fetch(server.url + RUN_PATH, {
        method: 'POST',
        headers: { authorization: `Bearer ${PRODUCT_KEY}`, 'content-type': 'application/json' },
        body: '{"kwargs":{}}',
      })
      if (!res.ok) throw new Error(`${server.name}: run answered ${res.status}`)
      if ((await read()) === before) throw new Error(`${server.name}: temperature did not change after run`)
    }

    /**
     * One round: every server under the same load, in `order`, with the C client waiting or
     * spinning (see bench/lib/http-load.c); wrk and the built-in client always wait.
     * @returns {Promise<import('../lib/http-load.mjs').HttpLoadResult[]>}
     */
    const measure = async (order, client) => {
      const load = { runPath: RUN_PATH, readPath: READ_PATH, key: PRODUCT_KEY, connections, seconds }
      if (compiled)
        return await runInterleavedHttpLoad({ ...load, ports: order.map((s) => Number(new URL(s.url).port)), warmupMs: ctx.smoke ? 50 : 500, client })
      const out = []
      for (const server of order) out.push(await runHttpLoad({ ...load, url: server.url, wrk }))
      return out
    }

    // With the C client, every round measures the servers twice: once with a client that waits
    // for its answers as wrk does, and once with one that spins on one of the two cores. How the
    // client waits decides which core Mimic's Python worker runs on, so both are reported.
    const clients = compiled ? ['waits', 'spins'] : ['waits']
    /** @type {Record<string, Record<string, import('../lib/http-load.mjs').HttpLoadResult[]>>} */
    const results = Object.fromEntries(clients.map((c) => [c, {}]))
    // Which server goes first alternates by round, and so does which client, so that no position is favoured.
    const backward = [...servers].reverse()
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? servers : backward
      for (const client of round % 2 === 0 ? clients : [...clients].reverse()) {
        const measured = await measure(order, client)
        order.forEach((server, i) => {
          const r = measured[i]
          if (!r || r.errors > 0 || r.requests === 0) throw new Error(`${server.name}: ${r?.errors} errors in ${r?.requests} requests`)
          ;(results[client][server.name] ??= []).push(r)
        })
      }
    }
    const rows = []
    const tables = []
    for (const client of clients) {
      const of = results[client]
      const med = (name, key) => (of[name] ? median(of[name].map((r) => r[key])) : Number.NaN)
      // Ratios paired by round (the servers measured in the same run), then the median: see benchmark 3.
      const paired = (name) => (of[name] ? median(of.mimic.map((r, i) => r.rate / of[name][i].rate)) : Number.NaN)
      const ratio = paired('fastapi')
      const ofBare = paired('node:http')
      const ofSocket = paired('socket')
      const how = !compiled ? '' : client === 'waits' ? ', client waits as wrk does' : ', client spins on one core'
      rows.push({
        case: `run + read, ${connections} connections${how}`,
        mimic: `${rate(med('mimic', 'rate'))} (p50 ${sig(med('mimic', 'p50Ms'))} ms, p99 ${sig(med('mimic', 'p99Ms'))} ms)`,
        peer: `${of.fastapi ? `FastAPI ${rate(med('fastapi', 'rate'))} (p50 ${sig(med('fastapi', 'p50Ms'))} ms, p99 ${sig(med('fastapi', 'p99Ms'))} ms)` : 'FastAPI n/a'}; bare node:http ${rate(med('node:http', 'rate'))}; bare socket ${rate(med('socket', 'rate'))}`,
        ratio: `${Number.isFinite(ratio) ? `${sig(ratio)}x FastAPI` : 'no peer'}; ${sig(ofBare)}x bare node:http; ${sig(ofSocket)}x bare socket`,
        target: '>= 3x FastAPI; >= 0.8 of bare node:http',
        verdict: ctx.smoke ? 'smoke' : ratio >= 3 && ofBare >= 0.8 ? 'met' : 'missed',
      })
      tables.push(
        '',
        ...(compiled ? [`Client ${client === 'waits' ? 'waiting in epoll_wait (as wrk)' : 'spinning on one core'}:`, ''] : []),
        '| server | rounds (requests/s) | median | p50 | p99 |',
        '|---|---|---|---|---|',
        ...servers.map(
          (s) =>
            `| ${s.name} | ${of[s.name].map((r) => Math.round(r.rate)).join(', ')} | ${rate(med(s.name, 'rate'))} | ${sig(med(s.name, 'p50Ms'))} ms | ${sig(med(s.name, 'p99Ms'))} ms |`,
        ),
      )
    }
    const lines = [
      `Load: ${results[clients[0]].mimic[0].tool}, ${connections} connections, each alternating POST run / GET temperature, ${seconds} s per server and round; requests/s counts both routes. ` +
        (compiled
          ? 'bench/lib/http-load.c measures the four servers in one run per round, in interleaved turns of 250 ms (one server at a time has requests in flight; each turn ends when its connections have their answers), so that they see the same machine. ' +
            'Each round runs it twice: with the client waiting for answers in epoll_wait, as wrk does, and with the client spinning on its non-blocking sockets. ' +
            "A spinning client keeps one of the two cores to itself, so Mimic's server and its Python worker share the other, where FastAPI and the bare servers run in one process; a waiting client leaves the worker room on the client's core. "
          : '') +
        '`node:http` is bench/peers/bare-node-http.mjs, a bare node:http server answering canned bodies of the same sizes: what any server built on node:http pays before doing any work (Mimic answers plain requests without node:http, see src/server/fast-lane/). ' +
        '`socket` is bench/peers/bare-socket-http.mjs, the same canned answers written straight to node:net sockets after finding where each request ends: the least a Node process pays over the same sockets. ' +
        "The first turn of a round goes to mimic, and in the next round to the bare socket server (the other way round); the summary's ratios are medians of the per-round ratios.",
      ...tables,
    ]
    return { rows, details: lines.join('\n') }
  },
}
