import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { ValidationError } from '../../../src/errors.js'
import { allFiles, makeStore, sampleDefinition } from './helpers.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

test('durable save with no arguments keeps it in memory and writes <dir>/<id>.json', async (t) => {
  const { store, dir } = await makeStore(t)
  const before = Date.now()
  const saved = await store.save(sampleDefinition())
  assert.match(saved.id, UUID)
  assert.equal(saved.in_memory, true)
  assert.equal(saved.persisted_path, join(dir, `${saved.id}.json`))
  assert.equal(saved.label, '')
  assert.equal(saved.notes, '')
  assert.match(saved.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/)
  assert.ok(Date.parse(saved.created_at) >= before - 1000)

  const file = JSON.parse(await readFile(saved.persisted_path, 'utf8'))
  assert.deepEqual(Object.keys(file).sort(), ['created_at', 'definition', 'id', 'label', 'notes', 'schema_version', 'server_version'])
  assert.equal(file.schema_version, 1)
  assert.equal(file.id, saved.id)
  assert.equal(file.created_at, saved.created_at)
  assert.equal(file.server_version, '9.9.9-test')
  assert.deepEqual(file.definition, sampleDefinition())

  const listed = await store.list()
  assert.deepEqual(listed.in_memory, [{ id: saved.id, created_at: saved.created_at, label: '', notes: '', persisted_path: saved.persisted_path }])
  assert.equal(listed.files.length, 1)
  assert.deepEqual(listed.files[0], {
    path: saved.persisted_path,
    id: saved.id,
    created_at: saved.created_at,
    label: '',
    notes: '',
    schema_version: 1,
  })
})

test('memory mode keeps the snapshot in memory only: persisted_path is "" and no file exists', async (t) => {
  const { store, dir } = await makeStore(t, { mode: 'memory' })
  const saved = await store.save(sampleDefinition(), { label: 'm' })
  assert.equal(saved.persisted_path, '')
  assert.equal(existsSync(dir), false, 'the snapshots directory was not even created')
  const listed = await store.list()
  assert.equal(listed.in_memory.length, 1)
  assert.equal(listed.in_memory[0]?.persisted_path, '')
  assert.deepEqual(listed.files, [])
  const record = await store.read({ id: saved.id })
  assert.equal(record.path, '')
  assert.deepEqual(record.definition, sampleDefinition())
})

test('save(path) writes exactly that file, relative to the snapshots directory, with label and notes', async (t) => {
  const { store, dir } = await makeStore(t)
  const saved = await store.save(sampleDefinition(), { path: 'plant/nightly.json', label: 'nightly', notes: 'before upgrade' })
  assert.equal(saved.persisted_path, join(dir, 'plant', 'nightly.json'))
  assert.deepEqual(await allFiles(dir), ['plant/nightly.json'])
  const file = JSON.parse(await readFile(saved.persisted_path, 'utf8'))
  assert.equal(file.label, 'nightly')
  assert.equal(file.notes, 'before upgrade')
  assert.equal(saved.label, 'nightly')
  assert.equal(saved.notes, 'before upgrade')
})

test('save(path) with an absolute path inside the snapshots directory is accepted', async (t) => {
  const { store, dir } = await makeStore(t)
  const target = join(dir, 'abs.json')
  const saved = await store.save(sampleDefinition(), { path: target })
  assert.equal(saved.persisted_path, target)
  assert.ok(existsSync(target))
})

test('save(directory, name) composes the path, adds .json and creates missing directories', async (t) => {
  const { store, dir } = await makeStore(t)
  const a = await store.save(sampleDefinition(), { directory: 'site-a/line-2', name: 'before-upgrade' })
  assert.equal(a.persisted_path, join(dir, 'site-a', 'line-2', 'before-upgrade.json'))
  const b = await store.save(sampleDefinition(), { directory: 'site-a', name: 'keep.snapshot' })
  assert.equal(b.persisted_path, join(dir, 'site-a', 'keep.snapshot'), 'a name with an extension is kept as is')
  const c = await store.save(sampleDefinition(), { directory: 'site-b' })
  assert.equal(c.persisted_path, join(dir, 'site-b', `${c.id}.json`), 'directory alone uses <id>.json')
  const d = await store.save(sampleDefinition(), { name: 'top' })
  assert.equal(d.persisted_path, join(dir, 'top.json'), 'name alone goes into the snapshots directory')
})

