/**
 * The limit of benchmark 7: a node:net server that answers every `\n`-terminated line with a
 * canned reply, without looking at the line. No text-command server can answer faster over the
 * same sockets and client.
 *
 * Run: node bench/peers/line-echo-server.mjs --port 5099
 */
import { createServer } from 'node:net'

const REPLY = '21.5\n'
const NEWLINE = 0x0a

const portIndex = process.argv.indexOf('--port')
const port = Number(portIndex > 0 ? process.argv[portIndex + 1] : 0)

const server = createServer((socket) => {
  socket.setNoDelay(true)
  socket.on('data', (chunk) => {
    let lines = 0
    for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, i + 1)) lines++
    if (lines > 0) socket.write(REPLY.repeat(lines))
  })
  socket.on('error', () => {})
})
server.listen({ host: '127.0.0.1', port }, () => {
  const address = server.address()
  console.log(JSON.stringify({ port: typeof address === 'object' && address ? address.port : port }))
})
