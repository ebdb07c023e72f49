import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { OpcuaClientProcess } from './helpers/opcua-client.js'
import { TEST_KEY } from './helpers/server.js'
import { request, serveMimic, waitFor } from './reliability/helpers.js'

// node-opcua prints its warnings with console.log, on stdout, where Mimic writes its log as JSON
// lines: they must arrive as log records, or a log pipeline reading stdout breaks.
describe('opcua_server and the log on stdout', () => {
  it("stays JSON lines while an OPC UA server runs and refuses a client; node-opcua's warnings are records of their own", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mimic-opcua-log-'))
    const system = join(dir, 'system.yaml')
    await writeFile(
      system,
      [
        'models:',
        '  Tank:',
        '    attributes: { level: { default: 1.5, type: float } }',
        '    communication: [{ opcua_server: { port: 0, bindings: [{ attribute: level }] } }]',
        'instances: [{ tank: Tank }]',
      ].join('\n'),
    )
    const mimic = await serveMimic(['--system', system, '--product-key', TEST_KEY, '--snapshots-dir', join(dir, 'snapshots')])
    const client = OpcuaClientProcess.start({ pki: join(tmpdir(), 'mimic-opcua-test-client-log') })
    try {
      const started = await request(`${mimic.url}/api/v3/system/method/prepare`, 'POST', { kwargs: {} }, { authorization: `Bearer ${TEST_KEY}` })
      assert.equal(started.status, 200, JSON.stringify(started.body))
      const node = await request(`${mimic.url}/api/v3/system/instances/tank/communication/opcua_server`, 'GET', undefined, {
        authorization: `Bearer ${TEST_KEY}`,
      })
      const url = node.body.endpoint as string
      assert.equal((await client.ok({ op: 'connect', url })).ok, true)
      assert.equal((await client.ok({ op: 'read', nodeId: 'ns=1;s=tank.level' })).value, 1.5)
      // A secure channel the endpoint does not offer: node-opcua's server warns as it refuses it.
      const refused = await client.request({ op: 'connect', url, security: 'SignAndEncrypt', insist: true })
      assert.equal(refused.ok, false)
      await waitFor(() => mimic.logs.some((r) => r.source === 'node-opcua' && /BadSecurityPolicyRejected/.test(String(r.msg))))
      const notJson = mimic.logs.filter((r) => String(r.msg).startsWith('not JSON:'))
      assert.deepEqual(notJson, [])
    } finally {
      await client.close()
      mimic.kill()
      await mimic.exited
      await rm(dir, { recursive: true, force: true })
    }
  })
})
