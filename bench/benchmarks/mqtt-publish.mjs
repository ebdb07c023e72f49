/**
 * Benchmark 10, open loop: 1,000 instances, each an MQTT client publishing 5 bound attributes at
 * 40 Hz (200,000 messages/s offered, more than one mosquitto takes on this machine) to a local
 * mosquitto, against a Python paho-mqtt publisher sending the same messages on the same schedule
 * from one process (as fast as it can: it cannot keep up). An independent subscriber in its own
 * process (bench/lib/mqtt-count-worker.mjs) counts what the broker delivers and the latency of
 * each message; the CPU of the publisher, the broker and the subscriber is read from /proc, and
 * says which of them was the limit. The verdict is on messages delivered per CPU-second of the
 * publishing process.
 *
 * @example
 * const result = await mqttPublish.run(ctx)
 */
import { existsSync } from 'node:fs'
import { availableParallelism, loadavg } from 'node:os'
import { startMimicProcess } from '../lib/mimic-process.mjs'
import { instanceMap } from '../lib/models.mjs'
import { mosquittoInstalled, mosquittoVersion, startMosquitto } from '../lib/mosquitto.mjs'
import { runProcess, startProcess, waitFor } from '../lib/processes.mjs'
import { median, rate, sig } from '../lib/stats.mjs'

const BINDINGS = 5
/** 1,000 x 5 x 40 = 200,000 messages/s offered: more than the broker takes here (about 50,000/s at a full core). */
const HZ = 40
/** The payload both publishers send: the value and the time of publication. */
const TEMPLATE = '{"v": {{value}}, "t": "{{timestamp}}"}'

/**
 * One model for every instance, each on its own topics (`{{instance}}` in `topic_prefix` and
 * `client_id`): attributes p1..p5 published as JSON with their publication time every 1/HZ s once
 * `publish_interval` is set (0 at first: 1,000 clients offering 200,000 messages/s while the others
 * still connect would make the preparation a measure of the load). A keepalive of 300 s keeps the
 * broker from dropping the clients while the server is paused for the peer's rounds.
 */
export function meterModel(port) {
  const attributes = {}
  const bindings = []
  for (let b = 1; b <= BINDINGS; b++) {
    attributes[`p${b}`] = { default: Math.round((230.1 + (b - 1) * 0.1) * 10) / 10, type: 'float' }
    bindings.push({ attribute: `p${b}`, topic: `p${b}`, format: 'json', template: TEMPLATE })
  }
  return {
    attributes,
    communication: {
      mqtt: {
        broker: '127.0.0.1',
        port,
        client_id: 'bench-{{instance}}',
        topic_prefix: 'bench/mimic/{{instance}}/',
        publish_interval: 0,
        scan_interval: 1 / HZ,
        keepalive: 300,
        bindings,
      },
    },
  }
}

