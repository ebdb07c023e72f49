// A float attribute answers 30.0, never 30, in every JSON document (docs/api.md "Numbers"): what
// a Python client reads back over HTTP, what the event stream sends, what a snapshot file holds
// and what a model definition reads back as. An int attribute stays an int.
import assert from 'node:assert/strict'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'
import { frameMatching, pythonSeen, rawRequest } from './helpers/wire.js'

/**
 * A user's script with the Python client: defines a model, writes and reads values, reads the
 * definition back, saves and loads a snapshot. It prints, for every value it saw, its repr and
 * its Python type, so the test sees what Python saw (JSON would turn 30.0 into 30 again).
 */
const FLOATS_PY = String.raw`
import json, math, os, urllib.request
from mimic_sdk import client as mimic

sim = mimic.init(address=os.environ["MIMIC_URL"], product_key=os.environ["MIMIC_PRODUCT_KEY"])
seen = {}
def see(name, value):
    seen[name] = [repr(value), type(value).__name__]

def raw_get(path):
    req = urllib.request.Request(os.environ["MIMIC_URL"] + "/api/v3/system/" + path,
                                 headers={"Authorization": "Bearer " + os.environ["MIMIC_PRODUCT_KEY"]})
    with urllib.request.urlopen(req) as res:
        return json.loads(res.read())

sim["models"]["Meter"] = {"attributes": {
    "voltage": {"default": 25.0, "type": "float", "unit": "V"},
    "setpoint": 30.0,
    "count": {"default": 30, "type": "int"},
    "samples": [1.0, 2.5],
}}
sim["instances"]["m1"] = "Meter"
attrs = sim["instances"]["m1"]["attributes"]
voltage = attrs["voltage"]

see("default_read", voltage.internal_value)
voltage.internal_value = 30.0
see("written_read", voltage.internal_value)
see("written_external", voltage.external_value)
see("written_default", voltage.default)
see("property_read", raw_get("instances/m1/attributes/voltage/attr/internal_value")["value"])
see("short_property_read", raw_get("instances/m1/attributes/voltage/internal_value")["value"])
voltage.external_value = -2.0
see("override_read", voltage.external_value)
voltage.internal_value = -0.0
see("negative_zero", voltage.internal_value)
seen["negative_zero_sign"] = math.copysign(1.0, voltage.internal_value)
voltage.internal_value = 0.1
see("fraction", voltage.internal_value)
voltage.internal_value = 1e21
see("huge", voltage.internal_value)
see("inferred", attrs["setpoint"].internal_value)
attrs["count"].internal_value = 30
see("int_read", attrs["count"].internal_value)
see("int_default", attrs["count"].default)
see("list_inside", attrs["samples"].internal_value[0])

definition = sim["models"]["Meter"].definition["attributes"]
see("definition_declared", definition["voltage"]["default"])
see("definition_inferred", definition["setpoint"])
see("definition_int", definition["count"]["default"])
see("definition_property", raw_get("models/Meter/attr/definition")["value"]["attributes"]["voltage"]["default"])

snapshot = sim["snapshots"].save(label="floats")
seen["snapshot_path"] = snapshot["persisted_path"]
with open(snapshot["persisted_path"]) as f:
    stored = json.load(f)["definition"]["models"]["Meter"]["attributes"]
see("file_declared", stored["voltage"]["default"])
see("file_inferred", stored["setpoint"])
see("file_int", stored["count"]["default"])
del sim["instances"]["m1"]
del sim["models"]["Meter"]
sim["snapshots"].load(id=snapshot["id"])
see("loaded_value", attrs["voltage"].internal_value)
see("loaded_inferred", attrs["setpoint"].internal_value)
see("loaded_int", attrs["count"].internal_value)
see("loaded_definition", sim["models"]["Meter"].definition["attributes"]["voltage"]["default"])
print(json.dumps(seen))
`

const METER = {
  attributes: {
    voltage: { default: 25.0, type: 'float', unit: 'V' },
    setpoint: 30.0,
    count: { default: 30, type: 'int' },
  },
}

