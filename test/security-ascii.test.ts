// Text instruments against hostile and unlucky clients, on a real server with raw sockets: UDP
// answers bounded for senders that did not show they receive them (a forged source cannot make Mimic
// a reflector), the UDP queue bounded, no send after the endpoint closed, TCP idle and full
// listeners (docs/ascii.md, "Limits").
import assert from 'node:assert/strict'
import { createSocket, type Socket as UdpSocket } from 'node:dgram'
import { after, before, describe, it } from 'node:test'
import { LineClient, udpQuery } from './helpers/line-client.js'
import { eventually, startTestServer, type TestServer } from './helpers/server.js'

const LABEL = 'x'.repeat(60_000)

/** A UDP socket bound to `address` that collects every datagram it receives. */
async function udpPeer(
  address = '127.0.0.1',
): Promise<{ socket: UdpSocket; received: string[]; send(port: number, text: string): void; next(n: number): Promise<string> }> {
  const socket = createSocket('udp4')
  const received: string[] = []
  socket.on('message', (message) => received.push(message.toString('utf8')))
  await new Promise<void>((resolve) => socket.bind({ address, port: 0 }, resolve))
  return {
    socket,
    received,
    send: (port, text) => socket.send(text, port, '127.0.0.1'),
    next: async (n) => {
      await eventually(() => received.length >= n, 5000)
      return received[n - 1]!
    },
  }
}

describe('text instruments over UDP: answers to unproven senders are bounded', () => {
  let t: TestServer
  let port: number
  let trustedPort: number
  const node = '/api/v3/system/instances/panel/communication/ascii'
  before(async () => {
    t = await startTestServer()
    const mappings = { 'LABel?': 'label', 'LABel {v}': { label: 'v' }, 'LEN?': { response: 'ok' } }
    const model = {
      attributes: { label: { default: 'short', type: 'str' } },
      communication: [
        { ascii: { port: 0, transport: 'udp', mappings } },
        { ascii: { port: 0, transport: 'udp', mappings, udp_trusted_peers: ['127.0.0.0/8'] } },
      ],
    }
    assert.equal((await t.api('PUT', '/api/v3/system/models', { Panel: model })).status, 200)
    assert.equal((await t.api('PUT', '/api/v3/system/instances', { panel: 'Panel' })).status, 200)
    assert.equal((await t.call('/api/v3/system/instances/panel', 'prepare')).status, 200)
    assert.equal((await t.api('PUT', '/api/v3/system/instances/panel/attributes/label/attr/value', { value: LABEL })).status, 200)
    port = (await t.api('GET', node)).body.port
    trustedPort = (await t.api('GET', `${node}_1`)).body.port
  })
  after(async () => t?.close())

  it('a 7-byte query for a 60,001-byte answer gets no answer but -223 in the error queue, counted as oversized', async () => {
    const peer = await udpPeer()
    try {
      peer.send(port, 'LAB?\r\n\n')
      await eventually(async () => (await t.api('GET', node)).body.counters.oversized === 1)
      peer.send(port, 'SYST:ERR?\n')
      const error = await peer.next(1)
      assert.match(error, /^-223,"Too much data;an answer of 60001 bytes to an unproven UDP sender \(at most 512\)"\n$/)
      // The datagrams of one sender are answered in order: the refused answer would have come first.
      assert.equal(peer.received.length, 1)
      // Small answers are not affected.
      assert.match(await udpQuery(port, '*IDN?\n'), /^Mimic,Panel,panel,/)
    } finally {
      peer.socket.close()
    }
  })

  it('a sender that echoes its token gets the full answer; a wrong token proves nothing', async () => {
    const peer = await udpPeer()
    try {
      peer.send(port, 'SYSTem:COMMunicate:UDP:TOKen?\n')
      const token = (await peer.next(1)).trim()
      assert.match(token, /^[0-9a-f]{16}$/)
      peer.send(port, `SYST:COMM:UDP:TOK ${token.replace(/^./, (c) => (c === '0' ? '1' : '0'))}\nLAB?\n`)
      await eventually(async () => (await t.api('GET', node)).body.counters.oversized === 2)
      peer.send(port, `SYST:COMM:UDP:TOK ${token}\nLAB?\n`)
      assert.equal(await peer.next(2), `${LABEL}\n`)
      // The proof holds for later datagrams of the same sender.
      peer.send(port, 'LAB?\n')
      assert.equal(await peer.next(3), `${LABEL}\n`)
    } finally {
      peer.socket.close()
    }
    // Another sender (another port) is not proven by it.
    const other = await udpPeer()
    try {
      other.send(port, 'LAB?\n')
      await eventually(async () => (await t.api('GET', node)).body.counters.oversized === 3)
      assert.equal(other.received.length, 0)
    } finally {
      other.socket.close()
    }
  })

  it('a sender in udp_trusted_peers gets the full answer at once', async () => {
    assert.equal(await udpQuery(trustedPort, 'LAB?\n'), `${LABEL}\n`)
    assert.equal((await t.api('GET', `${node}_1`)).body.counters.oversized, 0)
  })

  it('the node shows the limits with their defaults', async () => {
    const body = (await t.api('GET', node)).body
    assert.equal(body.udp_reply_limit, 512)
    assert.equal(body.udp_queue_per_address, 32)
    assert.equal(body.udp_queue, 1024)
    assert.deepEqual(body.udp_trusted_peers, [])
    assert.equal(body.idle_timeout, 300)
    assert.equal(body.max_connections_per_address, 128)
  })

  it('a trusted peer that is not an address is a 422 naming it', async () => {
    const model = { attributes: { a: 0.0 }, communication: { ascii: { transport: 'udp', udp_trusted_peers: ['lab-pc'] } } }
    const res = await t.api('PUT', '/api/v3/system/models', { Bad: model })
    assert.equal(res.status, 422)
    assert.deepEqual(
      res.body.error.details.map((d: { path: string }) => d.path),
      ['communication.ascii.udp_trusted_peers[0]'],
    )
  })
})

