/**
 * Benchmark 10: 1,000 instances, each an MQTT client publishing 5 bound attributes at 10 Hz
 * (50,000 messages/s) to a local mosquitto, against a Python paho-mqtt publisher sending the
 * same messages on the same schedule from one process. An independent subscriber in its own
 * process (bench/lib/mqtt-count-worker.mjs) counts what the broker delivers and the latency of
 * each message; the CPU of the publishing process and of the broker is read from /proc.
 *
 * @example
 * const result = await mqttPublish.run(ctx)
 */
import { existsSync } from 'node:fs'
import { startMimicProcess } from '../lib/mimic-process.mjs'
import { instanceMap } from '../lib/models.mjs'
import { mosquittoInstalled, mosquittoVersion, startMosquitto } from '../lib/mosquitto.mjs'
import { runProcess, startProcess, waitFor } from '../lib/processes.mjs'
import { median, rate, sig } from '../lib/stats.mjs'

const BINDINGS = 5
const HZ = 10
/** The payload both publishers send: the value and the time of publication. */
const TEMPLATE = '{"v": {{value}}, "t": "{{timestamp}}"}'

/**
 * One model for every instance, each on its own topics (`{{instance}}` in `topic_prefix` and
 * `client_id`): attributes p1..p5 published as JSON with their publication time every 0.1 s.
 */
function meterModel(port) {
  const attributes = {}
  const bindings = []
  for (let b = 1; b <= BINDINGS; b++) {
    attributes[`p${b}`] = { default: Math.round((230.1 + (b - 1) * 0.1) * 10) / 10, type: 'float' }
    bindings.push({ attribute: `p${b}`, topic: `p${b}`, format: 'json', template: TEMPLATE })
  }
  return {
    attributes,
    communication: {
      mqtt: { broker: '127.0.0.1', port, client_id: 'bench-{{instance}}', topic_prefix: 'bench/mimic/{{instance}}/', publish_interval: 1 / HZ, bindings },
    },
  }
}

