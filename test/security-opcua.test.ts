// The OPC UA server against anonymous writers and session hoarders, with node-opcua-client in
// processes of their own: with a product key anonymous sessions only read, sessions are limited
// per client address and in time, and `pki_dir` stays inside the PKI directory (docs/opcua.md,
// "Access with a product key" and "Sessions").
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { OpcuaClientProcess } from './helpers/opcua-client.js'
import { eventually, freePort, startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const CLIENT_PKI = join(tmpdir(), 'mimic-opcua-test-client')
// Kept across runs, as the server's certificates are: making a key pair takes seconds.
const PKI_ROOT = join(tmpdir(), 'mimic-security-opcua-pki')

const TANK_PY = `
class Tank:
    def __init__(self):
        self.fills = 0

    def fill(self):
        self.fills += 1
        return self.fills
`

function tankModel(port: number, settings: Record<string, unknown> = {}) {
  return {
    attributes: { level: { default: 1.5, type: 'float' }, fills: { default: 0, type: 'int' } },
    import: { 'tank.py': { class: 'Tank', attributes: { fills: { property: 'fills' } }, methods: { fill: 'fill' } } },
    communication: {
      opcua_server: {
        port,
        pki_dir: 'plant-a',
        users: [{ username: 'operator', password: 'op-secret' }],
        bindings: [{ attribute: 'level' }, { attribute: 'fills', writable: false }],
        methods: [{ method: 'fill', output: 'Int32' }],
        ...settings,
      },
    },
  }
}

describe('OPC UA with a product key: anonymous sessions read, users write', () => {
  let t: TestServer
  let url: string
  let client: OpcuaClientProcess
  const level = async () => (await t.api('GET', `${SYS}/instances/tank/attributes/level`)).body.internal_value

  before(async () => {
    t = await startTestServer({ files: { 'tank.py': TANK_PY }, config: { pkiDir: PKI_ROOT } })
    assert.equal((await t.api('PUT', `${SYS}/models`, { Tank: tankModel(0) })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { tank: 'Tank' })).status, 200)
    const prepared = await t.call(`${SYS}/instances/tank`, 'prepare')
    assert.equal(prepared.status, 200, JSON.stringify(prepared.body))
    url = (await t.api('GET', `${SYS}/instances/tank/communication/opcua_server`)).body.endpoint
    client = OpcuaClientProcess.start({ pki: CLIENT_PKI })
  })
  after(async () => {
    await client?.close()
    await t?.close()
  })

  it('an anonymous session browses and reads', async () => {
    await client.ok({ op: 'connect', url })
    const browsed = await client.ok({ op: 'browse', nodeId: 'ns=1;s=tank' })
    assert.deepEqual(browsed.references.map((r: { browseName: string }) => r.browseName).sort(), ['fill', 'fills', 'level'])
    const read = await client.ok({ op: 'read', nodeId: 'ns=1;s=tank.level' })
    assert.deepEqual([read.status, read.value], ['Good', 1.5])
  })

  it('an anonymous write is BadUserAccessDenied and changes nothing; so is a method call', async () => {
    const write = await client.ok({ op: 'write', nodeId: 'ns=1;s=tank.level', dataType: 'Double', value: 9.5 })
    assert.equal(write.status, 'BadUserAccessDenied')
    assert.equal(await level(), 1.5)
    const call = await client.ok({ op: 'call', objectId: 'ns=1;s=tank', methodId: 'ns=1;s=tank.fill' })
    assert.equal(call.status, 'BadUserAccessDenied')
    assert.equal((await t.api('GET', `${SYS}/instances/tank/attributes/fills`)).body.internal_value, 0)
  })

  it('any user name with the product key as password writes and calls', async () => {
    await client.ok({ op: 'connect', url, user: { username: 'bench', password: TEST_KEY } })
    assert.equal((await client.ok({ op: 'write', nodeId: 'ns=1;s=tank.level', dataType: 'Double', value: 2.25 })).status, 'Good')
    assert.equal(await level(), 2.25)
    const call = await client.ok({ op: 'call', objectId: 'ns=1;s=tank', methodId: 'ns=1;s=tank.fill' })
    assert.deepEqual([call.status, call.outputs], ['Good', [1]])
  })

  it("a user of the model's users writes; a wrong password is refused", async () => {
    await client.ok({ op: 'connect', url, user: { username: 'operator', password: 'op-secret' } })
    assert.equal((await client.ok({ op: 'write', nodeId: 'ns=1;s=tank.level', dataType: 'Double', value: 3.5 })).status, 'Good')
    assert.equal(await level(), 3.5)
    const refused = await client.request({ op: 'connect', url, user: { username: 'operator', password: 'wrong' } })
    assert.equal(refused.status, 'BadUserAccessDenied')
  })

  it('the node says so, and the certificates are in pki_dir inside the PKI directory', async () => {
    const doc = (await t.api('GET', `${SYS}/instances/tank/communication/opcua_server`)).body
    assert.equal(doc.anonymous_read_only, true)
    assert.equal(doc.pki_dir, 'plant-a')
    assert.ok(existsSync(join(PKI_ROOT, 'plant-a', 'urn_mimic', 'own', 'certs')))
  })

  it('pki_dir that is absolute or leaves the PKI directory is a 422 naming it', async () => {
    for (const dir of ['/tmp/x', '../x', 'a/../../x']) {
      const res = await t.api('PUT', `${SYS}/models`, { Bad: tankModel(4840, { pki_dir: dir }) })
      assert.equal(res.status, 422, dir)
      const details = res.body.error.details as Array<{ path: string; message: string }>
      assert.deepEqual(
        details.map((d) => d.path),
        ['communication.opcua_server.pki_dir'],
      )
      assert.match(details[0]!.message, new RegExp(`'${dir.replaceAll('.', '\\.')}' (is an absolute path|leaves it with \\.\\.)`))
    }
  })
})

