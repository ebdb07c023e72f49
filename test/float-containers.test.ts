// Numbers inside list, dict and `any` values keep Python's type (docs/api.md "Numbers"): a
// computed [2.0, 3.5] answers [2.0, 3.5], not [2, 3.5]; a list written as [2.0, 2] reads back so;
// an expression reading the value sees floats and ints as they were. Checked the way users see
// it: the raw text of HTTP answers and event frames, and the types a Python client reads.
import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'
import { frameMatching, pythonSeen, rawRequest } from './helpers/wire.js'

const SYS = '/api/v3/system'

/** Computes containers with floats, ints and floats that are whole, and reads their types back. */
const COMPUTED = {
  attributes: {
    xs: { default: [], type: 'list' },
    d: { default: {}, type: 'dict' },
    whole: { default: null, type: 'any' },
    count: { default: null, type: 'any' },
    nested: { default: [], type: 'list' },
    seen: { default: '', type: 'str' },
  },
  actions: [
    // What the previous step stored, as the expressions see it: read before this step's writes.
    { function: '$out(seen)', call: 'str([xs, d, whole, count, nested])' },
    { function: '$out(xs)', call: '[float(i) for i in range(3)] + [3, 3.5]' },
    { function: '$out(d)', call: '{"a": 2.0, "b": 2, "c": -0.0}' },
    { function: '$out(whole)', call: '4 / 2' },
    { function: '$out(count)', call: '4 // 2' },
    { function: '$out(nested)', call: '[[1.0, 1], {"k": (3.0, 3)}]' },
  ],
}

