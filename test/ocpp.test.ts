// OCPP 1.6J against a peer the project did not write: `ocpp-rpc` (npm), as the central system a
// simulated charger connects to and as a charge point registering with a simulated central
// system. Both simulated devices are the reference product's library models, unchanged
// (test/fixtures/spx/evse__ocpp.yaml, csms__ocpp.yaml with its extension ocpp_meter_values.py).
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import { RPCClient, RPCServer } from 'ocpp-rpc'
import { parse } from 'yaml'
import { ProtocolWrites, traceTail } from './helpers/protocol-writes.js'
import { eventually, freePort, startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const fixture = (name: string) => new URL(`fixtures/spx/${name}`, import.meta.url).pathname
const EXTENSIONS = fixture('extensions')

type Call = { identity: string; action: string; params: Record<string, any>; messageId: string | undefined }
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
        client.handle(action, async ({ params, messageId }) => {
          calls.push({ identity: client.identity!, action, params: params ?? {}, messageId })
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

  it('the trace: calls received and sent with action, message id, status and error; a call whose answer wrote attributes is one protocol.write event', async () => {
    await eventually(async () => ((await stats()).boot_status === 'Accepted' && clients.length > 0 ? true : undefined))
    assert.equal((await t.call(adapterNode, 'clear_trace')).status, 200)
    const client = clients[clients.length - 1]!
    // The message ids of the central system's calls, as it sent them.
    const sent = new Map<string, string>()
    client.on('call', ({ outbound, payload }: { outbound: boolean; payload: unknown[] }) => outbound && sent.set(String(payload[2]), String(payload[1])))
    const writes = await ProtocolWrites.open(t.url, 'evse')
    const from = calls.length
    try {
      assert.deepEqual(await client.call('RemoteStartTransaction', { idTag: 'TAG-9', connectorId: 1 }), { status: 'Accepted' })
      assert.equal(await eventually(async () => ((await stats()).transaction_id === 4242 ? true : undefined)), true)
      await assert.rejects(client.call('UnlockConnector', { connectorId: 1 }), (error: any) => error.rpcErrorCode === 'NotImplemented')
      const boots = calls.filter((c) => c.action === 'BootNotification').length
      assert.deepEqual(await client.call('Reset', { type: 'Hard' }), { status: 'Accepted' })
      await eventually(async () => (calls.filter((c) => c.action === 'BootNotification').length > boots ? true : undefined))
      // The answer to the BootNotification wrote attributes: its entry is a protocol.write event.
      const boot = await writes.until((e) => e.operation === 'BootNotification')
      assert.deepEqual([boot.adapter, boot.kind, boot.direction, boot.status], ['ocpp', 'ocpp', 'out', 'Accepted'])
      assert.equal(boot.attributes.boot_status, 'Accepted')
      assert.equal(boot.attributes.heartbeat_interval_s, 300)
      // Each event is one entry of the trace, and each entry that wrote is one event (up to this one).
      const wrote = (await t.call(adapterNode, 'tail')).body.result.filter((e: any) => e.attributes !== undefined && e.seq <= boot.seq)
      assert.deepEqual(
        writes.events.filter((e) => e.seq <= boot.seq).map((e) => e.seq),
        wrote.map((e: any) => e.seq),
      )
    } finally {
      writes.close()
    }
    const tail = (kwargs: Record<string, unknown> = {}) => traceTail(t, adapterNode, kwargs)
    // The calls the central system sent, as the charger answered them.
    const received = await tail({ direction: 'in' })
    assert.deepEqual(
      received.map((e) => [e.operation, e.message_id, e.status, e.error]),
      [
        ['RemoteStartTransaction', sent.get('RemoteStartTransaction'), 'Accepted', undefined],
        ['UnlockConnector', sent.get('UnlockConnector'), undefined, 'NotImplemented'],
        ['Reset', sent.get('Reset'), 'Accepted', undefined],
      ],
    )
    assert.ok(
      received.every((e) => e.charge_point === 'spx-evse-01' && typeof e.latency === 'number'),
      JSON.stringify(received),
    )
    assert.match(received[0]!.payload, /"idTag":"TAG-9"/)
    assert.equal(received[0]!.answer, '{"status":"Accepted"}')
    // The calls the charger sent: the central system's message ids, its answers.
    const start = await tail({ operation: 'StartTransaction' })
    const central = calls.slice(from).find((c) => c.action === 'StartTransaction')!
    assert.deepEqual(
      start.map((e) => [e.direction, e.message_id, e.status, e.error]),
      [['out', central.messageId, 'Accepted', undefined]],
    )
    assert.match(start[0]!.answer, /"transactionId":4242/)
    assert.ok((await tail({ direction: 'out' })).some((e) => e.operation === 'BootNotification' && e.attributes?.boot_status === 'Accepted'))
    assert.deepEqual([...new Set((await tail({ contains: 'tag-9' })).map((e) => e.operation))].slice(0, 2), ['RemoteStartTransaction', 'StartTransaction'])
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

  it('the trace: each call a charge point sent, with its message id and the answer or CALLERROR; a call that wrote attributes is one protocol.write event', async () => {
    assert.equal((await t.call(adapterNode, 'clear_trace')).status, 200)
    const ids: string[] = []
    cp.on('call', ({ outbound, payload }: { outbound: boolean; payload: unknown[] }) => outbound && ids.push(String(payload[1])))
    const writes = await ProtocolWrites.open(t.url, 'csms')
    try {
      assert.deepEqual(await cp.call('Heartbeat', {}), { currentTime: '2025-01-01T00:00:00Z' })
      assert.equal((await t.api('PATCH', adapterNode, { call_error: 'InternalError' })).status, 200)
      await assert.rejects(cp.call('Heartbeat', {}), (error: any) => error.rpcErrorCode === 'InternalError')
      assert.equal((await t.api('PATCH', adapterNode, { call_error: null })).status, 200)
      assert.deepEqual(await cp.call('StatusNotification', { connectorId: 4, status: 'Faulted', errorCode: 'GroundFailure' }), {})
      // The last call's event: every earlier one came before it.
      await writes.until((e) => e.attributes?.last_connector_status === 'Faulted')
      assert.deepEqual(
        writes.events.map((e) => [e.adapter, e.kind, e.operation, e.direction, e.message_id]),
        [['ocpp', 'ocpp', 'StatusNotification', 'in', ids[2]]],
      )
    } finally {
      writes.close()
    }
    const tail = (kwargs: Record<string, unknown> = {}) => traceTail(t, adapterNode, kwargs)
    const entries = await tail()
    assert.deepEqual(
      entries.map((e) => [e.operation, e.direction, e.message_id, e.charge_point, e.error]),
      [
        ['Heartbeat', 'in', ids[0], 'CP-7', undefined],
        ['Heartbeat', 'in', ids[1], 'CP-7', 'InternalError'],
        ['StatusNotification', 'in', ids[2], 'CP-7', undefined],
      ],
    )
    assert.equal(entries[0]!.answer, '{"currentTime":"2025-01-01T00:00:00Z"}')
    assert.equal(entries[1]!.answer, undefined)
    assert.deepEqual(entries[2]!.attributes, { last_connector_id: 4, last_connector_status: 'Faulted', last_error_code: 'GroundFailure' })
    assert.equal(entries[0]!.attributes, undefined)
    assert.deepEqual(
      (await tail({ operation: 'Heartbeat' })).map((e) => e.error),
      [undefined, 'InternalError'],
    )
    assert.deepEqual(
      (await tail({ contains: 'groundfailure' })).map((e) => e.operation),
      ['StatusNotification'],
    )
    assert.deepEqual(await tail({ direction: 'out' }), [])
  })

  it('a charge point at another path is refused', async () => {
    const stray = new RPCClient({ endpoint: `ws://127.0.0.1:${port}/elsewhere`, identity: 'CP-8', protocols: ['ocpp1.6'], reconnect: false } as any)
    await assert.rejects(stray.connect())
  })
})

// Both writes of a call start in one turn, and the worker answers them together.
const CONNECTOR_PY = `
class Connector:
    def __init__(self):
        self._id = 0
        self._status = 'Available'

    @property
    def connector_id(self):
        return self._id

    @connector_id.setter
    def connector_id(self, value):
        self._id = value

    @property
    def status(self):
        return self._status

    @status.setter
    def status(self, value):
        self._status = value
`

describe('ocpp central_system writing Python-backed attributes', () => {
  let t: TestServer
  let cp: Client
  const adapterNode = `${SYS}/instances/hub/communication/ocpp`

  before(async () => {
    const port = await freePort()
    t = await startTestServer({ files: { 'connector.py': CONNECTOR_PY } })
    const model = {
      attributes: { last_connector_id: 0, last_connector_status: 'Available' },
      import: {
        'connector.py': { class: 'Connector', attributes: { last_connector_id: { property: 'connector_id' }, last_connector_status: { property: 'status' } } },
      },
      communication: [
        {
          ocpp: {
            role: 'central_system',
            server: { host: '127.0.0.1', port, path: '/ocpp' },
            bindings: {
              status_request: {
                direction: 'inbound',
                frame_type: 'call',
                action: 'StatusNotification',
                payload: { connectorId: '#attr(last_connector_id)', status: '#attr(last_connector_status)' },
              },
              status_response: { direction: 'outbound', frame_type: 'call_result', action: 'StatusNotification', payload: {} },
            },
          },
        },
      ],
    }
    const put = await t.api('PUT', `${SYS}/models`, { Hub: model })
    assert.equal(put.status, 200, JSON.stringify(put.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { hub: 'Hub' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/hub`, 'prepare')).status, 200)
    cp = new RPCClient({ endpoint: `ws://127.0.0.1:${port}/ocpp`, identity: 'CP-3', protocols: ['ocpp1.6'], strictMode: true, reconnect: false } as any)
    await cp.connect()
  })
  after(async () => {
    await cp?.close({ force: true })
    await t?.close()
  })

  it('a call whose fields set two attributes, each through its Python setter, is one trace entry and one protocol.write event with both', async () => {
    const writes = await ProtocolWrites.open(t.url, 'hub')
    try {
      assert.deepEqual(await cp.call('StatusNotification', { connectorId: 3, status: 'Charging', errorCode: 'NoError' }), {})
      await writes.until((e) => e.attributes?.last_connector_status === 'Charging')
      assert.deepEqual(
        writes.events.map((e) => [e.operation, e.direction, e.charge_point, e.attributes]),
        [['StatusNotification', 'in', 'CP-3', { last_connector_id: 3, last_connector_status: 'Charging' }]],
      )
    } finally {
      writes.close()
    }
    assert.deepEqual(
      (await traceTail(t, adapterNode)).map((e) => [e.operation, e.direction, e.attributes]),
      [['StatusNotification', 'in', { last_connector_id: 3, last_connector_status: 'Charging' }]],
    )
    assert.equal(await attribute(t, 'hub', 'last_connector_status'), 'Charging')
    assert.equal(await attribute(t, 'hub', 'last_connector_id'), 3)
  })
})
