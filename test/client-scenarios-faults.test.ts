// Driving scenarios and Modbus faults from outside: the TypeScript client, the Python client and
// the `mimic scenario` / `mimic faults` commands, each against a real server, with a raw Modbus
// TCP client to see what a device on the wire does.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { connect as netConnect } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { parse } from 'yaml'
import { connect, type MimicApiError, type MimicClient, type ModelDefinition } from '../src/client/index.js'
import { startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'
import type { FrameEvent } from '../src/server/events.js'
import { SseParser } from '../ui/src/sse-parser.ts'

const BIN = new URL('../bin/mimic.js', import.meta.url).pathname
const PYTHON_DIR = new URL('../python', import.meta.url).pathname

/** A supply whose voltage the model holds at 230 V; `sag` holds 180 V for 3 s, `hold` until stopped. */
const SUPPLY: ModelDefinition = {
  attributes: { v: 230.0 },
  actions: [{ set: '$out(v)', value: 230.0 }],
  scenarios: {
    sag: { display_name: 'Voltage sag', description: 'down to 180 V', duration: 3, overrides: { '$out(v)': 180 } },
    hold: { overrides: { '$out(v)': 0 } },
  },
  communication: { modbus_slave: { host: '127.0.0.1', port: 0, unit_id: 1, mapping: { v: { address: [0, 1], group: 'h_r', type: 'float' } } } },
} as unknown as ModelDefinition

/** One Modbus read of holding registers 0..1: the function code answered (0x83 for an exception) and the exception code. */
async function modbusRead(port: number): Promise<{ fc: number; exception?: number; value?: number }> {
  const request = Buffer.from([0, 7, 0, 0, 0, 6, 1, 3, 0, 0, 0, 2])
  const socket = netConnect({ host: '127.0.0.1', port })
  try {
    const answer = await new Promise<Buffer>((resolve, reject) => {
      let received = Buffer.alloc(0)
      const timer = setTimeout(() => reject(new Error('no Modbus answer within 3 s')), 3000)
      socket.on('error', (err) => (clearTimeout(timer), reject(err)))
      socket.on('connect', () => socket.write(request))
      socket.on('data', (chunk) => {
        received = Buffer.concat([received, chunk])
        if (received.length < 9 || received.length < 6 + received.readUInt16BE(4)) return
        clearTimeout(timer)
        resolve(received)
      })
    })
    const fc = answer.readUInt8(7)
    return fc & 0x80 ? { fc, exception: answer.readUInt8(8) } : { fc, value: answer.readFloatBE(9) }
  } finally {
    socket.destroy()
  }
}

async function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  clearTimeout(timer)
  return { code, stdout, stderr }
}

