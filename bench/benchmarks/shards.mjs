/**
 * Benchmark 11: one fleet of MQTT meters, generated from one template by the system file's
 * `generate:` entry, served by 1, 2 and 3 shards (`mimic serve --shard I/N`, one process each) on
 * this machine, all publishing to one local mosquitto. An independent subscriber in its own
 * process (bench/lib/mqtt-count-worker.mjs) counts the messages delivered and reads the CPU time
 * of every shard process from /proc; the figures are given as ratios to one shard.
 *
 * @example
 * const result = await shards.run(ctx)
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startMimicProcess } from '../lib/mimic-process.mjs'
import { mosquittoInstalled, mosquittoVersion, startMosquitto } from '../lib/mosquitto.mjs'
import { runProcess } from '../lib/processes.mjs'
import { rate, sig } from '../lib/stats.mjs'

const BINDINGS = 2
const HZ = 10
const TEMPLATE = '{"v": {{value}}, "t": "{{timestamp}}"}'

/**
 * The system file every shard is started with: one meter model whose MQTT client id comes from
 * a parameter, and a `generate` entry making the whole fleet; each shard keeps its share.
 */
function fleetSystem(port, meters) {
  const attributes = {}
  const bindings = []
  for (let b = 1; b <= BINDINGS; b++) {
    attributes[`p${b}`] = { default: 230 + b / 10, type: 'float' }
    bindings.push({ attribute: `p${b}`, topic: `p${b}`, format: 'json', template: TEMPLATE })
  }
  return {
    models: {
      meter: {
        meta_parameters: { client_id: { type: 'string', required: true } },
        attributes,
        communication: {
          mqtt: { broker: '127.0.0.1', port, client_id: '$param(client_id)', topic_prefix: 'bench/shards/{{instance}}/', publish_interval: 1 / HZ, bindings },
        },
      },
    },
    generate: [{ template: 'meter', count: meters, name: 'meter_{i:04}', parameters: { client_id: { format: 'bench-meter-{i:04}' } } }],
  }
}

