/**
 * The reference point of benchmark 2: a bare node:http server that answers the two routes with
 * canned bodies of the same size as Mimic's (the attribute document and `{"result":true}`),
 * checks nothing and computes nothing. It is what any server built on node:http (fastify,
 * express, ...) pays before doing any work; Mimic's fast lane (src/server/fast-lane/) skips
 * node:http for plain requests, which is how it can answer more than this while doing the work.
 *
 * Run: node bench/peers/bare-node-http.mjs --port 8002
 */
import { createServer } from 'node:http'

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

const portIndex = process.argv.indexOf('--port')
const port = Number(portIndex > 0 ? process.argv[portIndex + 1] : 0)

const server = createServer((req, res) => {
  const body = req.method === 'POST' ? RESULT : DOCUMENT
  // A POST body is read to its end, as any server must before it answers.
  req.resume()
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) })
    res.end(body)
  })
})
server.keepAliveTimeout = 60_000
server.listen({ host: '127.0.0.1', port }, () => {
  const address = server.address()
  console.log(JSON.stringify({ port: typeof address === 'object' && address ? address.port : port }))
})
process.on('SIGTERM', () => process.exit(0))
