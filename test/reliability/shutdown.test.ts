/**
 * SIGTERM to a real `mimic serve` process in the middle of a burst of snapshot saves of a large
 * system. Afterwards the snapshots directory holds only complete files that a fresh server loads,
 * and the process has closed its HTTP and Modbus listeners and stopped its Python workers within
 * a bounded time (measured and reported).
 */
import assert from 'node:assert/strict'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from '../helpers/server.js'
import { SYS, request, running, serveMimic, waitFor, workerProcesses, type ServedMimic } from './helpers.js'

const KEY = 'shutdown-key'
const MODELS = 80
const ATTRIBUTES = 150
const SAVES = 20

const CODE = `
class Pump:
    def __init__(self):
        self.flow = 1.0
    def tick(self):
        self.flow += 0.1
`

/** A system big enough that each save takes a noticeable time (MB of JSON, fsync). */
function largeSystem(): Record<string, unknown> {
  const models: Record<string, unknown> = {
    Pump: {
      attributes: { flow: 0.0 },
      import: { 'pump.py': { class: 'Pump', attributes: { flow: { property: 'flow' } }, methods: { run: 'tick' } } },
      communication: [{ modbus_slave: { host: '127.0.0.1', port: 0, unit_id: 1, mapping: { flow: { address: [0, 1], group: 'h_r', type: 'float' } } } }],
    },
  }
  // A second Python-backed model without Modbus: one unit id per port.
  models.QuietPump = { attributes: { flow: 0.0 }, import: (models.Pump as { import: unknown }).import }
  const instances: Array<Record<string, string>> = [{ pump1: 'Pump' }, { pump2: 'QuietPump' }]
  for (let m = 0; m < MODELS; m++) {
    const attributes: Record<string, unknown> = {}
    for (let a = 0; a < ATTRIBUTES; a++)
      attributes[`a${a}`] = { default: a * 1.5, type: 'float', unit: 'kW', description: `attribute ${a} of model ${m}, padded to look like a real description` }
    models[`Model${m}`] = { attributes }
    instances.push({ [`i${m}`]: `Model${m}` })
  }
  return { models, instances, connections: { c1: { from: 'pump1.attributes.flow', to: 'i0.attributes.a0' } } }
}

