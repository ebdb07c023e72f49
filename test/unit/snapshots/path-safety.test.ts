import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import { ConflictError, ForbiddenError, ValidationError } from '../../../src/errors.js'
import { SnapshotStore } from '../../../src/snapshots/index.js'
import { allFiles, makeStore, sampleDefinition, tempDir } from './helpers.js'

function isForbidden(field?: string) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof ForbiddenError, `expected ForbiddenError, got ${String(err)}`)
    assert.equal(err.status, 403)
    assert.match(err.message, /outside the allowed directories|dangling symlink/)
    if (field) assert.equal(err.details[0]?.path, field)
    return true
  }
}

function isInvalid(field: string) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof ValidationError, `expected ValidationError, got ${String(err)}`)
    assert.equal(err.status, 422)
    assert.equal(err.details[0]?.path, field)
    return true
  }
}

test('paths escaping the snapshots directory with .. are refused with 403 and nothing is written', async (t) => {
  const { store, root } = await makeStore(t)
  await assert.rejects(store.save(sampleDefinition(), { path: '../escape.json' }), isForbidden('path'))
  await assert.rejects(store.save(sampleDefinition(), { path: 'a/../../escape.json' }), isForbidden('path'))
  await assert.rejects(store.save(sampleDefinition(), { directory: '..', name: 'escape' }), isForbidden('directory'))
  await assert.rejects(store.read({ path: '../../../etc/passwd' }), isForbidden('path'))
  await assert.rejects(store.delete({ path: '../x.json' }), isForbidden('path'))
  assert.deepEqual(await allFiles(root), [])
  assert.deepEqual((await store.list()).in_memory, [], 'a refused save is not kept in memory')
})

test('a path that goes down and back up but stays inside is accepted', async (t) => {
  const { store, dir } = await makeStore(t)
  const saved = await store.save(sampleDefinition(), { path: 'a/../inside.json' })
  assert.equal(saved.persisted_path, join(dir, 'inside.json'))
})

test('absolute paths elsewhere are refused; operator-allowed roots are accepted', async (t) => {
  const { store, root } = await makeStore(t)
  const elsewhere = await tempDir(t)
  await assert.rejects(store.save(sampleDefinition(), { path: join(elsewhere, 'x.json') }), isForbidden('path'))
  await assert.rejects(store.save(sampleDefinition(), { directory: elsewhere, name: 'x' }), isForbidden('directory'))
  await assert.rejects(store.read({ path: '/etc/hostname' }), isForbidden('path'))

  const allowed = new SnapshotStore({ dir: join(root, 'snapshots'), mode: 'durable', serverVersion: 'x', allowedRoots: [elsewhere] })
  const saved = await allowed.save(sampleDefinition(), { directory: join(elsewhere, 'sub'), name: 'ok' })
  assert.equal(saved.persisted_path, join(elsewhere, 'sub', 'ok.json'))
  assert.equal((await allowed.read({ path: saved.persisted_path })).id, saved.id)
  assert.deepEqual((await allowed.list()).files, [], 'list covers the snapshots directory only')
})

test('a symlink inside the directory that points outside is refused (save, read, delete)', async (t) => {
  const { store, dir } = await makeStore(t)
  const outside = await tempDir(t)
  await mkdir(dir, { recursive: true })
  await writeFile(join(outside, 'victim.json'), JSON.stringify({ id: 'v', definition: {} }))
  await symlink(outside, join(dir, 'link-dir'))
  await symlink(join(outside, 'victim.json'), join(dir, 'link-file.json'))
  await assert.rejects(store.save(sampleDefinition(), { path: 'link-dir/x.json' }), isForbidden('path'))
  await assert.rejects(store.save(sampleDefinition(), { directory: 'link-dir', name: 'x' }), isForbidden('directory'))
  await assert.rejects(store.save(sampleDefinition(), { path: 'link-file.json' }), isForbidden('path'))
  await assert.rejects(store.read({ path: 'link-file.json' }), isForbidden('path'))
  await assert.rejects(store.delete({ path: 'link-dir/victim.json' }), isForbidden('path'))
  assert.deepEqual(await allFiles(outside), ['victim.json'])
  assert.equal(JSON.parse(await readFile(join(outside, 'victim.json'), 'utf8')).id, 'v')
  const listed = (await store.list()).files
  assert.deepEqual(listed, [], 'symlinks are not followed by list')
})

