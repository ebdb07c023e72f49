// A snapshot file is parsed once, keeping Python's numbers: an int past 2**53, a float 2.0 and a
// dict holding both come back from a save and a load (from the file and from memory) as they were
// written, byte for byte, over HTTP and to a Python object; a snapshot that is corrupt, or holds
// an int too large for an `int` attribute, is a 422 that names the file or the value's path, and
// the running system is left as it was.
import assert from 'node:assert/strict'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from './helpers/server.js'
import { rawRequest } from './helpers/wire.js'

const SYS = '/api/v3/system'
const SNAP = `${SYS}/snapshots`

/** A value JSON.parse cannot keep: an int past 2**53, a float 2.0, and a dict that holds both, a list of both too. */
const VALUE = '{"big":12345678901234567890,"f":2.0,"nested":{"neg":-98765432109876543210,"f":2.0,"xs":[2.0,2,9007199254740993]}}'

/** Keeps what it is given; `dump` answers it as Python's json module writes it, `kinds` the type of each number. */
const KEEPER_PY = `
import json

class Keeper:
    def __init__(self):
        self.value = None

    def dump(self):
        return json.dumps(self.value, separators=(",", ":"))

    def kinds(self):
        nested = self.value["nested"]
        return [type(v).__name__ for v in (self.value["big"], self.value["f"], nested["neg"], nested["f"], *nested["xs"])]
`

const MODELS = {
  Keeper: {
    attributes: { value: { default: null, type: 'any' } },
    import: { 'keeper.py': { class: 'Keeper', attributes: { value: { property: 'value' } }, methods: { dump: 'dump', kinds: 'kinds' } } },
  },
  Plain: { attributes: { value: { default: null, type: 'any' }, ratio: { default: 1.5, type: 'float' }, count: { default: 0, type: 'int' } } },
}

