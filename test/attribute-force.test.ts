import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { parse } from 'yaml'
import { startTestServer, type TestServer } from './helpers/server.js'

// A forced value holds what clients see (protocols, connections, external_value) across steps
// until it is released, while the model goes on computing its own value.
const SYS = '/api/v3/system'
const METER = parse(`
attributes:
  power: { default: 100.0, type: float }
actions:
  - function: $out(power)
    call: $in(power) + 1.0
communication:
  - modbus_slave: { host: 127.0.0.1, port: 0, mapping: { power: { address: [0, 1], group: h_r, type: float } } }
`)

async function modbusFloat(port: number): Promise<number> {
  const socket = connect(port, '127.0.0.1')
  try {
    await new Promise((resolve) => socket.once('connect', resolve))
    const answer = await new Promise<Buffer>((resolve) => {
      socket.once('data', resolve)
      socket.write(Buffer.from([0, 1, 0, 0, 0, 6, 1, 3, 0, 0, 0, 2]))
    })
    return answer.readFloatBE(9)
  } finally {
    socket.destroy()
  }
}

describe('force and release an attribute', () => {
  let t: TestServer
  const power = `${SYS}/instances/meter/attributes/power`
  const value = async (path: string, side = 'external_value'): Promise<unknown> => (await t.api('GET', `${path}/attr/${side}`)).body.value
  before(async () => {
    t = await startTestServer()
    await t.api('PUT', `${SYS}/models`, { Meter: METER, Panel: { attributes: { shown: 0.0 } } })
    await t.api('PUT', `${SYS}/instances`, { meter: 'Meter', panel: 'Panel' })
    await t.api('PUT', `${SYS}/connections`, { feed: { from: 'meter.attributes.power', to: 'panel.attributes.shown' } })
    await t.call(SYS, 'prepare')
  })
  after(async () => t?.close())

  it('holds the forced value for Modbus clients and connections across steps; the model computes on', async () => {
    const port = (await t.api('GET', `${SYS}/instances/meter/communication/modbus_slave`)).body.port as number
    assert.deepEqual((await t.call(power, 'force', { value: 999.5 })).body, { result: true })
    await t.call(SYS, 'run', { steps: 3, dt: 1.0 })
    assert.equal(await value(power), 999.5)
    assert.equal(await value(power, 'internal_value'), 103.0)
    assert.equal((await t.api('GET', power)).body.forced, true)
    assert.equal(await modbusFloat(port), 999.5)
    assert.equal(await value(`${SYS}/instances/panel/attributes/shown`, 'internal_value'), 999.5)

    assert.deepEqual((await t.call(power, 'release')).body, { result: true })
    assert.equal(await value(power), 103.0)
    assert.equal((await t.api('GET', power)).body.forced, undefined)
    assert.equal(await modbusFloat(port), 103.0)
    await t.call(SYS, 'run', { steps: 1, dt: 1.0 })
    assert.equal(await value(`${SYS}/instances/panel/attributes/shown`, 'internal_value'), 104.0)
  })

  it('a written external_value still lasts until the next step', async () => {
    await t.api('PUT', `${power}/attr/external_value`, { value: 5.0 })
    assert.equal(await value(power), 5.0)
    await t.call(SYS, 'run', { steps: 1, dt: 1.0 })
    assert.notEqual(await value(power), 5.0)
  })

  it('refuses a value of the wrong type, or none, with the path, and forces nothing', async () => {
    const wrong = await t.api('POST', `${power}/method/force`, { kwargs: { value: 'hot' } })
    assert.equal(wrong.status, 422)
    assert.equal(wrong.body.error.details[0].path, 'value')
    const none = await t.api('POST', `${power}/method/force`, { kwargs: {} })
    assert.equal(none.status, 422)
    assert.equal(none.body.error.details[0].path, 'kwargs.value')
    assert.equal((await t.api('GET', power)).body.forced, undefined)
  })

  it("the instance's time cannot be forced", async () => {
    const res = await t.api('POST', `${SYS}/instances/meter/attributes/__timer/method/force`, { kwargs: { value: 1.0 } })
    assert.equal(res.status, 404)
  })

  it('a reset releases it', async () => {
    await t.call(power, 'force', { value: 1.0 })
    await t.call(`${SYS}/instances/meter`, 'reset')
    assert.equal((await t.api('GET', power)).body.forced, undefined)
  })
})
