import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { ConflictError, NotFoundError } from '../../../src/errors.js'
import { SnapshotStore } from '../../../src/snapshots/index.js'
import { allFiles, makeStore, sampleDefinition } from './helpers.js'

test('delete by id removes the snapshot from memory and its file', async (t) => {
  const { store, dir } = await makeStore(t)
  const keep = await store.save(sampleDefinition())
  const gone = await store.save(sampleDefinition())
  assert.deepEqual(await store.delete({ id: gone.id }), { id: gone.id, deleted: true })
  assert.equal(existsSync(gone.persisted_path), false)
  assert.deepEqual(await allFiles(dir), [`${keep.id}.json`])
  assert.deepEqual(
    (await store.list()).in_memory.map((e) => e.id),
    [keep.id],
  )
  await assert.rejects(store.read({ id: gone.id }), NotFoundError)
  await assert.rejects(store.delete({ id: gone.id }), NotFoundError, 'a second delete finds nothing')
})

test('delete by id of a memory-only snapshot', async (t) => {
  const { store } = await makeStore(t, { mode: 'memory' })
  const saved = await store.save(sampleDefinition())
  assert.deepEqual(await store.delete({ id: saved.id }), { id: saved.id, deleted: true })
  assert.deepEqual((await store.list()).in_memory, [])
})

test('delete by id finds a file that only the directory knows (another server saved it)', async (t) => {
  const { store, dir } = await makeStore(t)
  const saved = await store.save(sampleDefinition(), { directory: 'a/b', name: 'named' })
  const fresh = new SnapshotStore({ dir, mode: 'durable', serverVersion: 'x' })
  await fresh.delete({ id: saved.id })
  assert.deepEqual(await allFiles(dir), [])
})

test('delete by path removes the file and the in-memory snapshot with that id', async (t) => {
  const { store, dir } = await makeStore(t)
  const saved = await store.save(sampleDefinition(), { path: 'x/y.json' })
  assert.deepEqual(await store.delete({ path: 'x/y.json' }), { id: saved.id, deleted: true })
  assert.equal(existsSync(join(dir, 'x', 'y.json')), false)
  assert.deepEqual((await store.list()).in_memory, [])
})

test('delete refuses a file that is not a Mimic snapshot (409) and leaves it in place', async (t) => {
  const { store, dir } = await makeStore(t)
  await mkdir(dir, { recursive: true })
  const foreign = join(dir, 'package.json')
  await writeFile(foreign, '{"name": "not-a-snapshot"}')
  await assert.rejects(store.delete({ path: 'package.json' }), (err: unknown) => {
    assert.ok(err instanceof ConflictError)
    assert.equal(err.status, 409)
    assert.match(err.message, /not a Mimic snapshot/)
    return true
  })
  assert.equal(await readFile(foreign, 'utf8'), '{"name": "not-a-snapshot"}')
  await writeFile(join(dir, 'garbage.json'), 'xx')
  await assert.rejects(store.delete({ id: 'garbage' }), ConflictError, '<id>.json that is not a snapshot is not deleted')
  assert.ok(existsSync(join(dir, 'garbage.json')))
})

test('delete by id leaves a file alone when someone else replaced it with another snapshot', async (t) => {
  const { store, dir } = await makeStore(t)
  const a = await store.save(sampleDefinition(), { path: 'shared.json' })
  const other = new SnapshotStore({ dir, mode: 'durable', serverVersion: 'x' })
  const b = await other.save(sampleDefinition(), { path: 'shared.json' })
  await store.delete({ id: a.id })
  assert.equal(JSON.parse(await readFile(join(dir, 'shared.json'), 'utf8')).id, b.id)
})

test('delete by path of a missing file: 404', async (t) => {
  const { store } = await makeStore(t)
  await assert.rejects(store.delete({ path: 'missing.json' }), /File not found/)
})
