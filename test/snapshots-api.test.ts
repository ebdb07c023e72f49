import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startTestServer, TEST_KEY, testEnv, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const SNAP = `${SYS}/snapshots`

const SENSOR_PY = `
class Sensor:
    def __init__(self, start=25.0):
        self.temperature = start
    def tick(self):
        self.temperature += 1.0
`

async function buildPlant(t: TestServer): Promise<void> {
  const res = await t.api('PUT', SYS, {
    models: {
      Sensor: {
        attributes: { temperature: 0.0 },
        import: { 'sensor.py': { class: 'Sensor', attributes: { temperature: { property: 'temperature' } }, methods: { run: 'tick' } } },
        communication: [{ modbus_slave: { mapping: { temperature: { address: [0, 1], group: 'h_r', type: 'float' } } } }],
      },
      Display: { attributes: { value: 0.0, label: 'T' } },
    },
    instances: { s1: 'Sensor', d1: 'Display' },
    connections: { wire: { from: 's1.attributes.temperature', to: 'd1.attributes.value' } },
  })
  assert.equal(res.status, 200, JSON.stringify(res.body))
}

async function structure(t: TestServer): Promise<unknown> {
  const [models, instances, connections] = await Promise.all([
    t.api('GET', `${SYS}/models`),
    t.api('GET', `${SYS}/instances`),
    t.api('GET', `${SYS}/connections`),
  ])
  const names = (doc: { children: Array<{ name: string }> }): string[] => doc.children.map((c) => c.name)
  return { models: names(models.body), instances: names(instances.body), connections: names(connections.body) }
}

