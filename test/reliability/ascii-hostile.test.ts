import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { LineClient } from '../helpers/line-client.js'
import { eventually, startTestServer, type TestServer } from '../helpers/server.js'

const NODE = '/api/v3/system/instances/meter/communication/ascii'

describe('ascii adapter: hostile and heavy clients', () => {
  let t: TestServer
  let port: number

  before(async () => {
    t = await startTestServer()
    const model = {
      attributes: { reading: 1.25, label: 'meter' },
      communication: { ascii: { port: 0, mappings: { 'READ?': '#out(reading)', 'LABEL?': 'label', 'READ {v}': { reading: 'v' } } } },
    }
    assert.equal((await t.api('PUT', '/api/v3/system/models', { Meter: model })).status, 200)
    assert.equal((await t.api('PUT', '/api/v3/system/instances', { meter: 'Meter' })).status, 200)
    assert.equal((await t.call('/api/v3/system/instances/meter', 'prepare')).status, 200)
    port = (await t.api('GET', NODE)).body.port
  })
  after(async () => t?.close())

  async function stillServing(): Promise<void> {
    const client = await LineClient.connect(port)
    try {
      assert.equal(await client.query('READ?'), '1.25')
    } finally {
      client.close()
    }
  }

  it('binary garbage closes that client with a logged reason; others keep being served', async () => {
    const bystander = await LineClient.connect(port)
    const hostile = await LineClient.connect(port)
    hostile.send(Buffer.from([0x52, 0x45, 0x00, 0xff, 0x13, 0x37, 0x0a, 0x01, 0x02]))
    await hostile.closedByServer()
    assert.equal(await bystander.query('READ?'), '1.25')
    bystander.close()
    await eventually(() => t.logs.some((l) => l.adapter === 'meter.ascii' && typeof l.reason === 'string' && /binary data: byte 0x00/.test(l.reason)))
    assert.ok((await t.api('GET', NODE)).body.counters.dropped >= 1)
  })

  it('a 10 MB line without terminator closes that client once it passes max_line_length', async () => {
    const bystander = await LineClient.connect(port)
    const hostile = await LineClient.connect(port)
    const chunk = Buffer.alloc(1024 * 1024, 'A')
    for (let i = 0; i < 10 && !hostile.closed; i++) hostile.send(chunk)
    await hostile.closedByServer()
    assert.equal(await bystander.query('LABEL?'), 'meter')
    bystander.close()
    await eventually(() => t.logs.some((l) => typeof l.reason === 'string' && /longer than max_line_length \(65536\)/.test(l.reason)))
    await stillServing()
  })

  it('a client that never reads its replies is no longer read: the memory it takes stays bounded', async () => {
    const greedy = await LineClient.connect(port)
    // It reads nothing: its socket is paused until the end, so the replies pile up on the server.
    greedy.socket.pause()
    const line = Buffer.from('READ?;LABEL?;*OPC?\n'.repeat(4096))
    let sent = 0
    // Write until the server stops taking bytes (its reads paused once our replies filled the socket).
    for (let i = 0; i < 2000; i++) {
      if (!greedy.socket.write(line)) {
        const drained = await Promise.race([
          new Promise<boolean>((resolve) => greedy.socket.once('drain', () => resolve(true))),
          new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 1000)),
        ])
        sent += line.length
        if (!drained) break
      } else {
        sent += line.length
      }
    }
    // 2000 writes would be 150 MB: the server stopped reading long before.
    assert.ok(sent < 2000 * line.length, `sent ${sent} bytes`)
    await stillServing()
    // Reading now gets every reply, in order.
    const lines = (sent / line.length) * 4096
    greedy.socket.resume()
    const replies = await greedy.lines(lines, 60_000)
    assert.equal(replies.length, lines)
    assert.ok(replies.every((r) => r === '1.25;meter;1'))
    greedy.close()
  })

  it('serves 100 clients at once', async () => {
    const clients = await Promise.all(Array.from({ length: 100 }, () => LineClient.connect(port)))
    try {
      await eventually(async () => (await t.api('GET', NODE)).body.counters.clients === 100)
      const replies = await Promise.all(clients.map((c, i) => c.query(`READ ${i};READ?`)))
      // The commands of one line run together: each client reads back what it wrote.
      replies.forEach((reply, i) => assert.equal(reply, `${i}.0`))
      assert.equal(new Set(await Promise.all(clients.map((c) => c.query('LABEL?')))).size, 1)
    } finally {
      for (const c of clients) c.close()
    }
    await eventually(async () => (await t.api('GET', NODE)).body.counters.clients === 0)
  })
})
