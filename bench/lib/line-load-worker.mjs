/**
 * The load client of benchmark 7: query round trips over node:net, closed loop, one query in
 * flight per connection (a new one sent as soon as its reply line arrives). It checks each reply,
 * records its latency and prints one JSON line when done.
 *
 * Run: node bench/lib/line-load-worker.mjs '{"port":5025,"connections":16,"warmupMs":150,"durationMs":700,"query":"MEAS:VOLT?","expect":"21.5"}'
 */
import { connect } from 'node:net'
import { performance } from 'node:perf_hooks'

const spec = JSON.parse(process.argv[2] ?? '{}')
const query = Buffer.from(`${spec.query}\n`)
const latencies = []
let responses = 0
let failures = 0
let measuring = false
const problems = []

function open() {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: spec.port })
    socket.setNoDelay(true)
    let buffer = ''
    let sentAt = 0
    const send = () => {
      sentAt = performance.now()
      socket.write(query)
    }
    socket.setEncoding('utf8')
    socket.on('data', (text) => {
      buffer += text
      let end
      while ((end = buffer.indexOf('\n')) !== -1) {
        const line = buffer.slice(0, end)
        buffer = buffer.slice(end + 1)
        if (line !== spec.expect) {
          failures++
          if (problems.length < 5) problems.push(`reply ${JSON.stringify(line)}`)
        }
        if (measuring) {
          responses++
          latencies.push(performance.now() - sentAt)
        }
        if (!stopped) send()
      }
    })
    socket.on('error', (error) => {
      failures++
      if (problems.length < 5) problems.push(error.message)
    })
    socket.once('connect', () => resolve({ socket, send }))
    socket.once('error', reject)
  })
}

let stopped = false
const connections = await Promise.all(Array.from({ length: spec.connections }, () => open()))
for (const c of connections) c.send()
await new Promise((r) => setTimeout(r, spec.warmupMs))
measuring = true
const began = performance.now()
await new Promise((r) => setTimeout(r, spec.durationMs))
measuring = false
const seconds = (performance.now() - began) / 1000
stopped = true
for (const c of connections) c.socket.destroy()
latencies.sort((a, b) => a - b)
const at = (p) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] : Number.NaN)
console.log(JSON.stringify({ responses, rate: responses / seconds, p50Ms: at(0.5), p99Ms: at(0.99), failures, problems }))
