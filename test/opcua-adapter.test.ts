import assert from 'node:assert/strict'
import { connect as tcpConnect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { OPCUACertificateManager } from 'node-opcua-certificate-manager'
import { AttributeIds, ClientSubscription, DataType, OPCUAClient, StatusCodes, TimestampsToReturn, type ClientSession } from 'node-opcua-client'
import { eventually, freePort, startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

const BOILER_PY = `
class Boiler:
    def __init__(self):
        self.temp = 20.0

    def heat(self, delta):
        self.temp = self.temp + delta
        return self.temp
`

function boilerModel(port: number, extra: Record<string, unknown> = {}) {
  return {
    attributes: {
      temp: { default: 20.0, type: 'float', unit: 'degC' },
      setpoint: { default: 60.0, type: 'float' },
      mode: { default: 'off', type: 'str' },
      count: { default: 3, type: 'int' },
    },
    import: { 'boiler.py': { class: 'Boiler', attributes: { temp: { property: 'temp' } }, methods: { heat: 'heat' } } },
    communication: {
      opcua_server: {
        port,
        bindings: [
          { attribute: '#attr(temp)' },
          { attribute: '$ext(setpoint)', node_id: 's={instance}.sp', browse_name: 'Setpoint' },
          { attribute: 'mode' },
          { attribute: '#out(count)', data_type: 'UInt16' },
        ],
        methods: [{ method: 'heat', inputs: [{ name: 'delta', data_type: 'Double' }], output: 'Double' }],
        ...extra,
      },
    },
  }
}

describe('opcua_server adapter with a node-opcua client: browse, read, write, subscribe, call; two instances on one endpoint', () => {
  let t: TestServer
  let port: number
  let client: OPCUAClient
  let session: ClientSession
  let url: string
  const node = (instance: string) => `${SYS}/instances/${instance}/communication/opcua_server`
  const read = async (nodeId: string) => session.read({ nodeId, attributeId: AttributeIds.Value })

  before(async () => {
    t = await startTestServer({ files: { 'boiler.py': BOILER_PY } })
    port = await freePort()
    assert.equal((await t.api('PUT', `${SYS}/models`, { Boiler: boilerModel(port) })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { boiler_1: 'Boiler', boiler_2: 'Boiler' })).status, 200)
    const prep = await t.call(`${SYS}/instances/boiler_1`, 'prepare')
    assert.equal(prep.status, 200, JSON.stringify(prep.body))
    assert.equal((await t.call(`${SYS}/instances/boiler_2`, 'prepare')).status, 200)
    const doc = (await t.api('GET', node('boiler_1'))).body
    assert.equal(doc.type, 'OpcuaServer')
    assert.equal(doc.state, 'RUNNING')
    url = doc.endpoint
    assert.equal(url, `opc.tcp://127.0.0.1:${port}/mimic`)
    client = OPCUAClient.create({
      endpointMustExist: false,
      connectionStrategy: { maxRetry: 0 },
      // Kept across runs like the server's (the default pki_dir): making a key pair takes seconds.
      clientCertificateManager: new OPCUACertificateManager({
        rootFolder: join(tmpdir(), 'mimic-opcua-test-client'),
        automaticallyAcceptUnknownCertificate: true,
      }),
    })
    await client.connect(url)
    session = await client.createSession()
  })

  after(async () => {
    await session?.close().catch(() => undefined)
    await client?.disconnect().catch(() => undefined)
    await t.close()
  })

  it('browses a folder per instance with its variables and methods', async () => {
    const objects = await session.browse('i=85')
    const names = objects.references!.map((r) => r.browseName.name)
    assert.ok(names.includes('boiler_1') && names.includes('boiler_2'), names.join(', '))
    const folder = await session.browse('ns=1;s=boiler_1')
    const children = Object.fromEntries(folder.references!.map((r) => [r.browseName.name, r.nodeId.toString()]))
    assert.deepEqual(children, {
      temp: 'ns=1;s=boiler_1.temp',
      Setpoint: 'ns=1;s=boiler_1.sp',
      mode: 'ns=1;s=boiler_1.mode',
      count: 'ns=1;s=boiler_1.count',
      heat: 'ns=1;s=boiler_1.heat',
    })
  })

  it('reads attribute values with the data types they are bound as, and the unit', async () => {
    const temp = await read('ns=1;s=boiler_1.temp')
    assert.equal(temp.statusCode, StatusCodes.Good)
    assert.equal(temp.value.dataType, DataType.Double)
    assert.equal(temp.value.value, 20)
    const count = await read('ns=1;s=boiler_2.count')
    assert.equal(count.value.dataType, DataType.UInt16)
    assert.equal(count.value.value, 3)
    assert.equal((await read('ns=1;s=boiler_1.mode')).value.value, 'off')
    const units = await session.browse('ns=1;s=boiler_1.temp')
    const eu = units.references!.find((r) => r.browseName.name === 'EngineeringUnits')
    assert.ok(eu, 'temp has an EngineeringUnits property')
    const unit = await session.read({ nodeId: eu.nodeId, attributeId: AttributeIds.Value })
    assert.equal(unit.value.value.displayName.text, 'degC')
  })

  it('writes from the client set the internal value; a wrong type is BadTypeMismatch and changes nothing', async () => {
    const good = await session.write({
      nodeId: 'ns=1;s=boiler_1.sp',
      attributeId: AttributeIds.Value,
      value: { value: { dataType: DataType.Double, value: 65.5 } },
    })
    assert.equal(good, StatusCodes.Good)
    assert.equal((await t.api('GET', `${SYS}/instances/boiler_1/attributes/setpoint`)).body.internal_value, 65.5)
    const wrong = await session.write({
      nodeId: 'ns=1;s=boiler_1.sp',
      attributeId: AttributeIds.Value,
      value: { value: { dataType: DataType.String, value: 'hot' } },
    })
    assert.equal(wrong, StatusCodes.BadTypeMismatch)
    assert.equal((await t.api('GET', `${SYS}/instances/boiler_1/attributes/setpoint`)).body.internal_value, 65.5)
    // The other instance on the endpoint is untouched.
    assert.equal((await read('ns=1;s=boiler_2.sp')).value.value, 60)
    // An HTTP write that the UInt16 binding cannot carry is a 422 and leaves the value as it was.
    assert.equal((await t.api('PUT', `${SYS}/instances/boiler_2/attributes/count/attr/internal_value`, { value: 70000 })).status, 422)
    assert.equal((await read('ns=1;s=boiler_2.count')).value.value, 3)
  })

  it('a monitored item hears the new value after an HTTP write', async () => {
    const subscription = ClientSubscription.create(session, { requestedPublishingInterval: 50, publishingEnabled: true, requestedMaxKeepAliveCount: 10 })
    try {
      const item = await subscription.monitor(
        { nodeId: 'ns=1;s=boiler_2.mode', attributeId: AttributeIds.Value },
        { samplingInterval: 50, queueSize: 10, discardOldest: true },
        TimestampsToReturn.Both,
      )
      const seen: unknown[] = []
      item.on('changed', (dataValue) => seen.push(dataValue.value.value))
      await eventually(() => seen.includes('off'))
      assert.equal((await t.api('PUT', `${SYS}/instances/boiler_2/attributes/mode/attr/internal_value`, { value: 'auto' })).status, 200)
      await eventually(() => seen.includes('auto'))
    } finally {
      await subscription.terminate()
    }
  })

  it('calls a model method with its input argument and returns its result', async () => {
    const result = await session.call({
      objectId: 'ns=1;s=boiler_1',
      methodId: 'ns=1;s=boiler_1.heat',
      inputArguments: [{ dataType: DataType.Double, value: 2.5 }],
    })
    assert.equal(result.statusCode, StatusCodes.Good)
    assert.equal(result.outputArguments![0]!.value, 22.5)
    assert.equal((await read('ns=1;s=boiler_1.temp')).value.value, 22.5)
    const wrong = await session.call({
      objectId: 'ns=1;s=boiler_1',
      methodId: 'ns=1;s=boiler_1.heat',
      inputArguments: [{ dataType: DataType.String, value: 'x' }],
    })
    assert.notEqual(wrong.statusCode, StatusCodes.Good)
    assert.equal((await read('ns=1;s=boiler_1.temp')).value.value, 22.5)
  })

  it('detach makes one instance answer BadNoCommunication while the other keeps serving; attach restores it', async () => {
    assert.equal((await t.call(node('boiler_1'), 'detach')).status, 200)
    assert.equal((await t.api('GET', node('boiler_1'))).body.state, 'DETACHED')
    assert.equal((await read('ns=1;s=boiler_1.temp')).statusCode, StatusCodes.BadNoCommunication)
    assert.equal((await read('ns=1;s=boiler_2.temp')).statusCode, StatusCodes.Good)
    assert.equal((await t.call(node('boiler_1'), 'attach')).status, 200)
    assert.equal((await read('ns=1;s=boiler_1.temp')).statusCode, StatusCodes.Good)
  })

  it('an instance with other endpoint settings on the same port is refused with the setting named', async () => {
    assert.equal((await t.api('PUT', `${SYS}/models`, { Signed: boilerModel(port, { security: 'Sign' }) })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { signed: 'Signed' })).status, 200)
    const refused = await t.call(`${SYS}/instances/signed`, 'prepare')
    assert.equal(refused.status, 422)
    assert.ok(refused.body.error.details.some((d: { path: string }) => d.path === 'security'))
    assert.equal((await read('ns=1;s=boiler_2.temp')).statusCode, StatusCodes.Good)
    assert.equal((await t.api('DELETE', `${SYS}/instances/signed`)).status, 200)
  })

  it('deleting instances removes their folders; with the last one the server closes its port', async () => {
    assert.equal((await t.api('DELETE', `${SYS}/instances/boiler_1`)).status, 200)
    const names = (await session.browse('i=85')).references!.map((r) => r.browseName.name)
    assert.ok(!names.includes('boiler_1') && names.includes('boiler_2'), names.join(', '))
    assert.equal((await read('ns=1;s=boiler_1.temp')).statusCode, StatusCodes.BadNodeIdUnknown)
    assert.equal((await t.api('DELETE', `${SYS}/instances/boiler_2`)).status, 200)
    const refused = await new Promise<string>((resolve) => {
      const socket = tcpConnect(port, '127.0.0.1')
      socket.on('connect', () => (socket.destroy(), resolve('connected')))
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
    })
    assert.equal(refused, 'ECONNREFUSED')
  })
})
