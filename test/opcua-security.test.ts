import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { OpcuaClientProcess } from './helpers/opcua-client.js'
import { freePort, startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

// Security modes and users, seen from a node-opcua client in another process. Three servers: one
// signing, one signing and encrypting with user names only, one without security but with user
// names only (passwords then travel encrypted with the server's certificate).
const SYS = '/api/v3/system'
const USERS = [
  { username: 'operator', password: 'op-secret' },
  { username: 'engineer', password: 'eng-secret' },
]

function model(settings: Record<string, unknown>) {
  return {
    attributes: { level: { default: 1.5, type: 'float', unit: 'm' } },
    communication: { opcua_server: { bindings: [{ attribute: 'level' }], ...settings } },
  }
}

describe('opcua_server security: Sign and SignAndEncrypt with generated certificates, users instead of anonymous sessions', () => {
  let t: TestServer
  let client: OpcuaClientProcess
  const url = { signed: '', encrypted: '', plain: '' }
  const level = async (instance: string) => (await t.api('GET', `${SYS}/instances/${instance}/attributes/level`)).body.internal_value
  const sessions = async (instance: string) => (await t.api('GET', `${SYS}/instances/${instance}/communication/opcua_server`)).body.sessions

  before(async () => {
    t = await startTestServer()
    const [signed, encrypted, plain] = [await freePort(), await freePort(), await freePort()]
    const models = {
      Signed: model({ port: signed, security: 'Sign' }),
      Encrypted: model({ port: encrypted, security: 'SignAndEncrypt', security_policy: 'Basic256Sha256', allow_anonymous: false, users: USERS }),
      Plain: model({ port: plain, allow_anonymous: false, users: USERS }),
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, models)).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { signed: 'Signed', encrypted: 'Encrypted', plain: 'Plain' })).status, 200)
    for (const instance of ['signed', 'encrypted', 'plain'] as const) {
      const res = await t.call(`${SYS}/instances/${instance}`, 'prepare')
      assert.equal(res.status, 200, JSON.stringify(res.body))
      url[instance] = (await t.api('GET', `${SYS}/instances/${instance}/communication/opcua_server`)).body.endpoint
    }
    client = OpcuaClientProcess.start({ pki: join(tmpdir(), 'mimic-opcua-test-client-security') })
  })

  after(async () => {
    await client?.close()
    await t?.close()
  })

  it('each server offers exactly its mode and policy, and user-name tokens; anonymous only where allowed', async () => {
    const offered = async (endpoint: string) => (await client.ok({ op: 'endpoints', url: endpoint })).endpoints
    assert.deepEqual(await offered(url.signed), [
      { url: url.signed, security: 'Sign', policy: 'Basic256Sha256', tokens: ['UserName', 'Certificate', 'Anonymous'] },
    ])
    assert.deepEqual(await offered(url.encrypted), [
      { url: url.encrypted, security: 'SignAndEncrypt', policy: 'Basic256Sha256', tokens: ['UserName', 'Certificate'] },
    ])
    assert.deepEqual(await offered(url.plain), [{ url: url.plain, security: 'None', policy: 'None', tokens: ['UserName', 'Certificate'] }])
  })

  it('Sign: a client connecting with Sign and Basic256Sha256 reads and writes', async () => {
    // Logged in with the product key: the test server has one, so anonymous sessions only read.
    await client.ok({ op: 'connect', url: url.signed, security: 'Sign', policy: 'Basic256Sha256', user: { username: 'tester', password: TEST_KEY } })
    assert.equal(await sessions('signed'), 1)
    const read = await client.ok({ op: 'read', nodeId: 'ns=1;s=signed.level' })
    assert.deepEqual([read.status, read.dataType, read.value], ['Good', 'Double', 1.5])
    assert.equal((await client.ok({ op: 'write', nodeId: 'ns=1;s=signed.level', dataType: 'Double', value: 2.25 })).status, 'Good')
    assert.equal(await level('signed'), 2.25)
    await client.ok({ op: 'close' })
  })

  it('SignAndEncrypt: a client connecting with SignAndEncrypt as a listed user reads and writes', async () => {
    await client.ok({ op: 'connect', url: url.encrypted, security: 'SignAndEncrypt', policy: 'Basic256Sha256', user: USERS[1] })
    assert.equal(await sessions('encrypted'), 1)
    assert.equal((await client.ok({ op: 'read', nodeId: 'ns=1;s=encrypted.level' })).value, 1.5)
    assert.equal((await client.ok({ op: 'write', nodeId: 'ns=1;s=encrypted.level', dataType: 'Double', value: 3.75 })).status, 'Good')
    assert.equal(await level('encrypted'), 3.75)
    await client.ok({ op: 'close' })
  })

  it('a mode the endpoint does not offer is refused: by the node-opcua client from the endpoint list, and by the server when a client insists', async () => {
    const encrypted = await client.request({ op: 'connect', url: url.signed, security: 'SignAndEncrypt' })
    assert.equal(encrypted.ok, false)
    assert.match(encrypted.error, /Cannot find an Endpoint matching\s+security mode: 3/)
    const signed = await client.request({ op: 'connect', url: url.encrypted, security: 'Sign', user: USERS[0] })
    assert.equal(signed.ok, false)
    assert.match(signed.error, /Cannot find an Endpoint matching\s+security mode: 2/)
    // Without looking at the list: a session on an unsecured channel is refused by the server.
    const none = await client.request({ op: 'connect', url: url.signed, security: 'None', insist: true })
    assert.equal(none.ok, false)
    assert.equal(none.status, 'BadSecurityModeRejected')
    assert.equal(await sessions('signed'), 0)
    assert.equal(await sessions('encrypted'), 0)
  })

  it('with allow_anonymous: false a wrong password is BadUserAccessDenied and an anonymous session BadIdentityTokenInvalid', async () => {
    for (const [endpoint, security] of [
      [url.encrypted, 'SignAndEncrypt'],
      [url.plain, 'None'],
    ] as const) {
      const wrong = await client.request({ op: 'connect', url: endpoint, security, user: { username: 'operator', password: 'eng-secret' } })
      assert.equal(wrong.ok, false)
      assert.equal(wrong.status, 'BadUserAccessDenied', `${security}: ${wrong.error}`)
      const unknown = await client.request({ op: 'connect', url: endpoint, security, user: { username: 'visitor', password: 'op-secret' } })
      assert.equal(unknown.status, 'BadUserAccessDenied')
      // node-opcua's client does not even ask: the endpoint lists no anonymous token.
      const anonymous = await client.request({ op: 'connect', url: endpoint, security })
      assert.equal(anonymous.ok, false)
      assert.match(anonymous.error, /Cannot find ANONYMOUS user token policy/)
      const insisting = await client.request({ op: 'connect', url: endpoint, security, insist: true })
      assert.equal(insisting.status, 'BadIdentityTokenInvalid', `${security}: ${insisting.error}`)
      // A certificate the client made itself does not stand for a user either.
      const certificate = await client.request({ op: 'connect', url: endpoint, security, user: { certificate: true } })
      assert.equal(certificate.status, 'BadIdentityTokenRejected', `${security}: ${certificate.error}`)
    }
    assert.equal(await sessions('encrypted'), 0)
    assert.equal(await sessions('plain'), 0)
  })

  it('without security, a listed user (password encrypted with the server certificate) reads and writes', async () => {
    await client.ok({ op: 'connect', url: url.plain, user: USERS[0] })
    assert.equal(await sessions('plain'), 1)
    assert.equal((await client.ok({ op: 'read', nodeId: 'ns=1;s=plain.level' })).value, 1.5)
    assert.equal((await client.ok({ op: 'write', nodeId: 'ns=1;s=plain.level', dataType: 'Double', value: 0.5 })).status, 'Good')
    assert.equal(await level('plain'), 0.5)
    await client.ok({ op: 'close' })
    // The node lists the user names, never the passwords.
    const doc = (await t.api('GET', `${SYS}/instances/plain/communication/opcua_server`)).body
    assert.deepEqual(doc.users, ['operator', 'engineer'])
    assert.doesNotMatch(JSON.stringify(doc), /secret/)
  })
})
