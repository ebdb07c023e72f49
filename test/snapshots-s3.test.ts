// Snapshots in an S3 object store (`--snapshots-store s3://bucket/prefix`), against s3rver, an
// S3 server run in this process on 127.0.0.1 with a temp directory: real Mimic servers save with
// runtime state, list, load into a fresh server, delete; a fleet snapshot has one object per
// shard; the fencing epoch refuses the saves of a stale copy of a shard; retention, size bounds,
// a missing bucket and an unreachable endpoint give clear faults.
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import S3rver from 's3rver'
import type { MimicError } from '../src/errors.js'
import { S3SnapshotStore, type S3StoreOptions, type StoreEntry } from '../src/snapshots/s3-store.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const SNAP = `${SYS}/snapshots`
const BUCKET = 'mimic'

const COUNTER = {
  models: {
    Counter: {
      attributes: { count: { default: 0, type: 'int' }, level: 2.5, noisy: 0.0 },
      actions: [
        { function: '$out(count)', call: '$in(count) + 1' },
        { function: '$out(level)', call: '$in(level) * 1.5' },
        { noise: '$out(noisy)', seed: 3, std: 1.0 },
      ],
    },
  },
  instances: [{ c1: 'Counter' }],
}
const DEFINITION = { models: { M: { attributes: { x: 1 } } }, instances: [{ m1: 'M' }], connections: {} }

/** An S3 server on 127.0.0.1, port 0, its files in a temp directory. */
async function startS3(): Promise<{ endpoint: string; close(): Promise<void> }> {
  const directory = await mkdtemp(join(tmpdir(), 'mimic-s3-'))
  const server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true, configureBuckets: [{ name: BUCKET }] })
  const { port } = await server.run()
  let closed = false
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: async () => {
      if (closed) return
      closed = true
      await server.close()
      await rm(directory, { recursive: true, force: true })
    },
  }
}

async function values(t: TestServer): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {}
  for (const name of ['count', 'level', 'noisy']) out[name] = (await t.api('GET', `${SYS}/instances/c1/attributes/${name}/attr/internal_value`)).body
  return out
}

