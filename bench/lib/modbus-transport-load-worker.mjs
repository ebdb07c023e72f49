/**
 * The load client of benchmark 12: FC3 reads of 2 holding registers of unit 1, closed loop, one
 * request in flight (a serial master has no other way, and UDP is measured alike), over a serial
 * line (the master's end of a pty pair, opened with serialport) or over UDP (node:dgram). It
 * checks each answer, records its latency and prints one JSON line when done. It starts once the
 * server has answered a first request (within `readyMs`, 20 s by default: a peer may still be
 * starting), so no probe is needed before it. A request not answered within 1 s after that counts
 * as a failure and the next one is sent.
 *
 * Run: node bench/lib/modbus-transport-load-worker.mjs '{"transport":"serial","device":"/dev/pts/4","baudrate":115200,"warmupMs":150,"durationMs":700}'
 *      node bench/lib/modbus-transport-load-worker.mjs '{"transport":"udp","port":5020,"warmupMs":150,"durationMs":700}'
 */
import { createSocket } from 'node:dgram'
import { performance } from 'node:perf_hooks'
import { SerialPort } from 'serialport'

const spec = JSON.parse(process.argv[2] ?? '{}')
// 01 03 0000 0002 + CRC; the answer: 01 03 04 + 4 bytes + CRC (9 bytes).
const RTU_READ = Buffer.from('010300000002c40b', 'hex')
// Transaction 1, protocol 0, length 6, unit 1, the same PDU; the answer is 13 bytes.
const MBAP_READ = Buffer.from('000100000006010300000002', 'hex')
const latencies = []
let responses = 0
let failures = 0
let measuring = false
let stopped = false
const problems = []
let sentAt = 0
let timer = null

let ready = false
let onReady = () => {}

function answered(ok, what) {
  clearTimeout(timer)
  if (!ready) {
    // Before the first answer, silence is a server still starting, not a failure.
    if (what === 'no answer within 1 s') return
    ready = true
    onReady()
  }
  if (!ok) {
    failures++
    if (problems.length < 5) problems.push(what)
  }
  if (measuring && ok) {
    responses++
    latencies.push(performance.now() - sentAt)
  }
}

let send
let close
if (spec.transport === 'serial') {
  const port = new SerialPort({ path: spec.device, baudRate: spec.baudrate ?? 115200, autoOpen: false, lock: false })
  await new Promise((resolve, reject) => port.open((error) => (error ? reject(error) : resolve())))
  let held = Buffer.alloc(0)
  let inFlight = false
  port.on('data', (chunk) => {
    held = Buffer.concat([held, chunk])
    if (held.length < 9) return
    const ok = held.length === 9 && held[0] === 1 && held[1] === 3 && held[2] === 4
    const text = held.toString('hex')
    held = Buffer.alloc(0)
    // A late answer to a request given up on: the one in flight has its own coming.
    if (!inFlight) return
    inFlight = false
    answered(ok, `answer ${text}`)
    if (!stopped) send()
  })
  send = () => {
    inFlight = true
    sentAt = performance.now()
    timer = setTimeout(() => {
      inFlight = false
      held = Buffer.alloc(0)
      answered(false, 'no answer within 1 s')
      if (!stopped) send()
    }, 1000)
    port.write(RTU_READ)
  }
  // A write still queued when the port closes at the end fails with EBADF: no failure of the
  // server's, and unhandled it would end the process before it prints its figures.
  port.on('error', (error) => {
    if (stopped) return
    failures++
    if (problems.length < 5) problems.push(`serial port: ${error.message}`)
  })
  close = () => new Promise((resolve) => port.drain(() => port.close(() => resolve())))
} else {
  const socket = createSocket('udp4')
  let transaction = 0
  socket.on('message', (message) => {
    // A late answer to a request given up on is not the one in flight: taking it would put two in flight.
    if (message.length < 2 || message.readUInt16BE(0) !== transaction) return
    answered(message.length === 13 && message[7] === 3, `answer ${message.toString('hex')}`)
    if (!stopped) send()
  })
  send = () => {
    transaction = (transaction + 1) & 0xffff
    MBAP_READ.writeUInt16BE(transaction, 0)
    sentAt = performance.now()
    timer = setTimeout(() => {
      answered(false, 'no answer within 1 s')
      if (!stopped) send()
    }, 1000)
    socket.send(MBAP_READ, spec.port, '127.0.0.1')
  }
  close = () => new Promise((resolve) => socket.close(() => resolve()))
}

send()
const readyMs = spec.readyMs ?? 20_000
const answeredInTime = await new Promise((resolve) => {
  // Unref'd: once the server answered, this timer must not keep the process alive.
  setTimeout(() => resolve(ready), readyMs).unref()
  onReady = () => resolve(true)
})
if (!answeredInTime) {
  stopped = true
  clearTimeout(timer)
  await close()
  console.log(JSON.stringify({ responses: 0, rate: 0, p50Ms: null, p99Ms: null, failures: 1, problems: [`no answer within ${readyMs} ms`] }))
  process.exit(0)
}
await new Promise((r) => setTimeout(r, spec.warmupMs))
measuring = true
const began = performance.now()
await new Promise((r) => setTimeout(r, spec.durationMs))
measuring = false
const seconds = (performance.now() - began) / 1000
stopped = true
clearTimeout(timer)
await close()
latencies.sort((a, b) => a - b)
const at = (p) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] : Number.NaN)
console.log(JSON.stringify({ responses, rate: responses / seconds, p50Ms: at(0.5), p99Ms: at(0.99), failures, problems }))
