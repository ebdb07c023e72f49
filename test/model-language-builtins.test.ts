// Pure builtins in a model's expressions on a running server: a charging-station central system
// model from the reference product's public library (its `function` actions verbatim, which use
// isinstance() and next() over a generator expression) loads and steps, and gives after each step
// what python3 gives for the same expressions over the same values; a function body using iter,
// next, isinstance, hex, repr and chr does too. Builtins that reach outside stay a 422 naming them.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

// From HammerHeads-Engineers/spx-examples, library/domains/energy/emobility/csms__ocpp.yaml.
const ENERGY_CALL = `(
      float($in(last_meter_values)[0]["sampledValue"][0]["value"])
      if (
        isinstance($in(last_meter_values), list)
        and len($in(last_meter_values)) > 0
        and isinstance($in(last_meter_values)[0], dict)
        and "sampledValue" in $in(last_meter_values)[0]
        and len($in(last_meter_values)[0]["sampledValue"]) > 0
        and isinstance($in(last_meter_values)[0]["sampledValue"][0], dict)
        and "value" in $in(last_meter_values)[0]["sampledValue"][0]
      )
      else $in(last_energy_wh)
    )`
const POWER_CALL = `(
      float(
        next(
          (
            entry.get("value")
            for entry in $in(last_meter_values)[0].get("sampledValue", [])
            if entry.get("measurand") == "Power.Active.Import"
          ),
          $in(last_power_w),
        )
      )
      if (
        isinstance($in(last_meter_values), list)
        and len($in(last_meter_values)) > 0
        and isinstance($in(last_meter_values)[0], dict)
      )
      else $in(last_power_w)
    )`
const SUMMARY_BODY = `it = iter($in(readings))
first = next(it, None)
rest = [hex(x) if isinstance(x, int) and not isinstance(x, bool) else repr(x) for x in it]
return f"{first!r}|{','.join(rest)}|{chr(65 + len(rest))}|{isinstance(first, int | float)}"`

const MODEL = {
  attributes: {
    last_meter_values: [],
    last_energy_wh: 0.0,
    last_power_w: 0.0,
    readings: [],
    summary: '',
  },
  actions: [
    { function: '$in(last_energy_wh)', name: 'derive_energy_from_meter_values', call: ENERGY_CALL },
    { function: '$in(last_power_w)', name: 'derive_power_from_meter_values', call: POWER_CALL },
    { function: '$out(summary)', call: SUMMARY_BODY },
  ],
}

/** Inputs of successive steps: meter values as an OCPP MeterValues request carries them, and readings. */
const STEPS: Array<{ last_meter_values: unknown; readings: unknown[] }> = [
  {
    last_meter_values: [
      {
        timestamp: '2025-01-01T00:00:00Z',
        sampledValue: [
          { value: '1234.5', measurand: 'Energy.Active.Import.Register', unit: 'Wh' },
          { value: '7200', measurand: 'Power.Active.Import', unit: 'W' },
        ],
      },
    ],
    readings: [3, 255, 'x'],
  },
  { last_meter_values: [], readings: [] },
  { last_meter_values: [{ sampledValue: [{ value: '10' }] }], readings: [2.5, true] },
  { last_meter_values: ['not a dict'], readings: [[1], -16] },
  // The generator stops at the first match: the entry after it, which has no .get, is never asked.
  { last_meter_values: [{ sampledValue: [{ measurand: 'Power.Active.Import', value: '5.5' }, 7] }], readings: [0] },
  {
    last_meter_values: [
      {
        sampledValue: [
          { measurand: 'Voltage', value: '230' },
          { measurand: 'Power.Active.Import', value: 11 },
        ],
      },
    ],
    readings: [null, 4096],
  },
]

/** What python3 computes for the same actions over the same steps, one state after each step. */
function pythonSteps(): Array<Record<string, unknown>> {
  const program = String.raw`
import json, re, sys, textwrap
spec = json.loads(sys.stdin.read())
ref = lambda text: re.sub(r"\$in\((\w+)\)", r"S['\1']", text)
S = {"last_energy_wh": 0.0, "last_power_w": 0.0, "summary": ""}
scope = {"S": S}
exec("def summary():\n" + textwrap.indent(ref(spec["summary"]), "    "), scope)
out = []
for step in spec["steps"]:
    S.update(step)
    S["last_energy_wh"] = float(eval(ref(spec["energy"]), scope))
    S["last_power_w"] = float(eval(ref(spec["power"]), scope))
    S["summary"] = str(scope["summary"]())
    out.append({k: S[k] for k in ("last_energy_wh", "last_power_w", "summary")})
print(json.dumps(out))
`
  const input = JSON.stringify({ energy: ENERGY_CALL, power: POWER_CALL, summary: SUMMARY_BODY, steps: STEPS })
  return JSON.parse(execFileSync('python3', ['-c', program], { input, encoding: 'utf8' })) as Array<Record<string, unknown>>
}