describe('a snapshot keeps the type of every number of its values', () => {
  let t: TestServer
  const read = async (instance: string, attr: string): Promise<string> => {
    const res = await rawRequest(t, 'GET', `${SYS}/instances/${instance}/attributes/${attr}/attr/internal_value`)
    assert.equal(res.status, 200, res.text)
    return res.text
  }
  const write = async (instance: string, attr: string, value: string): Promise<void> => {
    const res = await rawRequest(t, 'PUT', `${SYS}/instances/${instance}/attributes/${attr}/attr/internal_value`, `{"value": ${value}}`)
    assert.equal(res.status, 200, res.text)
  }
  const python = async (method: string): Promise<unknown> => {
    const res = await t.call(`${SYS}/instances/k`, method)
    assert.equal(res.status, 200, JSON.stringify(res.body))
    return res.body.result
  }
  /** What a user can read of the values: over HTTP, and what the Python object holds. */
  const seen = async (): Promise<Record<string, unknown>> => ({
    k: await read('k', 'value'),
    p: await read('p', 'value'),
    ratio: await read('p', 'ratio'),
    count: await read('p', 'count'),
    dump: await python('dump'),
    kinds: await python('kinds'),
  })

  before(async () => {
    t = await startTestServer({ files: { 'keeper.py': KEEPER_PY } })
    assert.equal((await t.api('PUT', `${SYS}/models`, MODELS)).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { k: 'Keeper', p: 'Plain' })).status, 200)
    assert.equal((await t.call(SYS, 'prepare')).status, 200)
    await write('k', 'value', VALUE)
    await write('p', 'value', VALUE)
    await write('p', 'ratio', '2.0')
    await write('p', 'count', '7')
  })
  after(async () => t.close())

  it('saved, loaded from its file and from memory, every value reads back byte for byte, in HTTP and in Python', async () => {
    const expected = {
      k: `{"value":${VALUE}}`,
      p: `{"value":${VALUE}}`,
      ratio: '{"value":2.0}',
      count: '{"value":7}',
      dump: VALUE,
      kinds: ['int', 'float', 'int', 'float', 'float', 'int', 'int'],
    }
    assert.deepEqual(await seen(), expected, 'as written, before any save')

    const saved = (await t.call(SNAP, 'save', { include_state: true, name: 'typed' })).body.result
    const text = await readFile(saved.persisted_path, 'utf8')
    assert.ok(text.includes(`"value":{"internal":${VALUE}}`), 'the file holds the value as written')

    for (const selector of [{ path: 'typed.json' }, { id: saved.id }]) {
      await write('k', 'value', '[1]')
      await write('p', 'value', '1.5')
      await write('p', 'ratio', '3.25')
      const loaded = await t.call(SNAP, 'load', selector)
      assert.equal(loaded.status, 200, JSON.stringify(loaded.body))
      assert.deepEqual(await seen(), expected, `loaded by ${Object.keys(selector)[0]}`)
    }

    // Saved again after the load, the file is the same, but for its header.
    const again = (await t.call(SNAP, 'save', { include_state: true, name: 'typed-again' })).body.result
    const state = (file: string): string => file.slice(file.indexOf('"state"'))
    assert.equal(state(await readFile(again.persisted_path, 'utf8')), state(text))
  })

  it('a corrupt file, or an int too large for an int attribute, is a 422 naming the file or the path; nothing changes', async () => {
    const before = await seen()
    const saved = (await t.call(SNAP, 'save', { include_state: true, name: 'good' })).body.result
    const text = await readFile(saved.persisted_path, 'utf8')

    // Cut inside the line of instance `p`, after its floats and big ints: the parse that keeps them fails.
    const cut = text.indexOf('"ratio"', text.indexOf('\n   "p": '))
    await writeFile(join(t.snapshots, 'cut.json'), text.slice(0, cut))
    const truncated = await t.call(SNAP, 'load', { path: 'cut.json' })
    assert.equal(truncated.status, 422, JSON.stringify(truncated.body))
    const line = text.slice(0, cut).split('\n').length
    assert.match(truncated.body.error.message, new RegExp(`cut\\.json: not valid JSON \\(truncated or corrupt\\?\\) at line ${line}, column \\d+`))

    const big = text.replace('"count":{"internal":7}', '"count":{"internal":12345678901234567890}')
    assert.notEqual(big, text)
    await writeFile(join(t.snapshots, 'big.json'), big)
    const refused = await t.call(SNAP, 'load', { path: 'big.json' })
    assert.equal(refused.status, 422, JSON.stringify(refused.body))
    assert.deepEqual(
      refused.body.error.details.map((d: { path: string }) => d.path),
      ['state.instances.p.attributes.count.internal'],
    )
    assert.match(refused.body.error.details[0].message, /an int attribute holds integers from -\(2\*\*53 - 1\) to 2\*\*53 - 1/)

    assert.deepEqual(await seen(), before, 'the running system is as it was')
  })

  it("an instance's start values keep their types through a snapshot of the structure alone", async () => {
    const lists = { attributes: { xs: { default: [], type: 'list' }, count: { default: 0, type: 'int' } } }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Lists: lists })).status, 200)
    const start = '[2.0,2,12345678901234567890]'
    const created = await rawRequest(t, 'PUT', `${SYS}/instances`, `{"l": {"type": "Lists", "init_parameters": {"xs": ${start}, "count": 2.0}}}`)
    assert.equal(created.status, 200, created.text)
    assert.equal(await read('l', 'xs'), `{"value":${start}}`, 'as created')
    assert.equal(await read('l', 'count'), '{"value":2}', 'a start value alone is read as its type says')

    const saved = (await t.call(SNAP, 'save', { name: 'structure' })).body.result
    assert.match(await readFile(saved.persisted_path, 'utf8'), /"xs": \[\n\s+2\.0,\n\s+2,\n\s+12345678901234567890\n/)
    await write('l', 'xs', '[]')
    assert.equal((await t.call(SNAP, 'load', { path: 'structure.json' })).status, 200)
    assert.equal(await read('l', 'xs'), `{"value":${start}}`, 'loaded')
  })
})
