import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from './helpers/server.js'

// The scenarios of examples/devices/system.yaml do what its header says, seen as a client sees
// them: over HTTP and over Modbus TCP.
const SYSTEM = new URL('../examples/devices/system.yaml', import.meta.url).pathname
const SYS = '/api/v3/system'

/** One Modbus TCP request on `socket`, the answer's PDU (function code first). */
function request(socket: Socket, id: number, pdu: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let got = Buffer.alloc(0)
    const onData = (chunk: Buffer): void => {
      got = Buffer.concat([got, chunk])
      if (got.length >= 6 && got.length >= 6 + got.readUInt16BE(4)) {
        socket.off('data', onData)
        assert.equal(got.readUInt16BE(0), id, 'transaction id echoed')
        resolve(got.subarray(7, 6 + got.readUInt16BE(4)))
      }
    }
    socket.on('data', onData)
    socket.once('error', reject)
    const mbap = Buffer.alloc(7)
    mbap.writeUInt16BE(id, 0)
    mbap.writeUInt16BE(pdu.length + 1, 4)
    mbap.writeUInt8(1, 6)
    socket.write(Buffer.concat([mbap, pdu]))
  })
}

describe('the example system scenarios', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ config: { system: SYSTEM } })
    await t.call(`${SYS}`, 'prepare')
  })
  after(async () => t?.close())

  const value = async (instance: string, attribute: string): Promise<unknown> =>
    (await t.api('GET', `${SYS}/instances/${instance}/attributes/${attribute}/attr/internal_value`)).body.value

  it('voltage_sag holds every phase of meter_1 at 180 V while the model steps, and puts them back', async () => {
    const scenario = `${SYS}/instances/meter_1/scenarios/voltage_sag`
    await t.call(scenario, 'start')
    await t.call(SYS, 'run', { steps: 3, dt: 1.0 })
    for (const phase of ['v_l1', 'v_l2', 'v_l3']) assert.equal(await value('meter_1', phase), 180.0, phase)
    await t.call(scenario, 'stop')
    await t.call(SYS, 'run', { steps: 1, dt: 1.0 })
    assert.ok(Math.abs(((await value('meter_1', 'v_l1')) as number) - 230) < 5, 'back near 230 V')
  })

  it('busy_meter answers Modbus input-register reads "busy" (exception 6) every third time', async () => {
    const adapter = (await t.api('GET', `${SYS}/instances/meter_1/communication/modbus_slave`)).body
    const scenario = `${SYS}/instances/meter_1/scenarios/busy_meter`
    await t.call(scenario, 'start')
    const socket = connect(adapter.port, '127.0.0.1')
    await new Promise((resolve) => socket.once('connect', resolve))
    try {
      const answers: string[] = []
      for (let id = 1; id <= 6; id++) {
        const pdu = await request(socket, id, Buffer.from([0x04, 0x00, 0x00, 0x00, 0x02]))
        answers.push(pdu[0] === 0x84 ? `exception ${pdu[1]}` : `${pdu.readFloatBE(2).toFixed(0)} V`)
      }
      assert.deepEqual(
        answers.map((a) => (a.startsWith('exception') ? a : 'value')),
        ['value', 'value', 'exception 6', 'value', 'value', 'exception 6'],
        answers.join(', '),
      )
    } finally {
      socket.destroy()
      await t.call(scenario, 'stop')
    }
    assert.deepEqual((await t.api('GET', `${SYS}/instances/meter_1/communication/modbus_slave/attr/faults`)).body.value, {})
  })

  it('stuck_level holds the tank at 95 %, which raises its high alarm', async () => {
    await t.call(`${SYS}/instances/tank_1/scenarios/stuck_level`, 'start')
    await t.call(SYS, 'run', { steps: 2, dt: 1.0 })
    assert.equal(await value('tank_1', 'level_pct'), 95.0)
    assert.equal(await value('tank_1', 'high_alarm'), true)
    assert.equal(await value('tank_1', 'state'), 'high')
    await t.call(`${SYS}/instances/tank_1/scenarios/stuck_level`, 'stop')
  })
})