describe('snapshots over HTTP, durable mode', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ files: { 'sensor.py': SENSOR_PY } })
    await buildPlant(t)
  })
  after(async () => t.close())

  it('save() with no arguments writes <dir>/<id>.json holding structure only', async () => {
    await t.call(`${SYS}/instances/s1`, 'prepare')
    await t.call(SYS, 'run', { steps: 3 })
    const res = await t.call(SNAP, 'save')
    assert.equal(res.status, 200, JSON.stringify(res.body))
    const saved = res.body.result
    assert.match(saved.id, /^[0-9a-f-]{36}$/)
    assert.equal(saved.in_memory, true)
    assert.equal(saved.persisted_path, join(t.snapshots, `${saved.id}.json`))
    const file = JSON.parse(await readFile(saved.persisted_path, 'utf8'))
    assert.equal(file.schema_version, 1)
    assert.equal(file.id, saved.id)
    assert.match(file.created_at, /^\d{4}-\d\d-\d\dT/)
    assert.deepEqual(Object.keys(file.definition).sort(), ['connections', 'instances', 'models'])
    assert.deepEqual(file.definition.instances, [{ s1: 'Sensor' }, { d1: 'Display' }])
    assert.deepEqual(file.definition.connections, { wire: { from: 's1.attributes.temperature', to: 'd1.attributes.value' } })
    assert.doesNotMatch(JSON.stringify(file.definition), /28/, 'no runtime values (the temperature is 28 now) in the file')
  })

  it('save → change structure → load restores it; runtime state starts fresh', async () => {
    await t.call(`${SYS}/instances/s1`, 'prepare')
    await t.api('PUT', `${SYS}/instances/d1/attributes/label/attr/internal_value`, { value: 'changed' })
    const saved = (await t.call(SNAP, 'save', { label: 'plant', notes: 'two devices' })).body.result
    const before = await structure(t)

    const port = (await t.api('GET', `${SYS}/instances/s1/communication/modbus_slave`)).body.port
    assert.equal(typeof port, 'number')
    await t.api('DELETE', `${SYS}/connections/wire`)
    await t.api('DELETE', `${SYS}/instances/d1`)
    await t.api('PUT', `${SYS}/models`, { Extra: { attributes: { x: 1 } } })
    await t.api('PUT', `${SYS}/instances`, { e1: 'Extra' })
    assert.notDeepEqual(await structure(t), before)

    const load = await t.call(SNAP, 'load', { id: saved.id })
    assert.equal(load.status, 200, JSON.stringify(load.body))
    assert.deepEqual(load.body.result, { id: saved.id, loaded: true, models: 2, instances: 2, connections: 1 })
    assert.deepEqual(await structure(t), before)
    const s1 = await t.api('GET', `${SYS}/instances/s1`)
    assert.equal(s1.body.state, 'INITIALIZED')
    assert.deepEqual((await t.api('GET', `${SYS}/instances/d1/attributes/label/attr/internal_value`)).body, { value: 'T' })
    assert.deepEqual((await t.api('GET', `${SYS}/instances/s1/timer/time`)).body, { value: 0 })
    assert.equal((await t.api('GET', `${SYS}/instances/s1/import`)).body.bound, false, 'Python objects released')
    assert.equal((await t.api('GET', `${SYS}/instances/s1/communication/modbus_slave`)).body.state, 'STOPPED')
    // and the loaded system works
    assert.equal((await t.call(`${SYS}/instances/s1`, 'prepare')).status, 200)
    await t.call(SYS, 'run', { steps: 2 })
    assert.deepEqual((await t.api('GET', `${SYS}/instances/d1/attributes/value/attr/internal_value`)).body, { value: 27 })
  })

  it('save(path=...) and save(directory=..., name=...) write those files with label and notes; list shows them', async () => {
    const byPath = (await t.call(SNAP, 'save', { path: 'fixed/plant.json', label: 'L1', notes: 'N1' })).body.result
    assert.equal(byPath.persisted_path, join(t.snapshots, 'fixed', 'plant.json'))
    const byName = (await t.call(SNAP, 'save', { directory: 'nightly/a', name: 'monday', label: 'L2' })).body.result
    assert.equal(byName.persisted_path, join(t.snapshots, 'nightly', 'a', 'monday.json'))
    const file = JSON.parse(await readFile(byPath.persisted_path, 'utf8'))
    assert.equal(file.label, 'L1')
    assert.equal(file.notes, 'N1')

    await writeFile(join(t.snapshots, 'foreign.json'), '{"hello": "world"}')
    await writeFile(join(t.snapshots, 'broken.json'), '{"id": "x", "defin')
    const list = (await t.call(SNAP, 'list')).body.result
    assert.ok(list.in_memory.some((s: { id: string }) => s.id === byPath.id))
    const files = list.files as Array<Record<string, unknown>>
    const entry = files.find((f) => f.path === byPath.persisted_path)!
    assert.deepEqual([entry.id, entry.label, entry.notes, entry.schema_version], [byPath.id, 'L1', 'N1', 1])
    assert.ok(files.find((f) => f.path === byName.persisted_path))
    assert.ok(files.find((f) => String(f.path).endsWith('foreign.json'))?.error)
    assert.ok(files.find((f) => String(f.path).endsWith('broken.json'))?.error)

    const loaded = await t.call(SNAP, 'load', { path: 'nightly/a/monday.json' })
    assert.equal(loaded.status, 200, JSON.stringify(loaded.body))
    assert.equal(loaded.body.result.id, byName.id)
  })

  it('load of an id that has no file is a 404 "File not found" naming the directory', async () => {
    const res = await t.call(SNAP, 'load', { id: '00000000-0000-0000-0000-000000000000' })
    assert.equal(res.status, 404)
    assert.match(res.body.error.message, /File not found/)
    assert.ok(res.body.error.message.includes(t.snapshots))
    assert.deepEqual(
      res.body.error.details.map((d: { path: string }) => d.path),
      ['id'],
    )
    // By path: the detail names the argument; the message names the file.
    const byPath = await t.call(SNAP, 'load', { path: 'nofile.json' })
    assert.equal(byPath.status, 404)
    assert.match(byPath.body.error.message, /File not found: .*nofile\.json/)
    assert.deepEqual(
      byPath.body.error.details.map((d: { path: string }) => d.path),
      ['path'],
    )
  })

  it('a corrupt snapshot, or one whose model no longer validates, leaves the system exactly as it was', async () => {
    const before = await structure(t)
    await t.api('PUT', `${SYS}/instances/d1/attributes/label/attr/internal_value`, { value: 'keep me' })
    await writeFile(join(t.snapshots, 'truncated.json'), '{"schema_version": 1, "id": "t1", "definition": {"models": {')
    const good = JSON.parse(await readFile((await t.call(SNAP, 'save')).body.result.persisted_path, 'utf8'))
    good.id = 'bad-model'
    good.definition.models.Display.attributes = { 'no.dots': 1 }
    await writeFile(join(t.snapshots, 'bad-model.json'), JSON.stringify(good))
    const newer = { ...good, id: 'future', schema_version: 99 }
    await writeFile(join(t.snapshots, 'future.json'), JSON.stringify(newer))

    for (const [path, pattern] of [
      ['truncated.json', /truncated\.json/],
      ['bad-model.json', /no\.dots/],
      ['future.json', /newer/],
    ] as const) {
      const res = await t.call(SNAP, 'load', { path })
      assert.equal(res.status, 422, `${path}: ${JSON.stringify(res.body)}`)
      assert.match(JSON.stringify(res.body.error), pattern)
    }
    assert.deepEqual(await structure(t), before)
    assert.deepEqual((await t.api('GET', `${SYS}/instances/d1/attributes/label/attr/internal_value`)).body, { value: 'keep me' })
  })

  it('the problems of a snapshot whose model is invalid point into its file, and name no instance that is there as unknown', async () => {
    const before = await structure(t)
    for (const includeState of [false, true]) {
      const saved = (await t.call(SNAP, 'save', { include_state: includeState })).body.result
      const file = JSON.parse(await readFile(saved.persisted_path, 'utf8'))
      file.id = `bad-type-${includeState}`
      file.definition.models.Display.attributes.value = { default: 0.0, type: 'flaot' }
      await writeFile(join(t.snapshots, `${file.id}.json`), JSON.stringify(file))
      const res = await t.call(SNAP, 'load', { path: `${file.id}.json` })
      assert.equal(res.status, 422, JSON.stringify(res.body))
      const type = "expected one of 'float', 'int', 'bool', 'str', 'list', 'dict', 'any'"
      assert.deepEqual(res.body.error.details, [{ path: 'definition.models.Display.attributes.value.type', message: type }])
      assert.equal(res.body.error.message, `Snapshot '${file.id}': 1 error: definition.models.Display.attributes.value.type: ${type}`)
    }
    assert.deepEqual(await structure(t), before)
  })

  it('paths outside the snapshots directory are refused and nothing is written there', async () => {
    const outside = join(t.dir, 'outside')
    await mkdir(outside, { recursive: true })
    await symlink(outside, join(t.snapshots, 'escape'))
    const cases: Array<[Record<string, string>, number]> = [
      [{ path: '../x.json' }, 403],
      [{ path: join(outside, 'x.json') }, 403],
      [{ path: 'escape/x.json' }, 403],
      [{ directory: '..', name: 'x' }, 403],
      [{ name: 'a/b' }, 422],
      [{ name: '..' }, 422],
      [{ bogus: 'x' }, 422],
    ]
    for (const [kwargs, status] of cases) {
      const res = await t.call(SNAP, 'save', kwargs)
      assert.equal(res.status, status, `${JSON.stringify(kwargs)} -> ${JSON.stringify(res.body)}`)
    }
    assert.deepEqual(await readdir(outside), [])
    assert.equal((await t.call(SNAP, 'load', { path: '/etc/passwd' })).status, 403)
    assert.equal((await t.call(SNAP, 'delete', { path: '../../x.json' })).status, 403)
  })

  it('delete removes a snapshot from memory and disk', async () => {
    const saved = (await t.call(SNAP, 'save')).body.result
    const res = await t.call(SNAP, 'delete', { id: saved.id })
    assert.deepEqual(res.body.result, { id: saved.id, deleted: true })
    assert.equal(existsSync(saved.persisted_path), false)
    assert.equal((await t.call(SNAP, 'load', { id: saved.id })).status, 404)
  })

  it('a load under concurrent HTTP traffic: every answer sees either the old or the new system, never half', async () => {
    const small = (await t.call(SNAP, 'save')).body.result
    for (let i = 0; i < 30; i++) await t.api('PUT', `${SYS}/instances`, { [`x${i}`]: 'Display' })
    const big = (await t.call(SNAP, 'save')).body.result
    const bigCount = 32
    const traffic: Promise<void>[] = []
    let stop = false
    const counts = new Set<number>()
    for (let c = 0; c < 8; c++) {
      traffic.push(
        (async () => {
          while (!stop) {
            const res = await t.api('GET', `${SYS}/instances`)
            assert.equal(res.status, 200)
            counts.add(res.body.children.length)
          }
        })(),
      )
    }
    for (let i = 0; i < 6; i++) {
      const res = await t.call(SNAP, 'load', { id: i % 2 === 0 ? small.id : big.id })
      assert.equal(res.status, 200, JSON.stringify(res.body))
    }
    stop = true
    await Promise.all(traffic)
    for (const n of counts) assert.ok(n === 2 || n === bigCount, `saw a half-built system with ${n} instances`)
  })
})

