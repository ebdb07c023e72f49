import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { eventually, startTestServer, type TestServer } from './helpers/server.js'

// run(steps=N) hands several steps to a worker in one message when no step needs the server in
// between. Whatever the batch size, a run must end in exactly the state that N single steps
// reach: same values, same timers, same step count, same fault with the same counts.

const SYS = '/api/v3/system'

const FILES: Record<string, string> = {
  'watcher.py': `
from mimic_sdk import MimicComponent

class Watcher(MimicComponent):
    def __init__(self):
        self.seen = 0.0

    def tick(self):
        self.seen = self.time
`,
  'slow.py': `
import time

class Slow:
    def __init__(self):
        self.ticks = 0

    def tick(self):
        time.sleep(0.02)
        self.ticks += 1

    def poke(self):
        return self.ticks
`,
  'plant.py': `
class Tank:
    def __init__(self, level=0.0, inflow=1.0):
        self.level = level
        self.inflow = inflow
        self.ticks = 0

    def tick(self):
        self.ticks += 1
        self.level = self.level * 0.9 + self.inflow

class Flaky:
    def __init__(self):
        self.ticks = 0

    def tick(self):
        self.ticks += 1
        if self.ticks % 3 == 0:
            raise RuntimeError("every third tick fails")
`,
}

const MODELS = {
  Tank: {
    attributes: { level: 0.0, inflow: 1.0, ticks: 0 },
    import: {
      'plant.py': {
        class: 'Tank',
        attributes: { level: { property: 'level' }, inflow: { property: 'inflow' }, ticks: { property: 'ticks' } },
        methods: { run: 'tick' },
      },
    },
  },
  Flaky: {
    attributes: { ticks: 0 },
    import: { 'plant.py': { class: 'Flaky', attributes: { ticks: { property: 'ticks' } }, methods: { run: 'tick' } } },
  },
  Gauge: { attributes: { reading: 0.0 } },
}

interface Outcome {
  status: number
  fault: unknown
  values: Record<string, unknown>
  times: Record<string, unknown>
  steps: unknown
}

async function build(t: TestServer, withConnection: boolean): Promise<void> {
  assert.equal((await t.api('PUT', `${SYS}/models`, MODELS)).status, 200)
  const instances: Record<string, string> = { flaky: 'Flaky', gauge: 'Gauge' }
  for (let i = 0; i < 6; i++) instances[`tank${i}`] = 'Tank'
  assert.equal((await t.api('PUT', `${SYS}/instances`, instances)).status, 200)
  if (withConnection) {
    // tank0's level flows into tank1's inflow after every step: a step depends on the server
    assert.equal((await t.api('PUT', `${SYS}/connections`, { feed: { from: 'tank0.attributes.level', to: 'tank1.attributes.inflow' } })).status, 200)
  }
  assert.equal((await t.call(SYS, 'prepare')).status, 200)
}

async function runAndRead(t: TestServer, steps: number): Promise<Outcome> {
  const res = await t.call(SYS, 'run', { steps, dt: 0.25 })
  const values: Record<string, unknown> = {}
  const times: Record<string, unknown> = {}
  const instances: Array<[string, string[]]> = [
    ['flaky', ['ticks']],
    ['gauge', ['reading']],
  ]
  for (let i = 0; i < 6; i++) instances.push([`tank${i}`, ['level', 'inflow', 'ticks']])
  for (const [name, attributes] of instances) {
    for (const attr of attributes) values[`${name}.${attr}`] = (await t.api('GET', `${SYS}/instances/${name}/attributes/${attr}`)).body.internal_value
    times[name] = (await t.api('GET', `${SYS}/instances/${name}/timer/attr/time`)).body.value
  }
  // the traceback names each server's own temp directory: compare the rest
  const fault = res.body.error?.details?.map(({ traceback: _, ...rest }: Record<string, unknown>) => rest)
  return { status: res.status, fault, values, times, steps: (await t.api('GET', SYS)).body.steps }
}