test('an explicit path writes a file even in memory mode', async (t) => {
  const { store, dir } = await makeStore(t, { mode: 'memory' })
  const saved = await store.save(sampleDefinition(), { directory: 'x', name: 'y' })
  assert.equal(saved.persisted_path, join(dir, 'x', 'y.json'))
  assert.ok(existsSync(saved.persisted_path))
})

test('saving over an existing snapshot file replaces it', async (t) => {
  const { store } = await makeStore(t)
  const first = await store.save(sampleDefinition(), { path: 'same.json', label: 'first' })
  const second = await store.save({ ...sampleDefinition(), instances: [] }, { path: 'same.json', label: 'second' })
  const file = JSON.parse(await readFile(second.persisted_path, 'utf8'))
  assert.equal(file.id, second.id)
  assert.equal(file.label, 'second')
  const memory = (await store.list()).in_memory
  assert.equal(memory.find((e) => e.id === first.id)?.persisted_path, '', 'the overwritten snapshot no longer has a file')
})

test('list shows foreign, corrupt, truncated and newer files with an error and never breaks', async (t) => {
  const { store, dir } = await makeStore(t)
  const good = await store.save(sampleDefinition(), { label: 'good' })
  await mkdir(join(dir, 'deep', 'er'), { recursive: true })
  await writeFile(join(dir, 'foreign.json'), JSON.stringify({ hello: 'world' }))
  await writeFile(join(dir, 'array.json'), '[1, 2, 3]')
  await writeFile(join(dir, 'deep', 'truncated.json'), (await readFile(good.persisted_path, 'utf8')).slice(0, 200))
  await writeFile(join(dir, 'deep', 'er', 'empty.json'), '')
  await writeFile(join(dir, 'newer.json'), JSON.stringify({ schema_version: 99, id: 'from-the-future', created_at: '2030-01-01T00:00:00Z', definition: {} }))
  await writeFile(join(dir, 'notes.txt'), 'not json and not *.json: ignored')
  await writeFile(join(dir, '.good.json.abc123.tmp'), '{"trunc')

  const { files } = await store.list()
  const byName = new Map(files.map((f) => [f.path.slice(dir.length + 1), f]))
  assert.deepEqual(
    [...byName.keys()].sort(),
    [`${good.id}.json`, 'array.json', 'deep/er/empty.json', 'deep/truncated.json', 'foreign.json', 'newer.json'].sort(),
  )
  assert.equal(byName.get(`${good.id}.json`)?.error, undefined)
  assert.equal(byName.get(`${good.id}.json`)?.label, 'good')
  assert.match(byName.get('foreign.json')?.error ?? '', /not a valid Mimic snapshot.*id: required/)
  assert.match(byName.get('array.json')?.error ?? '', /expected a JSON object/)
  assert.match(byName.get('deep/truncated.json')?.error ?? '', /not valid JSON/)
  assert.match(byName.get('deep/er/empty.json')?.error ?? '', /empty/)
  const newer = byName.get('newer.json')
  assert.match(newer?.error ?? '', /newer Mimic/)
  assert.equal(newer?.id, 'from-the-future')
  assert.equal(newer?.schema_version, 99)
  // Files with a created_at come first, oldest first; the rest follow by path.
  assert.deepEqual(
    files.slice(0, 2).map((f) => f.id),
    [good.id, 'from-the-future'],
  )
})

test('list sorts by created_at, not by file name', async (t) => {
  const { store, dir } = await makeStore(t)
  await mkdir(dir, { recursive: true })
  const snapshot = (id: string, created_at: string) =>
    JSON.stringify({ schema_version: 1, id, created_at, label: '', notes: '', server_version: '', definition: sampleDefinition() })
  await writeFile(join(dir, 'a.json'), snapshot('late', '2026-03-01T00:00:00Z'))
  await writeFile(join(dir, 'b.json'), snapshot('early', '2026-01-01T00:00:00Z'))
  await writeFile(join(dir, 'c.json'), snapshot('middle', '2026-02-01T00:00:00Z'))
  const { files } = await store.list()
  assert.deepEqual(
    files.map((f) => f.id),
    ['early', 'middle', 'late'],
  )
})

test('list of a store whose directory does not exist yet is empty', async (t) => {
  const { store } = await makeStore(t)
  assert.deepEqual(await store.list(), { in_memory: [], files: [] })
})