describe('numbers inside list, dict and any values', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(async () => t.close())

  it('a computed value answers 2.0 for a float and 2 for an int, and the next step reads them back with their types', async () => {
    const defined = await t.api('PUT', `${SYS}/models`, { Computed: COMPUTED })
    assert.equal(defined.status, 200, JSON.stringify(defined.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { c1: 'Computed' })).status, 200)
    for (let i = 0; i < 2; i++) assert.equal((await t.call(`${SYS}/instances/c1`, 'run')).status, 200)
    const value = async (attr: string): Promise<string> => {
      const res = await rawRequest(t, 'GET', `${SYS}/instances/c1/attributes/${attr}/attr/internal_value`)
      assert.equal(res.status, 200, res.text)
      return res.text
    }
    assert.equal(await value('xs'), '{"value":[0.0,1.0,2.0,3,3.5]}')
    assert.equal(await value('d'), '{"value":{"a":2.0,"b":2,"c":-0.0}}')
    assert.equal(await value('whole'), '{"value":2.0}')
    assert.equal(await value('count'), '{"value":2}')
    assert.equal(await value('nested'), '{"value":[[1.0,1],{"k":[3.0,3]}]}')
    // str() of what the second step read: Python's own text of each number.
    assert.equal(await value('seen'), `{"value":"[[0.0, 1.0, 2.0, 3, 3.5], {'a': 2.0, 'b': 2, 'c': -0.0}, 2.0, 2, [[1.0, 1], {'k': [3.0, 3]}]]"}`)
    // The attribute document, both values and in `attr` alike.
    const doc = await rawRequest(t, 'GET', `${SYS}/instances/c1/attributes/xs`)
    assert.match(doc.text, /"attr":\{"internal_value":\{"value":\[0\.0,1\.0,2\.0,3,3\.5\]\},"external_value":\{"value":\[0\.0,1\.0,2\.0,3,3\.5\]\}/)
    assert.match(doc.text, /,"internal_value":\[0\.0,1\.0,2\.0,3,3\.5\],/)

    const frame = await frameMatching(t, /"c1":/)
    assert.match(frame, /"xs":\{"internal_value":\[0\.0,1\.0,2\.0,3,3\.5\],"external_value":\[0\.0,1\.0,2\.0,3,3\.5\]\}/)
    assert.match(frame, /"whole":\{"internal_value":2\.0,"external_value":2\.0\}/)
    assert.match(frame, /"count":\{"internal_value":2,"external_value":2\}/)
  })

  it('a value written as [2.0, 2] reads back [2.0, 2] by every way in; a float that a dict cannot take is refused with its path', async () => {
    const models =
      '{"Held": {"attributes": {"xs": {"default": [1.0, 1], "type": "list"}, "v": {"default": null, "type": "any"}, "d": {"default": {}, "type": "dict"}, "f": 0.5}}}'
    assert.equal((await rawRequest(t, 'PUT', `${SYS}/models`, models)).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { h1: 'Held' })).status, 200)
    const base = `${SYS}/instances/h1/attributes`
    // The default, as given in the definition, and the definition read back.
    assert.equal((await rawRequest(t, 'GET', `${base}/xs/attr/internal_value`)).text, '{"value":[1.0,1]}')
    assert.match((await rawRequest(t, 'GET', `${SYS}/models/Held`)).text, /"xs":\{"default":\[1\.0,1\],"type":"list"\}/)

    assert.equal((await rawRequest(t, 'PUT', `${base}/xs/attr/internal_value`, '{"value": [2.0, 2, 2.5, 1e3]}')).text, '{"value":[2.0,2,2.5,1000.0]}')
    assert.equal((await rawRequest(t, 'PUT', `${base}/v/internal_value`, '{"value": 2.0}')).text, '{"value":2.0}')
    assert.equal((await rawRequest(t, 'PUT', `${base}/f/internal_value`, '{"value": 2.0}')).text, '{"value":2.0}')
    const patched = await rawRequest(t, 'PATCH', `${base}/d`, '{"external_value": {"a": [4.0]}}')
    assert.equal(patched.status, 200, patched.text)
    assert.match(patched.text, /"external_value":\{"a":\[4\.0\]\}/)
    const many = await rawRequest(t, 'PUT', base, '{"xs": [5.0], "added": [6.0, 6], "number": 7.0}')
    assert.equal(many.status, 200, many.text)
    assert.equal((await rawRequest(t, 'GET', `${base}/xs/internal_value`)).text, '{"value":[5.0]}')
    assert.equal((await rawRequest(t, 'GET', `${base}/added/internal_value`)).text, '{"value":[6.0,6]}')
    assert.match((await rawRequest(t, 'GET', `${base}/number`)).text, /"type":"float"/)
    // The instance's own shorthand for attribute values.
    const shorthand = await rawRequest(t, 'PUT', `${SYS}/instances/h1`, '{"xs": [8.0, 8], "v": 9.0}')
    assert.equal(shorthand.status, 200, shorthand.text)
    assert.equal((await rawRequest(t, 'GET', `${base}/xs/internal_value`)).text, '{"value":[8.0,8]}')
    assert.equal((await rawRequest(t, 'GET', `${base}/v/internal_value`)).text, '{"value":9.0}')

    const refused = await rawRequest(t, 'PUT', `${base}/d/internal_value`, '{"value": 2.0}')
    assert.equal(refused.status, 422)
    const { details } = JSON.parse(refused.text).error
    assert.deepEqual(
      details.map((d: { path: string }) => d.path),
      ['internal_value'],
    )
    assert.match(details[0].message, /expected an object \(dict\), got float/)
    assert.equal((await rawRequest(t, 'GET', `${base}/d/internal_value`)).text, '{"value":{}}')
  })

  it('a Python client writes [2.0, 2] and reads back a float and an int; a snapshot with state keeps them', async () => {
    assert.equal(
      (await rawRequest(t, 'PUT', `${SYS}/models`, '{"Py": {"attributes": {"xs": {"default": [], "type": "list"}, "m": {"default": {}, "type": "dict"}}}}'))
        .status,
      200,
    )
    const script = String.raw`
import json, os
from mimic_sdk import client as mimic
sim = mimic.init(address=os.environ["MIMIC_URL"], product_key=os.environ["MIMIC_PRODUCT_KEY"])
sim["instances"]["p1"] = "Py"
attrs = sim["instances"]["p1"]["attributes"]
attrs["xs"].internal_value = [2.0, 2, {"k": 1.0}]
attrs["m"].internal_value = {"a": 3.0}
seen = {"written": [type(v).__name__ for v in attrs["xs"].internal_value], "inner": type(attrs["xs"].internal_value[2]["k"]).__name__}
snapshot = sim["snapshots"].save(label="containers", include_state=True)
with open(snapshot["persisted_path"]) as f:
    seen["file"] = f.read()
attrs["xs"].internal_value = []
attrs["m"].internal_value = {}
sim["snapshots"].load(path=snapshot["persisted_path"])
attrs = sim["instances"]["p1"]["attributes"]
seen["loaded"] = [type(v).__name__ for v in attrs["xs"].internal_value]
seen["loaded_dict"] = type(attrs["m"].internal_value["a"]).__name__
print(json.dumps(seen))
`
    const path = join(t.dir, 'containers.py')
    await writeFile(path, script)
    const seen = await pythonSeen(path, { MIMIC_URL: t.url, MIMIC_PRODUCT_KEY: TEST_KEY })
    assert.deepEqual(seen.written, ['float', 'int', 'dict'])
    assert.equal(seen.inner, 'float')
    assert.match(seen.file, /"internal":\[2\.0,2,\{"k":1\.0\}\]/)
    assert.deepEqual(seen.loaded, ['float', 'int', 'dict'])
    assert.equal(seen.loaded_dict, 'float')
  })
})

