import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { encodeRequest } from '../../../src/protocols/modbus/index.js'
import { TestClient, registersOf, startRig } from './helpers.js'
import type { Rig } from './helpers.js'

const READ = (transactionId: number): Buffer => encodeRequest({ transactionId, unitId: 1, request: { fc: 3, address: 0, quantity: 2 } })

/** Sends raw bytes on a fresh connection and reports whether the server closed it and what it sent. */
async function sendRaw(port: number, chunks: Buffer[], waitMs = 300): Promise<{ closed: boolean; received: Buffer }> {
  const client = await TestClient.connect(port)
  const received: Buffer[] = []
  client.socket.on('data', (d: Buffer) => received.push(d))
  let closed = false
  void client.closed.then(() => (closed = true))
  for (const chunk of chunks) {
    client.send(chunk)
    await sleep(5)
  }
  await Promise.race([client.closed, sleep(waitMs)])
  client.close()
  return { closed, received: Buffer.concat(received) }
}

describe('connection robustness', () => {
  let rig: Rig
  let witness: TestClient

  before(async () => {
    rig = await startRig({ mapping: { t: { address: [0, 1], group: 'h_r', type: 'float' } } }, { t: 25 })
    witness = await TestClient.connect(rig.port)
  })
  after(async () => {
    witness.close()
    await rig.close()
  })

  /** The well-behaved connection opened first must keep working after every abuse. */
  async function witnessStillServed(): Promise<void> {
    assert.deepEqual(registersOf(await witness.request({ fc: 3, address: 0, quantity: 2 })), [0x41c8, 0])
  }

  it('closes a connection that sends garbage', async () => {
    const { closed } = await sendRaw(rig.port, [Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')])
    assert.equal(closed, true)
    await witnessStillServed()
  })

  it('closes a connection with a wrong protocol id', async () => {
    const frame = READ(1)
    frame.writeUInt16BE(1, 2)
    assert.equal((await sendRaw(rig.port, [frame])).closed, true)
    await witnessStillServed()
  })

  it('closes a connection whose length field lies (> 254 or < 2)', async () => {
    for (const length of [255, 0xffff, 0, 1]) {
      const frame = READ(1)
      frame.writeUInt16BE(length, 4)
      const { closed, received } = await sendRaw(rig.port, [frame])
      assert.equal(closed, true, `length ${length}`)
      assert.equal(received.length, 0)
    }
    await witnessStillServed()
  })

  it('a length field that is too short yields an exception, then the stream desynchronises and closes', async () => {
    const frame = READ(1)
    frame.writeUInt16BE(4, 4) // unit id + 3 of the 5 PDU bytes
    const { closed, received } = await sendRaw(rig.port, [frame, Buffer.alloc(20, 0xff)])
    assert.equal(received.subarray(7).toString('hex'), '8303')
    assert.equal(closed, true)
    await witnessStillServed()
  })

  it('answers frames split into single bytes and half frames sent apart', async () => {
    const client = await TestClient.connect(rig.port)
    try {
      const answer = client.expect(9)
      for (const byte of READ(9)) {
        client.send(Buffer.from([byte]))
        await sleep(1)
      }
      assert.deepEqual(registersOf(await answer), [0x41c8, 0])
      const frame = READ(10)
      const second = client.expect(10)
      client.send(frame.subarray(0, 3))
      await sleep(50)
      client.send(frame.subarray(3))
      assert.deepEqual(registersOf(await second), [0x41c8, 0])
    } finally {
      client.close()
    }
  })

  it('answers several frames in one packet in order, including a frame split across packets', async () => {
    const client = await TestClient.connect(rig.port)
    try {
      const frames = Buffer.concat(Array.from({ length: 50 }, (_, i) => READ(i + 1)))
      const answers = Array.from({ length: 50 }, (_, i) => client.expect(i + 1))
      const received: number[] = []
      client.socket.on('data', (d: Buffer) => {
        for (let at = 0; at + 1 < d.length; at += 13) received.push(d.readUInt16BE(at))
      })
      client.send(frames.subarray(0, 30 * 12 + 5))
      await sleep(20)
      client.send(frames.subarray(30 * 12 + 5))
      const responses = await Promise.all(answers)
      assert.equal(responses.length, 50)
      assert.deepEqual(
        received,
        Array.from({ length: 50 }, (_, i) => i + 1),
        'answers arrive in request order',
      )
    } finally {
      client.close()
    }
  })

  it('a client that pipelines 100k requests and reads late gets every answer, in order (reading pauses, nothing is lost)', async () => {
    const client = await TestClient.connect(rig.port)
    try {
      client.socket.pause()
      const count = 100_000
      const batch = Buffer.concat(Array.from({ length: count }, (_, i) => READ(i & 0xffff)))
      client.send(batch)
      await sleep(300)
      const listener = rig.hub.listeners()[0]!
      assert.equal(listener.connections, 2)
      const chunks: Buffer[] = []
      let bytes = 0
      const done = new Promise<void>((resolve) => {
        client.socket.on('data', (d: Buffer) => {
          chunks.push(d)
          bytes += d.length
          if (bytes >= count * 13) resolve()
        })
      })
      client.socket.resume()
      await done
      const all = Buffer.concat(chunks)
      assert.equal(all.length, count * 13)
      for (let i = 0; i < count; i++) assert.equal(all.readUInt16BE(i * 13), i & 0xffff)
    } finally {
      client.close()
    }
    await witnessStillServed()
  })

  it('a client that sends half a frame and leaves does not leak; thousands of dropped connections do not either', async () => {
    const before = rig.hub.listeners()[0]!.connections
    for (let round = 0; round < 10; round++) {
      await Promise.all(
        Array.from(
          { length: 200 },
          (_, i) =>
            new Promise<void>((resolve) => {
              const socket = connect({ host: '127.0.0.1', port: rig.port })
              socket.on('error', () => resolve())
              socket.on('close', () => resolve())
              socket.on('connect', () => {
                if (i % 3 === 0) socket.write(READ(1).subarray(0, 5))
                if (i % 3 === 1) socket.resetAndDestroy()
                else socket.end()
              })
            }),
        ),
      )
    }
    for (let i = 0; i < 100 && rig.hub.listeners()[0]!.connections > before; i++) await sleep(20)
    assert.equal(rig.hub.listeners()[0]!.connections, before)
    await witnessStillServed()
  })
})
