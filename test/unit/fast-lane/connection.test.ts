/**
 * The lane's connection on its own, over a real loopback socket pair: a request the handler
 * declines reaches node:http's side byte for byte, and a failure of the lane (a handler that
 * throws, one whose promise rejects) closes that connection with a log line naming the client
 * and the request, instead of vanishing.
 */
import assert from 'node:assert/strict'
import { createServer, connect, type Server, type Socket } from 'node:net'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import pino from 'pino'
import { LaneConnection, type LaneHandler } from '../../../src/server/fast-lane/index.js'

/** A pino logger whose records land in `records`. */
function capturingLogger(): { logger: pino.Logger; records: Array<Record<string, any>> } {
  const records: Array<Record<string, any>> = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) records.push(JSON.parse(line))
      done()
    },
  })
  return { logger: pino({ level: 'info' }, stream), records }
}

/** Everything the client receives until the server closes the connection. */
function received(client: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    client.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')))
    client.on('close', () => resolve(text))
    client.on('error', () => {})
  })
}

describe('fast lane connection over a real socket pair', () => {
  let server: Server
  let port: number
  /** The handler the next accepted connection gets, and what it hands over. */
  let handler: LaneHandler
  let log = capturingLogger()
  let handedOver: (socket: Socket) => void = () => {}

  before(async () => {
    server = createServer((socket) => {
      new LaneConnection(socket, {
        handler,
        bodyLimit: 1 << 20,
        logger: log.logger,
        server: { keepAliveTimeout: 5000 },
        handOver: (s) => handedOver(s),
        release: () => {},
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port
  })
  after(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const open = (): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const client = connect({ host: '127.0.0.1', port }, () => resolve(client))
      client.once('error', reject)
    })

  it("answers a request it takes with the handler's answer, in node:http's form", async () => {
    log = capturingLogger()
    handler = (req) => ({ status: 200, headers: `x-correlation-id: ${req.headers['x-correlation-id']}\r\n`, body: JSON.stringify({ url: req.url }) })
    const client = await open()
    const text = received(client)
    client.end('GET /api/v3/system/a HTTP/1.1\r\nHost: x\r\nX-Correlation-Id: c1\r\n\r\n')
    const answer = await text
    assert.match(
      answer,
      /^HTTP\/1\.1 200 OK\r\nx-correlation-id: c1\r\ncontent-type: application\/json; charset=utf-8\r\ncontent-length: 26\r\nDate: [^\r]+\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n\{"url":"\/api\/v3\/system\/a"\}$/,
    )
    assert.deepEqual(log.records, [])
  })

  it('hands a declined request over byte for byte, with no log line', async () => {
    log = capturingLogger()
    handler = (req) => (req.url === '/taken' ? { status: 200, headers: '', body: '1' } : undefined)
    const declined = Buffer.from('POST /declined HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4\r\n\r\n[1]\n')
    const rest = Buffer.from('GET /more HTTP/1.1\r\nHost: x\r\n\r\n')
    const got = new Promise<Buffer>((resolve) => {
      handedOver = (socket) => {
        const chunks: Buffer[] = []
        socket.on('data', (chunk: Buffer) => {
          chunks.push(chunk)
          if (Buffer.concat(chunks).length >= declined.length + rest.length) {
            resolve(Buffer.concat(chunks))
            socket.destroy()
          }
        })
      }
    })
    const client = await open()
    const text = received(client)
    client.write(Buffer.concat([Buffer.from('GET /taken HTTP/1.1\r\nHost: x\r\n\r\n'), declined]))
    // The second piece arrives after the hand-over: node:http's side reads it from the socket.
    await new Promise((resolve) => setTimeout(resolve, 50))
    client.write(rest)
    assert.deepEqual(await got, Buffer.concat([declined, rest]))
    assert.match(await text, /^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n1$/)
    assert.deepEqual(log.records, [])
  })

  for (const [what, failing] of [
    [
      'throws',
      (): never => {
        throw new Error('handler on fire')
      },
    ],
    ['returns a promise that rejects', (): Promise<never> => Promise.reject(new Error('handler on fire'))],
  ] as const) {
    it(`logs and closes the connection when the handler ${what}`, async () => {
      log = capturingLogger()
      handler = (req) => (req.url === '/fine' ? { status: 200, headers: '', body: '"ok"' } : failing())
      const client = await open()
      const local = client.localPort
      const text = received(client)
      // Written in one piece: the first is answered, the second fails, the third is never read.
      client.write('GET /fine HTTP/1.1\r\nHost: x\r\n\r\nPUT /api/v3/system/boom HTTP/1.1\r\nHost: x\r\n\r\nGET /fine HTTP/1.1\r\nHost: x\r\n\r\n')
      // The answer made before the failure had not left yet: it goes with the connection.
      assert.equal(await text, '')
      const errors = log.records.filter((r) => r.level === 50)
      assert.equal(errors.length, 1, JSON.stringify(log.records))
      const [record] = errors
      assert.equal(record!.msg, 'fast lane: answering a request failed; connection closed')
      assert.equal(record!.err.message, 'handler on fire')
      assert.match(record!.err.stack, /handler on fire/)
      assert.equal(record!.remote, `127.0.0.1:${local}`)
      assert.equal(record!.request, 'PUT /api/v3/system/boom')
    })
  }
})