const SAMPLES_PY = `
class Samples:
    def __init__(self):
        self.samples = [2.0, 2]
        self.table = {"k": 1.0, "n": 1}

    def tick(self):
        self.samples = self.samples + [float(len(self.samples))]

    def kinds(self):
        return [type(v).__name__ for v in self.samples]

    def summary(self):
        return {"first": self.samples[0], "samples": self.samples, "count": len(self.samples)}

    def half(self, x):
        return x / 2

    def kind(self, x):
        return [type(v).__name__ for v in x] if isinstance(x, list) else type(x).__name__
`

describe('numbers inside the list and dict values of a Python object', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ files: { 'samples.py': SAMPLES_PY } })
  })
  after(async () => t.close())

  it("a Python object's [2.0, 2] reads back [2.0, 2]; a list written as [5.0, 5] reaches its setter as a float and an int; results keep their floats", async () => {
    const model = {
      attributes: { samples: { default: [], type: 'list' }, table: { default: {}, type: 'dict' } },
      import: {
        'samples.py': {
          class: 'Samples',
          attributes: { samples: { property: 'samples' }, table: { property: 'table' } },
          methods: { run: 'tick', kinds: 'kinds', summary: 'summary', half: 'half', kind: 'kind' },
        },
      },
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Samples: model })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { s1: 'Samples' })).status, 200)
    const inst = `${SYS}/instances/s1`
    assert.equal((await t.call(`${inst}/polling`, 'disable')).status, 200)
    assert.equal((await t.call(inst, 'prepare')).status, 200)
    const value = async (attr: string): Promise<string> => (await rawRequest(t, 'GET', `${inst}/attributes/${attr}/internal_value`)).text
    assert.equal(await value('samples'), '{"value":[2.0,2]}')
    assert.equal(await value('table'), '{"value":{"k":1.0,"n":1}}')
    assert.equal((await t.call(inst, 'run')).status, 200)
    assert.equal(await value('samples'), '{"value":[2.0,2,2.0]}')

    const written = await rawRequest(t, 'PUT', `${inst}/attributes/samples/internal_value`, '{"value": [5.0, 5]}')
    assert.equal(written.status, 200, written.text)
    assert.equal(written.text, '{"value":[5.0,5]}')
    assert.deepEqual((await t.call(inst, 'kinds')).body, { result: ['float', 'int'] })
    assert.equal((await t.call(inst, 'run')).status, 200)
    assert.equal(await value('samples'), '{"value":[5.0,5,2.0]}')

    // A method's result keeps its floats too, itself included.
    const summary = await rawRequest(t, 'POST', `${inst}/method/summary`, '{}')
    assert.equal(summary.text, '{"result":{"first":5.0,"samples":[5.0,5,2.0],"count":3}}')
    assert.equal((await rawRequest(t, 'POST', `${inst}/method/half`, '{"kwargs": {"x": 4}}')).text, '{"result":2.0}')
    assert.equal((await rawRequest(t, 'POST', `${inst}/method/half`, '{"kwargs": {"x": 5}}')).text, '{"result":2.5}')

    // And its arguments: 2.0 reaches Python as a float, 2 as an int.
    const kind = async (body: string): Promise<string> => (await rawRequest(t, 'POST', `${inst}/method/kind`, body)).text
    assert.equal(await kind('{"kwargs": {"x": 2.0}}'), '{"result":"float"}')
    assert.equal(await kind('{"kwargs": {"x": 2}}'), '{"result":"int"}')
    assert.equal(await kind('{"args": [[2.0, 2, 1e3]]}'), '{"result":["float","int","float"]}')
    // Built-in methods read their arguments as before.
    assert.equal((await rawRequest(t, 'POST', `${inst}/method/run`, '{"kwargs": {"dt": 1.0}}')).status, 200)
  })
})
