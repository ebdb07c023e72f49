import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createSocket } from 'node:dgram'
import { connect } from 'node:net'
import { ConflictError } from '../../../src/errors.js'
import { ModbusHub, ModbusSlaveAdapter, encodeRequest, parseModbusSlave } from '../../../src/protocols/modbus/index.js'
import { crc16, crcOk } from '../../../src/protocols/modbus/rtu.js'
import { MAX_PENDING_PER_SOURCE } from '../../../src/protocols/modbus/udp-listener.js'
import { MapAccessor, silentLogger } from './helpers.js'

// The udp and rtu_over_tcp transports at the hub and adapter level: the faults of the fault menu
// on each, and how their listeners share (or do not share) a port number.

const MAPPING = { v: { address: 0, group: 'h_r', type: 'uint_16' } }

function adapterOf(hub: ModbusHub, settings: Record<string, unknown>, value = 1234): ModbusSlaveAdapter {
  const definition = parseModbusSlave({ port: 0, ...settings, mapping: MAPPING })
  return new ModbusSlaveAdapter({ hub, definition, accessor: new MapAccessor({ v: value }), logger: silentLogger })
}

function rtu(hex: string): Buffer {
  const body = Buffer.from(hex, 'hex')
  const crc = crc16(body, 0, body.length)
  return Buffer.concat([body, Buffer.from([crc & 0xff, crc >>> 8])])
}

/** Sends datagrams from one socket and gathers the answers that arrive within `waitMs`, with their arrival times. */
async function udpExchange(port: number, datagrams: Buffer[], waitMs: number): Promise<Array<{ at: number; data: Buffer }>> {
  const socket = createSocket('udp4')
  const got: Array<{ at: number; data: Buffer }> = []
  const start = Date.now()
  socket.on('message', (data) => got.push({ at: Date.now() - start, data }))
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
  for (const d of datagrams) socket.send(d, port, '127.0.0.1')
  await new Promise((resolve) => setTimeout(resolve, waitMs))
  socket.close()
  return got
}

/** Writes the frames and gathers the chunks that arrive within `waitMs`, and whether the server closed. */
async function rtuExchange(port: number, frames: Buffer[], waitMs: number): Promise<{ chunks: Array<{ at: number; data: Buffer }>; closed: boolean }> {
  const socket = connect({ host: '127.0.0.1', port })
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  const chunks: Array<{ at: number; data: Buffer }> = []
  let closed = false
  const start = Date.now()
  socket.on('data', (data: Buffer) => chunks.push({ at: Date.now() - start, data }))
  socket.on('close', () => (closed = true))
  for (const frame of frames) {
    socket.write(frame)
    // Apart, so that each write arrives as a chunk of its own.
    await new Promise((resolve) => setTimeout(resolve, 30))
  }
  await new Promise((resolve) => setTimeout(resolve, waitMs))
  socket.destroy()
  return { chunks, closed }
}

const READ = (tid: number, unitId = 1): Buffer => encodeRequest({ transactionId: tid, unitId, request: { fc: 3, address: 0, quantity: 1 } })
const RTU_READ = rtu('010300000001')

