/**
 * Python workers that die, hang, flood their output or raise on every call: the server answers
 * every other request, only the affected instances go to ERROR (or report the error), prepare()
 * brings them back, and no stray or zombie worker process is left.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from '../helpers/server.js'
import { SYS, waitFor, workerProcesses } from './helpers.js'

const CODE = `
import os, time

class Steady:
    def __init__(self):
        self.value = 0.0
    def tick(self):
        self.value += 1.0
        time.sleep(0.002)  # a step takes a little time, so a kill can land in the middle of a run

class Hanger(Steady):
    def hang(self):
        time.sleep(60)

class Flooder(Steady):
    def flood(self, mb=8):
        line = "x" * 99
        for _ in range(mb * 10486):
            print(line)
        return mb
    def flood_raw(self, mb=4):
        chunk = (b"y" * 1023 + b"\\n") * 1024
        for _ in range(mb):
            os.write(1, chunk)
        return mb

class Slow(Steady):
    def tick(self):
        self.value += 1.0
        time.sleep(0.05)  # holds the step while the other worker has long answered

class Raiser:
    def __init__(self):
        self.value = 0.0
    def tick(self):
        raise RuntimeError("tick always fails")
    def poke(self):
        raise ValueError("poke always fails")
`

function model(cls: string, methods: Record<string, string>): Record<string, unknown> {
  return {
    attributes: { value: 0.0 },
    import: { 'faulty.py': { class: cls, attributes: { value: { property: 'value' } }, methods: { run: 'tick', ...methods } } },
  }
}

/**
 * Requests that must keep being answered with 200 while something else goes wrong: in turn /health,
 * a write, a `run` of a plain instance and a `run` of an instance on a healthy worker, one at a time.
 */
class Bystanders {
  readonly statuses = new Map<number, number>()
  count = 0
  #stop = false
  #done: Promise<void>

  constructor(t: TestServer, instances: string[]) {
    const one = async (i: number): Promise<void> => {
      const k = i % 4
      const res =
        k === 0
          ? await t.api('GET', '/health')
          : k === 1
            ? await t.api('PUT', `${SYS}/instances/plain/attributes/v/attr/internal_value`, { value: i })
            : k === 2
              ? await t.call(`${SYS}/instances/plain`, 'run')
              : instances.length
                ? await t.call(`${SYS}/instances/${instances[i % instances.length]}`, 'run')
                : await t.api('GET', `${SYS}/instances`)
      this.statuses.set(res.status, (this.statuses.get(res.status) ?? 0) + 1)
      this.count++
    }
    this.#done = (async () => {
      for (let i = 0; !this.#stop; i++) {
        await one(i)
        await new Promise((r) => setTimeout(r, 5))
      }
    })()
  }

  /**
   * Resolves with what `pending` resolves with, and how many bystander requests were answered
   * before it was. A bystander held up by the fault (behind a hung worker, or by an event loop the
   * fault keeps busy) is answered only after it, so the count stops at the requests made before the
   * one held up: fewer than one round of the four kinds.
   */
  async answeredDuring<T>(pending: Promise<T>): Promise<{ value: T; answered: number }> {
    const value = await pending
    return { value, answered: this.count }
  }

  async stop(): Promise<void> {
    this.#stop = true
    await this.#done
  }

  assertAllAnswered(what: string): void {
    assert.ok(this.count > 0, `no bystander request ran during ${what}`)
    assert.deepEqual([...this.statuses.keys()], [200], `bystander answers during ${what}: ${JSON.stringify([...this.statuses])}`)
  }
}

