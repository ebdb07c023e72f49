/**
 * A snapshots directory that cannot be written: `save` fails with a clear fault, nothing is
 * half-written, nothing is kept as if it had been saved, and the system keeps running.
 *
 * Tests run as root, where file modes do not stop writes. Two set-ups that do work as root:
 * a snapshots directory below a regular file (ENOTDIR -> 409), and a server run by `setpriv`
 * without the capabilities that override file modes (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH)
 * against a 0555 directory (EACCES -> 403). It stays root, so it reads the checkout wherever
 * that lives (a clone under /root, a 0700 temp directory), as another user could not.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from '../helpers/server.js'
import { SYS, request, serveMimic, type ServedMimic } from './helpers.js'

const MODEL = { attributes: { v: 1.0 } }

/** Structure changes and runs still work: the server is not wedged by the failed save. */
async function assertStillRunning(api: (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>): Promise<void> {
  assert.equal((await api('PUT', `${SYS}/instances`, { second: 'M' })).status, 200)
  assert.equal((await api('POST', `${SYS}/method/run`, { kwargs: { steps: 2 } })).status, 200)
  assert.equal((await api('PUT', `${SYS}/instances/first/attributes/v/attr/internal_value`, { value: 7 })).status, 200)
  assert.deepEqual((await api('GET', `${SYS}/instances/first/attributes/v/attr/internal_value`)).body, { value: 7 })
  assert.equal((await api('DELETE', `${SYS}/instances/second`)).status, 200)
}

describe('snapshot directory that cannot be written', () => {
  let t: TestServer
  let blocker: string
  before(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mimic-rel-snapdir-'))
    blocker = join(dir, 'not-a-directory')
    await writeFile(blocker, 'a regular file where the snapshots directory should be\n')
    t = await startTestServer({ config: { snapshotsDir: join(blocker, 'snapshots') } })
    assert.equal((await t.api('PUT', SYS, { models: { M: MODEL }, instances: { first: 'M' } })).status, 200)
  })
  after(async () => {
    await t.close()
    await rm(join(blocker, '..'), { recursive: true, force: true })
  })

  it('below a regular file: save is a 409 naming the path and the reason; nothing is kept or written', async () => {
    for (const kwargs of [{}, { label: 'x' }, { name: 'named' }, { path: 'p.json' }]) {
      const res = await t.call(`${SYS}/snapshots`, 'save', kwargs)
      assert.equal(res.status, 409, `${JSON.stringify(kwargs)} -> ${JSON.stringify(res.body)}`)
      assert.equal(res.body.type, 'fault')
      assert.match(res.body.error.message, /not-a-directory/)
      assert.match(res.body.error.message, /ENOTDIR|not a directory/)
    }
    const list = await t.call(`${SYS}/snapshots`, 'list')
    assert.deepEqual(list.body.result.in_memory, [], 'a failed save is not listed as saved')
    assert.equal((await t.call(`${SYS}/snapshots`, 'persist_all_in_memory')).status, 200)
    await assertStillRunning(t.api)
  })

  it('a missing directory is created by the first save', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mimic-rel-missing-'))
    const s = await startTestServer({ config: { snapshotsDir: join(dir, 'a', 'b', 'snapshots') } })
    try {
      assert.equal((await s.api('PUT', SYS, { models: { M: MODEL }, instances: { first: 'M' } })).status, 200)
      const saved = await s.call(`${SYS}/snapshots`, 'save')
      assert.equal(saved.status, 200, JSON.stringify(saved.body))
      assert.deepEqual(await readdir(join(dir, 'a', 'b', 'snapshots')), [`${saved.body.result.id}.json`])
    } finally {
      await s.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('read-only snapshot directory (server run without the right to override file modes)', () => {
  // Root without the capabilities that override file modes: the directory's 0555 then stops its
  // writes, while the checkout (root's own files, wherever it lives) stays readable to it.
  const withoutOverride = ['setpriv', '--bounding-set=-dac_override,-dac_read_search']
  const canDrop = process.getuid?.() === 0 && spawnSync(withoutOverride[0]!, [...withoutOverride.slice(1), 'true']).status === 0
  const readOnlyByMode = canDrop || process.getuid?.() !== 0
  let dir: string
  let snapshots: string
  let server: ServedMimic | undefined
  const key = 'reliability-key'
  const api = (method: string, path: string, body?: unknown): ReturnType<typeof request> =>
    request(`${server!.url}${path}`, method, body, { authorization: `Bearer ${key}` })

  before(async () => {
    if (!canDrop && !readOnlyByMode) return
    dir = await mkdtemp(join(tmpdir(), 'mimic-rel-ro-'))
    await chmod(dir, 0o755)
    snapshots = join(dir, 'snapshots')
    await mkdir(snapshots, { mode: 0o755 })
    await mkdir(join(dir, 'extensions'), { mode: 0o755 })
    if (readOnlyByMode) await chmod(snapshots, 0o555)
    server = await serveMimic(['--snapshots-dir', snapshots, '--extensions', join(dir, 'extensions'), '--product-key', key, '--python', '/usr/bin/python3'], {
      wrap: canDrop ? withoutOverride : [],
    })
    assert.equal((await api('PUT', SYS, { models: { M: MODEL }, instances: { first: 'M' } })).status, 200)
  })
  after(async () => {
    server?.kill()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('save is a 403 saying permission denied; the directory stays empty; the system keeps running', async (ctx) => {
    if (!server) return ctx.skip('needs root with setpriv, or a user other than root')
    for (const kwargs of [{}, { name: 'n' }, { directory: 'sub', name: 'n' }]) {
      const res = await api('POST', `${SYS}/snapshots/method/save`, { kwargs })
      assert.equal(res.status, 403, `${JSON.stringify(kwargs)} -> ${JSON.stringify(res.body)}`)
      assert.equal(res.body.event, 'forbidden')
      assert.match(res.body.error.message, /EACCES|permission denied/i)
      assert.ok(res.body.error.message.includes(snapshots), res.body.error.message)
    }
    assert.deepEqual(await readdir(snapshots), [], 'no file and no temp file left behind')
    const list = await api('POST', `${SYS}/snapshots/method/list`, {})
    assert.deepEqual(list.body.result, { in_memory: [], files: [] })
    await assertStillRunning(api)
    assert.equal(server.child.exitCode, null)
    assert.equal(server.logs.filter((r) => Number(r.level) >= 60).length, 0)
  })
})

describe('a FIFO named like a snapshot in the snapshots directory', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
    assert.equal((await t.api('PUT', SYS, { models: { M: MODEL }, instances: { first: 'M' } })).status, 200)
    await mkdir(t.snapshots, { recursive: true })
    spawnSync('mkfifo', [join(t.snapshots, 'pipe.json')])
    spawnSync('mkfifo', [join(t.snapshots, 'feed.json')])
  })
  after(() => t.close())

  it('load by path and by id answer a 422 naming it at once; list, save and the system go on', async () => {
    for (const kwargs of [{ path: 'pipe.json' }, { id: 'feed' }]) {
      const res = await t.call(`${SYS}/snapshots`, 'load', kwargs)
      assert.equal(res.status, 422, `${JSON.stringify(kwargs)} -> ${JSON.stringify(res.body)}`)
      assert.match(res.body.error.message, /is a FIFO \(named pipe\), not a file/)
    }
    const list = await t.call(`${SYS}/snapshots`, 'list')
    assert.equal(list.status, 200)
    assert.equal(list.body.result.files.filter((f: { error?: string }) => /FIFO/.test(f.error ?? '')).length, 2)
    assert.ok(t.logs.some((r) => r.msg === 'unusable entry in the snapshots directory: skipped'))
    assert.equal((await t.call(`${SYS}/snapshots`, 'save')).status, 200)
    assert.equal((await t.call(`${SYS}/instances/first`, 'prepare')).status, 200)
    await assertStillRunning(t.api)
  })
})