describe('OPC UA sessions: limited per client and in time', () => {
  let t: TestServer
  let limited: string
  let patient: string
  const sessions = async (instance: string) => (await t.api('GET', `${SYS}/instances/${instance}/communication/opcua_server`)).body.sessions as number
  const clients: OpcuaClientProcess[] = []
  const start = () => {
    const client = OpcuaClientProcess.start({ pki: CLIENT_PKI })
    clients.push(client)
    return client
  }

  before(async () => {
    t = await startTestServer({ files: { 'tank.py': TANK_PY }, config: { pkiDir: PKI_ROOT } })
    // Two servers with other settings: ports chosen ahead (those on port 0 share one server).
    const [a, b] = [await freePort(), await freePort()]
    limited = `opc.tcp://127.0.0.1:${a}/mimic`
    patient = `opc.tcp://127.0.0.1:${b}/mimic`
    const models = {
      Limited: tankModel(a, { max_sessions_per_client: 3, session_timeout: 2 }),
      Patient: tankModel(b, { max_sessions_per_client: 2, session_timeout: 600 }),
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, models)).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { limited: 'Limited', patient: 'Patient' })).status, 200)
    for (const instance of ['limited', 'patient']) assert.equal((await t.call(`${SYS}/instances/${instance}`, 'prepare')).status, 200)
  })
  after(async () => {
    for (const client of clients) await client.close()
    await t?.close()
  })

  it('a client holding its max_sessions_per_client is refused more, and another client still connects', async () => {
    const hoarder = start()
    // The hoarder's connections leave from 127.0.0.2, another address of the loopback network.
    const held = await hoarder.ok({ op: 'hold', url: limited, count: 6, localAddress: '127.0.0.2' })
    assert.deepEqual([held.opened, held.statuses], [3, { BadTooManySessions: 3 }])
    const other = start()
    await other.ok({ op: 'connect', url: limited })
    assert.equal((await other.ok({ op: 'read', nodeId: 'ns=1;s=limited.level' })).value, 1.5)
    assert.equal(await sessions('limited'), 4)
    await hoarder.ok({ op: 'release' })
    await other.ok({ op: 'close' })
  })

  it('the sessions of a client that went away without closing them end after session_timeout', async () => {
    const leaver = start()
    assert.equal((await leaver.ok({ op: 'hold', url: limited, count: 3, localAddress: '127.0.0.3' })).opened, 3)
    assert.equal(await sessions('limited'), 3)
    leaver.child.kill('SIGKILL')
    await eventually(async () => (await sessions('limited')) === 0, 20_000, 200)
  })

  it('at the limit, the sessions of a client that went away make room at once, long before their timeout', async () => {
    const leaver = start()
    assert.equal((await leaver.ok({ op: 'hold', url: patient, count: 2, localAddress: '127.0.0.4' })).opened, 2)
    leaver.child.kill('SIGKILL')
    // Its sessions are still there (session_timeout is 10 minutes), but their connections are gone.
    assert.equal(await sessions('patient'), 2)
    const back = start()
    // Retried until the server has seen the connections close, which the kill does not wait for.
    await eventually(async () => (await back.ok({ op: 'hold', url: patient, count: 1, localAddress: '127.0.0.4' })).opened === 1, 10_000)
    // One abandoned session made room; the other waits for its timeout or for the next newcomer.
    assert.equal(await sessions('patient'), 2)
    await back.ok({ op: 'release' })
  })

  it('the node shows the limits', async () => {
    const doc = (await t.api('GET', `${SYS}/instances/limited/communication/opcua_server`)).body
    assert.deepEqual([doc.max_sessions, doc.max_sessions_per_client, doc.session_timeout], [100, 3, 2])
  })
})