describe('Python worker faults', () => {
  let t: TestServer
  const steady = Array.from({ length: 8 }, (_, i) => `s${i}`)

  before(async () => {
    t = await startTestServer({ files: { 'faulty.py': CODE }, config: { pythonWorkers: 2, pythonTimeout: 2 } })
    const models = await t.api('PUT', `${SYS}/models`, {
      Steady: model('Steady', {}),
      Hanger: model('Hanger', { hang: 'hang' }),
      Flooder: model('Flooder', { flood: 'flood', flood_raw: 'flood_raw' }),
      Raiser: model('Raiser', { poke: 'poke' }),
      Plain: { attributes: { v: 0.0 } },
    })
    assert.equal(models.status, 200, JSON.stringify(models.body))
    const instances = await t.api('PUT', `${SYS}/instances`, { plain: 'Plain', ...Object.fromEntries(steady.map((n) => [n, 'Steady'])) })
    assert.equal(instances.status, 200, JSON.stringify(instances.body))
    assert.equal((await t.call(SYS, 'prepare')).status, 200)
  })
  after(async () => t.close())

  const state = async (name: string): Promise<{ state: string; last_error: string | null }> => (await t.api('GET', `${SYS}/instances/${name}`)).body
  const slotOf = async (name: string): Promise<number> => (await t.api('GET', `${SYS}/instances/${name}/import`)).body.worker
  const pidOfSlot = (slot: number): number => t.server.system.services.python().workers()[slot]!.pid
  const assertProcesses = (live: number): void => {
    const { live: alive, zombies } = workerProcesses(process.pid)
    assert.equal(zombies.length, 0, `zombie children: ${JSON.stringify(zombies)}`)
    assert.equal(alive.length, live, `live worker.py children: ${JSON.stringify(alive)}`)
  }
  /** Steady instances grouped by the worker slot that holds them. */
  const bySlot = async (names: string[]): Promise<Map<number, string[]>> => {
    const out = new Map<number, string[]>()
    for (const n of names) {
      const slot = await slotOf(n)
      out.set(slot, [...(out.get(slot) ?? []), n])
    }
    return out
  }

  it('SIGKILL of a worker in the middle of a long system run: its instances go to ERROR, everything else is answered, prepare() restores them', async () => {
    assertProcesses(2)
    const slots = await bySlot(steady)
    assert.equal(slots.size, 2, 'instances spread over both workers')
    const victims = slots.get(0)!
    const survivors = slots.get(1)!
    const victimPid = pidOfSlot(0)

    const run = t.call(SYS, 'run', { steps: 1000 })
    const bystanders = new Bystanders(t, survivors)
    await waitFor(async () => (await t.api('GET', `${SYS}/attr/steps`)).body.value >= 20, 5000)
    process.kill(victimPid, 'SIGKILL')
    const res = await run
    await bystanders.stop()

    // All failures share one kind (the worker is gone), so the step's fault has that kind.
    assert.equal(res.status, 503, JSON.stringify(res.body))
    assert.equal(res.body.event, 'worker_gone')
    const failed = res.body.error.details.map((d: { path: string }) => d.path).sort()
    assert.deepEqual(failed, victims.map((v) => `instances.${v}`).sort())
    assert.match(res.body.error.message, /SIGKILL/)
    for (const v of victims) {
      const doc = await state(v)
      assert.equal(doc.state, 'ERROR', v)
      assert.match(doc.last_error ?? '', /SIGKILL/)
      assert.equal((await t.call(`${SYS}/instances/${v}`, 'run')).status, 409, `${v} refuses run until prepared`)
    }
    for (const s of survivors) assert.notEqual((await state(s)).state, 'ERROR', s)
    bystanders.assertAllAnswered('the kill')
    assertProcesses(1)

    for (const v of victims) assert.equal((await t.call(`${SYS}/instances/${v}`, 'prepare')).status, 200, v)
    for (const v of victims) assert.equal((await state(v)).state, 'PREPARED', v)
    const again = await t.call(SYS, 'run', { steps: 3 })
    assert.equal(again.status, 200, JSON.stringify(again.body))
    assert.notEqual(pidOfSlot(0), victimPid, 'the slot has a fresh process')
    assertProcesses(2)
  })

  it('a call that hangs: 504 after the time limit, other workers and plain instances answer meanwhile, prepare() restores it', async () => {
    await t.api('PUT', `${SYS}/instances`, { hanger: 'Hanger' })
    assert.equal((await t.call(`${SYS}/instances/hanger`, 'prepare')).status, 200)
    const hangSlot = await slotOf('hanger')
    const slots = await bySlot(steady)
    const neighbours = slots.get(hangSlot) ?? []
    const others = slots.get(1 - hangSlot) ?? []
    assert.ok(others.length > 0)

    const started = Date.now()
    const hang = t.call(`${SYS}/instances/hanger`, 'hang')
    const bystanders = new Bystanders(t, others)
    const { value: res, answered } = await bystanders.answeredDuring(hang)
    const waited = Date.now() - started
    await bystanders.stop()

    assert.equal(res.status, 504, JSON.stringify(res.body))
    assert.equal(res.body.event, 'worker_timeout')
    assert.ok(waited >= 1900 && waited < 6000, `answered after ${waited} ms with a 2 s limit`)
    bystanders.assertAllAnswered('the hang')
    assert.ok(answered >= 8, `only ${answered} bystander requests were answered while the call hung: one waited for it`)
    for (const name of ['hanger', ...neighbours]) assert.equal((await state(name)).state, 'ERROR', name)
    for (const name of others) assert.notEqual((await state(name)).state, 'ERROR', name)
    // The killed worker is gone and reaped (a zombie until the server's event loop gets to it).
    await waitFor(() => {
      const { live, zombies } = workerProcesses(process.pid)
      return live.length === 1 && zombies.length === 0
    }, 2000).catch(() => undefined)
    assertProcesses(1)

    for (const name of ['hanger', ...neighbours]) assert.equal((await t.call(`${SYS}/instances/${name}`, 'prepare')).status, 200, name)
    assert.equal((await t.call(`${SYS}/instances/hanger`, 'run')).status, 200)
    assertProcesses(2)
  })

  it('a method that floods stdout with megabytes: the server keeps answering and the log stays bounded', async () => {
    await t.api('PUT', `${SYS}/instances`, { flooder: 'Flooder' })
    assert.equal((await t.call(`${SYS}/instances/flooder`, 'prepare')).status, 200)
    const others = (await bySlot(steady)).get(1 - (await slotOf('flooder'))) ?? []
    const logsBefore = t.logs.length

    const bystanders = new Bystanders(t, others)
    const started = Date.now()
    const { value: printed, answered } = await bystanders.answeredDuring(t.call(`${SYS}/instances/flooder`, 'flood', { mb: 8 }))
    const printMs = Date.now() - started
    const raw = await t.call(`${SYS}/instances/flooder`, 'flood_raw', { mb: 4 })
    const totalMs = Date.now() - started
    await bystanders.stop()

    assert.equal(printed.status, 200, JSON.stringify(printed.body))
    assert.deepEqual(printed.body, { result: 8 })
    assert.equal(raw.status, 200, JSON.stringify(raw.body))
    bystanders.assertAllAnswered('the flood')
    assert.ok(answered >= 4, `only ${answered} bystander requests were answered while the call flooded stdout: one waited for it`)
    assert.equal((await state('flooder')).state, 'PREPARED')
    assert.equal((await t.call(`${SYS}/instances/flooder`, 'run')).status, 200)

    // print() goes through the per-instance capture, which is rate limited and says what it dropped.
    await waitFor(() => t.logs.slice(logsBefore).some((r) => r.instance === 'flooder' && /dropped/.test(String(r.msg))), 3000)
    const fromPrint = t.logs.slice(logsBefore).filter((r) => r.instance === 'flooder')
    const printedChars = fromPrint.reduce((n, r) => n + String(r.msg).length, 0)
    assert.ok(printedChars < 1024 * 1024, `${printedChars} characters of 8 MB of print() reached the log`)
    // Raw writes to fd 1 bypass the capture and arrive as lines, each cut at 64 KiB.
    await waitFor(() => t.logs.slice(logsBefore).filter((r) => r.stream === 'stdout' && r.instance === undefined).length >= 4096, 5000)
    const rawLines = t.logs.slice(logsBefore).filter((r) => r.stream === 'stdout' && r.instance === undefined)
    assert.ok(rawLines.every((r) => String(r.msg).length <= 64 * 1024 + 1))
    ;(t as unknown as { floodFigures: string }).floodFigures =
      `print 8 MB: ${printMs} ms (${answered} bystander answers meanwhile), ${printedChars} chars logged; raw 4 MB: ${rawLines.length} lines; total ${totalMs} ms`
  })

  it('an instance that raises in every call: 500 with the traceback, the step completes for the others, the server keeps serving', async () => {
    await t.api('PUT', `${SYS}/instances`, { raiser: 'Raiser' })
    assert.equal((await t.call(`${SYS}/instances/raiser`, 'prepare')).status, 200)
    const bystanders = new Bystanders(t, steady)
    const run = await t.call(`${SYS}/instances/raiser`, 'run')
    const poke = await t.call(`${SYS}/instances/raiser`, 'poke')
    const before = (await t.api('GET', `${SYS}/instances/s0/attributes/value/attr/internal_value`)).body.value
    const step = await t.call(SYS, 'run', { steps: 1 })
    const afterStep = (await t.api('GET', `${SYS}/instances/s0/attributes/value/attr/internal_value`)).body.value
    await bystanders.stop()

    for (const [res, text] of [
      [run, 'tick always fails'],
      [poke, 'poke always fails'],
    ] as const) {
      assert.equal(res.status, 500, JSON.stringify(res.body))
      assert.equal(res.body.event, 'user_code')
      assert.ok(JSON.stringify(res.body.error.details).includes(text), JSON.stringify(res.body.error.details))
      assert.match(JSON.stringify(res.body.error.details), /Traceback|line \d+/)
    }
    assert.equal(step.status, 500)
    assert.deepEqual(
      step.body.error.details.map((d: { path: string }) => d.path),
      ['instances.raiser'],
    )
    assert.ok(afterStep > before, `the other instances stepped: ${before} -> ${afterStep}; ${JSON.stringify(step.body)}`)
    bystanders.assertAllAnswered('the raising calls')
    const raiser = await state('raiser')
    assert.notEqual(raiser.state, 'ERROR', 'user exceptions leave the instance working (README: faults stay local)')
    assert.match(raiser.last_error ?? '', /tick always fails/)
    assert.equal((await t.call(`${SYS}/instances/raiser`, 'prepare')).status, 200)
    assert.equal((await state('raiser')).last_error, null)
    assertProcesses(2)
  })

  it('after all of it and a shutdown, no worker process and no zombie is left', async (ctx) => {
    const figures = (t as unknown as { floodFigures?: string }).floodFigures
    if (figures) ctx.diagnostic(figures)
    const pids = t.server.system.services
      .python()
      .workers()
      .map((w) => w.pid)
    await t.server.close()
    assertProcesses(0)
    for (const pid of pids) assert.throws(() => process.kill(pid, 0), `worker ${pid} is gone`)
  })
})

