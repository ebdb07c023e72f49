/**
 * Benchmark 9: OPC UA subscriptions. 1,000 instances of a declarative power meter, each with 10
 * measurements changed by `function` actions every step and bound to OPC UA variables on one
 * shared endpoint (10,000 variables), the system stepping at 1 Hz, and one OPC UA client in a
 * process of its own (test/helpers/opcua-client.mjs, node-opcua-client) subscribed to all of them,
 * first with items monitored by exception (sampling interval 0), then with items sampled every
 * 100 ms. Reports the notifications the client received against the value changes the steps made
 * (delivered / expected, 1.0 when every change arrives), the notification rate, and the CPU of the
 * Mimic process with each subscription and without a client.
 *
 * @example
 * const result = await opcuaSubscription.run(ctx)
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startMimicProcess } from '../lib/mimic-process.mjs'
import { instanceMap } from '../lib/models.mjs'
import { freePort } from '../lib/ports.mjs'
import { processFigures, processTree } from '../lib/proc-stats.mjs'
import { rate, sig } from '../lib/stats.mjs'

const HZ = 1
/** The meter's 10 measurements: [name, unit, formula of the instance time t]. */
const MEASUREMENTS = [
  ['v1', 'V', '230.0 + 2.0 * math.sin(t * 0.1)'],
  ['v2', 'V', '230.0 + 2.0 * math.sin(t * 0.1 + 2.0944)'],
  ['v3', 'V', '230.0 + 2.0 * math.sin(t * 0.1 + 4.1888)'],
  ['i1', 'A', '10.0 + 0.5 * math.cos(t * 0.05)'],
  ['i2', 'A', 'i1 * 1.01'],
  ['i3', 'A', 'i1 * 0.99'],
  ['p1', 'W', 'v1 * i1 * 0.95'],
  ['p2', 'W', 'v2 * i2 * 0.95'],
  ['p3', 'W', 'v3 * i3 * 0.95'],
  ['f', 'Hz', '50.0 + 0.01 * math.sin(t)'],
]

/** The meter, published on `port`: every measurement a Double variable with its unit. */
export function opcuaMeterModel(port) {
  return {
    attributes: Object.fromEntries(MEASUREMENTS.map(([name, unit]) => [name, { default: 0.0, type: 'float', unit }])),
    actions: MEASUREMENTS.map(([name, , formula]) => ({ function: `$out(${name})`, call: formula.replace(/\bt\b/g, '$attr(timer.time)') })),
    communication: [{ opcua_server: { port, bindings: MEASUREMENTS.map(([name]) => ({ attribute: name })) } }],
  }
}

/**
 * test/helpers/opcua-client.mjs driven over its stdin: one operation at a time, each answered by
 * its result line. The process ends when its stdin closes, so it never outlives this one.
 */