test('a dangling symlink inside the directory cannot be used to create a file outside', async (t) => {
  const { store, dir } = await makeStore(t)
  const outside = await tempDir(t)
  await mkdir(dir, { recursive: true })
  await symlink(join(outside, 'not-yet'), join(dir, 'dangling'))
  await symlink(join(outside, 'new.json'), join(dir, 'dangling.json'))
  await assert.rejects(store.save(sampleDefinition(), { path: 'dangling/x.json' }), isForbidden())
  await assert.rejects(store.save(sampleDefinition(), { path: 'dangling.json' }), isForbidden())
  assert.deepEqual(await allFiles(outside), [])
})

test('a snapshots directory reached through a symlink works and stays contained', async (t) => {
  const root = await tempDir(t)
  const real = join(root, 'real')
  await mkdir(real)
  await symlink(real, join(root, 'via-link'))
  const store = new SnapshotStore({ dir: join(root, 'via-link'), mode: 'durable', serverVersion: 'x' })
  const saved = await store.save(sampleDefinition(), { path: 'p.json' })
  assert.equal(saved.persisted_path, join(real, 'p.json'))
  assert.equal((await store.read({ path: join(root, 'via-link', 'p.json') })).id, saved.id)
  await assert.rejects(store.save(sampleDefinition(), { path: join(root, 'outside.json') }), isForbidden('path'))
})

test('names with separators, "..", NUL or control characters are refused with 422 on `name`', async (t) => {
  const { store, root } = await makeStore(t)
  for (const name of ['a/b', '..', '.', 'a\\b', 'bad\u0000name', 'tab\tname', 'nl\nname', '', 'x'.repeat(300)]) {
    await assert.rejects(store.save(sampleDefinition(), { name }), isInvalid('name'), JSON.stringify(name))
  }
  await assert.rejects(store.save(sampleDefinition(), { path: 'a\u0000b.json' }), isInvalid('path'))
  await assert.rejects(store.save(sampleDefinition(), { directory: 'd\u0001', name: 'x' }), isInvalid('directory'))
  await assert.rejects(store.save(sampleDefinition(), { path: 'p.json', name: 'x' }), isInvalid('path'))
  assert.deepEqual(await allFiles(root), [])
})

test('saving over a file that is not a Mimic snapshot is refused with 409 and the file is untouched', async (t) => {
  const { store, dir } = await makeStore(t)
  await mkdir(join(dir, 'a-directory.json'), { recursive: true })
  await writeFile(join(dir, 'config.json'), '{"precious": true}')
  await writeFile(join(dir, 'notes.json'), 'free text')
  for (const path of ['config.json', 'notes.json', 'a-directory.json']) {
    await assert.rejects(store.save(sampleDefinition(), { path }), (err: unknown) => {
      assert.ok(err instanceof ConflictError, String(err))
      assert.equal(err.status, 409)
      assert.match(err.message, /not a Mimic snapshot/)
      return true
    })
  }
  await assert.rejects(store.save(sampleDefinition(), { name: 'config' }), ConflictError)
  assert.equal(await readFile(join(dir, 'config.json'), 'utf8'), '{"precious": true}')
  assert.equal(await readFile(join(dir, 'notes.json'), 'utf8'), 'free text')
  assert.deepEqual((await store.list()).in_memory, [])
  assert.equal(existsSync(join(dir, 'a-directory.json')), true)
})
