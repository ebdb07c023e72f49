import assert from 'node:assert/strict'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { NotFoundError, ValidationError } from '../../../src/errors.js'
import { CURRENT_SCHEMA_VERSION, migrate, SnapshotStore } from '../../../src/snapshots/index.js'
import { makeStore, sampleDefinition } from './helpers.js'

function fileText(fields: Record<string, unknown>): string {
  return JSON.stringify({
    schema_version: 1,
    id: 'hand-made',
    created_at: '2026-01-01T00:00:00Z',
    label: 'l',
    notes: 'n',
    server_version: '0.0.1',
    definition: sampleDefinition(),
    ...fields,
  })
}

function isValidation(pattern: RegExp, paths?: string[]) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof ValidationError, `expected ValidationError, got ${String(err)}`)
    assert.equal(err.status, 422)
    assert.match(err.message, pattern)
    if (paths)
      for (const p of paths)
        assert.ok(
          err.details.some((d) => d.path === p),
          `details name ${p}: ${JSON.stringify(err.details)}`,
        )
    return true
  }
}

test('read by id returns the in-memory snapshot, a fresh copy each time', async (t) => {
  const { store } = await makeStore(t, { mode: 'memory' })
  const saved = await store.save(sampleDefinition(), { label: 'L', notes: 'N' })
  const record = await store.read({ id: saved.id })
  assert.deepEqual(record, {
    id: saved.id,
    path: '',
    created_at: saved.created_at,
    label: 'L',
    notes: 'N',
    schema_version: 1,
    server_version: '9.9.9-test',
    definition: sampleDefinition(),
  })
  record.definition.instances.push({ mutated: 'Valve' })
  assert.deepEqual((await store.read({ id: saved.id })).definition, sampleDefinition())
})

test('a definition changed by the caller after save does not change the snapshot', async (t) => {
  const { store } = await makeStore(t)
  const definition = sampleDefinition()
  const saved = await store.save(definition)
  definition.instances.length = 0
  assert.equal((await store.read({ id: saved.id })).definition.instances.length, 3)
})

test('read by id finds the file under the directory when the snapshot is not in memory (new store)', async (t) => {
  const { store, dir } = await makeStore(t)
  const a = await store.save(sampleDefinition(), { label: 'by-uuid' })
  const b = await store.save(sampleDefinition(), { directory: 'nested/deeper', name: 'custom-name', label: 'by-scan' })
  const fresh = new SnapshotStore({ dir, mode: 'durable', serverVersion: 'x' })
  const ra = await fresh.read({ id: a.id })
  assert.equal(ra.path, a.persisted_path)
  assert.equal(ra.label, 'by-uuid')
  const rb = await fresh.read({ id: b.id })
  assert.equal(rb.path, join(dir, 'nested', 'deeper', 'custom-name.json'), 'found by scanning file contents')
  assert.equal(rb.label, 'by-scan')
  assert.deepEqual(rb.definition, sampleDefinition())
})

test('read by id of a snapshot that has no file: 404 "File not found" naming the directory searched', async (t) => {
  const { store, dir } = await makeStore(t, { mode: 'memory' })
  const saved = await store.save(sampleDefinition())
  const other = new SnapshotStore({ dir, mode: 'memory', serverVersion: 'x' })
  await assert.rejects(other.read({ id: saved.id }), (err: unknown) => {
    assert.ok(err instanceof NotFoundError)
    assert.equal(err.status, 404)
    assert.match(err.message, /File not found/)
    assert.ok(err.message.includes(dir), err.message)
    return true
  })
})

test('read by path reads that file; relative paths are relative to the snapshots directory', async (t) => {
  const { store, dir } = await makeStore(t)
  await mkdir(join(dir, 'sub'), { recursive: true })
  await writeFile(join(dir, 'sub', 'hand.json'), fileText({}))
  const record = await store.read({ path: 'sub/hand.json' })
  assert.equal(record.id, 'hand-made')
  assert.equal(record.path, join(dir, 'sub', 'hand.json'))
  assert.equal(record.label, 'l')
  assert.deepEqual(record.definition, sampleDefinition())
  assert.deepEqual(await store.read({ path: join(dir, 'sub', 'hand.json') }), record)
})

test('read by path of a missing file: 404 File not found', async (t) => {
  const { store } = await makeStore(t)
  await assert.rejects(store.read({ path: 'nope.json' }), (err: unknown) => {
    assert.ok(err instanceof NotFoundError)
    assert.match(err.message, /File not found: .*nope\.json/)
    return true
  })
})

test('a truncated snapshot is refused with 422 saying it is not valid JSON', async (t) => {
  const { store } = await makeStore(t)
  const saved = await store.save(sampleDefinition())
  const text = await readFile(saved.persisted_path, 'utf8')
  await writeFile(saved.persisted_path, text.slice(0, text.length / 2))
  const fresh = new SnapshotStore({ dir: store.dir, mode: 'durable', serverVersion: 'x' })
  await assert.rejects(fresh.read({ path: saved.persisted_path }), isValidation(/not valid JSON \(truncated or corrupt\?\)/))
  await assert.rejects(fresh.read({ id: saved.id }), isValidation(/not valid JSON/), 'by id too: the <id>.json file is named, not "not found"')
})