/** @type {import('../lib/benchmark.mjs').Benchmark} */
export const mqttPublish = {
  id: '10',
  key: 'mqtt',
  // Setting publish_interval on 1,000 adapters already publishing took 16-22 s at load 13-15: two
  // rounds of both publishers then need more than the default 90 s.
  limitMs: { full: 150_000 },
  title: 'MQTT, open loop: 1,000 instances x 5 bindings offered at 40 Hz to mosquitto',
  async run(ctx) {
    const instances = ctx.smoke ? 20 : 1000
    const windowMs = ctx.smoke ? 400 : 5000
    const warmupMs = ctx.smoke ? 100 : 500
    const rounds = ctx.smoke ? 1 : 2
    const topics = instances * BINDINGS
    const wanted = topics * HZ
    if (!mosquittoInstalled()) {
      ctx.note("mosquitto is not installed (Debian's `mosquitto`): nothing measured")
      return {
        rows: [
          {
            case: `${instances} instances x ${BINDINGS} bindings at ${HZ} Hz`,
            mimic: '—',
            peer: '—',
            ratio: '—',
            target: '>= 3x paho per CPU-second',
            verdict: ctx.smoke ? 'smoke' : 'missed',
          },
        ],
        details: 'Skipped: mosquitto is not installed.',
      }
    }
    const paho =
      existsSync(ctx.systemPython) &&
      (await runProcess(ctx.systemPython, ['-c', 'import paho.mqtt.client'], { name: 'import paho', timeoutMs: 20_000 }).catch(() => ({ code: 1 }))).code === 0
    if (!paho) ctx.note('python3-paho-mqtt is not installed for /usr/bin/python3: the peer is skipped')

    const load = loadavg()
    const cores = availableParallelism()
    const dir = await ctx.tmpDir()
    const broker = await startMosquitto({ dir })
    ctx.onCleanup(() => broker.stop())
    const mimic = await startMimicProcess({ python: ctx.python, extensions: ctx.fixtures, dir, workers: 1 })
    ctx.onCleanup(() => mimic.stop())
    await mimic.api('PUT', '/api/v3/system/models', { Meter: meterModel(broker.port) })
    await mimic.api('PUT', '/api/v3/system/instances', instanceMap({ prefix: 's', from: 0, to: instances, model: () => 'Meter' }))
    // Publishing needs no simulation steps: prepare starts the adapters (connected, idle until
    // their first round sets publish_interval).
    await mimic.call('/api/v3/system/polling', 'disable')
    let t = performance.now()
    await mimic.call('/api/v3/system', 'prepare')
    const prepareSeconds = (performance.now() - t) / 1000
    ctx.log(`prepared ${instances} instances in ${sig(prepareSeconds)} s`)
    // Every adapter publishes from here on (1,000 PUTs, many at once: a server offered 200,000
    // messages/s answers each late). Between its rounds the server process is paused (SIGSTOP), so
    // the peer has the broker and the cores to itself, and its connections stay open.
    t = performance.now()
    let next = 0
    const lane = async () => {
      while (next < instances) await mimic.api('PUT', `/api/v3/system/instances/s${next++}/communication/mqtt`, { publish_interval: 1 / HZ })
    }
    await Promise.all(Array.from({ length: 64 }, lane))
    ctx.log(`publish_interval set on ${instances} adapters in ${sig((performance.now() - t) / 1000)} s`)
    let paused = false
    const pause = (stop) => {
      if (paused === stop) return
      process.kill(mimic.pid, stop ? 'SIGSTOP' : 'SIGCONT')
      paused = stop
    }
    // A paused server would not take the signal that stops it.
    ctx.onCleanup(async () => pause(false))

    const count = async (filter, pids) => {
      const spec = { port: broker.port, filter, topics, warmupMs, durationMs: windowMs, pids }
      const { code, stdout, stderr } = await runProcess(process.execPath, [ctx.path('bench/lib/mqtt-count-worker.mjs'), JSON.stringify(spec)], {
        name: 'mqtt-count',
        timeoutMs: 90_000,
      })
      if (code !== 0) throw new Error(`the subscriber failed: ${stderr}`)
      const r = JSON.parse(stdout.trim().split('\n').pop())
      if (r.messages === 0 || r.topicsSeen < topics) throw new Error(`${filter}: ${r.messages} messages, ${r.topicsSeen} of ${topics} topics heard`)
      if (r.unreadable > 0) throw new Error(`${filter}: ${r.unreadable} payloads without a publication time`)
      return { ...r, load: loadavg()[0] }
    }
    const mimicRound = async () => {
      pause(false)
      const r = await count('bench/mimic/#', { publisher: mimic.pid, broker: broker.pid })
      pause(true)
      ctx.log(
        `Mimic: ${rate(r.rate)} delivered, CPU publisher ${sig(r.cpuPercent.publisher)}%, broker ${sig(r.cpuPercent.broker)}%, subscriber ${sig(r.cpuPercent.subscriber)}%`,
      )
      return r
    }
    const peerRound = async () => {
      const args = [ctx.path('bench/peers/paho-publisher.py'), '--port', String(broker.port), '--instances', String(instances)]
      args.push('--bindings', String(BINDINGS), '--hz', String(HZ), '--seconds', '600')
      const peer = startProcess(ctx.systemPython, args, { name: 'paho-publisher' })
      const alive = () => peer.child.exitCode === null && peer.child.signalCode === null
      await waitFor(() => peer.stdout().includes('ready'), { timeoutMs: 20_000, what: 'the paho publisher to connect', alive }).catch((err) => {
        throw new Error(`${err.message}\n${peer.stderr()}`)
      })
      pause(true)
      const r = await count('bench/peer/#', { publisher: peer.pid, broker: broker.pid })
      ctx.log(
        `paho: ${rate(r.rate)} delivered, CPU publisher ${sig(r.cpuPercent.publisher)}%, broker ${sig(r.cpuPercent.broker)}%, subscriber ${sig(r.cpuPercent.subscriber)}%`,
      )
      await peer.stop(5000)
      const summary = peer.stdout().trim().split('\n').pop()
      return { ...r, peer: summary.startsWith('{') ? JSON.parse(summary) : null }
    }

    /** @type {{ mimic: any[], peer: any[] }} */
    const results = { mimic: [], peer: [] }
    for (let round = 0; round < rounds; round++) {
      if (round > 0 && Date.now() > ctx.deadline - 25_000) {
        ctx.note(`stopped after ${round} round(s) of ${rounds} to stay within the time limit`)
        break
      }
      // Which publisher goes first alternates by round.
      const order = round % 2 === 0 ? ['mimic', 'peer'] : ['peer', 'mimic']
      for (const who of order) {
        if (who === 'peer' && !paho) continue
        ctx.log(`round ${round + 1}: ${who}`)
        results[who].push(who === 'mimic' ? await mimicRound() : await peerRound())
      }
    }

    const m = summarize(results.mimic, cores)
    const p = results.peer.length ? summarize(results.peer, cores) : null
    const figure = (s) => `${rate(s.rate)} delivered, p50 ${sig(s.p50Ms)} ms, p99 ${sig(s.p99Ms)} ms; CPU ${sig(s.cpu)}% of a core; limit: ${s.limit}`
    const perCoreRatio = p ? m.perCore / p.perCore : NaN
    const rows = [
      {
        case: `open loop: ${instances} instances x ${BINDINGS} bindings at ${HZ} Hz to mosquitto (${rate(wanted)} offered), QoS 0`,
        mimic: figure(m),
        peer: p ? `paho-mqtt, one process, as fast as it can: ${figure(p)}` : 'paho-mqtt not installed',
        ratio: p ? `${sig(m.rate / p.rate)}x paho` : '—',
        target: 'delivered rate and limit reported',
        verdict: ctx.smoke ? 'smoke' : 'info',
      },
      {
        case: 'messages delivered per CPU-second of the publishing process',
        mimic: `${rate(m.perCore)} per core`,
        peer: p ? `${rate(p.perCore)} per core` : '—',
        ratio: p ? `${sig(perCoreRatio)}x paho` : '—',
        target: '>= 3x paho per CPU-second',
        verdict: ctx.smoke ? 'smoke' : p ? (perCoreRatio >= 3 ? 'met' : 'missed') : 'missed',
      },
    ]

    const lines = [
      `Open loop: more is offered than the broker takes. Load average at the start ${load.map((x) => x.toFixed(2)).join(' ')} on ${cores} cores. ` +
        `${instances} instances of one model with an \`mqtt\` adapter (topics \`bench/mimic/{{instance}}/p1\`..): each its own MQTT.js client (connection) to a local mosquitto (${await mosquittoVersion()}), ` +
        `${BINDINGS} float attributes published as JSON \`${TEMPLATE}\` every ${1 / HZ} s (\`publish_interval\` and \`scan_interval\`), QoS 0, no retain; ${rate(wanted)} offered. ` +
        "While a client's socket is full (the broker reads slower than it is offered), its publications wait (`deferred`) and the latest values go out once it drains. " +
        `Preparing the ${instances} instances (each adapter's first connection) took ${sig(prepareSeconds)} s. ` +
        'Peer: bench/peers/paho-publisher.py on /usr/bin/python3, one paho-mqtt client without its loop thread (each message written at once) publishing the same topics and payloads, ' +
        `every message of a tick then a sleep to the next tick (${HZ} ticks a second; a tick that runs late is followed at once by the next, so it publishes as fast as it can); ` +
        "when its socket is full it waits until the socket takes more (select, then paho's loop_write) instead of queueing without end. " +
        `The subscriber (bench/lib/mqtt-count-worker.mjs, MQTT.js in its own process, QoS 0) waits until it has heard all ${topics} topics, ` +
        `${warmupMs} ms more, then counts for ${windowMs / 1000} s; latency is its arrival time against the publication time in the payload (millisecond resolution). ` +
        "'Received by the broker' is the slope of mosquitto's $SYS/broker/publish/messages/received over the window (read on a connection of its own); 'dropped' is its .../dropped counter. " +
        "Mimic and the peer run one after the other, the order alternating by round; between its rounds Mimic's server process is paused (SIGSTOP, its adapters stay connected; keepalive 300 s) and it is resumed (SIGCONT) for its own. " +
        'The broker and the subscriber are the same for both. ' +
        "'Limit' is the process that used 85 % of a core or more in the window (mosquitto and the publisher are single-threaded), or the machine when the three together used 85 % of its cores or when other work kept it busy (load average at the round's end at least the cores).",
      '',
      '| round | publisher | received by the broker | dropped by the broker | delivered | p50 | p99 | max | CPU publisher | CPU broker | CPU subscriber | limit | delivered per CPU-second of the publisher | RSS publisher, broker | notes |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ]
    for (const who of ['mimic', 'peer']) {
      results[who].forEach((r, i) => {
        const note =
          who === 'mimic'
            ? ''
            : r.peer
              ? `published ${rate(r.peer.published / r.peer.seconds)} over its run, ${r.peer.late_ticks} of ${r.peer.ticks} ticks late, waited ${r.peer.waits} times for a full socket`
              : ''
        lines.push(
          `| ${i + 1} | ${who === 'mimic' ? 'Mimic' : 'paho-mqtt'} | ${r.brokerInRate === null ? '—' : rate(r.brokerInRate)} | ${r.brokerDropped} | ${rate(r.rate)} | ${sig(r.p50Ms)} ms | ${sig(r.p99Ms)} ms | ${sig(r.maxMs)} ms | ${sig(r.cpuPercent.publisher)}% | ${sig(r.cpuPercent.broker)}% | ${sig(r.cpuPercent.subscriber)}% | ${limitOf(r, cores)} | ${rate(perCore(r))} | ${Math.round(r.rssMiB.publisher)} MiB, ${Math.round(r.rssMiB.broker)} MiB | ${note} |`,
        )
      })
    }
    return { rows, details: lines.join('\n') }
  },
}

/** Messages delivered per CPU-second of the publishing process in one round. */
function perCore(r) {
  return r.rate / Math.max(r.cpuPercent.publisher / 100, 1e-9)
}

/**
 * Which process was the limit in a round: the busiest of publisher, broker and subscriber when it
 * used 85 % of a core or more (each is single-threaded), else the machine when the three used 85 %
 * of its cores together, or when other work kept it busy (the load average at the round's end at
 * least its cores: the three then got what the others left), else none.
 */
function limitOf(r, cores) {
  const busy = ['publisher', 'broker', 'subscriber'].map((name) => [name, r.cpuPercent[name]]).sort((a, b) => b[1] - a[1])
  const total = busy.reduce((sum, [, cpu]) => sum + cpu, 0)
  if (busy[0][1] >= 85) return `${busy[0][0]} (${sig(busy[0][1])}% of a core)`
  if (total >= cores * 85) return `the machine (${sig(total)}% of ${cores} cores)`
  if (r.load >= cores) return `the machine, shared with other work (load ${sig(r.load)}; the three used ${sig(total)}% of ${cores} cores)`
  return `none at a full core (${sig(total)}% of ${cores} cores)`
}

/** Medians of a publisher's rounds. */
function summarize(runs, cores) {
  const cpu = median(runs.map((r) => r.cpuPercent.publisher))
  const limits = runs.map((r) => limitOf(r, cores).split(' (')[0])
  return {
    limit: [...new Set(limits)].join(' / '),
    rate: median(runs.map((r) => r.rate)),
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
    cpu,
    perCore: median(runs.map(perCore)),
  }
}
