// Ints past 2**53 inside list, dict and `any` values stay exact from every entry to every exit
// (src/values): written over HTTP, held by a Python object, passed to and returned from a Python
// method, read back over HTTP. An `int` attribute keeps its documented range. Checked the way a
// user sees it: the raw text of HTTP answers and what Python itself computes from the value.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from './helpers/server.js'
import { rawRequest } from './helpers/wire.js'

const SYS = '/api/v3/system'
const BIG = '12345678901234567890123'

const COUNTER_PY = `
class Counter:
    def __init__(self):
        self.held = [2 ** 70, 2.0]
        self.anything = None

    def tick(self):
        pass

    def plus_one(self, x):
        return x + 1

    def kinds(self):
        return [type(v).__name__ for v in self.held] + [str(v) for v in self.held]
`

describe('ints past 2**53 in list, dict and any values', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ files: { 'counter.py': COUNTER_PY } })
  })
  after(async () => t.close())

  it('read back exactly over HTTP, reach Python as ints with every digit, and come back from it exactly', async () => {
    const model = {
      attributes: { held: { default: [], type: 'list' }, anything: { default: null, type: 'any' }, count: { default: 0, type: 'int' } },
      import: {
        'counter.py': {
          class: 'Counter',
          attributes: { held: { property: 'held' }, anything: { property: 'anything' } },
          methods: { run: 'tick', plus_one: 'plus_one', kinds: 'kinds' },
        },
      },
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Counter: model })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { c1: 'Counter' })).status, 200)
    const inst = `${SYS}/instances/c1`
    assert.equal((await t.call(`${inst}/polling`, 'disable')).status, 200)
    assert.equal((await t.call(inst, 'prepare')).status, 200)
    const value = async (attr: string): Promise<string> => (await rawRequest(t, 'GET', `${inst}/attributes/${attr}/internal_value`)).text

    // Held by Python: 2**70 and 2.0, each as Python has it.
    assert.equal(await value('held'), `{"value":[${2n ** 70n},2.0]}`)

    // Written over HTTP: Python's setter gets every digit, and answers with them.
    const written = await rawRequest(t, 'PUT', `${inst}/attributes/held/internal_value`, `{"value": [${BIG}, 1.0, -${BIG}]}`)
    assert.equal(written.status, 200, written.text)
    assert.equal(written.text, `{"value":[${BIG},1.0,-${BIG}]}`)
    assert.equal((await rawRequest(t, 'POST', `${inst}/method/kinds`, '{}')).text, `{"result":["int","float","int","${BIG}","1.0","-${BIG}"]}`)

    // An `any` attribute holds one alone, and a method's argument and result keep it.
    assert.equal((await rawRequest(t, 'PUT', `${inst}/attributes/anything/internal_value`, `{"value": ${BIG}}`)).status, 200)
    assert.equal(await value('anything'), `{"value":${BIG}}`)
    assert.equal((await rawRequest(t, 'POST', `${inst}/method/plus_one`, `{"kwargs": {"x": ${BIG}}}`)).text, `{"result":${BigInt(BIG) + 1n}}`)

    // An int attribute keeps its range and says so.
    const refused = await rawRequest(t, 'PUT', `${inst}/attributes/count/internal_value`, `{"value": ${BIG}}`)
    assert.equal(refused.status, 422)
    assert.match(refused.text, /2\*\*53 - 1/)
  })
})