describe('a worker killed between two steps of a run', () => {
  it('its instances are reported as failed in the steps they missed, not dropped in silence', async () => {
    const t = await startTestServer({ files: { 'faulty.py': CODE }, config: { pythonWorkers: 2 } })
    try {
      assert.equal((await t.api('PUT', `${SYS}/models`, { Steady: model('Steady', {}), Slow: model('Slow', {}) })).status, 200)
      const steady = ['f0', 'f1', 'f2', 'f3']
      assert.equal((await t.api('PUT', `${SYS}/instances`, { slow: 'Slow', ...Object.fromEntries(steady.map((n) => [n, 'Steady'])) })).status, 200)
      assert.equal((await t.call(SYS, 'prepare')).status, 200)
      const slotOf = async (name: string): Promise<number> => (await t.api('GET', `${SYS}/instances/${name}/import`)).body.worker
      const slowSlot = await slotOf('slow')
      const victims: string[] = []
      for (const name of steady) if ((await slotOf(name)) !== slowSlot) victims.push(name)
      assert.ok(victims.length > 0, 'some instances on the other worker')
      const victimPid = t.server.system.services.python().workers()[1 - slowSlot]!.pid

      // Each step waits about 50 ms for the slow instance; the victims' worker answers its part
      // at once and is idle for the rest of the step, which is when the kill lands.
      const run = t.call(SYS, 'run', { steps: 60 })
      await waitFor(async () => (await t.api('GET', `${SYS}/attr/steps`)).body.value >= 3, 5000)
      process.kill(victimPid, 'SIGKILL')
      const res = await run

      assert.equal(res.status, 503, JSON.stringify(res.body))
      assert.equal(res.body.event, 'worker_gone')
      assert.deepEqual(res.body.error.details.map((d: { path: string }) => d.path).sort(), victims.map((v) => `instances.${v}`).sort())
      for (const detail of res.body.error.details) assert.match(detail.message, /SIGKILL.*\(failed in \d+ of 60 steps\)/)
      for (const v of victims) assert.equal((await t.api('GET', `${SYS}/instances/${v}`)).body.state, 'ERROR', v)
      assert.equal((await t.api('GET', `${SYS}/instances/slow/attributes/value/attr/internal_value`)).body.value, 60, 'the other instances ran every step')
    } finally {
      await t.close()
    }
  })
})