describe('scenarios and faults from the clients and the command line', () => {
  let t: TestServer
  let sim: MimicClient
  before(async () => {
    t = await startTestServer()
    sim = connect({ address: t.url, productKey: TEST_KEY })
    await sim.models.set('supply', SUPPLY)
  })
  after(async () => t.close())

  const fresh = async (name: string): Promise<number> => {
    await sim.instances.set(name, 'supply')
    const inst = sim.instances.at(name)
    await inst.polling.disable()
    await inst.prepare()
    return Number(await inst.communication.node('modbus_slave').read('port'))
  }

  it('TypeScript: lists scenarios with their state, starts and stops them; sets, reads and clears faults; a bad fault is a 422 with its path', async () => {
    const port = await fresh('ts1')
    const inst = sim.instances.at('ts1')
    const v = inst.attributes.at<number>('v')
    const listed = await inst.scenarios.list()
    assert.deepEqual(listed, [
      { name: 'sag', display_name: 'Voltage sag', description: 'down to 180 V', state: 'idle', elapsed: 0, runs: 0, duration: 3, enabled: false },
      { name: 'hold', display_name: 'hold', state: 'idle', elapsed: 0, runs: 0, enabled: false },
    ])

    // A model without scenarios has none to list; an instance that does not exist is a 404.
    await sim.models.set('plain', { attributes: { x: 1.0 } })
    await sim.instances.set('bare', 'plain')
    assert.deepEqual(await sim.instances.at('bare').scenarios.list(), [])
    await assert.rejects(sim.instances.at('ghost').scenarios.list(), (err: MimicApiError) => err.status === 404 && /ghost/.test(err.message))
    await sim.instances.delete('bare')

    assert.equal(await inst.scenarios.start('sag'), true)
    assert.equal(await v.value(), 180)
    await inst.run()
    await inst.run()
    const active = await inst.scenarios.info('sag')
    assert.deepEqual([active.state, active.elapsed, active.runs], ['active', 1, 1], 'one step after the one that started it: 1 s of its 3')
    await inst.scenarios.stop('sag')
    assert.equal((await inst.scenarios.info('sag')).state, 'finished')
    assert.equal(await v.value(), 230, 'the override is put back on stop')
    await assert.rejects(inst.scenarios.start('nope'), (err: MimicApiError) => err.status === 404)

    const modbus = inst.adapter('modbus_slave')
    assert.deepEqual(await modbus.faults(), {})
    const kept = await modbus.setFaults({ exception: { code: 6, functions: [3] }, clear_after: { requests: 2 } })
    assert.equal((kept.exception as { code: number }).code, 6)
    assert.deepEqual(await modbusRead(port), { fc: 0x83, exception: 6 })
    assert.equal((await modbus.counters()).fault_exceptions, 1)
    assert.deepEqual(await modbusRead(port), { fc: 0x83, exception: 6 })
    assert.deepEqual(await modbus.faults(), {}, 'clear_after ended the faults after 2 requests')
    assert.deepEqual(await modbusRead(port), { fc: 3, value: 230 })

    await modbus.setFaults({ no_response: true })
    await assert.rejects(modbus.setFaults({ exception: { code: 300 } }), (err: MimicApiError) => {
      assert.equal(err.status, 422)
      assert.deepEqual(
        err.details.map((d) => d.path),
        ['value.exception.code'],
      )
      return true
    })
    assert.deepEqual(await modbus.faults(), { no_response: true }, 'a refused value leaves the faults in force')
    assert.deepEqual(await modbus.clearFaults(), {})
    assert.deepEqual(await modbusRead(port), { fc: 3, value: 230 })
  })

  it('Python: the same through inst["scenarios"] and the adapter node', async () => {
    const port = await fresh('py1')
    const script = String.raw`
import json, os
from mimic_sdk import client as mimic
sim = mimic.init(address=os.environ["MIMIC_URL"], product_key=os.environ["MIMIC_PRODUCT_KEY"])
inst = sim["instances"]["py1"]
seen = {"list": inst["scenarios"].list()}
sim["models"]["plain_py"] = {"attributes": {"x": 1.0}}
sim["instances"]["bare_py"] = "plain_py"
seen["bare"] = sim["instances"]["bare_py"]["scenarios"].list()
try:
    sim["instances"]["ghost"]["scenarios"].list()
except mimic.MimicApiError as err:
    seen["ghost"] = err.status
seen["start"] = inst["scenarios"].start("hold")
seen["v_active"] = inst["attributes"]["v"].value
inst.run()
seen["active"] = inst["scenarios"].info("hold")
inst["scenarios"].stop("hold")
seen["after_stop"] = [inst["scenarios"].info("hold")["state"], inst["attributes"]["v"].value]
modbus = inst["communication"]["modbus_slave"]
seen["kept"] = modbus.set_faults({"exception": {"code": 4}})
seen["faults"] = modbus.faults
try:
    modbus.set_faults({"corrupt": {"kind": "crc"}})
except mimic.MimicApiError as err:
    seen["bad"] = [err.status, [d["path"] for d in err.details]]
print(json.dumps(seen))
`
    const scriptPath = join(t.dir, 'drive_scenarios.py')
    await writeFile(scriptPath, script)
    const res = await run('python3', [scriptPath], { PYTHONPATH: PYTHON_DIR, MIMIC_URL: t.url, MIMIC_PRODUCT_KEY: TEST_KEY })
    assert.equal(res.code, 0, res.stderr)
    const seen = JSON.parse(res.stdout.trim().split('\n').at(-1)!)
    assert.deepEqual(
      seen.list.map((s: { name: string; state: string; runs: number }) => [s.name, s.state, s.runs]),
      [
        ['sag', 'idle', 0],
        ['hold', 'idle', 0],
      ],
    )
    assert.equal(seen.list[0].duration, 3)
    assert.deepEqual(seen.bare, [])
    assert.equal(seen.ghost, 404)
    assert.equal(seen.start, true)
    assert.equal(seen.v_active, 0)
    assert.equal(seen.active.state, 'active')
    assert.equal(seen.active.runs, 1)
    assert.deepEqual(seen.after_stop, ['finished', 230])
    assert.deepEqual(seen.kept, { exception: { code: 4 } })
    assert.deepEqual(seen.faults, { exception: { code: 4 } })
    assert.deepEqual(seen.bad, [422, ['value.corrupt.kind']])
    assert.deepEqual(await modbusRead(port), { fc: 0x83, exception: 4 }, 'the fault the Python client set is on the wire')
    await sim.instances.at('py1').adapter('modbus_slave').clearFaults()
  })

  it('mimic scenario and mimic faults: list, start, stop; set, show, clear; bad JSON and a 422 are reported with their paths', async () => {
    const port = await fresh('cli1')
    const env = { MIMIC_URL: t.url, MIMIC_PRODUCT_KEY: TEST_KEY }
    const mimic = (...args: string[]) => run(process.execPath, [BIN, ...args], env)

    const list = await mimic('scenario', 'list', '--instance', 'cli1')
    assert.equal(list.code, 0, list.stderr)
    assert.match(list.stdout, /^sag\s+idle\s+0s of 3s\s+runs 0\s+Voltage sag$/m)
    assert.match(list.stdout, /^hold\s+idle\s+0s\s+runs 0$/m)

    const start = await mimic('scenario', 'start', '--instance', 'cli1', 'sag', '--json')
    assert.equal(start.code, 0, start.stderr)
    assert.equal(JSON.parse(start.stdout)[0].state, 'active')
    assert.equal(await sim.instances.at('cli1').attributes.at('v').value(), 180)
    const stop = await mimic('scenario', 'stop', '--instance', 'cli1', 'sag')
    assert.match(stop.stdout, /^sag\s+finished\s+0s of 3s\s+runs 1/m)
    assert.equal(await sim.instances.at('cli1').attributes.at('v').value(), 230)
    const unknown = await mimic('scenario', 'start', '--instance', 'cli1', 'nope')
    assert.equal(unknown.code, 1)
    assert.match(unknown.stderr, /HTTP 404/)

    const set = await mimic('faults', 'set', '--instance', 'cli1', '{"exception": {"code": 6}}')
    assert.equal(set.code, 0, set.stderr)
    assert.deepEqual(JSON.parse(set.stdout).faults, { exception: { code: 6 } })
    assert.deepEqual(await modbusRead(port), { fc: 0x83, exception: 6 })
    const show = await mimic('faults', 'show', '--instance', 'cli1', '--adapter', 'modbus_slave')
    assert.equal(JSON.parse(show.stdout).counters.fault_exceptions, 1)

    const bad = await mimic('faults', 'set', '--instance', 'cli1', '{"exception": {"code": 0}, "no_response": {"every": -1}}')
    assert.equal(bad.code, 1)
    assert.match(bad.stderr, /HTTP 422/)
    assert.match(bad.stderr, /^ {2}value\.exception\.code: /m)
    assert.match(bad.stderr, /^ {2}value\.no_response\.every: /m)
    const notJson = await mimic('faults', 'set', '--instance', 'cli1', '{exception')
    assert.equal(notJson.code, 1)
    assert.match(notJson.stderr, /not JSON/)

    const clear = await mimic('faults', 'clear', '--instance', 'cli1')
    assert.equal(clear.code, 0, clear.stderr)
    assert.deepEqual(JSON.parse(clear.stdout).faults, {})
    assert.deepEqual(await modbusRead(port), { fc: 3, value: 230 })
  })

  it('the event stream reports scenario starts, elapsed time and stops, and fault changes; an instance without scenarios has no scenarios entry', async () => {
    await fresh('ev1')
    await sim.models.set('plain', { attributes: { x: 1.0 } } as ModelDefinition)
    await sim.instances.set('plain1', 'plain')
    const inst = sim.instances.at('ev1')
    const abort = new AbortController()
    const res = await fetch(`${t.url}/api/v3/events?hz=20`, { headers: { authorization: `Bearer ${TEST_KEY}` }, signal: abort.signal })
    assert.equal(res.status, 200)
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    const parser = new SseParser()
    const frames: FrameEvent[] = []
    /** Reads frames until one satisfies `test`; returns it. */
    const frameWhere = async (what: string, test: (f: FrameEvent) => boolean): Promise<FrameEvent> => {
      const deadline = Date.now() + 10_000
      for (;;) {
        const hit = frames.find(test)
        if (hit) return (frames.splice(0, frames.indexOf(hit) + 1), hit)
        assert.ok(Date.now() < deadline, `no frame with ${what}`)
        const { value, done } = await reader.read()
        assert.ok(!done, 'the stream ended')
        for (const e of parser.push(value)) if (e.event === 'frame') frames.push(JSON.parse(e.data) as FrameEvent)
      }
    }
    const seenPlain: unknown[] = []
    const scenarios = (f: FrameEvent) => {
      if (f.instances?.plain1) seenPlain.push(f.instances.plain1)
      return f.instances?.ev1?.scenarios
    }
    try {
      const first = await frameWhere('the first picture', (f) => scenarios(f) !== undefined)
      assert.deepEqual(first.instances!.ev1!.scenarios, { sag: { state: 'idle', elapsed: 0, runs: 0 }, hold: { state: 'idle', elapsed: 0, runs: 0 } })

      await inst.scenarios.start('sag')
      const started = await frameWhere('sag active', (f) => scenarios(f)?.sag?.state === 'active')
      assert.deepEqual(started.instances!.ev1!.scenarios, { sag: { state: 'active', runs: 1 } }, 'only what changed, only the scenario that changed')
      await inst.run()
      await inst.run()
      await frameWhere('sag elapsed 1', (f) => scenarios(f)?.sag?.elapsed === 1)
      await inst.scenarios.stop('sag')
      await frameWhere('sag finished', (f) => scenarios(f)?.sag?.state === 'finished')

      await inst.adapter('modbus_slave').setFaults({ no_response: true })
      await frameWhere('the faults in force', (f) => f.instances?.ev1?.adapters?.modbus_slave?.active_faults === 'no_response')
      await inst.adapter('modbus_slave').clearFaults()
      await frameWhere('the faults cleared', (f) => f.instances?.ev1?.adapters?.modbus_slave?.active_faults === '')
      assert.ok(seenPlain.length > 0, 'the instance without scenarios was in the frames')
      for (const delta of seenPlain) assert.ok(!Object.hasOwn(delta as object, 'scenarios'), JSON.stringify(delta))
    } finally {
      abort.abort()
    }
  })

  it('the device of docs/unhappy-paths.md: its scenarios list as the guide shows, and its pinned-timer example holds', async () => {
    const guide = await readFile(new URL('../docs/unhappy-paths.md', import.meta.url), 'utf8')
    const system = parse(/```yaml\n(models:[\s\S]*?)```/.exec(guide)![1]!) as { models: { Tank: ModelDefinition & { communication: any } } }
    system.models.Tank.communication.modbus_slave.port = 0
    await sim.models.set('Tank', system.models.Tank)
    await sim.instances.set('tank', 'Tank')
    const tank = sim.instances.at('tank')
    await tank.polling.disable()
    await tank.prepare()
    assert.deepEqual(
      (await tank.scenarios.list()).map((s) => [s.name, s.state, s.duration ?? null, s.run_limit ?? null]),
      [
        ['stuck_sensor', 'idle', null, null],
        ['overflow', 'idle', 20, null],
        ['busy_gateway', 'idle', 10, null],
        ['glitch', 'idle', 2, 5],
      ],
    )
    await tank.scenarios.start('overflow')
    for (let i = 0; i < 16; i++) await tank.run()
    assert.equal(await tank.attributes.at('alarm').value(), true)
    assert.equal((await tank.scenarios.info('overflow')).state, 'active')
    await tank.scenarios.stop('overflow')
    await tank.scenarios.start('busy_gateway')
    const modbus = tank.adapter('modbus_slave')
    assert.deepEqual(await modbus.faults(), { exception: { code: 6, functions: [3] } })
    await tank.run()
    assert.equal(await tank.attributes.at('gateway_trips').value(), 1, 'its condition counts the start')
    await tank.scenarios.stop('busy_gateway')
    assert.deepEqual(await modbus.faults(), {}, 'the faults before the scenario are back')
    assert.equal(await modbus.read('response_delay'), 0)
  })
})