describe('text instruments over UDP: a flood with a reply delay', () => {
  let t: TestServer
  const node = '/api/v3/system/instances/meter/communication/ascii'
  before(async () => {
    t = await startTestServer()
    const model = {
      attributes: { v: { default: 1.5, type: 'float' } },
      communication: { ascii: { port: 0, transport: 'udp', response_delay: 0.2, mappings: { 'V?': 'v' } } },
    }
    assert.equal((await t.api('PUT', '/api/v3/system/models', { Meter: model })).status, 200)
    assert.equal((await t.api('PUT', '/api/v3/system/instances', { meter: 'Meter' })).status, 200)
    assert.equal((await t.call('/api/v3/system/instances/meter', 'prepare')).status, 200)
  })
  after(async () => t?.close())

  it('20,000 datagrams from one address wait at most udp_queue_per_address; another client is answered meanwhile', async () => {
    const port = (await t.api('GET', node)).body.port
    // The flood comes from 127.0.0.2, another address of the loopback network than the client's.
    const flood = await udpPeer('127.0.0.2')
    try {
      for (let i = 0; i < 20_000; i++) {
        flood.send(port, 'V?\n')
        if (i % 500 === 499) await new Promise((resolve) => setImmediate(resolve))
      }
      const during = await eventually(async () => {
        const counters = (await t.api('GET', node)).body.counters
        return counters.udp_dropped > 0 && counters
      })
      assert.ok(during.udp_waiting <= 32, `udp_waiting ${during.udp_waiting}`)
      assert.equal(await udpQuery(port, 'V?\n'), '1.5\n')
      const counters = (await t.api('GET', node)).body.counters
      assert.ok(counters.udp_waiting <= 32, `udp_waiting ${counters.udp_waiting}`)
      // The flood is still being answered, one datagram every 0.2 s, yet the client did not wait for it.
      assert.ok(counters.udp_waiting > 0)
    } finally {
      flood.socket.close()
    }
  })
})