describe('a worker killed in the middle of a step of a run', () => {
  it('its instance fails in that step and in every step after it', async () => {
    const t = await startTestServer({ files: { 'faulty.py': CODE }, config: { pythonWorkers: 1 } })
    try {
      assert.equal((await t.api('PUT', `${SYS}/models`, { Slow: model('Slow', {}) })).status, 200)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { slow: 'Slow' })).status, 200)
      assert.equal((await t.call(SYS, 'prepare')).status, 200)
      const pid = t.server.system.services.python().workers()[0]!.pid
      // Every step sleeps 50 ms in Python: the kill lands in one of them.
      const run = t.call(SYS, 'run', { steps: 20 })
      await waitFor(async () => (await t.api('GET', `${SYS}/attr/steps`)).body.value >= 3, 5000)
      process.kill(pid, 'SIGKILL')
      const res = await run
      assert.equal(res.status, 503, JSON.stringify(res.body))
      const ran = (await t.api('GET', `${SYS}/instances/slow/attributes/value/attr/internal_value`)).body.value as number
      assert.ok(ran >= 3 && ran < 20, `ran ${ran} steps`)
      assert.match(res.body.error.details[0].message, new RegExp(`SIGKILL.*\\(failed in ${20 - ran} of 20 steps\\)`))
    } finally {
      await t.close()
    }
  })
})