describe('modbus_slave over udp', () => {
  const hub = new ModbusHub({ logger: silentLogger })
  const adapter = adapterOf(hub, { transport: 'udp' })
  let port: number
  before(async () => {
    await adapter.start()
    port = adapter.info().port!
  })
  after(async () => {
    await adapter.stop()
    await hub.close()
  })

  it('answers each datagram to its sender; drops what is not one MBAP frame', async () => {
    const got = await udpExchange(port, [READ(7), Buffer.concat([READ(8), READ(9)]), Buffer.alloc(300), READ(10, 9)], 200)
    const answers = got.map((g) => g.data.toString('hex')).sort()
    // 0x04d2 = 1234; unit 9 is nobody's: exception 0x0B as on TCP.
    assert.deepEqual(answers, ['00070000000501030204d2', '000a0000000309830b'])
    assert.equal(hub.listeners()[0]!.transport, 'udp')
  })

  it('bounds the requests one sender has in hand', async () => {
    adapter.set('faults', { response_delay: { seconds: 0.2 } })
    try {
      const got = await udpExchange(
        port,
        Array.from({ length: MAX_PENDING_PER_SOURCE + 4 }, (_, i) => READ(i)),
        450,
      )
      assert.equal(got.length, MAX_PENDING_PER_SOURCE)
    } finally {
      adapter.set('faults', {})
    }
  })

  it('faults: exception, no_response, delay and corruption as on TCP; a split answer leaves whole; a disconnect swallows its request', async () => {
    adapter.set('faults', { exception: { code: 6 } })
    assert.equal((await udpExchange(port, [READ(1)], 150))[0]!.data.toString('hex'), '000100000003018306')
    adapter.set('faults', { no_response: { every: 1 } })
    assert.equal((await udpExchange(port, [READ(2)], 150)).length, 0)
    adapter.set('faults', { response_delay: { seconds: 0.15 } })
    const late = await udpExchange(port, [READ(3)], 400)
    assert.equal(late.length, 1)
    assert.ok(late[0]!.at >= 140, `answered after ${late[0]!.at} ms`)
    adapter.set('faults', { corrupt: { kind: 'transaction_id' } })
    assert.equal((await udpExchange(port, [READ(4)], 150))[0]!.data.subarray(0, 2).toString('hex'), 'fffb')
    adapter.set('faults', { split_frames: { parts: 3, gap: 0.05 } })
    const whole = await udpExchange(port, [READ(5)], 150)
    assert.deepEqual(
      whole.map((g) => g.data.toString('hex')),
      ['00050000000501030204d2'],
    )
    adapter.set('faults', { disconnect: { after: 1 } })
    const counted = (adapter.stats() as Record<string, unknown>).fault_disconnects
    const answers = await udpExchange(port, [READ(6)], 100)
    assert.equal(answers.length, 1, 'the request before the disconnect is answered')
    assert.equal((await udpExchange(port, [READ(7)], 150)).length, 0, 'the one that would disconnect is not')
    assert.equal((adapter.stats() as Record<string, unknown>).fault_disconnects, counted, 'no connection was closed')
    assert.equal((await udpExchange(port, [READ(8)], 150)).length, 1, 'then the fault is spent')
    adapter.set('faults', {})
  })
})

describe('modbus_slave over rtu_over_tcp', () => {
  const hub = new ModbusHub({ logger: silentLogger })
  const adapter = adapterOf(hub, { transport: 'rtu_over_tcp' })
  let port: number
  before(async () => {
    await adapter.start()
    port = adapter.info().port!
  })
  after(async () => {
    await adapter.stop()
    await hub.close()
  })

  it('cuts frames by function code: several in one write, one across writes', async () => {
    const write = rtu('01060000002a')
    const restore = rtu('0106000004d2')
    const { chunks } = await rtuExchange(port, [Buffer.concat([RTU_READ, write.subarray(0, 3)]), write.subarray(3), Buffer.concat([RTU_READ, restore])], 200)
    const all = Buffer.concat(chunks.map((c) => c.data)).toString('hex')
    assert.equal(all, [rtu('01030204d2'), write, rtu('010302002a'), restore].map((b) => b.toString('hex')).join(''))
    assert.equal(adapter.info().counters.crc_errors, 0)
  })

  it('faults: exception, no_response, delay; a corrupted answer fails its CRC; split; disconnect closes', async () => {
    adapter.set('faults', { exception: { code: 6 } })
    assert.equal(Buffer.concat((await rtuExchange(port, [RTU_READ], 150)).chunks.map((c) => c.data)).toString('hex'), rtu('018306').toString('hex'))
    adapter.set('faults', { no_response: { every: 1 } })
    assert.equal((await rtuExchange(port, [RTU_READ], 150)).chunks.length, 0)
    adapter.set('faults', { response_delay: { seconds: 0.15 } })
    const late = await rtuExchange(port, [RTU_READ], 400)
    assert.ok(late.chunks[0]!.at >= 140, `answered after ${late.chunks[0]!.at} ms`)
    adapter.set('faults', { corrupt: { kind: 'junk' } })
    const junk = Buffer.concat((await rtuExchange(port, [RTU_READ], 150)).chunks.map((c) => c.data))
    assert.equal(junk.length, 7)
    assert.equal(crcOk(junk, 0, junk.length), false)
    adapter.set('faults', { split_frames: { parts: 2, gap: 0.1 } })
    const split = await rtuExchange(port, [RTU_READ], 400)
    assert.deepEqual(
      split.chunks.map((c) => c.data.length),
      [4, 3],
    )
    assert.ok(split.chunks[1]!.at - split.chunks[0]!.at >= 90)
    adapter.set('faults', { disconnect: { after: 1 } })
    const closed = await rtuExchange(port, [RTU_READ, RTU_READ], 200)
    assert.equal(closed.closed, true)
    assert.equal(Buffer.concat(closed.chunks.map((c) => c.data)).toString('hex'), rtu('01030204d2').toString('hex'))
    assert.equal((adapter.stats() as Record<string, unknown>).fault_disconnects, 1)
    adapter.set('faults', {})
  })

  it('drops bytes that claim a frame longer than RTU allows, counted as a CRC error', async () => {
    const before = adapter.info().counters.crc_errors!
    const { chunks } = await rtuExchange(port, [Buffer.from('01170000000200100001ff', 'hex'), RTU_READ], 200)
    assert.equal(adapter.info().counters.crc_errors, before + 1)
    assert.equal(Buffer.concat(chunks.map((c) => c.data)).toString('hex'), rtu('01030204d2').toString('hex'))
  })
})

