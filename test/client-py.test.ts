import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { createServer as createNetServer } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { EXAMPLE_EXTENSIONS, startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

const PYTHON_DIR = new URL('../python', import.meta.url).pathname
const PT100_PY = readFileSync(join(EXAMPLE_EXTENSIONS, 'pt100.py'), 'utf8')

/**
 * The seed's flow with the Python client, exactly as a user script would write it. It asserts as
 * it goes and prints one JSON line with what it saw, which the test checks again.
 */
const SEED_FLOW_PY = String.raw`
import json, os, socket, struct
from mimic_sdk import client as mimic

sim = mimic.init(address=os.environ["MIMIC_URL"], product_key=os.environ["MIMIC_PRODUCT_KEY"])
seen = {"health": sim.health()["api_version"]}

definition = {
    "attributes": {"temperature": {"default": 20.0, "type": "float"}, "setpoint": 60.0, "heater_on": True, "alarm": False},
    "import": {"pt100.py": {
        "class": "Pt100Sensor",
        "init": {"kwargs": {"ambient": 20.0, "tau": 30.0}},
        "attributes": {"temperature": {"property": "temperature"}},
        "methods": {"run": "tick", "calibrate": "calibrate"},
    }},
    "communication": [{"modbus_slave": {"host": "127.0.0.1", "port": 0, "unit_id": 1,
        "mapping": {"temperature": {"address": [0, 1], "group": "h_r", "type": "float"}}}}],
}
sim["models"]["pt100"] = definition
sim["models"]["Display"] = {"attributes": {"value": 0.0}}
sim["instances"]["s1"] = "pt100"
seen["instances"] = list(sim["instances"].keys())
seen["definition_roundtrip"] = sim["models"]["pt100"].definition == definition

inst = sim["instances"]["s1"]
inst["polling"].disable()
seen["polling_enabled"] = inst["polling"].enabled
inst.prepare()
seen["state"] = inst.state
for _ in range(5):
    inst.run()
temperature = inst["attributes"]["temperature"]
seen["after_5_steps"] = temperature.internal_value
temperature.internal_value = 50.0
seen["written"] = temperature.internal_value

def modbus_float(port, address):
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.sendall(struct.pack(">HHHBBHH", 7, 0, 6, 1, 3, address, 2))
        answer = b""
        while len(answer) < 13:
            chunk = s.recv(64)
            if not chunk:
                raise RuntimeError("Modbus connection closed")
            answer += chunk
    assert answer[7] == 3, answer
    return struct.unpack(">f", answer[9:13])[0]

port = inst["communication"]["modbus_slave"].port
seen["modbus"] = modbus_float(port, 0)
seen["calibrate"] = inst.calibrate(offset=0.5)

snapshot = sim["snapshots"].save(label="x")
seen["saved"] = snapshot
del sim["instances"]["s1"]
del sim["models"]["pt100"]
sim["instances"]["panel"] = "Display"
seen["changed"] = list(sim["instances"].keys())
seen["loaded"] = sim["snapshots"].load(id=snapshot["id"])
seen["after_load"] = list(sim["instances"].keys())
seen["state_after_load"] = inst.state
inst.prepare()
seen["value_after_load"] = temperature.internal_value
listing = sim["snapshots"].list()
seen["listed"] = [s["id"] for s in listing["in_memory"]]
seen["files"] = [f["path"] for f in listing["files"]]

errors = {}
try:
    sim["models"]["bad"] = {"attributes": 5, "import": {"x.py": {}}}
except mimic.MimicApiError as err:
    errors["invalid"] = {"status": err.status, "message": str(err), "fault_message": err.fault["error"]["message"],
                         "correlation_id": err.correlation_id, "fault_correlation_id": err.fault["correlation_id"],
                         "paths": sorted(d["path"] for d in err.details), "connection": isinstance(err, mimic.MimicConnectionError)}
try:
    sim["instances"]["x"] = "no_such_model"
except mimic.MimicApiError as err:
    errors["unknown_model"] = {"status": err.status, "message": str(err)}
try:
    inst.calibrate(offset="abc")
except mimic.MimicApiError as err:
    errors["user_code"] = {"status": err.status, "message": str(err)}
try:
    sim["snapshots"].load(id="no-such-snapshot")
except mimic.MimicApiError as err:
    errors["missing_snapshot"] = {"status": err.status, "message": str(err)}
try:
    mimic.init(address=os.environ["MIMIC_URL"], product_key="wrong")["instances"].keys()
except mimic.MimicApiError as err:
    errors["wrong_key"] = {"status": err.status}
seen["errors"] = errors
seen["connections_opened"] = sim._transport.connections_opened
print(json.dumps(seen))
`

const DOWN_PY = String.raw`
import json, os, time
from mimic_sdk import client as mimic

started = time.monotonic()
try:
    mimic.init(address=os.environ["MIMIC_URL"], product_key="k", timeout=5)["instances"].keys()
    print(json.dumps({"raised": None}))
except mimic.MimicApiError as err:
    print(json.dumps({"raised": type(err).__name__, "status": err.status, "message": str(err),
                      "is_api_error": isinstance(err, mimic.MimicApiError), "seconds": time.monotonic() - started}))
`

interface PythonRun {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs a Python script with the SDK on PYTHONPATH, killed if it outlives `timeoutMs`. */
async function runPython(opts: { scriptPath: string; env: Record<string, string>; timeoutMs?: number }): Promise<PythonRun> {
  const child = spawn('python3', [opts.scriptPath], {
    env: { ...process.env, PYTHONPATH: PYTHON_DIR, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 15_000)
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  clearTimeout(timer)
  return { code, stdout, stderr }
}

function lastJsonLine(run: PythonRun): Record<string, any> {
  assert.equal(run.code, 0, `python failed:\n${run.stderr}`)
  const line = run.stdout.trim().split('\n').at(-1) ?? ''
  return JSON.parse(line)
}

describe('Python client against a live server', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ files: { 'pt100.py': PT100_PY } })
  })
  after(async () => t.close())

  it('runs the seed flow: define, prepare, run, read/write, Modbus, snapshot, change, load, list; errors as MimicApiError', async () => {
    const scriptPath = join(t.dir, 'seed_flow_test.py')
    await writeFile(scriptPath, SEED_FLOW_PY)
    const seen = lastJsonLine(await runPython({ scriptPath, env: { MIMIC_URL: t.url, MIMIC_PRODUCT_KEY: TEST_KEY } }))

    assert.equal(seen.health, 'v3')
    assert.deepEqual(seen.instances, ['s1'])
    assert.equal(seen.definition_roundtrip, true)
    assert.equal(seen.polling_enabled, false)
    assert.equal(seen.state, 'PREPARED')
    assert.ok(Math.abs(seen.after_5_steps - (60 - 40 * (29 / 30) ** 5)) < 1e-9, String(seen.after_5_steps))
    assert.equal(seen.written, 50)
    assert.equal(seen.modbus, 50)
    assert.deepEqual(seen.calibrate, { offset: 0.5, temperature: 50.5 })

    assert.equal(seen.saved.label, 'x')
    assert.equal(seen.saved.in_memory, true)
    assert.ok(String(seen.saved.persisted_path).startsWith(t.snapshots))
    assert.deepEqual(seen.changed, ['panel'])
    assert.deepEqual(seen.loaded, { id: seen.saved.id, loaded: true, models: 2, instances: 1, connections: 0 })
    assert.deepEqual(seen.after_load, ['s1'])
    assert.equal(seen.state_after_load, 'INITIALIZED')
    assert.equal(seen.value_after_load, 20)
    assert.ok(seen.listed.includes(seen.saved.id))
    assert.ok(seen.files.includes(seen.saved.persisted_path))

    const errors = seen.errors
    assert.equal(errors.invalid.status, 422)
    assert.equal(errors.invalid.message, errors.invalid.fault_message)
    assert.deepEqual(errors.invalid.paths, ['attributes', 'import.x.py.class'])
    assert.match(errors.invalid.correlation_id, /^[0-9a-f-]{36}$/)
    assert.equal(errors.invalid.correlation_id, errors.invalid.fault_correlation_id)
    assert.equal(errors.invalid.connection, false)
    assert.equal(errors.unknown_model.status, 404)
    assert.match(errors.unknown_model.message, /no_such_model/)
    assert.equal(errors.user_code.status, 500)
    assert.match(errors.user_code.message, /ValueError: could not convert string to float/)
    assert.equal(errors.missing_snapshot.status, 404)
    assert.match(errors.missing_snapshot.message, /File not found/)
    assert.equal(errors.wrong_key.status, 401)

    // Everything above went over the one persistent connection of `sim`.
    assert.equal(seen.connections_opened, 1)
  })

  it('a server that is down gives a MimicConnectionError quickly', async () => {
    const probe = createNetServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const port = (probe.address() as { port: number }).port
    await new Promise((resolve) => probe.close(resolve))
    const scriptPath = join(t.dir, 'down_test.py')
    await writeFile(scriptPath, DOWN_PY)
    const seen = lastJsonLine(await runPython({ scriptPath, env: { MIMIC_URL: `http://127.0.0.1:${port}` } }))
    assert.equal(seen.raised, 'MimicConnectionError')
    assert.equal(seen.is_api_error, true)
    assert.equal(seen.status, 0)
    assert.match(seen.message, new RegExp(`Cannot reach the Mimic server at http://127\\.0\\.0\\.1:${port}: .*[Rr]efused`))
    assert.ok(seen.seconds < 2, `took ${seen.seconds} s`)
  })
})