/** @type {import('../lib/benchmark.mjs').Benchmark} */
export const shards = {
  id: '11',
  key: 'shards',
  title: 'Shards: one fleet of MQTT meters from one template on 1, 2 and 3 shards',
  // Six servers start over the three configurations, each loading and preparing its share of the fleet;
  // on a machine busy with other work a start alone has taken a minute.
  limitMs: { full: 600_000, smoke: 90_000 },
  async run(ctx) {
    const meters = ctx.smoke ? 30 : 600
    const windowMs = ctx.smoke ? 400 : 5000
    const warmupMs = ctx.smoke ? 100 : 1000
    const topics = meters * BINDINGS
    const wanted = topics * HZ
    // The smoke run checks the benchmark works with three server starts, not six.
    const counts = ctx.smoke ? [1, 2] : [1, 2, 3]
    if (!mosquittoInstalled()) {
      ctx.note("mosquitto is not installed (Debian's `mosquitto`): nothing measured")
      return {
        rows: counts.map((n) => ({ case: `${n} shard(s)`, mimic: '—', peer: '—', ratio: '—', target: 'reported', verdict: ctx.smoke ? 'smoke' : 'info' })),
        details: 'Skipped: mosquitto is not installed.',
      }
    }
    const dir = await ctx.tmpDir()
    const broker = await startMosquitto({ dir })
    ctx.onCleanup(() => broker.stop())
    const system = join(dir, 'fleet.json')
    await writeFile(system, JSON.stringify(fleetSystem(broker.port, meters)))

    const results = []
    for (const n of counts) {
      ctx.log(`${n} shard(s)`)
      const started = performance.now()
      const procs = []
      for (let i = 1; i <= n; i++) {
        const shardDir = join(dir, `shard-${n}-${i}`)
        await mkdir(shardDir, { recursive: true })
        procs.push(
          startMimicProcess({
            python: ctx.python,
            extensions: ctx.fixtures,
            dir: shardDir,
            workers: 1,
            // MIMIC_START=0: the shard loads its share and waits; prepare (below) connects the meters.
            env: { MIMIC_SYSTEM: system, MIMIC_SHARD: `${i}/${n}`, MIMIC_START: '0' },
            startTimeoutMs: 180_000,
          }),
        )
      }
      const servers = await Promise.all(procs)
      const stopAll = () => Promise.all(servers.map((s) => s.stop()))
      ctx.onCleanup(stopAll)
      const held = []
      for (const s of servers) {
        // Publishing needs no simulation steps: prepare starts the adapters, which publish at once.
        await s.call('/api/v3/system/polling', 'disable')
        const { value: state } = await s.api('GET', '/api/v3/system/attr/state')
        if (state === 'INITIALIZED') await s.call('/api/v3/system', 'prepare')
        held.push((await (await fetch(`${s.url}/health`)).json()).instances)
      }
      const readySeconds = (performance.now() - started) / 1000
      ctx.log(`${n} shard(s) ready after ${sig(readySeconds)} s, holding ${held.join(' / ')} meters`)
      if (held.reduce((a, b) => a + b, 0) !== meters) throw new Error(`${n} shards hold ${held.join(' + ')} meters, not ${meters}`)
      const pids = Object.fromEntries(servers.map((s, i) => [`shard${i + 1}`, s.pid]))
      const spec = { port: broker.port, filter: 'bench/shards/#', topics, warmupMs, durationMs: windowMs, pids: { ...pids, broker: broker.pid } }
      const { code, stdout, stderr } = await runProcess(process.execPath, [ctx.path('bench/lib/mqtt-count-worker.mjs'), JSON.stringify(spec)], {
        name: 'mqtt-count',
        timeoutMs: 60_000,
      })
      if (code !== 0) throw new Error(`the subscriber failed: ${stderr}`)
      const r = JSON.parse(stdout.trim().split('\n').pop())
      if (r.messages === 0 || r.topicsSeen < topics) throw new Error(`${n} shards: ${r.messages} messages, ${r.topicsSeen} of ${topics} topics heard`)
      const cpuSeconds = servers.map((_, i) => (r.cpuPercent[`shard${i + 1}`] / 100) * r.seconds)
      results.push({
        n,
        held,
        readySeconds,
        rate: r.rate,
        seconds: r.seconds,
        cpuSeconds,
        brokerCpu: r.cpuPercent.broker,
        brokerInRate: r.brokerInRate,
        p50Ms: r.p50Ms,
        p99Ms: r.p99Ms,
      })
      ctx.log(`${n} shard(s): ${rate(r.rate)} delivered, CPU ${cpuSeconds.map((c) => sig(c)).join(' + ')} s over ${sig(r.seconds)} s`)
      await stopAll()
    }

    const one = results[0]
    const sum = (xs) => xs.reduce((a, b) => a + b, 0)
    const rows = results.map((r) => {
      const cpu = sum(r.cpuSeconds)
      return {
        case: `${r.n} shard(s): ${meters} meters x ${BINDINGS} bindings at ${HZ} Hz (${rate(wanted)} wanted), ${r.held.join(' / ')} per shard`,
        mimic: `${rate(r.rate)} delivered; CPU ${r.cpuSeconds.map((c) => sig(c)).join(' + ')} s over ${sig(r.seconds)} s`,
        peer: `1 shard: ${rate(one.rate)}, CPU ${sig(sum(one.cpuSeconds))} s`,
        ratio: `${sig(r.rate / one.rate)}x messages/s, ${sig(cpu / sum(one.cpuSeconds))}x CPU, ${sig(Math.max(...r.held) / one.held[0])}x devices per shard`,
        target: 'reported',
        verdict: ctx.smoke ? 'smoke' : 'info',
      }
    })
    const lines = [
      `One system file (a \`meter\` model with an \`mqtt\` adapter whose \`client_id\` is the parameter \`client_id\`, and \`generate: [{template: meter, count: ${meters}, name: "meter_{i:04}", parameters: {client_id: {format: "bench-meter-{i:04}"}}}]\`) ` +
        `started as 1, 2 and 3 shards (\`MIMIC_SHARD=I/N\`, one \`mimic serve\` process each, one Python worker each, polling disabled: publishing needs no steps), one configuration after the other. ` +
        `Each meter is its own MQTT connection to a local mosquitto (${await mosquittoVersion()}) publishing ${BINDINGS} float attributes as JSON every ${1 / HZ} s, QoS 0. ` +
        `The subscriber (bench/lib/mqtt-count-worker.mjs, its own process) waits until it has heard all ${topics} topics, ${warmupMs} ms more, then counts for ${windowMs / 1000} s and reads each shard's CPU time from /proc over the same window. ` +
        'Ratios are to the one-shard configuration; this machine has the cores it reports above, shared by the shards, the broker and the subscriber.',
      '',
      '| shards | meters per shard | ready after | delivered | received by the broker | p50 | p99 | CPU seconds per shard | CPU total | CPU broker | messages per CPU-second of the shards |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
    ]
    for (const r of results) {
      const cpu = sum(r.cpuSeconds)
      lines.push(
        `| ${r.n} | ${r.held.join(' / ')} | ${sig(r.readySeconds)} s | ${rate(r.rate)} | ${Number.isFinite(r.brokerInRate) ? rate(r.brokerInRate) : '—'} | ${sig(r.p50Ms)} ms | ${sig(r.p99Ms)} ms | ${r.cpuSeconds.map((c) => sig(c)).join(' / ')} s | ${sig(cpu)} s (${sig(cpu / sum(one.cpuSeconds))}x) | ${sig(r.brokerCpu)}% | ${rate((r.rate * r.seconds) / cpu).replace('/s', '')} |`,
      )
    }
    return { rows, details: lines.join('\n') }
  },
}