function startClient(ctx) {
  const child = spawn(process.execPath, [ctx.path('test/helpers/opcua-client.mjs'), '--pki', join(tmpdir(), 'mimic-opcua-bench-client')], {
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (text) => (stderr = (stderr + text).slice(-8000)))
  const waiting = new Map()
  let next = 1
  createInterface({ input: child.stdout }).on('line', (text) => {
    let line
    try {
      line = JSON.parse(text)
    } catch {
      return
    }
    waiting.get(line.id)?.(line)
    waiting.delete(line.id)
  })
  const exited = new Promise((resolve) => child.on('exit', resolve))
  exited.then(() => {
    for (const resolve of waiting.values()) resolve({ ok: false, error: `the OPC UA client exited: ${stderr.slice(-2000)}` })
  })
  return {
    pid: child.pid,
    /** Runs one operation; throws when it fails. */
    async ok(op) {
      const id = next++
      const line = await new Promise((resolve) => {
        waiting.set(id, resolve)
        child.stdin.write(JSON.stringify({ ...op, id }) + '\n')
      })
      if (!line.ok) throw new Error(`OPC UA client ${op.op}: ${line.status ?? ''} ${line.error}`)
      return line
    },
    async stop() {
      child.stdin.end()
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await exited
      clearTimeout(timer)
    },
  }
}

/** Notifications received so far, once they stop growing for `quietMs`. */
async function settledCount(client, quietMs) {
  let last = (await client.ok({ op: 'counts' })).notifications
  let since = Date.now()
  for (;;) {
    await new Promise((r) => setTimeout(r, 100))
    const now = (await client.ok({ op: 'counts' })).notifications
    if (now !== last) {
      last = now
      since = Date.now()
    } else if (Date.now() - since >= quietMs) {
      return now
    }
  }
}

/**
 * One subscription to every variable, measured: its items are created while the steps are
 * paused, their first notifications (each value at that moment) arrive and are not counted; the
 * steps resume for `seconds`, pause again, and the notifications are counted once no more arrive.
 * Every step changes every variable, so `steps * variables` notifications are expected.
 */
async function measureSubscription(ctx, { mimic, client, nodeIds, samplingInterval, seconds, quiet }) {
  let t = performance.now()
  const subscribed = await client.ok({ op: 'subscribe', nodeIds, samplingInterval, publishingInterval: 100, queueSize: 2, quiet: true })
  const subscribeSeconds = (performance.now() - t) / 1000
  if (subscribed.statuses.Good !== nodeIds.length) throw new Error(`monitored items: ${JSON.stringify(subscribed.statuses)}`)
  const initial = await settledCount(client, quiet)
  if (initial < nodeIds.length) throw new Error(`only ${initial} of ${nodeIds.length} initial values arrived`)
  const steps0 = (await mimic.api('GET', '/api/v3/system')).steps

  await mimic.call('/api/v3/system/polling', 'enable')
  const warmup = Math.min(1500, (seconds * 1000) / 4)
  await new Promise((r) => setTimeout(r, warmup))
  const cpu0 = processTree(mimic.pid).main.cpuSeconds
  const clientCpu0 = processFigures(client.pid).cpuSeconds
  const n0 = (await client.ok({ op: 'counts' })).notifications
  t = performance.now()
  await new Promise((r) => setTimeout(r, seconds * 1000 - warmup))
  const window = (performance.now() - t) / 1000
  const n1 = (await client.ok({ op: 'counts' })).notifications
  const serverCpu = ((processTree(mimic.pid).main.cpuSeconds - cpu0) / window) * 100
  const clientCpu = ((processFigures(client.pid).cpuSeconds - clientCpu0) / window) * 100
  await mimic.call('/api/v3/system/polling', 'disable')
  // After the count settles: a step under way when polling was disabled has finished too.
  const final = await settledCount(client, quiet)
  const steps = (await mimic.api('GET', '/api/v3/system')).steps - steps0
  await client.ok({ op: 'unsubscribe' })
  const expected = steps * nodeIds.length
  const delivered = final - initial
  ctx.log(`sampling interval ${samplingInterval} ms: ${delivered} of ${expected} changes delivered, Mimic ${sig(serverCpu)} % CPU`)
  return {
    samplingInterval,
    subscribeSeconds,
    initial,
    steps,
    expected,
    delivered,
    ratio: delivered / expected,
    rate: (n1 - n0) / window,
    window,
    serverCpu,
    clientCpu,
  }
}

/** @type {import('../lib/benchmark.mjs').Benchmark} */
export const opcuaSubscription = {
  id: '9',
  key: 'opcua',
  title: 'OPC UA: 10,000 variables at 1 Hz, one subscribed client',
  // Its smoke run starts a server, an OPC UA client process and two subscriptions: the smoke
  // limit of 30 s was short for that on a busy machine (it ran past it at load 10).
  limitMs: { full: 90_000, smoke: 45_000 },
  async run(ctx) {
    const instances = ctx.smoke ? 20 : 1000
    const variables = instances * MEASUREMENTS.length
    const idleSeconds = ctx.smoke ? 0.5 : 6
    const seconds = ctx.smoke ? 1 : 12
    const quiet = ctx.smoke ? 500 : 1500
    const port = await freePort()

    const dir = await ctx.tmpDir()
    const mimic = await startMimicProcess({ python: ctx.python, extensions: ctx.fixtures, dir, workers: 1 })
    ctx.onCleanup(() => mimic.stop())
    await mimic.api('PUT', '/api/v3/system/models', { Meter: opcuaMeterModel(port) })
    await mimic.api('PUT', '/api/v3/system/instances', instanceMap({ prefix: 'm', from: 0, to: instances, model: () => 'Meter' }))
    let t = performance.now()
    await mimic.call('/api/v3/system', 'prepare')
    const prepareSeconds = (performance.now() - t) / 1000
    const url = (await mimic.api('GET', '/api/v3/system/instances/m0/communication/opcua_server')).endpoint
    await mimic.api('PUT', '/api/v3/system/polling', { interval: 1 / HZ })

    // CPU while stepping at 1 Hz with the OPC UA server up and no client: what a subscription
    // adds is on top. Polling paused and resumed (`disable`/`enable`) pauses the steps and leaves
    // the instances and the OPC UA server running, as `stop` would not.
    await mimic.call('/api/v3/system', 'start')
    await new Promise((r) => setTimeout(r, ctx.smoke ? 300 : 1000))
    const cpu0 = processTree(mimic.pid).main.cpuSeconds
    const steps0 = (await mimic.api('GET', '/api/v3/system')).steps
    t = performance.now()
    await new Promise((r) => setTimeout(r, idleSeconds * 1000))
    const idleWindow = (performance.now() - t) / 1000
    const idleCpu = ((processTree(mimic.pid).main.cpuSeconds - cpu0) / idleWindow) * 100
    const idleSteps = (await mimic.api('GET', '/api/v3/system')).steps - steps0
    await mimic.call('/api/v3/system/polling', 'disable')

    const client = startClient(ctx)
    ctx.onCleanup(() => client.stop())
    await client.ok({ op: 'connect', url })
    const nodeIds = []
    for (let i = 0; i < instances; i++) for (const [name] of MEASUREMENTS) nodeIds.push(`ns=1;s=m${i}.${name}`)
    const measured = [await measureSubscription(ctx, { mimic, client, nodeIds, samplingInterval: 0, seconds, quiet })]
    // The same with items the server samples every 100 ms, when there is time left for it.
    if (Date.now() + (seconds + (ctx.smoke ? 5 : 15)) * 1000 < ctx.deadline)
      measured.push(await measureSubscription(ctx, { mimic, client, nodeIds, samplingInterval: 100, seconds, quiet }))
    else ctx.note('the run with sampled items (sampling interval 100 ms) was left out: not enough time left before the limit')
    const rss = processTree(mimic.pid).main.rssBytes
    await client.stop()
    await mimic.call('/api/v3/system', 'stop')

    const how = (m) => (m.samplingInterval === 0 ? 'by exception (sampling interval 0)' : `sampled every ${m.samplingInterval} ms`)
    const rows = measured.map((m) => ({
      case: `${instances.toLocaleString('en-US')} meters x ${MEASUREMENTS.length} variables (${variables.toLocaleString('en-US')}) at ${HZ} Hz, one client, items ${how(m)}`,
      mimic: `${m.delivered.toLocaleString('en-US')} of ${m.expected.toLocaleString('en-US')} changes delivered, ${rate(m.rate)} notifications (${rate(variables * HZ)} wanted); Mimic ${sig(m.serverCpu)} % CPU`,
      peer: `— (no peer; Mimic without a client: ${sig(idleCpu)} % CPU)`,
      ratio: `${sig(m.ratio)} delivered / expected`,
      target: 'every change delivered; rate and CPU reported',
      verdict: ctx.smoke ? 'smoke' : m.ratio >= 0.99 ? 'met' : 'missed',
    }))
    const details = [
      `${instances} instances of one declarative model with ${MEASUREMENTS.length} \`function\` actions (three-phase voltages, currents, powers and the frequency, each a ` +
        `formula of the instance time, so every step changes all ${MEASUREMENTS.length}), every measurement bound to a Double variable with its unit on one ` +
        `endpoint (${url}); prepare took ${sig(prepareSeconds)} s. The system loop runs with polling.interval ${1 / HZ} s.`,
      `The client is test/helpers/opcua-client.mjs (node-opcua-client) in its own process: one session, one subscription at a time (publishing interval 100 ms), ` +
        `${variables} monitored items (queue size 2) created in requests of 1,000. Items monitored by exception hear the changes Mimic pushes when it sees them ` +
        `(it looks every sampling_interval, 0.1 s by default); sampled items are read by node-opcua at their interval.`,
      '',
      `- without a client: ${idleSteps} steps in ${sig(idleWindow)} s, Mimic ${sig(idleCpu)} % of one core`,
      '',
      '| items | created in | steps | changes made | notifications for them | delivered / expected | notifications/s | Mimic CPU | client CPU |',
      '|---|---|---|---|---|---|---|---|---|',
      ...measured.map(
        (m) =>
          `| ${how(m)} | ${sig(m.subscribeSeconds)} s | ${m.steps} | ${m.expected} | ${m.delivered} | ${sig(m.ratio)} | ${rate(m.rate)} over ${sig(m.window)} s | ${sig(m.serverCpu)} % | ${sig(m.clientCpu)} % |`,
      ),
      '',
      `CPU in % of one core; the first notification of each item (its value at subscription) is not counted. Mimic RSS at the end: ${Math.round(rss / 2 ** 20)} MiB.`,
    ]
    return { rows, details: details.join('\n') }
  },
}
