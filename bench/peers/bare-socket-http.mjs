/**
 * The second reference point of benchmark 2: a server on node:net that answers HTTP/1.1
 * keep-alive requests with the canned bodies of bare-node-http.mjs, parsing no more than it must
 * to find where a request ends (its blank line, and a Content-Length body). No node:http, no
 * routing, no checks: what answering over the same sockets costs a Node process at the least,
 * the ceiling of Mimic's fast lane (src/server/fast-lane/), which also skips node:http.
 *
 * Run: node bench/peers/bare-socket-http.mjs --port 8003
 */
import { createServer } from 'node:net'

// The same bodies as bare-node-http.mjs (the attribute document and `{"result":true}`).
const DOCUMENT = JSON.stringify({
  name: 'temperature',
  type: 'float',
  path: 'instances.sensor.attributes.temperature',
  attr: {
    internal_value: { value: 21.5 },
    external_value: { value: 21.5 },
    type: { value: 'float' },
    unit: { value: 'degC' },
    default: { value: 20 },
    bound: { value: true },
    writable: { value: true },
  },
  children: [],
  methods: [],
  internal_value: 21.5,
  external_value: 21.5,
  unit: 'degC',
  default: 20,
  bound: true,
  writable: true,
})
const RESULT = JSON.stringify({ result: true })
const answer = (body) =>
  Buffer.from(`HTTP/1.1 200 OK\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: keep-alive\r\n\r\n${body}`)
const GET_ANSWER = answer(DOCUMENT)
const POST_ANSWER = answer(RESULT)
const HEAD_END = Buffer.from('\r\n\r\n')
const LENGTH = /\r\ncontent-length:\s*(\d+)/i

const portIndex = process.argv.indexOf('--port')
const port = Number(portIndex > 0 ? process.argv[portIndex + 1] : 0)

const server = createServer((socket) => {
  socket.setNoDelay(true)
  let pending = Buffer.alloc(0)
  socket.on('data', (chunk) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    const out = []
    for (;;) {
      const end = pending.indexOf(HEAD_END)
      if (end < 0) break
      const head = pending.toString('latin1', 0, end)
      const length = Number(LENGTH.exec(head)?.[1] ?? 0)
      const total = end + 4 + length
      if (pending.length < total) break
      out.push(head.startsWith('POST') ? POST_ANSWER : GET_ANSWER)
      pending = pending.subarray(total)
    }
    if (out.length === 1) socket.write(out[0])
    else if (out.length > 1) socket.write(Buffer.concat(out))
  })
  socket.on('error', () => socket.destroy())
})
server.listen({ host: '127.0.0.1', port }, () => {
  const address = server.address()
  console.log(JSON.stringify({ port: typeof address === 'object' && address ? address.port : port }))
})
process.on('SIGTERM', () => process.exit(0))