describe('snapshots in an S3 object store', () => {
  let s3: Awaited<ReturnType<typeof startS3>>
  const servers: TestServer[] = []
  const stores: S3SnapshotStore[] = []
  const saved: Record<string, string | undefined> = {}
  const open = async (options: Partial<S3StoreOptions> = {}): Promise<S3SnapshotStore> => {
    const store = await S3SnapshotStore.open({ url: `s3://${BUCKET}/unit`, serverVersion: 'test', ...options })
    stores.push(store)
    return store
  }
  const serve = async (store = `s3://${BUCKET}/plant`): Promise<TestServer> => {
    const t = await startTestServer({ config: { snapshotsStore: store } })
    servers.push(t)
    return t
  }

  before(async () => {
    s3 = await startS3()
    for (const name of ['AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_S3', 'AWS_REGION', 'AWS_DEFAULT_REGION', 'AWS_PROFILE']) {
      saved[name] = process.env[name]
      delete process.env[name]
    }
    // s3rver's fixed credentials; nothing of this machine's AWS set-up is read, and no instance metadata is asked for.
    Object.assign(process.env, {
      AWS_ENDPOINT_URL: s3.endpoint,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_CONFIG_FILE: '/nonexistent/aws-config',
      AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/aws-credentials',
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    })
  })
  after(async () => {
    for (const t of servers) await t.close()
    for (const store of stores) store.close()
    await s3.close()
    for (const [name, value] of Object.entries(saved))
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
  })

  it('a server saves with runtime state, lists it, and a fresh server with the same store loads it: the values round-trip', async () => {
    const first = await serve()
    assert.equal((await first.api('PUT', SYS, COUNTER)).status, 200)
    await first.call(SYS, 'run', { steps: 7 })
    const before = await values(first)
    assert.deepEqual(before.count, { value: 7 })
    const res = await first.call(SNAP, 'save', { name: 'half-way', label: 'seven steps', notes: 'ünïcode notes', include_state: true })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    const { id, persisted_path, state } = res.body.result
    assert.equal(persisted_path, `s3://${BUCKET}/plant/${id}/shard-1-of-1.json`)
    assert.equal(state, true)

    const list = (await first.call(SNAP, 'list')).body.result
    const entry = list.files.find((f: StoreEntry) => f.id === id) as StoreEntry
    assert.equal(entry.path, persisted_path)
    assert.deepEqual([entry.name, entry.label, entry.notes, entry.state, entry.schema_version], ['half-way', 'seven steps', 'ünïcode notes', true, 2])
    assert.deepEqual(entry.shards, { count: 1, saved: [1] })
    assert.ok(entry.size > 100 && typeof entry.epoch === 'number', JSON.stringify(entry))
    assert.equal((await first.api('GET', SNAP)).body.properties?.directory ?? `s3://${BUCKET}/plant`, `s3://${BUCKET}/plant`)

    const second = await serve()
    const loaded = await second.call(SNAP, 'load', { id })
    assert.equal(loaded.status, 200, JSON.stringify(loaded.body))
    assert.equal(loaded.body.result.state, true)
    assert.deepEqual(await values(second), before)
    // Both go on alike from there; and it loads by name and by the URL the list shows, too.
    await first.call(SYS, 'run', { steps: 3 })
    await second.call(SYS, 'run', { steps: 3 })
    assert.deepEqual(await values(second), await values(first))
    assert.deepEqual((await second.api('GET', `${SYS}/instances/c1/attributes/count/attr/internal_value`)).body, { value: 10 })
    for (const path of ['half-way', persisted_path]) {
      assert.equal((await second.call(SNAP, 'load', { path })).status, 200)
      assert.deepEqual(await values(second), before)
    }
  })

  it('the older of two copies of a shard is refused (409) once the newer one has saved', async () => {
    // servers[0] took its epoch first; servers[1] is the newer copy of the same shard.
    const [older, newer] = servers as [TestServer, TestServer]
    assert.equal((await older.call(SNAP, 'save')).status, 200, 'nothing newer has saved since the last save: the older may save')
    assert.equal((await newer.call(SNAP, 'save')).status, 200)
    const refused = await older.call(SNAP, 'save', { include_state: true })
    assert.equal(refused.status, 409, JSON.stringify(refused.body))
    assert.equal(refused.body.event, 'conflict')
    assert.match(refused.body.error.message, /Refusing to save shard 1 of 1 to s3:\/\/mimic\/plant: a newer copy of this shard \(epoch \d+\) saved/)
    assert.match(refused.body.error.message, /stale copy/)

    // The same with two stores: the newer saves, the older is refused, the newer goes on saving.
    const a = await open({ url: `s3://${BUCKET}/fence` })
    const b = await open({ url: `s3://${BUCKET}/fence` })
    assert.ok(b.epoch > a.epoch)
    await a.save(DEFINITION)
    await b.save(DEFINITION)
    await assert.rejects(a.save(DEFINITION), (err: MimicError) => err.status === 409 && /newer copy of this shard/.test(err.message))
    await b.save(DEFINITION)
    // Another shard has its own fence.
    const other = await open({ url: `s3://${BUCKET}/fence`, shard: { index: 2, count: 2 } })
    await other.save(DEFINITION)
  })

  it('a fleet snapshot is one id with one object per shard, each shard loading its own', async () => {
    const url = `s3://${BUCKET}/fleet`
    const one = await open({ url, shard: { index: 1, count: 2 } })
    const two = await open({ url, shard: { index: 2, count: 2 } })
    const id = 'fleet-0001'
    const defOne = { ...DEFINITION, instances: [{ m1: 'M' }] }
    const defTwo = { ...DEFINITION, instances: [{ m2: 'M' }] }
    await one.save(defOne, { label: 'fleet' }, { id })
    await two.save(defTwo, { label: 'fleet' }, { id })
    const [entry] = (await one.list()).files as StoreEntry[]
    assert.deepEqual([entry?.id, entry?.shards, entry?.error], [id, { count: 2, saved: [1, 2] }, undefined])
    // Fresh stores (other processes) read their own shard's object back.
    const again = await open({ url, shard: { index: 2, count: 2 } })
    assert.deepEqual((await again.read({ id })).definition.instances, [{ m2: 'M' }])
    assert.deepEqual((await (await open({ url, shard: { index: 1, count: 2 } })).read({ id })).definition.instances, [{ m1: 'M' }])
    // A single server sees it, unusable, and is told why.
    const single = await open({ url })
    const [seen] = (await single.list()).files
    assert.match(seen?.error ?? '', /saved by a fleet of 2 \(shards 1, 2 of 2\) without shard 1 of 1/)
    await assert.rejects(
      single.read({ id }),
      (err: MimicError) => err.status === 404 && /has no object for shard 1 of 1.*shard-1-of-2\.json, shard-2-of-2\.json/.test(err.message),
    )
    assert.equal((await single.latest()).latest, undefined)
    // A stale copy of shard 2 cannot overwrite the newer one's object of the same id.
    await again.save(defTwo, { label: 'fleet' }, { id })
    await assert.rejects(two.save(defTwo, {}, { id }), (err: MimicError) => err.status === 409)
    // Deleting the snapshot deletes every shard's object.
    await again.delete({ id })
    assert.deepEqual((await one.list()).files, [])
    await assert.rejects(one.read({ path: `${url}/${id}` }), (err: MimicError) => err.status === 404 && /File not found/.test(err.message))
  })

  it('delete over HTTP, retention of automatic snapshots, and bad selectors', async () => {
    const t = servers[1]!
    const { id } = (await t.call(SNAP, 'save', { label: 'doomed' })).body.result
    const deleted = await t.call(SNAP, 'delete', { id })
    assert.deepEqual(deleted.body.result, { id, deleted: true })
    assert.ok(!(await t.call(SNAP, 'list')).body.result.files.some((f: StoreEntry) => f.id === id))
    const missing = await t.call(SNAP, 'load', { id })
    assert.equal(missing.status, 404)
    assert.match(missing.body.error.message, /File not found: no snapshot with id .* in memory or in s3:\/\/mimic\/plant/)
    assert.equal((await t.call(SNAP, 'delete', { id })).status, 404)
    assert.equal((await t.call(SNAP, 'load', { path: 's3://other-bucket/x' })).status, 403)
    assert.equal((await t.call(SNAP, 'load', { path: 'no-such-name' })).status, 404)
    const dir = await t.call(SNAP, 'save', { directory: 'plant-a' })
    assert.equal(dir.status, 422)
    assert.match(dir.body.error.message, /give a name \(or nothing\), not a directory/)

    const store = await open({ url: `s3://${BUCKET}/retention` })
    const byHand = await store.save(DEFINITION, { label: 'by hand' })
    const automatic = []
    for (let i = 0; i < 4; i++) automatic.push((await store.save(DEFINITION, { label: `auto ${i}` }, { automatic: true, state: undefined })).id)
    const pruned = await store.prune(2)
    assert.equal(pruned.length, 2)
    const left = (await store.list()).files.map((f) => f.id)
    assert.deepEqual(left, [byHand.id, automatic[2], automatic[3]])
    assert.equal((await store.latest()).latest?.id, automatic[3])
  })

  it('a snapshot above the size limit is neither saved nor read', async () => {
    const url = `s3://${BUCKET}/limits`
    const store = await open({ url, memoryLimit: { count: 10, bytes: 4096 } })
    const big = { models: { M: { attributes: { x: 'x'.repeat(5000) } } }, instances: [{ m1: 'M' }], connections: {} }
    await assert.rejects(
      store.save(big),
      (err: MimicError) => err.status === 409 && /more than the 4096 bytes a snapshot may be: nothing was saved/.test(err.message),
    )
    assert.deepEqual((await store.list()).files, [])
    // An object put there by something else, larger than the limit.
    const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true })
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'limits/huge/shard-1-of-1.json', Body: 'x'.repeat(1 << 20) }))
    client.destroy()
    await assert.rejects(
      store.read({ id: 'huge' }),
      (err: MimicError) => err.status === 409 && /Refusing to read .*huge.* 1048576 bytes, more than the 4096/.test(err.message),
    )
    const [foreign] = (await store.list()).files
    assert.match(foreign?.error ?? '', /not saved by Mimic/)
  })

  it('a missing bucket and an unreachable endpoint are clear faults, at start and later (503 with the endpoint)', async () => {
    await assert.rejects(open({ url: 's3://no-such-bucket/x' }), (err: MimicError) => {
      assert.equal(err.status, 503)
      assert.match(err.message, new RegExp(`bucket 'no-such-bucket' does not exist at ${s3.endpoint}: create it first`))
      return true
    })
    await assert.rejects(startTestServer({ config: { snapshotsStore: 's3://no-such-bucket' } }), /bucket 'no-such-bucket' does not exist/)
    const nowhere = 'http://127.0.0.1:9'
    await assert.rejects(open({ env: { AWS_ENDPOINT_URL: nowhere } }), (err: MimicError) => {
      assert.equal(err.status, 503)
      assert.match(err.message, /Cannot open the snapshot store s3:\/\/mimic\/unit at http:\/\/127\.0\.0\.1:9: the object store is unreachable: .*ECONNREFUSED/)
      return true
    })
    // A store that goes away while the server runs: the calls answer 503 `store_unavailable`.
    const gone = await startS3()
    process.env.AWS_ENDPOINT_URL = gone.endpoint
    let t: TestServer
    try {
      t = await serve(`s3://${BUCKET}/gone`)
    } finally {
      process.env.AWS_ENDPOINT_URL = s3.endpoint
    }
    await gone.close()
    for (const [method, kwargs] of [
      ['save', {}],
      ['list', {}],
      ['load', { id: 'x' }],
    ] as const) {
      const res = await t.call(SNAP, method, kwargs)
      assert.equal(res.status, 503, `${method}: ${JSON.stringify(res.body)}`)
      assert.equal(res.body.event, 'store_unavailable')
      assert.ok(res.body.error.message.includes(gone.endpoint), res.body.error.message)
      assert.match(res.body.error.message, /unreachable/)
    }
  })
})
