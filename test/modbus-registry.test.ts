import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { TestClient, exceptionOf, registersOf } from './unit/modbus/helpers.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

describe('Modbus through the protocol registry: alias, single-map communication, zero_fill', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(async () => t.close())

  async function served(name: string, communication: unknown): Promise<number> {
    assert.equal((await t.api('PUT', `${SYS}/models`, { [name]: { attributes: { v: 7 }, communication } })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { [`${name}_1`]: name })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/${name}_1`, 'prepare')).status, 200)
    const node = (await t.api('GET', `${SYS}/instances/${name}_1/communication/modbus_slave`)).body
    assert.equal(node.state, 'RUNNING')
    return node.port as number
  }

  it('modbus_tcp is an alias of modbus_slave (keyed as modbus_slave) and serves reads', async () => {
    const port = await served('Alias', [{ modbus_tcp: { host: '127.0.0.1', port: 0, mapping: { v: { address: 0, group: 'h_r', type: 'uint_16' } } } }])
    const client = await TestClient.connect(port)
    try {
      assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 1 })), [7])
    } finally {
      client.socket.destroy()
    }
  })

  it('communication may be one map instead of a list', async () => {
    const port = await served('Single', {
      modbus_slave: { host: '127.0.0.1', port: 0, mapping: { v: { address: 0, group: 'h_r', type: 'uint_16' } } },
    })
    const client = await TestClient.connect(port)
    try {
      assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 1 })), [7])
      // Without zero_fill an unmapped address is exception 0x02, as before.
      assert.equal(exceptionOf(await client.request({ fc: 3, address: 0, quantity: 2 })), 0x02)
    } finally {
      client.socket.destroy()
    }
    const bad = await t.api('PUT', `${SYS}/models`, {
      Bad: { attributes: { v: 7 }, communication: { modbus_slave: { mapping: { w: { address: 0, group: 'h_r', type: 'uint_16' } } } } },
    })
    assert.equal(bad.status, 422)
    assert.match(JSON.stringify(bad.body), /communication\.modbus_slave\.mapping\.w/)
  })

  it('zero_fill: true reads unmapped registers and bits as 0; writes there stay exception 0x02', async () => {
    const port = await served('Zero', [
      { modbus_slave: { host: '127.0.0.1', port: 0, zero_fill: true, mapping: { v: { address: 2, group: 'h_r', type: 'uint_16' } } } },
    ])
    const client = await TestClient.connect(port)
    try {
      assert.deepEqual(registersOf(await client.request({ fc: 3, address: 0, quantity: 4 })), [0, 0, 7, 0])
      assert.deepEqual(registersOf(await client.request({ fc: 4, address: 10, quantity: 2 })), [0, 0])
      const bits = await client.request({ fc: 1, address: 0, quantity: 3 })
      assert.equal(exceptionOf(bits), null)
      assert.equal(exceptionOf(await client.request({ fc: 6, address: 0, value: 1 })), 0x02)
    } finally {
      client.socket.destroy()
    }
  })

  it('response_delay is settable on the adapter node and validated', async () => {
    const path = `${SYS}/instances/Zero_1/communication/modbus_slave`
    assert.equal((await t.api('PUT', path, { response_delay: 0.05 })).status, 200)
    assert.equal((await t.api('GET', path)).body.response_delay, 0.05)
    assert.equal((await t.api('PUT', path, { response_delay: -1 })).status, 422)
    assert.equal((await t.api('PUT', path, { unit_id: 3 })).status, 422)
  })
})