test('a foreign JSON file is refused with every problem and its path', async (t) => {
  const { store, dir } = await makeStore(t)
  await mkdir(dir, { recursive: true })
  await writeFile(join(dir, 'foreign.json'), JSON.stringify({ name: 'package', version: 3 }))
  await assert.rejects(store.read({ path: 'foreign.json' }), isValidation(/not a valid Mimic snapshot/, ['id', 'created_at', 'definition']))
})

test('a definition of the wrong shape is refused with paths like definition.models', async (t) => {
  const { store, dir } = await makeStore(t)
  await mkdir(dir, { recursive: true })
  await writeFile(
    join(dir, 'bad.json'),
    fileText({ definition: { models: 'nope', instances: [{ a: 'M' }, { b: 'M', c: 'M' }], connections: { k: { from: 1, to: 'a' } } } }),
  )
  await assert.rejects(
    store.read({ path: 'bad.json' }),
    isValidation(/3 errors/, ['definition.models', 'definition.instances.1', 'definition.connections.k.from']),
  )
  await writeFile(join(dir, 'nodef.json'), fileText({ definition: { models: {} } }))
  await assert.rejects(store.read({ path: 'nodef.json' }), isValidation(/required/, ['definition.instances', 'definition.connections']))
  await writeFile(join(dir, 'baddate.json'), fileText({ created_at: 'yesterday' }))
  await assert.rejects(store.read({ path: 'baddate.json' }), isValidation(/ISO 8601/, ['created_at']))
})

test('a file written by a newer Mimic is refused with a clear message', async (t) => {
  const { store, dir } = await makeStore(t)
  await mkdir(dir, { recursive: true })
  await writeFile(join(dir, 'future.json'), fileText({ schema_version: CURRENT_SCHEMA_VERSION + 1, id: 'future' }))
  await assert.rejects(store.read({ path: 'future.json' }), isValidation(/written by a newer Mimic/, ['schema_version']))
  await assert.rejects(store.read({ id: 'future' }), isValidation(/written by a newer Mimic/))
})

test('a schema_version that is not a non-negative integer is refused', async (t) => {
  const { store, dir } = await makeStore(t)
  await mkdir(dir, { recursive: true })
  await writeFile(join(dir, 'odd.json'), fileText({ schema_version: '1' }))
  await assert.rejects(store.read({ path: 'odd.json' }), isValidation(/schema_version/, ['schema_version']))
})

test('a version 0 file (no schema_version) is migrated and loads; its stored version is reported', async (t) => {
  const { store, dir } = await makeStore(t)
  await mkdir(dir, { recursive: true })
  const v0 = JSON.parse(fileText({ id: 'old-one' }))
  delete v0.schema_version
  delete v0.server_version
  await writeFile(join(dir, 'old.json'), JSON.stringify(v0))
  const record = await store.read({ path: 'old.json' })
  assert.equal(record.schema_version, 0)
  assert.equal(record.server_version, '')
  assert.deepEqual(record.definition, sampleDefinition())
  assert.equal((await store.read({ id: 'old-one' })).path, join(dir, 'old.json'))
  const listed = (await store.list()).files.find((f) => f.id === 'old-one')
  assert.equal(listed?.schema_version, 0)
  assert.equal(listed?.error, undefined)
})

test('migrate upgrades a v0 object to the current version and leaves current files alone', () => {
  const v0 = { id: 'a', created_at: '2026-01-01T00:00:00Z', definition: {} }
  assert.deepEqual(migrate(v0), { ...v0, schema_version: CURRENT_SCHEMA_VERSION })
  assert.ok(!('schema_version' in v0), 'the input is not mutated')
  const v1 = { ...v0, schema_version: 1 }
  assert.deepEqual(migrate(v1), { ...v1, schema_version: 2 }, 'version 2 only adds an optional state section')
  assert.deepEqual(migrate({ ...v1, state: {} }), { ...v1, schema_version: 2 }, 'a version 1 file holds no state')
  const v2 = { ...v0, schema_version: 2 }
  assert.deepEqual(migrate(v2), v2)
  assert.throws(() => migrate({ ...v0, schema_version: 3 }), /newer Mimic/)
  assert.throws(() => migrate({ ...v0, schema_version: -1 }), ValidationError)
})

test('a selector needs exactly one of id or path', async (t) => {
  const { store } = await makeStore(t)
  await assert.rejects(store.read({}), isValidation(/exactly one of id or path/))
  await assert.rejects(store.read({ id: 'a', path: 'b.json' }), isValidation(/exactly one of id or path/))
  await assert.rejects(store.read({ id: '' }), isValidation(/non-empty/, ['id']))
  await assert.rejects(store.delete({}), isValidation(/exactly one of id or path/))
})
