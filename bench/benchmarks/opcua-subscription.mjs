/**
 * Benchmark 9: OPC UA subscriptions. 1,000 instances of a declarative power meter, each with 10
 * measurements changed by `function` actions every step and bound to OPC UA variables on one
 * shared endpoint (10,000 variables), the system stepping at 1 Hz, and one OPC UA client in a
 * process of its own (test/helpers/opcua-client.mjs, node-opcua-client) subscribed to all of them.
 * Reports the notifications the client received against the value changes the steps made
 * (delivered / expected, 1.0 when every change arrives), the notification rate, and the CPU of
 * the Mimic process with and without the subscription.
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

/** @type {import('../lib/benchmark.mjs').Benchmark} */
export const opcuaSubscription = {
  id: '9',
  key: 'opcua',
  title: 'OPC UA: 10,000 variables at 1 Hz, one subscribed client',
  async run(ctx) {
    const instances = ctx.smoke ? 20 : 1000
    const variables = instances * MEASUREMENTS.length
    const idleSeconds = ctx.smoke ? 1 : 8
    const seconds = ctx.smoke ? 3 : 20
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

    // CPU while stepping at 1 Hz with the OPC UA server up and no client: what the subscription
    // adds is on top. Polling paused and resumed (`disable`/`enable`) pauses the steps and leaves
    // the instances and the OPC UA server running, as `stop` would not.
    await mimic.call('/api/v3/system', 'start')
    await new Promise((r) => setTimeout(r, 1000))
    let cpu0 = processTree(mimic.pid).main.cpuSeconds
    t = performance.now()
    await new Promise((r) => setTimeout(r, idleSeconds * 1000))
    const idleCpu = ((processTree(mimic.pid).main.cpuSeconds - cpu0) / ((performance.now() - t) / 1000)) * 100
    await mimic.call('/api/v3/system/polling', 'disable')

    const client = startClient(ctx)
    ctx.onCleanup(() => client.stop())
    await client.ok({ op: 'connect', url })
    const nodeIds = []
    for (let i = 0; i < instances; i++) for (const [name] of MEASUREMENTS) nodeIds.push(`ns=1;s=m${i}.${name}`)
    t = performance.now()
    const subscribed = await client.ok({ op: 'subscribe', nodeIds, samplingInterval: 100, publishingInterval: 100, queueSize: 2, quiet: true })
    const subscribeSeconds = (performance.now() - t) / 1000
    if (subscribed.statuses.Good !== variables) throw new Error(`monitored items: ${JSON.stringify(subscribed.statuses)}`)
    // The first notification of each item is its value at subscription; stepping is paused, so
    // once the count settles every later one is a change a step made.
    const quiet = ctx.smoke ? 800 : 1500
    const initial = await settledCount(client, quiet)
    if (initial < variables) throw new Error(`only ${initial} of ${variables} initial values arrived`)
    const steps0 = (await mimic.api('GET', '/api/v3/system')).steps

    await mimic.call('/api/v3/system/polling', 'enable')
    const began = performance.now()
    await new Promise((r) => setTimeout(r, 1500))
    cpu0 = processTree(mimic.pid).main.cpuSeconds
    const clientCpu0 = processFigures(client.pid).cpuSeconds
    const n0 = (await client.ok({ op: 'counts' })).notifications
    t = performance.now()
    await new Promise((r) => setTimeout(r, Math.max(0, seconds * 1000 - 1500)))
    const window = (performance.now() - t) / 1000
    const n1 = (await client.ok({ op: 'counts' })).notifications
    const serverCpu = ((processTree(mimic.pid).main.cpuSeconds - cpu0) / window) * 100
    const clientCpu = ((processFigures(client.pid).cpuSeconds - clientCpu0) / window) * 100
    await mimic.call('/api/v3/system/polling', 'disable')
    const ran = (performance.now() - began) / 1000
    // After the count settles: a step under way when polling was disabled has finished too.
    const final = await settledCount(client, quiet)
    const steps = (await mimic.api('GET', '/api/v3/system')).steps - steps0
    const rss = processTree(mimic.pid).main.rssBytes
    await client.stop()
    await mimic.call('/api/v3/system', 'stop')

    const expected = steps * variables
    const delivered = final - initial
    const ratio = delivered / expected
    const notificationRate = (n1 - n0) / window
    const rows = [
      {
        case: `${instances.toLocaleString('en-US')} meters x ${MEASUREMENTS.length} variables (${variables.toLocaleString('en-US')}), ${HZ} Hz steps, one client subscribed to all`,
        mimic: `${rate(notificationRate)} notifications (expected ${rate(variables * HZ)}); ${delivered.toLocaleString('en-US')} of ${expected.toLocaleString('en-US')} changes delivered`,
        peer: '— (no peer: delivered / expected)',
        ratio: `${sig(ratio)} delivered / expected`,
        target: 'every change delivered; rate and CPU reported',
        verdict: ctx.smoke ? 'smoke' : ratio >= 0.99 ? 'met' : 'missed',
      },
      {
        case: `CPU of the Mimic process stepping ${instances.toLocaleString('en-US')} meters at ${HZ} Hz`,
        mimic: `${sig(serverCpu)} % of one core with the subscription, ${sig(idleCpu)} % without a client`,
        peer: '—',
        ratio: `client ${sig(clientCpu)} % of one core`,
        target: 'reported',
        verdict: ctx.smoke ? 'smoke' : 'info',
      },
    ]
    const details = [
      `${instances} instances of one declarative model with ${MEASUREMENTS.length} \`function\` actions (three-phase voltages, currents, powers and the frequency, each a ` +
        `formula of the instance time, so every step changes all ${MEASUREMENTS.length}), every measurement bound to a Double variable with its unit on one ` +
        `endpoint (${url}); prepare took ${sig(prepareSeconds)} s. The system loop runs with polling.interval ${1 / HZ} s.`,
      `The client is test/helpers/opcua-client.mjs (node-opcua-client) in its own process: one session, one subscription (publishing interval 100 ms), ` +
        `${variables} monitored items (sampling interval 100 ms, the server's default minimum; queue size 2) created in requests of 1,000 in ${sig(subscribeSeconds)} s.`,
      '',
      `- changes made: ${steps} steps in ${sig(ran)} s x ${variables} variables = ${expected}; notifications received for them: ${delivered} (${sig(ratio)}); ` +
        `the ${initial} notifications of the values at subscription are not counted`,
      `- notification rate over the ${sig(window)} s after the first 1.5 s: ${rate(notificationRate)} (${variables * HZ}/s expected)`,
      `- CPU in % of one core: Mimic ${sig(serverCpu)} with the subscription, ${sig(idleCpu)} stepping without a client (${idleSeconds} s); the client ${sig(clientCpu)}`,
      `- Mimic RSS at the end: ${Math.round(rss / 2 ** 20)} MiB`,
    ]
    return { rows, details: details.join('\n') }
  },
}
