/**
 * SIGINT to a real `mimic serve` process while a long system `run` of a slow Python step is under
 * way. The run ends after its step under way and answers 503 `shutting_down` with the steps it
 * took, the shutdown snapshot (when enabled) holds the state after exactly those steps, and the
 * process exits 0 well before the forced-exit limit. A step that hangs still ends the process
 * through the forced exit, which says so in the log.
 */
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { SYS, request, serveMimic, waitFor, type Answer, type ServedMimic } from './helpers.js'

const KEY = 'shutdown-run-key'
/** The CLI's limit: a shutdown still going after it is ended with status 1. */
const FORCED_EXIT_MS = 10_000

const CODE = `
import time

class Slow:
    def __init__(self):
        self.count = 0
    def tick(self):
        time.sleep(0.01)
        self.count += 1
    def __getstate__(self):
        return {"count": self.count}
    def __setstate__(self, state):
        self.count = state["count"]

class Stuck:
    def tick(self):
        open(STARTED, "w").close()  # tells the test the step is under way
        time.sleep(60)
`

function system(cls: 'Slow' | 'Stuck'): Record<string, unknown> {
  return {
    models: {
      M: {
        attributes: { count: { default: 0, type: 'int' } },
        import: { 'slow.py': { class: cls, attributes: cls === 'Slow' ? { count: { property: 'count' } } : {}, methods: { run: 'tick' } } },
      },
    },
    instances: [{ s: 'M' }],
  }
}

