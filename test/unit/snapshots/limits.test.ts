/**
 * What a client can grow in the snapshot store is bounded, and what an operator (or an attacker
 * with write access to the directory) puts in it cannot wedge the server: a FIFO or a device
 * named like a snapshot is named in a fault, never waited on.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdir, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { ConflictError, ValidationError } from '../../../src/errors.js'
import { makeStore, sampleDefinition } from './helpers.js'

const fifo = (path: string): void => void execFileSync('mkfifo', [path])

test('a FIFO in the snapshots directory is refused by name on read, load by id and delete, and listed as unusable', async (t) => {
  const { store, dir } = await makeStore(t)
  await mkdir(dir, { recursive: true })
  fifo(join(dir, 'pipe.json'))
  fifo(join(dir, 'f00d.json'))
  await symlink('/dev/zero', join(dir, 'zero.json'))
  await assert.rejects(store.read({ path: 'pipe.json' }), (err: unknown) => {
    assert.ok(err instanceof ValidationError, String(err))
    assert.match(err.message, /pipe\.json is a FIFO \(named pipe\), not a file/)
    assert.deepEqual(err.details, [{ path: 'path', message: 'is a FIFO (named pipe)' }])
    return true
  })
  await assert.rejects(store.read({ id: 'f00d' }), (err: unknown) => err instanceof ValidationError && /FIFO/.test(err.message))
  // A link to a device outside the snapshots directory is refused by containment first.
  await assert.rejects(store.read({ path: 'zero.json' }), /outside|not a file/)
  await assert.rejects(store.delete({ path: 'pipe.json' }), ValidationError)
  const { files } = await store.list()
  const pipe = files.find((f) => f.path.endsWith('pipe.json'))
  assert.ok(pipe, 'the FIFO is listed')
  assert.match(pipe.error ?? '', /FIFO \(named pipe\), not a snapshot file: skipped/)
  // Saving goes on beside it, and a save over it is refused without touching it.
  const saved = await store.save(sampleDefinition())
  assert.equal((await store.read({ id: saved.id })).id, saved.id)
  await assert.rejects(store.save(sampleDefinition(), { name: 'pipe' }), ConflictError)
})

test('memory mode: a save beyond the in-memory limit is a 409 that says how to make room; nothing kept is lost', async (t) => {
  const { store } = await makeStore(t, { mode: 'memory', memoryLimit: { count: 3, bytes: 1 << 20 } })
  const ids: string[] = []
  for (let i = 0; i < 3; i++) ids.push((await store.save(sampleDefinition(), { label: `s${i}` })).id)
  await assert.rejects(store.save(sampleDefinition(), { label: 'one too many' }), (err: unknown) => {
    assert.ok(err instanceof ConflictError, String(err))
    assert.match(err.message, /3 snapshots .* kept in memory only.*persist_all_in_memory.*--snapshots-retention/)
    return true
  })
  assert.deepEqual(
    (await store.list()).in_memory.map((e) => e.id),
    ids,
  )
  // Persisting makes room: the copies of persisted snapshots are dropped first, the files answer.
  await store.persistAllInMemory()
  const next = await store.save(sampleDefinition(), { label: 'after persisting' })
  assert.ok((await store.list()).in_memory.length <= 3)
  for (const id of [...ids, next.id]) assert.equal((await store.read({ id })).id, id)
})

test('memory mode with a retention keeps the newest n memory-only snapshots', async (t) => {
  const { store } = await makeStore(t, { mode: 'memory', memoryRetention: 2 })
  const ids: string[] = []
  for (let i = 0; i < 5; i++) ids.push((await store.save(sampleDefinition(), { label: `s${i}` })).id)
  assert.deepEqual(
    (await store.list()).in_memory.map((e) => e.id),
    ids.slice(3),
  )
  await assert.rejects(store.read({ id: ids[0]! }), /File not found/)
})

test('durable mode: in-memory copies are bounded by bytes as well, every snapshot still readable from its file', async (t) => {
  const { store } = await makeStore(t, { memoryLimit: { count: 1000, bytes: 4096 } })
  const ids: string[] = []
  for (let i = 0; i < 20; i++) ids.push((await store.save(sampleDefinition(), { label: `s${i}` })).id)
  const { in_memory, files } = await store.list()
  assert.ok(in_memory.length < 20, `${in_memory.length} copies kept`)
  assert.equal(files.length, 20)
  for (const id of ids) assert.equal((await store.read({ id })).id, id)
})
