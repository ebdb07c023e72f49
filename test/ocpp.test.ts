// OCPP 1.6J against a peer the project did not write: `ocpp-rpc` (npm), as the central system a
// simulated charger connects to and as a charge point registering with a simulated central
// system. Both simulated devices are the reference product's library models, unchanged
// (test/fixtures/spx/evse__ocpp.yaml, csms__ocpp.yaml with its extension ocpp_meter_values.py).
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import { RPCClient, RPCServer } from 'ocpp-rpc'
import { parse } from 'yaml'
import { eventually, freePort, startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const fixture = (name: string) => new URL(`fixtures/spx/${name}`, import.meta.url).pathname
const EXTENSIONS = fixture('extensions')

type Call = { identity: string; action: string; params: Record<string, any> }
type Client = InstanceType<typeof RPCClient>

async function attribute(t: TestServer, instance: string, name: string): Promise<unknown> {
  const res = await t.api('GET', `${SYS}/instances/${instance}/attributes/${name}`)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body.internal_value
}

async function run(t: TestServer, instance: string, steps: number): Promise<void> {
  for (let i = 0; i < steps; i++) {
    const res = await t.call(`${SYS}/instances/${instance}`, 'run')
    assert.equal(res.status, 200, JSON.stringify(res.body))
  }
}

describe('ocpp charge_point: the library EVSE model against an ocpp-rpc central system', () => {
  let t: TestServer
  let central: InstanceType<typeof RPCServer>
  let port: number
  const calls: Call[] = []
  const clients: Client[] = []
  let disconnects = 0
  const adapterNode = `${SYS}/instances/evse/communication/ocpp`
  const stats = async () => (await t.api('GET', adapterNode)).body

  before(async () => {
    port = await freePort()
    central = new RPCServer({ protocols: ['ocpp1.6'], strictMode: true })
    central.on('client', (client: Client) => {
      clients.push(client)
      client.on('close', () => disconnects++)
      const record = (action: string, answer: (p: Record<string, any>) => Record<string, unknown>) =>
        client.handle(action, async ({ params }) => {
          calls.push({ identity: client.identity!, action, params: params ?? {} })
          return answer(params ?? {})
        })
      record('BootNotification', () => ({ status: 'Accepted', currentTime: new Date().toISOString(), interval: 300 }))
      record('Heartbeat', () => ({ currentTime: new Date().toISOString() }))
      record('StatusNotification', () => ({}))
      record('MeterValues', () => ({}))
      record('StartTransaction', () => ({ transactionId: 4242, idTagInfo: { status: 'Accepted' } }))
      record('StopTransaction', () => ({ idTagInfo: { status: 'Accepted' } }))
    })
    await central.listen(port, '127.0.0.1')
    t = await startTestServer({ config: { extensions: [EXTENSIONS] } })
    const model = parse(await readFile(fixture('evse__ocpp.yaml'), 'utf8'))
    assert.equal((await t.api('PUT', `${SYS}/models`, { Evse: model })).status, 200)
    const put = await t.api('PUT', `${SYS}/instances`, { evse: { type: 'Evse', parameters: { ocpp_endpoint: `ws://127.0.0.1:${port}/ocpp` } } })
    assert.equal(put.status, 200, JSON.stringify(put.body))
    assert.equal((await t.call(`${SYS}/instances/evse`, 'prepare')).status, 200)
    await run(t, 'evse', 2)
  })
  after(async () => {
    await t?.close()
    await central?.close({ force: true })
  })

  it('boots with BootNotification from its bound attributes and takes the answer into attributes', async () => {
    const boot = await eventually(async () => calls.find((c) => c.action === 'BootNotification'))
    assert.equal(boot.identity, 'spx-evse-01')
    assert.equal(clients[0]!.protocol, 'ocpp1.6')
    assert.deepEqual(boot.params, {
      chargePointVendor: 'Hammerheads EV',
      chargePointModel: 'SPX-EVSE',
      chargePointSerialNumber: 'SPX-EVSE-01',
      firmwareVersion: '1.0.0',
    })
    assert.equal(await eventually(async () => ((await attribute(t, 'evse', 'boot_status')) === 'Accepted' ? true : undefined)), true)
    assert.equal(await attribute(t, 'evse', 'heartbeat_interval_s'), 300)
    assert.equal((await stats()).boot_status, 'Accepted')
  })

  it('sends StatusNotification and MeterValues with the model computed values', async () => {
    const status = await eventually(async () => calls.find((c) => c.action === 'StatusNotification'))
    assert.equal(status.params.status, 'Available')
    assert.equal(status.params.errorCode, 'NoError')
    assert.equal(status.params.connectorId, 1)
    const meter = await eventually(async () => calls.find((c) => c.action === 'MeterValues' && c.params.meterValue.length > 0))
    assert.equal(meter.params.transactionId, 9001)
    const samples = meter.params.meterValue[0].sampledValue as Array<{ measurand: string; value: string; unit: string }>
    assert.deepEqual(
      samples.find((s) => s.measurand === 'Energy.Active.Import.Register'),
      { measurand: 'Energy.Active.Import.Register', value: '1200.0', unit: 'Wh' },
    )
  })

  it('a status change after a step is sent at once', async () => {
    assert.equal((await t.api('PUT', `${SYS}/instances/evse/attributes`, { session_active: 1 })).status, 200)
    await run(t, 'evse', 1)
    const charging = await eventually(async () => calls.find((c) => c.action === 'StatusNotification' && c.params.status === 'Charging'))
    assert.equal(charging.params.connectorId, 1)
  })

  it('the central system starts and stops a transaction remotely', async () => {
    const client = clients[clients.length - 1]!
    assert.deepEqual(await client.call('RemoteStartTransaction', { idTag: 'TAG-1', connectorId: 1 }), { status: 'Accepted' })
    const start = await eventually(async () => calls.find((c) => c.action === 'StartTransaction'))
    assert.equal(start.params.idTag, 'TAG-1')
    assert.equal(start.params.connectorId, 1)
    assert.equal(await eventually(async () => ((await stats()).transaction_id === 4242 ? true : undefined)), true)
    // A second start while one runs is refused.
    assert.deepEqual(await client.call('RemoteStartTransaction', { idTag: 'TAG-2' }), { status: 'Rejected' })
    assert.deepEqual(await client.call('RemoteStopTransaction', { transactionId: 4242 }), { status: 'Accepted' })
    const stop = await eventually(async () => calls.find((c) => c.action === 'StopTransaction'))
    assert.equal(stop.params.transactionId, 4242)
    assert.equal(await eventually(async () => ((await stats()).transaction_id === null ? true : undefined)), true)
    assert.deepEqual(await client.call('ChangeConfiguration', { key: 'HeartbeatInterval', value: '120' }), { status: 'Accepted' })
    assert.equal((await stats()).configuration.HeartbeatInterval, '120')
  })

  it('faults: call_error answers each CALL with a CALLERROR; detach drops the socket; attach boots again', async () => {
    const client = clients[clients.length - 1]!
    assert.equal((await t.api('PATCH', adapterNode, { call_error: 'InternalError' })).status, 200)
    await assert.rejects(client.call('ChangeConfiguration', { key: 'X', value: '1' }), (error: any) => error.rpcErrorCode === 'InternalError')
    assert.equal((await t.api('PATCH', adapterNode, { call_error: null })).status, 200)
    assert.equal((await t.api('PATCH', adapterNode, { call_error: 'Bogus' })).status, 422)

    const boots = calls.filter((c) => c.action === 'BootNotification').length
    const closed = disconnects
    assert.equal((await t.call(adapterNode, 'detach')).status, 200)
    await eventually(async () => (disconnects > closed ? true : undefined))
    const detached = await stats()
    assert.equal(detached.state, 'DETACHED')
    assert.equal(detached.connection, 'detached')
    assert.equal((await t.call(adapterNode, 'attach')).status, 200)
    await eventually(async () => (calls.filter((c) => c.action === 'BootNotification').length > boots ? true : undefined))
    const after = await stats()
    assert.equal(after.state, 'RUNNING')
    assert.ok(after.counters.calls_sent > 0 && after.counters.calls_received > 0, JSON.stringify(after.counters))
  })

  it('Reset: the charger reconnects and boots again', async () => {
    const client = clients[clients.length - 1]!
    const boots = calls.filter((c) => c.action === 'BootNotification').length
    assert.deepEqual(await client.call('Reset', { type: 'Soft' }), { status: 'Accepted' })
    await eventually(async () => (calls.filter((c) => c.action === 'BootNotification').length > boots ? true : undefined))
  })
})

describe('ocpp central_system: the library CSMS model registers an ocpp-rpc charge point', () => {
  let t: TestServer
  let port: number
  let cp: Client
  const adapterNode = `${SYS}/instances/csms/communication/ocpp`

  before(async () => {
    port = await freePort()
    t = await startTestServer({ config: { extensions: [EXTENSIONS] } })
    const model = parse(await readFile(fixture('csms__ocpp.yaml'), 'utf8'))
    assert.equal((await t.api('PUT', `${SYS}/models`, { Csms: model })).status, 200)
    const parameters = { ocpp_server_host: '127.0.0.1', ocpp_server_port: port }
    assert.equal((await t.api('PUT', `${SYS}/instances`, { csms: { type: 'Csms', parameters } })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/csms`, 'prepare')).status, 200)
    cp = new RPCClient({ endpoint: `ws://127.0.0.1:${port}/ocpp`, identity: 'CP-7', protocols: ['ocpp1.6'], strictMode: true, reconnect: false } as any)
    await cp.connect()
  })
  after(async () => {
    await cp?.close({ force: true })
    await t?.close()
  })

  it('answers BootNotification with its bound attributes (interval, as OCPP names it) and records the charger', async () => {
    const answer = (await cp.call('BootNotification', { chargePointVendor: 'Acme', chargePointModel: 'X1', chargePointSerialNumber: 'SN-77' })) as any
    assert.deepEqual(answer, { status: 'Accepted', currentTime: '2025-01-01T00:00:00Z', interval: 30 })
    assert.equal(await attribute(t, 'csms', 'last_boot_serial'), 'SN-77')
    assert.equal(await attribute(t, 'csms', 'last_boot_vendor'), 'Acme')
    const node = (await t.api('GET', adapterNode)).body
    assert.equal(node.port, port)
    assert.equal(node.clients, 1)
    assert.deepEqual(await cp.call('Heartbeat', {}), { currentTime: '2025-01-01T00:00:00Z' })
  })

  it('takes StatusNotification and MeterValues into attributes; the model reads the energy with its extension', async () => {
    assert.deepEqual(await cp.call('StatusNotification', { connectorId: 2, status: 'Charging', errorCode: 'NoError' }), {})
    assert.equal(await attribute(t, 'csms', 'last_connector_status'), 'Charging')
    assert.equal(await attribute(t, 'csms', 'last_connector_id'), 2)
    const meterValue = [
      {
        timestamp: '2025-01-01T00:00:05Z',
        sampledValue: [
          { value: '1.5', measurand: 'Energy.Active.Import.Register', unit: 'kWh' },
          { value: '7200', measurand: 'Power.Active.Import', unit: 'W' },
        ],
      },
    ]
    assert.deepEqual(await cp.call('MeterValues', { connectorId: 2, transactionId: 17, meterValue }), {})
    assert.equal(await attribute(t, 'csms', 'last_transaction_id'), 17)
    await run(t, 'csms', 1)
    assert.equal(await attribute(t, 'csms', 'last_energy_wh'), 1500)
    assert.equal(await attribute(t, 'csms', 'last_power_w'), 7200)
    assert.match(String(await attribute(t, 'csms', 'status_text')), /SN-77 \/ status=Charging/)
  })

  it('a changed attribute changes the answer; a scenario of the model rejects the boot', async () => {
    assert.equal((await t.api('PUT', `${SYS}/instances/csms/attributes`, { registration_status: 'Rejected', heartbeat_interval_s: 0 })).status, 200)
    const answer = (await cp.call('BootNotification', { chargePointVendor: 'Acme', chargePointModel: 'X1' })) as any
    assert.equal(answer.status, 'Rejected')
    assert.equal(answer.interval, 0)
  })

  it('faults: call_error gives a CALLERROR; detach drops the charger and refuses it until attach', async () => {
    assert.equal((await t.api('PATCH', adapterNode, { call_error: 'InternalError' })).status, 200)
    await assert.rejects(cp.call('Heartbeat', {}), (error: any) => error.rpcErrorCode === 'InternalError')
    assert.equal((await t.api('PATCH', adapterNode, { call_error: null })).status, 200)
    const closed = new Promise((resolve) => cp.once('close', resolve))
    assert.equal((await t.call(adapterNode, 'detach')).status, 200)
    await closed
    const again = new RPCClient({ endpoint: `ws://127.0.0.1:${port}/ocpp`, identity: 'CP-7', protocols: ['ocpp1.6'], reconnect: false } as any)
    await assert.rejects(again.connect())
    assert.equal((await t.call(adapterNode, 'attach')).status, 200)
    cp = new RPCClient({ endpoint: `ws://127.0.0.1:${port}/ocpp`, identity: 'CP-7', protocols: ['ocpp1.6'], strictMode: true, reconnect: false } as any)
    await cp.connect()
    assert.deepEqual(await cp.call('Heartbeat', {}), { currentTime: '2025-01-01T00:00:00Z' })
    const stats = (await t.api('GET', adapterNode)).body
    assert.ok(stats.counters.call_errors >= 1 && stats.counters.calls_received >= 7, JSON.stringify(stats.counters))
  })

  it('a charge point at another path is refused', async () => {
    const stray = new RPCClient({ endpoint: `ws://127.0.0.1:${port}/elsewhere`, identity: 'CP-8', protocols: ['ocpp1.6'], reconnect: false } as any)
    await assert.rejects(stray.connect())
  })
})