/** True when a TCP connect to 127.0.0.1:port is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', () => resolve(true))
  })
}

describe('SIGTERM during a burst of snapshot saves', () => {
  let dir: string
  let server: ServedMimic | undefined
  let fresh: TestServer | undefined
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-rel-shutdown-'))
    await mkdir(join(dir, 'extensions'))
    await writeFile(join(dir, 'extensions', 'pump.py'), CODE)
  })
  after(async () => {
    server?.kill()
    await fresh?.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('only complete, loadable snapshot files remain; listeners and workers are gone within a bounded time', async (ctx) => {
    const system = largeSystem()
    await writeFile(join(dir, 'system.json'), JSON.stringify(system))
    const snapshots = join(dir, 'snapshots')
    server = await serveMimic([
      '--system',
      join(dir, 'system.json'),
      '--extensions',
      join(dir, 'extensions'),
      '--snapshots-dir',
      snapshots,
      '--product-key',
      KEY,
      '--python-workers',
      '2',
    ])
    const api = (method: string, path: string, body?: unknown): ReturnType<typeof request> =>
      request(`${server!.url}${path}`, method, body, { authorization: `Bearer ${KEY}` })
    const httpPort = Number(new URL(server.url).port)

    assert.equal((await api('POST', `${SYS}/instances/pump1/method/prepare`)).status, 200)
    assert.equal((await api('POST', `${SYS}/instances/pump2/method/prepare`)).status, 200)
    const modbusPort = (await api('GET', `${SYS}/instances/pump1/communication/modbus_slave`)).body.port as number
    assert.equal(await refused(modbusPort), false, 'Modbus listens')
    const workers = workerProcesses(server.pid).live.map((w) => w.pid)
    assert.equal(workers.length, 2, 'two Python workers run')

    const timed = Date.now()
    const one = await api('POST', `${SYS}/snapshots/method/save`, { kwargs: { label: 'single' } })
    const saveMs = Date.now() - timed
    assert.equal(one.status, 200, JSON.stringify(one.body))
    const bytes = (await readFile(one.body.result.persisted_path)).length

    // The burst: all sent at once, serialized by the server; SIGTERM lands while they are queued.
    const burst = Array.from({ length: SAVES }, (_, i) =>
      api('POST', `${SYS}/snapshots/method/save`, { kwargs: { label: `burst-${i}` } }).then(
        (res) => ({ status: res.status, path: res.body?.result?.persisted_path as string | undefined }),
        (err: Error) => ({ status: 0, path: undefined, error: err.message }),
      ),
    )
    await waitFor(async () => (await readdir(snapshots)).filter((f) => f.endsWith('.json')).length >= 4, 10_000, 5)
    const sigterm = Date.now()
    server.child.kill('SIGTERM')
    const outcomes = await Promise.all(burst)
    const answeredMs = Date.now() - sigterm
    const exit = await server.exited
    const exitMs = Date.now() - sigterm

    // Bounded, graceful shutdown: exit code 0 (not the 10 s forced exit), listeners and workers gone.
    assert.deepEqual(exit, { code: 0, signal: null }, server.stderr())
    assert.ok(exitMs < 8000, `shutdown took ${exitMs} ms`)
    assert.equal(await refused(httpPort), true, 'HTTP listener closed')
    assert.equal(await refused(modbusPort), true, 'Modbus listener closed')
    for (const pid of workers) assert.equal(running(pid), false, `worker ${pid} stopped`)
    assert.deepEqual(
      server.logs.filter((r) => Number(r.level) >= 50),
      [],
      'no error-level log records',
    )

    // Every save either completed (its file is there) or was refused/cut off; nothing else.
    const statuses = outcomes.map((o) => o.status)
    assert.ok(
      statuses.every((s) => s === 200 || s === 503 || s === 0),
      JSON.stringify(outcomes),
    )
    const files = await readdir(snapshots)
    assert.deepEqual(
      files.filter((f) => !f.endsWith('.json')),
      [],
      'no temp or partial files',
    )
    for (const o of outcomes) if (o.status === 200) assert.ok(files.includes(o.path!.split('/').pop()!), `${o.path} was answered 200 but is missing`)
    const ids = new Set<string>()
    for (const name of files) {
      const doc = JSON.parse(await readFile(join(snapshots, name), 'utf8')) as { id: string; schema_version: number; definition: { instances: unknown[] } }
      assert.equal(`${doc.id}.json`, name)
      assert.equal(doc.definition.instances.length, MODELS + 2, name)
      ids.add(doc.id)
    }

    // A fresh server loads every one of them.
    const loader = await startTestServer({ config: { snapshotsDir: snapshots, extensions: [join(dir, 'extensions')] } })
    fresh = loader
    const loadStarted = Date.now()
    for (const name of files) {
      const res = await loader.call(`${SYS}/snapshots`, 'load', { path: name })
      assert.equal(res.status, 200, `${name}: ${JSON.stringify(res.body)}`)
      assert.deepEqual([res.body.result.models, res.body.result.instances, res.body.result.connections], [MODELS + 2, MODELS + 2, 1])
    }
    const loadMs = Date.now() - loadStarted
    assert.equal((await loader.call(`${SYS}/instances/pump1`, 'prepare')).status, 200)

    ctx.diagnostic(`system: ${MODELS + 2} models, ${MODELS * ATTRIBUTES} attributes, snapshot ${Math.round(bytes / 1024)} KiB, one save ${saveMs} ms`)
    ctx.diagnostic(
      `burst of ${SAVES}: ${statuses.filter((s) => s === 200).length} completed, ${statuses.filter((s) => s === 503).length} refused (503), ` +
        `${statuses.filter((s) => s === 0).length} cut off; SIGTERM -> last answer ${answeredMs} ms -> exit ${exitMs} ms; ${files.length} files, all loaded by a fresh server in ${loadMs} ms`,
    )
  })
})