test('persistAllInMemory writes every memory-only snapshot once and returns the paths', async (t) => {
  const { store, dir } = await makeStore(t, { mode: 'memory' })
  const a = await store.save(sampleDefinition(), { label: 'a' })
  const b = await store.save(sampleDefinition(), { label: 'b' })
  const c = await store.save(sampleDefinition(), { path: 'explicit.json' })
  const { persisted } = await store.persistAllInMemory()
  assert.deepEqual(
    persisted.sort((x, y) => x.id.localeCompare(y.id)),
    [a, b].map((s) => ({ id: s.id, path: join(dir, `${s.id}.json`) })).sort((x, y) => x.id.localeCompare(y.id)),
  )
  assert.deepEqual(await allFiles(dir), [`${a.id}.json`, `${b.id}.json`, 'explicit.json'].sort())
  const file = JSON.parse(await readFile(join(dir, `${a.id}.json`), 'utf8'))
  assert.equal(file.label, 'a')
  const memory = (await store.list()).in_memory
  assert.ok(memory.every((e) => e.persisted_path !== ''))
  assert.equal(memory.find((e) => e.id === c.id)?.persisted_path, join(dir, 'explicit.json'))
  assert.deepEqual(await store.persistAllInMemory(), { persisted: [] }, 'nothing left to persist')
})

test('save refuses a definition of the wrong shape, listing every problem with its path', async (t) => {
  const { store, dir } = await makeStore(t)
  const bad = {
    models: [],
    instances: [{ a: 'M', b: 'M' }, { c: 3 }, 'd'],
    connections: { x: { from: 'a' } },
  }
  await assert.rejects(store.save(bad as never), (err: unknown) => {
    assert.ok(err instanceof ValidationError)
    assert.equal(err.status, 422)
    const paths = err.details.map((d) => d.path)
    assert.deepEqual(paths.sort(), [
      'definition.connections.x.to',
      'definition.instances.0',
      'definition.instances.1.c',
      'definition.instances.2',
      'definition.models',
    ])
    return true
  })
  assert.equal(existsSync(dir), false)
  assert.deepEqual((await store.list()).in_memory, [])
})

test('label and notes must be strings', async (t) => {
  const { store } = await makeStore(t)
  await assert.rejects(store.save(sampleDefinition(), { label: 5 as never }), (err: unknown) => {
    assert.ok(err instanceof ValidationError)
    assert.equal(err.details[0]?.path, 'label')
    return true
  })
})

test('concurrent saves are serialized: every one lands complete', async (t) => {
  const { store, dir } = await makeStore(t)
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) => store.save(sampleDefinition(), { path: i % 2 ? 'shared.json' : undefined, label: `s${i}` })),
  )
  const { files, in_memory } = await store.list()
  assert.equal(in_memory.length, 20)
  assert.equal(files.length, 11, '10 <id>.json files plus the shared one')
  assert.ok(files.every((f) => f.error === undefined))
  const shared = JSON.parse(await readFile(join(dir, 'shared.json'), 'utf8'))
  assert.ok(results.some((r) => r.id === shared.id))
  assert.deepEqual(
    (await allFiles(dir)).filter((f) => f.endsWith('.tmp')),
    [],
  )
})

test('only the structure is stored: extra top-level keys are dropped, extra connection keys kept', async (t) => {
  const { store } = await makeStore(t)
  const definition = {
    ...sampleDefinition(),
    connections: { feed: { from: 'sensor', to: 'valve_a', gain: 2 } },
    runtime: { values: [1, 2, 3] },
  }
  const saved = await store.save(definition)
  const file = JSON.parse(await readFile(saved.persisted_path, 'utf8'))
  assert.deepEqual(Object.keys(file.definition).sort(), ['connections', 'instances', 'models'])
  assert.deepEqual(file.definition.connections.feed, { from: 'sensor', to: 'valve_a', gain: 2 })
})

test('null arguments mean "not given" (clients that send null for omitted kwargs)', async (t) => {
  const { store, dir } = await makeStore(t)
  const saved = await store.save(sampleDefinition(), { path: null, directory: null, name: null, label: null } as never)
  assert.equal(saved.persisted_path, join(dir, `${saved.id}.json`))
  assert.equal(saved.label, '')
  assert.equal((await store.read({ id: saved.id, path: null } as never)).id, saved.id)
})
