import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from '../../helpers/server.js'

// A run of declarative steps never waits for I/O; it still gives way to the event loop now and
// then, so the server answers other requests while a long run goes on.

const SYS = '/api/v3/system'

describe('a long declarative run', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
    const model = { attributes: { level: 0.0 }, actions: [{ function: '$out(level)', call: '$in(level) + 1.0' }] }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Ramp: model })).status, 200)
    const instances = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`r${i}`, 'Ramp']))
    assert.equal((await t.api('PUT', `${SYS}/instances`, instances)).status, 200)
  })
  after(async () => t?.close())

  it('answers /health and reads while it runs, with the values of a step taken', async () => {
    let runEnded = false
    const run = t.call(SYS, 'run', { steps: 40_000 }).then((res) => {
      runEnded = true
      return res
    })
    let level = 0
    while (level === 0) level = (await t.api('GET', `${SYS}/instances/r0/attributes/level/attr/internal_value`)).body.value
    const health = await fetch(`${t.url}/health`)
    assert.equal(health.status, 200)
    assert.equal(runEnded, false, 'answered during the run')
    assert.ok(Number.isInteger(level) && level > 0 && level < 40_000, `level ${level}`)
    assert.equal((await run).status, 200)
    assert.equal((await t.api('GET', `${SYS}/instances/r0/attributes/level/attr/internal_value`)).body.value, 40_000)
  })
})
