/**
 * One process of the Modbus load client: FC3 reads of 2 holding registers at address 0 over
 * node:net, pipelined. Closed loop (`depth` requests in flight per connection, a new one sent for
 * each answer, all answers of one chunk replaced by one write) or open loop (`ratePerConnection`
 * requests per second, cycling over `units`). It checks every answer's function code and length,
 * records the latency of each, and prints one JSON line when done.
 *
 * Run: node bench/lib/modbus-load-worker.mjs '{"host":"127.0.0.1","port":5020,"connections":1,"depth":8,"warmupMs":300,"durationMs":1500}'
 */
import { connect } from 'node:net'
import { performance } from 'node:perf_hooks'

/**
 * @typedef {object} LoadSpec
 * @property {string} host
 * @property {number} [port] the port when there are no `targets`
 * @property {number} connections
 * @property {number} depth requests in flight per connection (closed loop), or the cap on them (open loop)
 * @property {number} warmupMs
 * @property {number} durationMs
 * @property {number[]} [units] unit ids to cycle through (default [1])
 * @property {Array<{ port: number, units: number[], rate?: number }>} [targets] several ports: connection i goes to targets[i % length]; `rate` is its open-loop rate
 * @property {number} [ratePerConnection] open loop: requests per second per connection
 * @property {number} [address] first register (default 0)
 */

/** @type {LoadSpec} */
const spec = JSON.parse(process.argv[2] ?? '{}')
const targets = spec.targets?.length ? spec.targets : [{ port: spec.port, units: spec.units?.length ? spec.units : [1] }]
const MAX_SAMPLES = 2_000_000
const latencies = new Float64Array(MAX_SAMPLES)
let samples = 0
let measuring = false
let responses = 0
let failures = 0
let sent = 0
let skipped = 0
/** @type {string[]} */
const problems = []

function fail(text) {
  failures++
  if (problems.length < 5) problems.push(text)
}

/** @param {number} index */
function openConnection(index) {
  const target = targets[index % targets.length]
  const units = target.units
  const perSecond = target.rate ?? spec.ratePerConnection
  const socket = connect({ host: spec.host, port: target.port })
  socket.setNoDelay(true)
  const sentAt = new Float64Array(65536)
  let tx = index * 4099
  let unit = Math.floor(index / targets.length) % units.length
  let inFlight = 0
  /** @type {Buffer | null} */
  let partial = null
  const fill = (frame, at) => {
    tx = (tx + 1) & 0xffff
    frame.writeUInt16BE(tx, at)
    frame.writeUInt16BE(0, at + 2)
    frame.writeUInt16BE(6, at + 4)
    frame[at + 6] = units[unit]
    unit = (unit + 1) % units.length
    frame[at + 7] = 3
    frame.writeUInt16BE(spec.address ?? 0, at + 8)
    frame.writeUInt16BE(2, at + 10)
    sentAt[tx] = performance.now()
  }
  const send = (count) => {
    if (count <= 0) return
    const frame = Buffer.allocUnsafe(12 * count)
    for (let i = 0; i < count; i++) fill(frame, 12 * i)
    inFlight += count
    if (measuring) sent += count
    socket.write(frame)
  }
  socket.on('data', (chunk) => {
    const data = partial ? Buffer.concat([partial, chunk]) : chunk
    const now = performance.now()
    let offset = 0
    let answered = 0
    while (data.length - offset >= 6) {
      const total = 6 + data.readUInt16BE(offset + 4)
      if (data.length - offset < total) break
      const id = data.readUInt16BE(offset)
      if (total !== 13 || data[offset + 7] !== 3 || data[offset + 8] !== 4) {
        fail(`unexpected answer ${data.subarray(offset, offset + Math.min(total, 16)).toString('hex')}`)
      } else if (measuring) {
        responses++
        if (samples < MAX_SAMPLES) latencies[samples++] = now - sentAt[id]
      }
      offset += total
      answered++
    }
    partial = offset < data.length ? Buffer.from(data.subarray(offset)) : null
    inFlight -= answered
    if (perSecond === undefined) send(answered)
  })
  socket.on('error', (error) => fail(`connection ${index}: ${error.message}`))
  socket.on('connect', () => {
    if (perSecond === undefined) {
      send(spec.depth)
      return
    }
    // Open loop: keep to the rate over time, never more than `depth` unanswered. What finds no
    // room is skipped (and counted), not sent later as a burst.
    const start = performance.now()
    let issued = 0
    const timer = setInterval(() => {
      const owed = Math.floor(((performance.now() - start) / 1000) * perSecond) - issued
      if (owed <= 0) return
      const count = Math.min(owed, spec.depth - inFlight)
      if (count > 0) send(count)
      if (measuring) skipped += owed - Math.max(0, count)
      issued += owed
    }, 5)
    socket.once('close', () => clearInterval(timer))
  })
  return socket
}

const sockets = Array.from({ length: spec.connections }, (_, i) => openConnection(i))
setTimeout(() => {
  measuring = true
  const begin = performance.now()
  const cpuBefore = process.cpuUsage()
  setTimeout(() => {
    measuring = false
    const seconds = (performance.now() - begin) / 1000
    const cpu = process.cpuUsage(cpuBefore)
    const cpuPercent = ((cpu.user + cpu.system) / 1e6 / seconds) * 100
    const sorted = latencies.subarray(0, samples).sort()
    const pick = (p) => (samples ? sorted[Math.min(samples - 1, Math.ceil((p / 100) * samples) - 1)] : Number.NaN)
    for (const socket of sockets) socket.destroy()
    process.stdout.write(
      `${JSON.stringify({ responses, sent, seconds, rate: responses / seconds, skipped, failures, problems, p50Ms: pick(50), p99Ms: pick(99), cpuPercent })}\n`,
      () => process.exit(0),
    )
  }, spec.durationMs)
}, spec.warmupMs)