describe('SIGINT during a long system run of a slow Python step', () => {
  let dir: string
  const started: ServedMimic[] = []
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-rel-shutdown-run-'))
    await mkdir(join(dir, 'extensions'))
    await writeFile(join(dir, 'extensions', 'slow.py'), `STARTED = ${JSON.stringify(join(dir, 'stuck-started'))}\n${CODE}`)
    for (const cls of ['Slow', 'Stuck'] as const) await writeFile(join(dir, `${cls}.json`), JSON.stringify(system(cls)))
  })
  after(async () => {
    for (const server of started) server.kill()
    await rm(dir, { recursive: true, force: true })
  })

  /** Serves the system, prepares it and starts a run of `steps`; resolves once `progress` steps were taken (0: once the first is under way). */
  const runningServer = async (
    cls: 'Slow' | 'Stuck',
    snapshots: string,
    flags: string[],
    steps: number,
    progress: number,
  ): Promise<{ server: ServedMimic; run: Promise<Answer | Error> }> => {
    const server = await serveMimic([
      '--system',
      join(dir, `${cls}.json`),
      '--extensions',
      join(dir, 'extensions'),
      '--snapshots-dir',
      snapshots,
      '--product-key',
      KEY,
      '--python-workers',
      '1',
      ...flags,
    ])
    started.push(server)
    const api = (method: string, path: string, body?: unknown): Promise<Answer> =>
      request(`${server.url}${path}`, method, body, { authorization: `Bearer ${KEY}` })
    assert.equal((await api('POST', `${SYS}/method/prepare`)).status, 200)
    const run = api('POST', `${SYS}/method/run`, { kwargs: { steps } }).catch((err: Error) => err)
    if (progress > 0) await waitFor(async () => ((await api('GET', `${SYS}/attr/steps`)).body?.value as number) >= progress, 20_000, 50)
    else await waitFor(() => existsSync(join(dir, 'stuck-started')), 20_000, 50)
    return { server, run }
  }

  /** Sends SIGINT; the exit and how long it took. */
  const interrupt = async (server: ServedMimic): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> => {
    const sent = Date.now()
    server.child.kill('SIGINT')
    const exit = await server.exited
    return { ...exit, ms: Date.now() - sent }
  }

  /** The run's answer: a 503 `shutting_down` fault; the number of steps it says it took. */
  const stoppedRun = (answer: Answer | Error, steps: number): number => {
    assert.ok(!(answer instanceof Error), `the run got no answer: ${String(answer)}`)
    assert.equal(answer.status, 503, JSON.stringify(answer.body))
    assert.equal(answer.body.event, 'shutting_down')
    assert.equal(answer.body.error.type, 'ShuttingDownError')
    assert.match(answer.body.error.message, new RegExp(`^run of ${steps} steps stopped after \\d+ steps: the server is shutting down \\(SIGINT\\)$`))
    const done = answer.body.error.details[0].steps_done as number
    assert.equal(answer.body.error.details[0].path, 'kwargs.steps')
    assert.ok(Number.isSafeInteger(done) && done > 0 && done < steps, `steps_done ${done}`)
    return done
  }

  it('without --snapshot-on-shutdown: the run answers with the steps it took and the process exits 0 promptly', async (ctx) => {
    const { server, run } = await runningServer('Slow', join(dir, 'plain'), [], 100_000, 20)
    const exit = await interrupt(server)
    const done = stoppedRun(await run, 100_000)
    assert.deepEqual([exit.code, exit.signal], [0, null], server.stderr())
    assert.ok(exit.ms < FORCED_EXIT_MS, `exit took ${exit.ms} ms`)
    assert.equal(
      server.logs.find((r) => /shutdown forced/.test(String(r.msg))),
      undefined,
    )
    assert.deepEqual(
      server.logs.filter((r) => Number(r.level) >= 50),
      [],
      'no error-level log records',
    )
    ctx.diagnostic(`SIGINT after ${done} steps -> exit 0 in ${exit.ms} ms`)
  })

  it('with --snapshot-on-shutdown: the snapshot holds the state after the steps the run took, and the process exits 0 promptly', async (ctx) => {
    const snapshots = join(dir, 'snapshots')
    const { server, run } = await runningServer('Slow', snapshots, ['--snapshot-on-shutdown', '--python-timeout', '2'], 100_000, 20)
    const exit = await interrupt(server)
    const done = stoppedRun(await run, 100_000)
    assert.deepEqual([exit.code, exit.signal], [0, null], server.stderr())
    assert.ok(exit.ms < FORCED_EXIT_MS, `exit took ${exit.ms} ms`)
    assert.ok(server.logs.some((r) => r.msg === 'snapshot saved on shutdown'))

    const files = (await readdir(snapshots)).filter((f) => f.endsWith('.json'))
    assert.equal(files.length, 1, files.join(', '))
    const saved = JSON.parse(await readFile(join(snapshots, files[0]!), 'utf8'))
    assert.deepEqual([saved.automatic, saved.label], [true, 'on SIGINT'])
    const instance = saved.state.instances.s
    assert.deepEqual(instance.attributes.count, { internal: done }, 'the bound attribute after the last step taken')
    assert.deepEqual(JSON.parse(instance.python.states), [{ count: done }], "the Python object's own state")
    assert.equal(instance.timer.time, done, 'the timer advanced once per step taken (dt 1)')
    assert.equal(instance.state, 'PREPARED')
    assert.equal(saved.state.system.state, 'PREPARED')
    ctx.diagnostic(`SIGINT after ${done} steps -> snapshot of that state, exit 0 in ${exit.ms} ms`)
  })

  it('a step that hangs: the forced exit ends the process with status 1 and the log says why', async () => {
    const { server, run } = await runningServer('Stuck', join(dir, 'stuck'), ['--python-timeout', '60'], 3, 0)
    const exit = await interrupt(server)
    assert.equal(exit.code, 1)
    assert.ok(exit.ms >= FORCED_EXIT_MS - 500, `exit after ${exit.ms} ms`)
    const forced = server.logs.find((r) => /^shutdown forced: the server did not stop within 10 s/.test(String(r.msg)))
    assert.ok(forced, JSON.stringify(server.logs.slice(-5)))
    assert.equal(forced.level, 50)
    assert.equal(forced.signal, 'SIGINT')
    assert.match(String(forced.waiting_for), /HTTP requests still in flight/)
    assert.ok((await run) instanceof Error, 'the run under the hung step is cut off with the process')
  })
})