describe('transports and ports', () => {
  it('a udp and a tcp listener of one port number are different sockets; tcp and rtu_over_tcp cannot share one', async () => {
    const hub = new ModbusHub({ logger: silentLogger })
    // The OS picks a free UDP port; another program (a test file running beside this one) may
    // hold the same number for TCP. That is not what this test is about: take another pair.
    let udp: ModbusSlaveAdapter | undefined
    let tcp: ModbusSlaveAdapter | undefined
    let port = 0
    for (let attempt = 1; tcp === undefined; attempt++) {
      udp = adapterOf(hub, { transport: 'udp' }, 1)
      await udp.start()
      port = udp.info().port!
      const candidate = adapterOf(hub, { transport: 'tcp', port }, 2)
      try {
        await candidate.start()
        tcp = candidate
      } catch (error) {
        await udp.stop()
        if (attempt === 5 || !(error instanceof ConflictError) || !/another program/.test(error.message)) throw error
      }
    }
    const rtuAdapter = adapterOf(hub, { transport: 'rtu_over_tcp', port, unit_id: 2 }, 3)
    try {
      assert.deepEqual(
        hub
          .listeners()
          .map((l) => [l.transport, l.port])
          .sort(),
        [
          ['tcp', port],
          ['udp', port],
        ],
      )
      assert.deepEqual(
        hub
          .heldPorts()
          .map((h) => h.transport)
          .sort(),
        ['tcp', 'udp'],
      )
      await assert.rejects(rtuAdapter.start(), ConflictError)
      const answer = await udpExchange(port, [READ(1)], 150)
      assert.equal(answer[0]!.data.toString('hex'), '000100000005010302' + '0001')
    } finally {
      await Promise.all([udp!.stop(), tcp.stop(), rtuAdapter.stop()])
      await hub.close()
    }
  })
})

describe('swap_bytes on udp and rtu_over_tcp', () => {
  const hub = new ModbusHub({ logger: silentLogger })
  const udp = adapterOf(hub, { transport: 'udp' })
  const rtuAdapter = adapterOf(hub, { transport: 'rtu_over_tcp' })
  before(async () => {
    await udp.start()
    await rtuAdapter.start()
  })
  after(async () => {
    await udp.stop()
    await rtuAdapter.stop()
    await hub.close()
  })

  it('answers a register read with each register byte-swapped (1234 = 0x04d2 read as 0xd204), counted', async () => {
    udp.set('faults', { swap_bytes: true })
    rtuAdapter.set('faults', { swap_bytes: true })
    try {
      const datagram = await udpExchange(udp.info().port!, [READ(3)], 150)
      assert.equal(datagram[0]!.data.toString('hex'), '000300000005010302d204')
      const { chunks } = await rtuExchange(rtuAdapter.info().port!, [RTU_READ], 150)
      const frame = Buffer.concat(chunks.map((c) => c.data))
      // A swapped answer keeps a valid CRC: the client sees a good frame with the wrong value.
      assert.equal(frame.toString('hex'), rtu('010302d204').toString('hex'))
      assert.ok(crcOk(frame, 0, frame.length))
      assert.equal((udp.stats() as Record<string, unknown>).fault_swaps, 1)
      assert.equal((rtuAdapter.stats() as Record<string, unknown>).fault_swaps, 1)
    } finally {
      udp.set('faults', {})
      rtuAdapter.set('faults', {})
    }
  })
})