describe('pure builtins in model expressions on a running server', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(async () => t.close())

  it('a central-system model of the reference library using isinstance and next loads, steps and gives what python3 gives', async () => {
    const defined = await t.api('PUT', `${SYS}/models`, { csms: MODEL })
    assert.equal(defined.status, 200, JSON.stringify(defined.body))
    const created = await t.api('PUT', `${SYS}/instances`, { c1: 'csms' })
    assert.equal(created.status, 200, JSON.stringify(created.body))
    const expected = pythonSteps()
    const attr = (name: string): string => `${SYS}/instances/c1/attributes/${name}/attr/internal_value`
    for (const [i, step] of STEPS.entries()) {
      for (const [name, value] of Object.entries(step)) {
        const put = await t.api('PUT', attr(name), { value })
        assert.equal(put.status, 200, JSON.stringify(put.body))
      }
      const run = await t.call(`${SYS}/instances/c1`, 'run')
      assert.equal(run.status, 200, `step ${i}: ${JSON.stringify(run.body)}`)
      const got: Record<string, unknown> = {}
      for (const name of ['last_energy_wh', 'last_power_w', 'summary']) got[name] = (await t.api('GET', attr(name))).body.value
      assert.deepEqual(got, expected[i], `step ${i}`)
    }
    assert.deepEqual(expected.at(-1), { last_energy_wh: 230.0, last_power_w: 11.0, summary: 'None|0x1000|B|False' }, 'the python3 side computed the model')
  })

  it('a loop that would run for years is stopped with a RuntimeError naming the limit; the server keeps answering', async () => {
    const model = (call: string): Record<string, unknown> => ({
      attributes: { out: { default: null, type: 'any' } },
      actions: [{ function: '$out(out)', call }],
    })
    const put = await t.api('PUT', `${SYS}/models`, {
      generator: model('next(x for x in range(10**15) if x < 0)'),
      statement: model('total = 0\nfor x in iter(int, 1):\n    total += x\nreturn total'),
      finite: model('sum(x for x in range(300000) if x % 3 == 0) + len([y for y in range(1000) for z in range(100)])'),
    })
    assert.equal(put.status, 200, JSON.stringify(put.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { g1: 'generator', s1: 'statement', f1: 'finite' })).status, 200)
    for (const instance of ['g1', 's1']) {
      const run = await t.call(`${SYS}/instances/${instance}`, 'run')
      assert.equal(run.status, 500, JSON.stringify(run.body))
      assert.match(run.body.error.message, /RuntimeError: loops ran for more than 2 s \([\d,]+ items\): stopped so that the server keeps answering/)
      assert.equal((await t.api('GET', `${SYS}/instances/f1`)).status, 200)
    }
    // Loops of a sensible length are not limited: python3's value.
    assert.equal((await t.call(`${SYS}/instances/f1`, 'run')).status, 200)
    assert.equal((await t.api('GET', `${SYS}/instances/f1/attributes/out/value`)).body.value, 14999950000)
  })

  it('builtins that reach outside or reflect stay refused: a 422 naming each, and nothing is created', async () => {
    const before = (await t.api('GET', `${SYS}/models`)).body
    const res = await t.api('PUT', `${SYS}/models`, {
      reaching: {
        attributes: { a: 0.0, s: '' },
        actions: [
          { function: '$out(s)', call: 'type($in(a))' },
          { function: '$out(s)', call: "getattr($in(a), 'real')" },
          { function: '$out(s)', call: "open('/etc/passwd').read()" },
          { function: '$out(s)', call: 'next(iter([$in(a)]))' },
        ],
      },
    })
    assert.equal(res.status, 422, JSON.stringify(res.body))
    const details = res.body.error.details as Array<{ path: string; message: string }>
    for (const [i, name] of ['type', 'getattr', 'open'].entries()) {
      const detail = details.find((d) => d.path.endsWith(`actions[${i}].call`))
      assert.ok(detail, `actions[${i}] in ${JSON.stringify(details)}`)
      assert.match(detail.message, new RegExp(`builtin '${name}' is not allowed in expressions`))
    }
    assert.equal(details.length, 3, 'next and iter are allowed')
    assert.deepEqual((await t.api('GET', `${SYS}/models`)).body, before)
  })
})