describe('snapshots, memory-only mode', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ files: { 'sensor.py': SENSOR_PY }, config: { snapshotsMode: 'memory' } })
    await buildPlant(t)
  })
  after(async () => t.close())

  it('save keeps it in memory (persisted_path ""), load works, persist_all_in_memory writes the files', async () => {
    const saved = (await t.call(SNAP, 'save', { label: 'mem' })).body.result
    assert.equal(saved.persisted_path, '')
    assert.equal(existsSync(join(t.snapshots, `${saved.id}.json`)), false)
    const list = (await t.call(SNAP, 'list')).body.result
    assert.deepEqual(
      list.in_memory.map((s: { id: string }) => s.id),
      [saved.id],
    )
    assert.deepEqual(list.files, [])

    await t.api('DELETE', `${SYS}/connections/wire`)
    assert.equal((await t.call(SNAP, 'load', { id: saved.id })).status, 200)
    assert.deepEqual(((await structure(t)) as { connections: string[] }).connections, ['wire'])

    const persisted = (await t.call(SNAP, 'persist_all_in_memory')).body.result.persisted
    assert.deepEqual(persisted, [{ id: saved.id, path: join(t.snapshots, `${saved.id}.json`) }])
    assert.equal(JSON.parse(await readFile(persisted[0]!.path, 'utf8')).label, 'mem')
  })
})

