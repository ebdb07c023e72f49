// System start and prepare say what they did: an instance that fails to start (and is left in
// ERROR) makes the call answer a fault naming it, while the others start and the system runs.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

describe('system start and prepare with an instance that fails', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({
      files: { 'broken.py': 'class Broken:\n    def __init__(self):\n        raise RuntimeError("no sensor on the bus")\n' },
    })
  })
  after(async () => t.close())

  const ok = async (res: Promise<{ status: number; body: unknown }>): Promise<any> => {
    const r = await res
    assert.equal(r.status, 200, JSON.stringify(r.body))
    return r.body
  }
  const state = async (path: string): Promise<unknown> => (await ok(t.api('GET', `${SYS}${path}`))).state

  it('system start answers the failure of each instance that did not start; the others run', async () => {
    await ok(
      t.api('PUT', `${SYS}/models`, {
        good: { attributes: { n: { default: 0, type: 'int' } }, actions: [{ function: '$out(n)', call: '$in(n) + 1' }] },
        bad_hook: { attributes: { x: 0.0 }, hooks: { on_prepare: [{ set_attr: { attribute: '$out(x)', value: '1 / 0' } }] } },
        bad_code: { attributes: { y: 0.0 }, import: { 'broken.py': { class: 'Broken' } } },
      }),
    )
    await ok(t.api('PUT', `${SYS}/instances`, { g1: 'good', h1: 'bad_hook', c1: 'bad_code' }))

    const res = await t.call(`${SYS}`, 'start')
    assert.equal(res.status, 500, `a start that leaves instances in ERROR is no success (the user's code raised): ${JSON.stringify(res.body)}`)
    assert.equal(res.body.type, 'fault')
    assert.equal(res.body.http_status, 500)
    const paths = res.body.error.details.map((d: { path: string }) => d.path).sort()
    assert.deepEqual(paths, ['instances.c1', 'instances.h1'], JSON.stringify(res.body.error.details))
    const byPath = Object.fromEntries(res.body.error.details.map((d: { path: string; message: string }) => [d.path, d.message]))
    assert.match(byPath['instances.h1'], /ZeroDivisionError/)
    assert.match(byPath['instances.c1'], /no sensor on the bus/)
    assert.match(res.body.error.message, /^start: 2 errors/)

    assert.equal(await state(''), 'RUNNING', 'the system runs the instances that started')
    assert.equal(await state('/instances/g1'), 'RUNNING')
    assert.equal(await state('/instances/h1'), 'ERROR')
    assert.equal(await state('/instances/c1'), 'ERROR')
    await ok(t.call(`${SYS}`, 'stop'))
  })

  it('system prepare does the same', async () => {
    const res = await t.call(`${SYS}`, 'prepare')
    assert.equal(res.status, 500, JSON.stringify(res.body))
    const paths = res.body.error.details.map((d: { path: string }) => d.path).sort()
    assert.deepEqual(paths, ['instances.c1', 'instances.h1'])
    assert.equal(await state('/instances/g1'), 'PREPARED')
  })

  it('a system whose instances all start answers true', async () => {
    await ok(t.api('DELETE', `${SYS}/instances/h1`))
    await ok(t.api('DELETE', `${SYS}/instances/c1`))
    assert.deepEqual(await ok(t.call(`${SYS}`, 'start')), { result: true })
    await ok(t.call(`${SYS}`, 'stop'))
  })
})