describe('float attributes in JSON', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(async () => t.close())

  it('a Python client writes 30.0 and reads back the float 30.0; an int stays an int; definitions and snapshots keep 25.0', async () => {
    const scriptPath = join(t.dir, 'floats.py')
    await writeFile(scriptPath, FLOATS_PY)
    const seen = await pythonSeen(scriptPath, { MIMIC_URL: t.url, MIMIC_PRODUCT_KEY: TEST_KEY })

    assert.deepEqual(seen.default_read, ['25.0', 'float'])
    assert.deepEqual(seen.written_read, ['30.0', 'float'])
    assert.deepEqual(seen.written_external, ['30.0', 'float'])
    assert.deepEqual(seen.written_default, ['25.0', 'float'])
    assert.deepEqual(seen.property_read, ['30.0', 'float'])
    assert.deepEqual(seen.short_property_read, ['30.0', 'float'])
    assert.deepEqual(seen.override_read, ['-2.0', 'float'])
    assert.deepEqual(seen.negative_zero, ['-0.0', 'float'])
    assert.equal(seen.negative_zero_sign, -1)
    assert.deepEqual(seen.fraction, ['0.1', 'float'])
    assert.deepEqual(seen.huge, ['1e+21', 'float'])
    assert.deepEqual(seen.inferred, ['30.0', 'float'])
    assert.deepEqual(seen.int_read, ['30', 'int'])
    assert.deepEqual(seen.int_default, ['30', 'int'])
    // Inside a list the float the definition gave stays a float (test/float-containers.test.ts).
    assert.deepEqual(seen.list_inside, ['1.0', 'float'])

    assert.deepEqual(seen.definition_declared, ['25.0', 'float'])
    assert.deepEqual(seen.definition_inferred, ['30.0', 'float'])
    assert.deepEqual(seen.definition_int, ['30', 'int'])
    assert.deepEqual(seen.definition_property, ['25.0', 'float'])

    assert.deepEqual(seen.file_declared, ['25.0', 'float'])
    assert.deepEqual(seen.file_inferred, ['30.0', 'float'])
    assert.deepEqual(seen.file_int, ['30', 'int'])
    const file = await readFile(seen.snapshot_path, 'utf8')
    assert.match(file, /"setpoint": 30\.0,/)
    assert.match(file, /"default": 25\.0,/)
    assert.match(file, /"default": 30,/)
    assert.deepEqual(seen.loaded_value, ['25.0', 'float'])
    assert.deepEqual(seen.loaded_inferred, ['30.0', 'float'])
    assert.deepEqual(seen.loaded_int, ['30', 'int'])
    assert.deepEqual(seen.loaded_definition, ['25.0', 'float'])
  })

  it('answers PUT and PATCH of a float with 30.0 and of an int with 30', async () => {
    assert.equal((await t.api('PUT', '/api/v3/system/models', { Answers: METER })).status, 200)
    assert.equal((await t.api('PUT', '/api/v3/system/instances', { a1: 'Answers' })).status, 200)
    const base = '/api/v3/system/instances/a1/attributes'

    const put = await rawRequest(t, 'PUT', `${base}/voltage/attr/internal_value`, { value: 30 })
    assert.equal(put.status, 200)
    assert.equal(put.text, '{"value":30.0}')
    const patched = await rawRequest(t, 'PATCH', `${base}/voltage`, { attr: { external_value: { value: 31 } } })
    assert.equal(patched.status, 200)
    assert.match(patched.text, /"attr":\{"internal_value":\{"value":30\.0\},"external_value":\{"value":31\.0\},"type":\{"value":"float"\}/)
    assert.match(patched.text, /,"internal_value":30\.0,"external_value":31\.0,"unit":"V","default":25\.0,/)
    const created = await rawRequest(t, 'PUT', `${base}/fresh/attr/internal_value`, { value: 7 })
    assert.equal(created.text, '{"value":7.0}')
    const shorthand = await rawRequest(t, 'PUT', base, { count: 30, setpoint: 12 })
    assert.equal(shorthand.status, 200)
    assert.match((await rawRequest(t, 'GET', `${base}/count`)).text, /,"internal_value":30,"external_value":30,"default":30,/)
    assert.match((await rawRequest(t, 'GET', `${base}/setpoint`)).text, /,"internal_value":12\.0,"external_value":12\.0,"default":30\.0,/)

    const model = await rawRequest(t, 'GET', '/api/v3/system/models/Answers')
    assert.match(
      model.text,
      /"definition":\{"attributes":\{"voltage":\{"default":25\.0,"type":"float","unit":"V"\},"setpoint":30\.0,"count":\{"default":30,"type":"int"\}\}\}/,
    )
    const replaced = await rawRequest(t, 'PUT', '/api/v3/system/models/Answers', { definition: METER })
    assert.equal(replaced.status, 200)
    assert.match(replaced.text, /"setpoint":30\.0/)
  })

  it('sends 30.0 for a float and 30 for an int in event stream frames', async () => {
    assert.equal((await t.api('PUT', '/api/v3/system/models', { Streamed: METER })).status, 200)
    assert.equal((await t.api('PUT', '/api/v3/system/instances', { s1: 'Streamed' })).status, 200)
    assert.equal((await t.api('PUT', '/api/v3/system/instances/s1/attributes', { voltage: 30, count: 30 })).status, 200)
    const frame = await frameMatching(t, /"s1":/)
    assert.match(frame, /"voltage":\{"internal_value":30\.0,"external_value":30\.0\}/)
    assert.match(frame, /"setpoint":\{"internal_value":30\.0,"external_value":30\.0\}/)
    assert.match(frame, /"count":\{"internal_value":30,"external_value":30\}/)
  })
})