describe('snapshots from the command line', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ files: { 'sensor.py': SENSOR_PY } })
    await buildPlant(t)
  })
  after(async () => t.close())

  // Asynchronous on purpose: the server runs in this process, so a blocking spawn would starve it.
  const run = (args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        [new URL('../bin/mimic.js', import.meta.url).pathname, ...args],
        { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 },
        (err, stdout, stderr) => {
          resolve({ status: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr })
        },
      )
    })
  const cli = (args: string[]) => run(['snapshot', ...args, '--url', t.url], { MIMIC_PRODUCT_KEY: TEST_KEY })

  it('mimic snapshot save|list|load|delete drive a running server', async () => {
    const save = await cli(['save', '--label', 'from-cli'])
    assert.equal(save.status, 0, save.stderr)
    const saved = JSON.parse(save.stdout)
    assert.equal(saved.label, 'from-cli')
    const list = JSON.parse((await cli(['list'])).stdout)
    assert.ok(list.files.some((f: { id: string }) => f.id === saved.id))
    await t.api('DELETE', `${SYS}/connections/wire`)
    const load = await cli(['load', saved.id])
    assert.equal(load.status, 0, load.stderr)
    assert.equal(JSON.parse(load.stdout).connections, 1)
    assert.equal((await cli(['delete', saved.id])).status, 0)
    const missing = await cli(['load', saved.id])
    assert.equal(missing.status, 1)
    assert.match(missing.stderr, /File not found/)
    const down = await run(['snapshot', 'list', '--url', 'http://127.0.0.1:9'])
    assert.equal(down.status, 1)
    assert.match(down.stderr, /Cannot reach the Mimic server/)
  })

  it('mimic serve --load-snapshot starts from a saved snapshot', async () => {
    const saved = (await t.call(SNAP, 'save')).body.result
    const { startMimic } = await import('../src/mimic.js')
    const { parseConfig } = await import('../src/config.js')
    const pino = (await import('pino')).default
    const server = await startMimic(parseConfig({ port: 0, snapshotsDir: t.snapshots, extensions: [t.extensions], loadSnapshot: saved.id }, testEnv()), {
      logger: pino({ level: 'silent' }),
    })
    try {
      assert.deepEqual(
        [...server.system.instances.all()].map((i) => i.name),
        ['s1', 'd1'],
      )
    } finally {
      await server.close()
    }
  })
})
