/**
 * The independent subscriber of the MQTT benchmark: an MQTT.js client in its own process that
 * subscribes to a filter, waits until every expected topic has been heard (all publishers are
 * connected and publishing) and a warm-up has passed, then counts the messages delivered in a
 * window and the latency of each (its arrival against the publication time in its payload,
 * `"t": "<ISO 8601>"`, millisecond resolution). It also reads the CPU time the given processes
 * spent in that window, and the rate at which the broker received publications in it (the slope
 * of mosquitto's `$SYS/broker/publish/messages/received`, sent every `sys_interval`, one second in
 * the benchmark's configuration), and how many publications it dropped (`.../dropped`). Prints
 * one JSON line when done.
 *
 * Run: node bench/lib/mqtt-count-worker.mjs '{"port":1883,"filter":"bench/mimic/#","topics":5000,"warmupMs":1000,"durationMs":8000,"pids":{"mimic":123}}'
 */
import { connectAsync } from 'mqtt'
import { performance } from 'node:perf_hooks'
import { processFigures } from './proc-stats.mjs'

const spec = JSON.parse(process.argv[2] ?? '{}')
const MARK = Buffer.from('"t": "')
const seen = new Set()
let measuring = false
let messages = 0
let unreadable = 0
const latencies = []
const RECEIVED = '$SYS/broker/publish/messages/received'
/** [arrival ms, count] of the broker's counter while measuring. */
const brokerCounts = []
const DROPPED = '$SYS/broker/publish/messages/dropped'
let dropped = 0

const client = await connectAsync({ host: '127.0.0.1', port: spec.port, clientId: `bench-count-${process.pid}`, reconnectPeriod: 0 })
client.on('message', (topic, payload) => {
  if (!measuring) {
    seen.add(topic)
    return
  }
  messages++
  const at = payload.indexOf(MARK)
  const sent = at < 0 ? NaN : Date.parse(payload.toString('latin1', at + MARK.length, at + MARK.length + 24))
  if (Number.isFinite(sent)) latencies.push(Date.now() - sent)
  else unreadable++
})
await client.subscribeAsync(spec.filter, { qos: 0 })
// The broker's counters on a connection of their own, so they never wait behind the messages counted.
const counters = await connectAsync({ host: '127.0.0.1', port: spec.port, clientId: `bench-sys-${process.pid}`, reconnectPeriod: 0 })
counters.on('message', (topic, payload) => {
  if (topic === RECEIVED && measuring) brokerCounts.push([performance.now(), Number(payload.toString())])
  if (topic === DROPPED) dropped = Number(payload.toString())
})
await counters.subscribeAsync([RECEIVED, DROPPED], { qos: 0 })

const waitUntil = Date.now() + (spec.waitMs ?? 30_000)
while (seen.size < spec.topics && Date.now() < waitUntil) await new Promise((r) => setTimeout(r, 50))
const topicsSeen = seen.size
await new Promise((r) => setTimeout(r, spec.warmupMs))

const cpu = () => Object.fromEntries(Object.entries(spec.pids ?? {}).map(([name, pid]) => [name, processFigures(pid).cpuSeconds]))
const cpuBefore = cpu()
const ownBefore = process.cpuUsage()
const droppedBefore = dropped
const started = performance.now()
measuring = true
await new Promise((r) => setTimeout(r, spec.durationMs))
measuring = false
const seconds = (performance.now() - started) / 1000
// The broker's counters come once a second: wait for the one that covers the window's end.
await new Promise((r) => setTimeout(r, 1100))
const cpuAfter = cpu()
const rssMiB = Object.fromEntries(Object.entries(spec.pids ?? {}).map(([name, pid]) => [name, processFigures(pid).rssBytes / 2 ** 20]))
const own = process.cpuUsage(ownBefore)
await client.endAsync(true)
await counters.endAsync(true)

const [first, last] = [brokerCounts[0], brokerCounts.at(-1)]
const brokerInRate = brokerCounts.length >= 2 ? ((last[1] - first[1]) / (last[0] - first[0])) * 1000 : NaN
latencies.sort((a, b) => a - b)
const at = (p) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.max(0, Math.ceil((p / 100) * latencies.length) - 1))] : NaN)
const cpuPercent = Object.fromEntries(Object.keys(cpuBefore).map((name) => [name, ((cpuAfter[name] - cpuBefore[name]) / seconds) * 100]))
cpuPercent.subscriber = ((own.user + own.system) / 1e6 / seconds) * 100
console.log(
  JSON.stringify({
    messages,
    seconds,
    rate: messages / seconds,
    brokerInRate,
    brokerDropped: dropped - droppedBefore,
    rssMiB,
    topicsSeen,
    unreadable,
    p50Ms: at(50),
    p99Ms: at(99),
    maxMs: at(100),
    cpuPercent,
  }),
)