describe('run(steps=N) in batches ends where N single steps end', () => {
  const servers: Record<string, TestServer> = {}
  before(async () => {
    const configs = { single: 1, batched: 10, connected: 10, connectedSingle: 1 }
    await Promise.all(
      Object.entries(configs).map(async ([name, stepBatch]) => {
        servers[name] = await startTestServer({ files: FILES, config: { stepBatch, pythonWorkers: 2 } })
        await build(servers[name], name.startsWith('connected'))
      }),
    )
  })
  after(async () => Promise.all(Object.values(servers).map((t) => t.close())))

  it('same values, timers, step count and fault with batches of 10 as with single steps', async () => {
    const requests = (t: TestServer): number =>
      t.server.system.services
        .python()
        .workers()
        .reduce((sum, w) => sum + w.requests, 0)
    const before = requests(servers.batched!)
    const batched = await runAndRead(servers.batched!, 25)
    const messages = requests(servers.batched!) - before
    assert.ok(messages <= 2 * 8, `${messages} messages for 25 steps on 2 workers: the first step alone, then batches of up to 10`)
    const single = await runAndRead(servers.single!, 25)
    assert.equal(single.status, 500, 'the flaky instance fails every third step')
    assert.deepEqual(batched, single)
    assert.equal(single.values['tank3.ticks'], 25, 'every step called run')
    assert.equal(single.values['flaky.ticks'], 25)
    assert.equal(single.times.tank0, 6.25)
    assert.equal(single.steps, 25)
    const [detail] = single.fault as Array<{ path: string; message: string }>
    assert.equal(detail!.path, 'instances.flaky')
    assert.match(detail!.message, /every third tick fails.*failed in 8 of 25 steps/)
    // and again, continuing from there
    assert.deepEqual(await runAndRead(servers.batched!, 7), await runAndRead(servers.single!, 7))
  })

  it('a connection makes every step go through the server, batch size or not', async () => {
    const single = await runAndRead(servers.connectedSingle!, 12)
    const batched = await runAndRead(servers.connected!, 12)
    assert.deepEqual(batched, single)
    // the connection wrote tank0's level into tank1's inflow after the last step, as after every one
    assert.equal(single.values['tank1.inflow'], single.values['tank0.level'])
    assert.notEqual(single.values['tank1.level'], single.values['tank2.level'], 'the connection changed what tank1 saw')
  })

  it("a MimicComponent, which reads the server's time in every step, makes every step go through the server", async () => {
    const t = servers.batched!
    const requests = (): number =>
      t.server.system.services
        .python()
        .workers()
        .reduce((sum, w) => sum + w.requests, 0)
    const model = {
      attributes: { seen: 0.0 },
      import: { 'watcher.py': { class: 'Watcher', attributes: { seen: { property: 'seen' } }, methods: { run: 'tick' } } },
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Watcher: model })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { watcher: 'Watcher' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/watcher`, 'prepare')).status, 200)
    const before = requests()
    await t.call(SYS, 'run', { steps: 4, dt: 0.5 })
    assert.equal(requests() - before, 2 * 4, 'one message per worker and step')
    assert.equal((await t.api('GET', `${SYS}/instances/watcher/attributes/seen`)).body.internal_value, 1.5, 'the time of the fourth step')
  })

  it('slow user code gets short batches: a call during a long run waits little', async () => {
    const t = await startTestServer({ files: FILES, config: { pythonWorkers: 1 } })
    try {
      const model = {
        attributes: { ticks: 0 },
        import: { 'slow.py': { class: 'Slow', attributes: { ticks: { property: 'ticks' } }, methods: { run: 'tick', poke: 'poke' } } },
      }
      assert.equal((await t.api('PUT', `${SYS}/models`, { Slow: model })).status, 200)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { slow: 'Slow' })).status, 200)
      assert.equal((await t.call(SYS, 'prepare')).status, 200)
      // 30 steps of 20 ms: one batch of the remaining steps would hold the worker to the end of
      // the run, and the call would only be answered after the last tick
      const run = t.call(SYS, 'run', { steps: 30 })
      // Under way: a step taken.
      await eventually(() => (t.server.system.properties().steps as number) >= 1, 5000, 5)
      const poke = await t.call(`${SYS}/instances/slow`, 'poke')
      assert.equal((await run).status, 200)
      assert.equal(poke.status, 200)
      assert.ok(poke.body.result > 0 && poke.body.result < 30, `poke answered in the middle of the run (after tick ${poke.body.result})`)
      assert.equal((await t.api('GET', `${SYS}/instances/slow/attributes/ticks`)).body.internal_value, 30)
    } finally {
      await t.close()
    }
  })
})