describe('text instruments over UDP: closing while a delayed answer waits', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
    const model = {
      attributes: { v: { default: 1.5, type: 'float' } },
      communication: { ascii: { port: 0, transport: 'udp', response_delay: 0.3, mappings: { 'V?': 'v' } } },
    }
    assert.equal((await t.api('PUT', '/api/v3/system/models', { Slow: model })).status, 200)
  })
  after(async () => t?.close())

  async function pendingAnswer(instance: string): Promise<UdpSocket> {
    assert.equal((await t.api('PUT', '/api/v3/system/instances', { [instance]: 'Slow' })).status, 200)
    assert.equal((await t.call(`/api/v3/system/instances/${instance}`, 'prepare')).status, 200)
    const node = `/api/v3/system/instances/${instance}/communication/ascii`
    const peer = await udpPeer()
    for (let i = 0; i < 5; i++) peer.send((await t.api('GET', node)).body.port, 'V?\n')
    await eventually(async () => (await t.api('GET', node)).body.counters.udp_waiting > 0)
    return peer.socket
  }

  async function outlive(socket: UdpSocket): Promise<void> {
    // Past every reply delay of the five datagrams, each of which would have been sent after close.
    await new Promise((resolve) => setTimeout(resolve, 5 * 300 + 300))
    socket.close()
    const health = await fetch(`${t.url}/health`)
    assert.equal(health.status, 200)
  }

  it('stop', async () => {
    const socket = await pendingAnswer('a')
    assert.equal((await t.call('/api/v3/system/instances/a', 'stop')).status, 200)
    await outlive(socket)
  })

  it('delete', async () => {
    const socket = await pendingAnswer('b')
    assert.equal((await t.api('DELETE', '/api/v3/system/instances/b')).status, 200)
    await outlive(socket)
  })

  it('a snapshot load', async () => {
    const saved = (await t.call('/api/v3/system/snapshots', 'save')).body.result
    const socket = await pendingAnswer('c')
    assert.equal((await t.call('/api/v3/system/snapshots', 'load', { id: saved.id })).status, 200)
    await outlive(socket)
  })
})

describe('text instruments over TCP: idle clients and a full listener', () => {
  let t: TestServer
  const node = (i: string) => `/api/v3/system/instances/${i}/communication/ascii`
  before(async () => {
    t = await startTestServer()
    const mappings = { 'V?': 'v' }
    const models = {
      Full: { attributes: { v: { default: 1.5, type: 'float' } }, communication: { ascii: { port: 0, mappings } } },
      Quick: { attributes: { v: { default: 2.5, type: 'float' } }, communication: { ascii: { port: 0, idle_timeout: 0.5, mappings } } },
    }
    assert.equal((await t.api('PUT', '/api/v3/system/models', models)).status, 200)
    assert.equal((await t.api('PUT', '/api/v3/system/instances', { full: 'Full', quick: 'Quick' })).status, 200)
    assert.equal((await t.call('/api/v3/system/instances/full', 'prepare')).status, 200)
    assert.equal((await t.call('/api/v3/system/instances/quick', 'prepare')).status, 200)
  })
  after(async () => t?.close())

  it('after 300 idle connections a client still gets its answer: the one idle the longest makes room', async () => {
    const port = (await t.api('GET', node('full'))).body.port
    const idle: LineClient[] = []
    try {
      for (let i = 0; i < 300; i++) idle.push(await LineClient.connect(port))
      const client = await LineClient.connect(port)
      try {
        assert.equal(await client.query('V?'), '1.5')
      } finally {
        client.close()
      }
      const counters = (await t.api('GET', node('full'))).body.counters
      // All from 127.0.0.1: max_connections_per_address (128) is the bound that applies.
      assert.ok(counters.clients <= 128, `clients ${counters.clients}`)
      assert.ok(counters.evicted >= 300 + 1 - 128, `evicted ${counters.evicted}`)
      // The first ones went first.
      await idle[0]!.closedByServer()
      assert.equal(idle[299]!.closed, false)
    } finally {
      for (const c of idle) c.close()
    }
  })

  it('a client that sends nothing for idle_timeout is closed; one that talks is not', async () => {
    const port = (await t.api('GET', node('quick'))).body.port
    const silent = await LineClient.connect(port)
    const talker = await LineClient.connect(port)
    try {
      const talking = (async () => {
        while (!silent.closed) {
          assert.equal(await talker.query('V?'), '2.5')
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      })()
      await silent.closedByServer()
      await talking
      assert.equal(talker.closed, false)
      assert.ok((await t.api('GET', node('quick'))).body.counters.idle_closed >= 1)
    } finally {
      silent.close()
      talker.close()
    }
  })
})
