/**
 * The limit of benchmark 3: a node:net server that answers every 12-byte Modbus FC3 request with
 * a canned 13-byte response (the request's transaction id and unit id copied in) without parsing
 * anything else. No Modbus server can answer faster over the same sockets and client.
 *
 * Run: node bench/peers/echo-server.mjs --port 5021
 */
import { createServer } from 'node:net'

const REQUEST = 12
const RESPONSE = 13
// MBAP (length 7) + FC3 + byte count 4 + the float 21.5 in two registers.
const CANNED = Buffer.from([0, 0, 0, 0, 0, 7, 1, 3, 4, 0x41, 0xac, 0x00, 0x00])

const portIndex = process.argv.indexOf('--port')
const port = Number(portIndex > 0 ? process.argv[portIndex + 1] : 0)

const server = createServer((socket) => {
  socket.setNoDelay(true)
  /** @type {Buffer | null} */
  let partial = null
  socket.on('data', (chunk) => {
    const data = partial ? Buffer.concat([partial, chunk]) : chunk
    const count = Math.floor(data.length / REQUEST)
    partial = data.length % REQUEST ? Buffer.from(data.subarray(count * REQUEST)) : null
    if (count === 0) return
    const out = Buffer.allocUnsafe(count * RESPONSE)
    for (let i = 0; i < count; i++) {
      const o = i * RESPONSE
      const r = i * REQUEST
      CANNED.copy(out, o)
      out[o] = data[r]
      out[o + 1] = data[r + 1]
      out[o + 6] = data[r + 6]
    }
    socket.write(out)
  })
  socket.on('error', () => {})
})
server.listen({ host: '127.0.0.1', port }, () => {
  const address = server.address()
  console.log(JSON.stringify({ port: typeof address === 'object' && address ? address.port : port }))
})
process.on('SIGTERM', () => process.exit(0))
