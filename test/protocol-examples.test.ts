import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { connectAsync } from 'mqtt'
import { OPCUACertificateManager } from 'node-opcua-certificate-manager'
import { AttributeIds, DataType, OPCUAClient, StatusCodes, UserTokenType } from 'node-opcua-client'
import { eventually, startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

// The example systems of docs/mqtt.md and docs/opcua.md load as `mimic serve --system` loads them
// and serve real clients.
const SYS = '/api/v3/system'
const example = (name: string, file: string) => new URL(`../examples/${name}/${file}`, import.meta.url).pathname

describe('examples/mqtt: an energy meter on the embedded broker', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ config: { system: example('mqtt', 'system.yaml'), extensions: [example('mqtt', 'extensions')] } })
  })
  after(async () => t.close())

  it('publishes readings and takes a load from a subscriber topic', async () => {
    assert.equal((await t.call(SYS, 'start')).status, 200)
    const adapter = (await t.api('GET', `${SYS}/instances/meter_1/communication/mqtt`)).body
    assert.equal(adapter.state, 'RUNNING')
    await eventually(async () => (await t.api('GET', `${SYS}/instances/meter_1/communication/mqtt`)).body.connection === 'connected')
    // The test server has a product key: the embedded broker takes it as a password.
    const client = await connectAsync({ host: '127.0.0.1', port: adapter.port, reconnectPeriod: 0, username: 'tester', password: TEST_KEY })
    try {
      const heard = new Map<string, string>()
      client.on('message', (topic, payload) => heard.set(topic, payload.toString()))
      await client.subscribeAsync('site/#')
      await eventually(() => heard.get('site/meter_1/status') === 'online' && Number(heard.get('site/meter_1/power')) > 0)
      assert.equal(typeof JSON.parse(heard.get('site/meter_1/energy')!).kwh, 'number')
      await client.publishAsync('site/meter_1/load/set', '3500', { qos: 1 })
      await eventually(async () => (await t.api('GET', `${SYS}/instances/meter_1/attributes/load_w`)).body.internal_value === 3500)
    } finally {
      await client.endAsync()
    }
  })
})

describe('examples/opcua: two boilers on one endpoint', () => {
  let t: TestServer
  let dir: string
  before(async () => {
    // The example listens on 4840; here on a port the system chooses, so the test never meets another server.
    dir = await mkdtemp(join(tmpdir(), 'mimic-opcua-example-'))
    const yaml = (await readFile(example('opcua', 'system.yaml'), 'utf8')).replace('port: 4840', 'port: 0')
    await writeFile(join(dir, 'system.yaml'), yaml)
    t = await startTestServer({ config: { system: join(dir, 'system.yaml'), extensions: [example('opcua', 'extensions')] } })
  })
  after(async () => {
    await t.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('serves both boilers; a client ignites one and reads its burner state', async () => {
    assert.equal((await t.call(SYS, 'start')).status, 200)
    const { endpoint } = (await t.api('GET', `${SYS}/instances/boiler_1/communication/opcua_server`)).body
    assert.equal(endpoint, (await t.api('GET', `${SYS}/instances/boiler_2/communication/opcua_server`)).body.endpoint, 'one endpoint for both')
    assert.match(endpoint, /^opc\.tcp:\/\/127\.0\.0\.1:[1-9]\d*\/mimic$/)
    const client = OPCUAClient.create({
      endpointMustExist: false,
      connectionStrategy: { maxRetry: 0 },
      clientCertificateManager: new OPCUACertificateManager({
        rootFolder: join(tmpdir(), 'mimic-opcua-test-client'),
        automaticallyAcceptUnknownCertificate: true,
      }),
    })
    await client.connect(endpoint)
    // With a product key anonymous sessions only read: the key (with any user name) writes and calls.
    const session = await client.createSession({ type: UserTokenType.UserName, userName: 'tester', password: TEST_KEY })
    try {
      const names = (await session.browse('i=85')).references!.map((r) => r.browseName.name)
      assert.ok(names.includes('boiler_1') && names.includes('boiler_2'), names.join(', '))
      const ignite = await session.call({ objectId: 'ns=1;s=boiler_1', methodId: 'ns=1;s=boiler_1.ignite', inputArguments: [] })
      assert.equal(ignite.statusCode, StatusCodes.Good)
      assert.equal(ignite.outputArguments![0]!.value, true)
      const burner = await session.read({ nodeId: 'ns=1;s=boiler_1.burner_on', attributeId: AttributeIds.Value })
      assert.equal(burner.value.value, true)
      const other = await session.read({ nodeId: 'ns=1;s=boiler_2.burner_on', attributeId: AttributeIds.Value })
      assert.equal(other.value.value, false)
      const written = await session.write({
        nodeId: 'ns=1;s=boiler_2.setpoint',
        attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Double, value: 70 } },
      })
      assert.equal(written, StatusCodes.Good)
      assert.equal((await t.api('GET', `${SYS}/instances/boiler_2/attributes/setpoint_c`)).body.internal_value, 70)
    } finally {
      await session.close()
      await client.disconnect()
    }
  })
})