/** @type {import('../lib/benchmark.mjs').Benchmark} */
export const mqttPublish = {
  id: '10',
  key: 'mqtt',
  title: 'MQTT: 1,000 instances x 5 bindings published at 10 Hz to mosquitto',
  async run(ctx) {
    const instances = ctx.smoke ? 20 : 1000
    const windowMs = ctx.smoke ? 800 : 5000
    const warmupMs = ctx.smoke ? 200 : 500
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
            target: '>= 2x paho',
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

    const dir = await ctx.tmpDir()
    const broker = await startMosquitto({ dir })
    ctx.onCleanup(() => broker.stop())
    const mimic = await startMimicProcess({ python: ctx.python, extensions: ctx.fixtures, dir, workers: 1 })
    ctx.onCleanup(() => mimic.stop())
    await mimic.api('PUT', '/api/v3/system/models', { Meter: meterModel(broker.port) })
    await mimic.api('PUT', '/api/v3/system/instances', instanceMap({ prefix: 's', from: 0, to: instances, model: () => 'Meter' }))
    // Publishing needs no simulation steps: prepare starts the adapters, which publish at once.
    await mimic.call('/api/v3/system/polling', 'disable')
    let t = performance.now()
    await mimic.call('/api/v3/system', 'prepare')
    const prepareSeconds = (performance.now() - t) / 1000
    /** Pauses (0) or resumes (0.1 s) every adapter's publications; the connections stay open. */
    const setPublishInterval = async (seconds) => {
      let next = 0
      const lane = async () => {
        while (next < instances) await mimic.api('PUT', `/api/v3/system/instances/s${next++}/communication/mqtt`, { publish_interval: seconds })
      }
      await Promise.all(Array.from({ length: 8 }, lane))
    }
    let publishing = true

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
      return r
    }
    const mimicRound = async () => {
      if (!publishing) await setPublishInterval(1 / HZ)
      publishing = true
      const r = await count('bench/mimic/#', { publisher: mimic.pid, broker: broker.pid })
      await setPublishInterval(0)
      publishing = false
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
      const r = await count('bench/peer/#', { publisher: peer.pid, broker: broker.pid })
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
      // Which publisher goes first alternates by round (Mimic first: its adapters publish from prepare on).
      const order = round % 2 === 0 ? ['mimic', 'peer'] : ['peer', 'mimic']
      for (const who of order) {
        if (who === 'peer' && !paho) continue
        ctx.log(`round ${round + 1}: ${who}`)
        results[who].push(who === 'mimic' ? await mimicRound() : await peerRound())
      }
    }

    const m = summarize(results.mimic)
    const p = results.peer.length ? summarize(results.peer) : null
    const figure = (s) => `${rate(s.rate)} delivered, p50 ${sig(s.p50Ms)} ms, p99 ${sig(s.p99Ms)} ms; CPU ${sig(s.cpu)}% of a core`
    const rateRatio = p ? m.rate / p.rate : NaN
    const rows = [
      {
        case: `${instances} instances x ${BINDINGS} bindings at ${HZ} Hz to mosquitto (${rate(wanted)} wanted), QoS 0`,
        mimic: figure(m),
        peer: p ? `paho-mqtt, one process: ${figure(p)}` : 'paho-mqtt not installed',
        ratio: p ? `${sig(rateRatio)}x paho` : '—',
        target: ">= 2x paho's delivered rate",
        verdict: ctx.smoke ? 'smoke' : p ? (rateRatio >= 2 ? 'met' : 'missed') : 'missed',
      },
      {
        case: 'messages delivered per CPU-second of the publishing process',
        mimic: `${rate(m.perCore)} per core`,
        peer: p ? `${rate(p.perCore)} per core` : '—',
        ratio: p ? `${sig(m.perCore / p.perCore)}x paho` : '—',
        target: 'reported',
        verdict: ctx.smoke ? 'smoke' : 'info',
      },
    ]

    const lines = [
      `${instances} instances of one model with an \`mqtt\` adapter (topics \`bench/mimic/{{instance}}/p1\`..): each its own MQTT.js client (connection) to a local mosquitto (${await mosquittoVersion()}), ` +
        `${BINDINGS} float attributes published as JSON \`${TEMPLATE}\` every ${1 / HZ} s, QoS 0, no retain; ${rate(wanted)} wanted. ` +
        `Preparing the ${instances} instances (each adapter's first connection) took ${sig(prepareSeconds)} s. ` +
        'Peer: bench/peers/paho-publisher.py on /usr/bin/python3, one paho-mqtt client without its loop thread (each message written at once) publishing the same topics and payloads, ' +
        `every message of a tick then a sleep to the next tick (${HZ} ticks a second; a tick that runs late is followed at once by the next). ` +
        `The subscriber (bench/lib/mqtt-count-worker.mjs, MQTT.js in its own process, QoS 0) waits until it has heard all ${topics} topics, ` +
        `${warmupMs} ms more, then counts for ${windowMs / 1000} s; latency is its arrival time against the publication time in the payload (millisecond resolution). ` +
        "'Received by the broker' is the slope of mosquitto's $SYS/broker/publish/messages/received over the window (read on a connection of its own); 'dropped' is its .../dropped counter. " +
        "Mimic and the peer run one after the other, the order alternating by round; between its rounds Mimic's adapters stay connected with `publish_interval` set to 0 (nothing published). " +
        'The broker and the subscriber are the same for both.',
      '',
      '| round | publisher | received by the broker | dropped by the broker | delivered | p50 | p99 | max | CPU publisher | CPU broker | CPU subscriber | RSS publisher, broker | notes |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ]
    for (const who of ['mimic', 'peer']) {
      results[who].forEach((r, i) => {
        const note =
          who === 'mimic'
            ? ''
            : r.peer
              ? `published ${rate(r.peer.published / r.peer.seconds)} over its run, ${r.peer.late_ticks} of ${r.peer.ticks} ticks late`
              : ''
        lines.push(
          `| ${i + 1} | ${who === 'mimic' ? 'Mimic' : 'paho-mqtt'} | ${r.brokerInRate === null ? '—' : rate(r.brokerInRate)} | ${r.brokerDropped} | ${rate(r.rate)} | ${sig(r.p50Ms)} ms | ${sig(r.p99Ms)} ms | ${sig(r.maxMs)} ms | ${sig(r.cpuPercent.publisher)}% | ${sig(r.cpuPercent.broker)}% | ${sig(r.cpuPercent.subscriber)}% | ${Math.round(r.rssMiB.publisher)} MiB, ${Math.round(r.rssMiB.broker)} MiB | ${note} |`,
        )
      })
    }
    return { rows, details: lines.join('\n') }
  },
}

/** Medians of a publisher's rounds. */
function summarize(runs) {
  const cpu = median(runs.map((r) => r.cpuPercent.publisher))
  return {
    rate: median(runs.map((r) => r.rate)),
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
    cpu,
    perCore: median(runs.map((r) => r.rate / Math.max(r.cpuPercent.publisher / 100, 1e-9))),
  }
}
