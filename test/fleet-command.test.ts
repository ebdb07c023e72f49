// `mimic fleet status|run|save|load|list`: three real shards (`mimic serve --shard I/3`, one
// system file whose fleet comes from `generate:`) with their snapshots in s3rver, an S3 server
// run in this process on 127.0.0.1; the fleet command is the compiled `mimic` a user runs, in its
// own process. A missing and an unreachable shard are reported with a non-zero exit status.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3'
import S3rver from 's3rver'
import { resolveShards } from '../src/fleet/targets.js'
import { coverage } from '../src/fleet/fleet.js'
import { serveProcess, type ServerProcess } from './helpers/process.js'
import { freePort } from './helpers/ports.js'
import { startTestServer, TEST_KEY } from './helpers/server.js'

const BIN = new URL('../bin/mimic.js', import.meta.url).pathname
const SYS = '/api/v3/system'
const BUCKET = 'mimic'
const COUNT = 30

const SYSTEM = `
models:
  meter:
    meta_parameters: { site: { type: string, default: north } }
    attributes: { count: { default: 0, type: int } }
    actions:
      - { function: "$out(count)", call: "$in(count) + 1" }
generate:
  - { template: meter, count: ${COUNT}, name: "meter_{i:02}", parameters: { site: { cycle: [north, south] } } }
`

/** s3rver's fixed credentials; nothing of this machine's AWS set-up is read. */
function s3Env(endpoint: string): Record<string, string> {
  return {
    AWS_ENDPOINT_URL: endpoint,
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
    AWS_REGION: 'us-east-1',
    AWS_CONFIG_FILE: '/nonexistent/aws-config',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/aws-credentials',
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  }
}

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs the compiled `mimic` in its own process (the S3 server runs in this one: no spawnSync). */
function mimic(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, MIMIC_PRODUCT_KEY: TEST_KEY, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => (stdout += c))
    child.stderr.on('data', (c: Buffer) => (stderr += c))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** `mimic fleet <args> --json`, its report parsed. */
async function fleetJson(args: string[], env: Record<string, string> = {}): Promise<{ run: Run; report: any }> {
  const run = await mimic(['fleet', ...args, '--json'], env)
  let report: any
  try {
    report = JSON.parse(run.stdout)
  } catch {
    assert.fail(`no JSON report (exit ${run.code}):\n${run.stdout}\n${run.stderr}`)
  }
  return { run, report }
}

async function instanceNames(shard: ServerProcess): Promise<string[]> {
  return (await shard.api('GET', `${SYS}/instances`)).body.children.map((c: { name: string }) => c.name)
}

describe('mimic fleet: three shards, snapshots in S3', () => {
  let dir: string
  let s3: S3rver
  let endpoint: string
  const shards: ServerProcess[] = []
  let urls: string[] = []

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-fleet-cmd-'))
    s3 = new S3rver({ address: '127.0.0.1', port: 0, directory: join(dir, 's3'), silent: true, configureBuckets: [{ name: BUCKET }] })
    const { port } = await s3.run()
    endpoint = `http://127.0.0.1:${port}`
    const system = join(dir, 'fleet.yaml')
    await writeFile(system, SYSTEM)
    // The three shards start at once (each mostly waits for its own start-up).
    shards.push(
      ...(await Promise.all(
        [1, 2, 3].map((i) =>
          serveProcess(
            ['--system', system, '--shard', `${i}/3`, '--snapshots-store', `s3://${BUCKET}/fleet`, '--snapshots-dir', join(dir, `snaps-${i}`)],
            s3Env(endpoint),
          ),
        ),
      )),
    )
    urls = shards.map((s) => s.url)
  })

  after(async () => {
    for (const s of shards) await s.stop('SIGTERM')
    await s3.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('status: every shard with its I/N and instances, the total is the whole fleet', async () => {
    // The JSON and the text reports are asked for at once: each is a `mimic` process that mostly waits.
    const [{ run, report }, text] = await Promise.all([
      fleetJson(['status', '--shards', ...urls]),
      // The same as text, with the shards from MIMIC_SHARDS (comma-separated).
      mimic(['fleet', 'status'], { MIMIC_SHARDS: urls.join(',') }),
    ])
    assert.equal(run.code, 0, run.stderr)
    assert.equal(report.ok, true)
    assert.deepEqual(
      report.shards.map((s: any) => `${s.shard.index}/${s.shard.count}`),
      ['1/3', '2/3', '3/3'],
    )
    assert.deepEqual(report.coverage, { ok: true, count: 3, missing: [], duplicated: [], mismatched: [] })
    assert.equal(report.total.instances, COUNT)
    // The union of the shards' instances is the fleet, each name once.
    const all = (await Promise.all(shards.map(instanceNames))).flat().sort()
    assert.equal(all.length, COUNT)
    assert.equal(new Set(all).size, COUNT)
    for (const s of report.shards) assert.equal(s.health, 'ok')

    assert.equal(text.code, 0, text.stderr)
    assert.match(text.stdout, /^SHARD\s+URL\s+HEALTH\s+INSTANCES\s+STATE\s+STEPS$/m)
    for (const [i, url] of urls.entries()) assert.match(text.stdout, new RegExp(`^${i + 1}/3\\s+${url}\\s+ok\\s+\\d+`, 'm'))
    assert.match(text.stdout, new RegExp(`^total\\s+3 of 3 shards answering, ${COUNT} instances`, 'm'))
    assert.equal(text.stderr, '')
  })

  it('a DNS name with one address is one shard (its name kept); a name with several is one shard per address', async () => {
    const port = new URL(urls[0]!).port
    const { run, report } = await fleetJson(['status', '--shards', `http://localhost:${port}`, urls[1]!, urls[2]!])
    assert.equal(run.code, 0, run.stderr)
    assert.equal(report.shards[0].url, `http://localhost:${port}`)
    // Swarm's tasks.<service> answers one A record per task: each is a shard, at the entry's port.
    const fake = async (): Promise<Array<{ address: string; family: number }>> => [
      { address: '10.0.1.7', family: 4 },
      { address: '10.0.1.8', family: 4 },
      { address: 'fd00::7', family: 6 },
    ]
    const { targets, problems } = await resolveShards(['http://tasks.mimic:8080', 'http://10.0.1.8:8080/'], fake)
    assert.deepEqual(problems, [])
    assert.deepEqual(
      targets.map((t) => t.url),
      ['http://10.0.1.7:8080', 'http://10.0.1.8:8080'],
    )
    // A bare name (as deploy files write it) is http:// at Mimic's default port 8000, or at the port given.
    const bare = await resolveShards(['tasks.mimic', 'tasks.mimic:8080'], fake)
    assert.deepEqual(
      bare.targets.map((t) => t.url),
      ['http://10.0.1.7:8000', 'http://10.0.1.8:8000', 'http://10.0.1.7:8080', 'http://10.0.1.8:8080'],
    )
    const failing = async (): Promise<never> => {
      throw new Error('getaddrinfo ENOTFOUND tasks.nothing')
    }
    const bad = await resolveShards(['http://tasks.nothing:8080', 'ftp://x'], failing)
    assert.match(bad.problems[0]!.error, /cannot resolve tasks\.nothing: getaddrinfo ENOTFOUND/)
    assert.match(bad.problems[1]!.error, /not an http/)
  })

  it('run: starts the system on every shard', async () => {
    for (const s of shards) await s.call(SYS, 'stop')
    const { run, report } = await fleetJson(['run', '--shards', ...urls])
    assert.equal(run.code, 0, run.stderr)
    assert.equal(report.results.length, 3)
    for (const r of report.results) assert.equal(r.ok, true, r.error)
    for (const s of shards) assert.equal((await s.api('GET', `${SYS}/attr/state`)).body.value, 'RUNNING')
    const text = await mimic(['fleet', 'run', '--shards', ...urls])
    assert.match(text.stdout, /^started 3 of 3 shards$/m)
  })

  it('save: one id on every shard, one S3 object per shard; load puts every shard back; list shows it on every shard', async () => {
    const { run, report } = await fleetJson(['save', '--id', 'before-change', '--label', 'fleet test', '--shards', ...urls])
    assert.equal(run.code, 0, run.stderr)
    assert.equal(report.saved, true)
    assert.equal(report.id, 'before-change')
    const objects = await new S3Client({
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    }).send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'fleet/before-change/' }))
    assert.deepEqual((objects.Contents ?? []).map((o) => o.Key).sort(), [
      'fleet/before-change/shard-1-of-3.json',
      'fleet/before-change/shard-2-of-3.json',
      'fleet/before-change/shard-3-of-3.json',
    ])

    // Change every shard: each loses its instances.
    const before = await Promise.all(shards.map(instanceNames))
    const deleted = await Promise.all(shards.flatMap((s, i) => before[i]!.map(async (name) => (await s.api('DELETE', `${SYS}/instances/${name}`)).status)))
    assert.deepEqual(deleted, Array(COUNT).fill(200))
    const emptied = await fleetJson(['status', '--shards', ...urls])
    assert.equal(emptied.report.total.instances, 0)

    const listed = await fleetJson(['list', '--shards', ...urls])
    assert.equal(listed.run.code, 0, listed.run.stderr)
    const entry = listed.report.common.find((s: any) => s.id === 'before-change')
    assert.ok(entry, JSON.stringify(listed.report))
    assert.deepEqual(entry.shards.sort(), ['1/3', '2/3', '3/3'])
    assert.equal(entry.label, 'fleet test')

    const loaded = await fleetJson(['load', 'before-change', '--shards', ...urls])
    assert.equal(loaded.run.code, 0, loaded.run.stderr)
    assert.equal(loaded.report.loaded, true)
    assert.deepEqual(await Promise.all(shards.map(instanceNames)), before)
    const text = await mimic(['fleet', 'load', 'before-change', '--shards', ...urls])
    assert.match(text.stdout, /^loaded fleet snapshot before-change on 3 shards$/m)
  })

  it('list names the shards that lack a snapshot; load of it is refused and loads nothing', async () => {
    await shards[0]!.call(`${SYS}/snapshots`, 'save', { id: 'only-one' })
    const [listed, text] = await Promise.all([fleetJson(['list', '--shards', ...urls]), mimic(['fleet', 'list', '--shards', ...urls])])
    const partial = listed.report.partial.find((s: any) => s.id === 'only-one')
    assert.deepEqual(partial.shards, ['1/3'])
    assert.deepEqual(partial.missing, ['2/3', '3/3'])
    assert.match(text.stdout, /^only-one\s.*only on 1\/3; missing on 2\/3, 3\/3/m)

    const before = await instanceNames(shards[0]!)
    await shards[0]!.api('DELETE', `${SYS}/instances/${before[0]}`)
    const refused = await mimic(['fleet', 'load', 'only-one', '--shards', ...urls])
    assert.notEqual(refused.code, 0)
    assert.match(refused.stderr, /snapshot 'only-one' is not on 2\/3/)
    assert.match(refused.stderr, /nothing was loaded/)
    assert.deepEqual(await instanceNames(shards[0]!), before.slice(1))
  })

  it('a missing shard and an unreachable one are reported, the others still are, and nothing is saved', async () => {
    // The reads that change nothing run at once, each a `mimic` process of its own.
    const nowhere = `http://127.0.0.1:${await freePort()}`
    const [missing, doubled, unreachable, none] = await Promise.all([
      mimic(['fleet', 'status', '--shards', urls[0]!, urls[2]!]),
      fleetJson(['status', '--shards', urls[0]!, urls[1]!, urls[2]!, `http://localhost:${new URL(urls[1]!).port}`]),
      mimic(['fleet', 'status', '--shards', urls[0]!, nowhere, urls[1]!, urls[2]!]),
      mimic(['fleet', 'status'], { MIMIC_SHARDS: '' }),
    ])
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /shard 2 of 3 is missing/)
    assert.match(missing.stdout, /^total\s+2 of 3 shards answering/m)

    assert.equal(doubled.run.code, 1)
    assert.equal(doubled.report.coverage.duplicated[0].shard, 2)

    assert.equal(unreachable.code, 1)
    assert.match(unreachable.stderr, new RegExp(`error: ${nowhere}: `))
    for (const [i, url] of urls.entries()) assert.match(unreachable.stdout, new RegExp(`^${i + 1}/3\\s+${url}\\s+ok`, 'm'))
    assert.match(unreachable.stdout, new RegExp(`^\\?\\s+${nowhere}\\s+unreachable`, 'm'))

    const save = await fleetJson(['save', '--id', 'incomplete', '--shards', urls[0]!, urls[1]!])
    assert.equal(save.run.code, 1)
    assert.equal(save.report.saved, false)
    const listed = await fleetJson(['list', '--shards', ...urls])
    assert.equal(
      [...listed.report.common, ...listed.report.partial].some((s: any) => s.id === 'incomplete'),
      false,
    )

    assert.equal(none.code, 1)
    assert.match(none.stderr, /no shards given/)
  })

  it('save is all or nothing: a shard whose save is refused makes the others delete theirs', async () => {
    // A newer copy of shard 2 (as an update may run for a while) saves: the old copy is now stale
    // and the fencing epoch refuses its saves (409).
    const newer = await serveProcess(
      ['--system', join(dir, 'fleet.yaml'), '--shard', '2/3', '--snapshots-store', `s3://${BUCKET}/fleet`, '--snapshots-dir', join(dir, 'snaps-2b')],
      s3Env(endpoint),
    )
    try {
      await newer.call(`${SYS}/snapshots`, 'save', { id: 'from-the-newer-copy' })
      const { run, report } = await fleetJson(['save', '--id', 'rolled-back', '--shards', ...urls])
      assert.equal(run.code, 1)
      assert.equal(report.saved, false)
      const byShard = Object.fromEntries(report.results.map((r: any) => [r.shard, r]))
      assert.equal(byShard['2/3'].ok, false)
      assert.match(byShard['2/3'].error, /newer copy of this shard/)
      for (const shard of ['1/3', '3/3']) {
        assert.equal(byShard[shard].ok, true)
        assert.equal(byShard[shard].rolled_back, true)
      }
      const objects = await new S3Client({
        endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      }).send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'fleet/rolled-back/' }))
      assert.deepEqual(objects.Contents ?? [], [])
      const text = await mimic(['fleet', 'save', '--id', 'rolled-back-2', '--shards', ...urls])
      assert.equal(text.code, 1)
      assert.match(text.stdout, /^2\/3\s+\S+\s+failed: .*newer copy of this shard/m)
      assert.match(text.stdout, /^fleet snapshot rolled-back-2 not saved$/m)
      assert.match(text.stderr, /a shard could not save: the others deleted theirs/)
    } finally {
      await newer.stop('SIGTERM')
    }
  })

  it('coverage: another fleet size is reported as such', () => {
    const c = coverage([
      { url: 'a', from: 'a', ok: true, shard: { index: 1, count: 2 } },
      { url: 'b', from: 'b', ok: true, shard: { index: 2, count: 2 } },
      { url: 'c', from: 'c', ok: true, shard: { index: 1, count: 3 } },
    ])
    assert.equal(c.ok, false)
    assert.deepEqual(c.mismatched, [{ url: 'c', shard: '1/3' }])
  })
})

describe('snapshots/method/save with id (what mimic fleet save sends each shard), in a snapshots directory', () => {
  it('writes <id>.json, loads by that id, replaces it when saved again, and refuses an id that is not a plain name', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mimic-fleet-id-'))
    const t = await startTestServer({ config: { snapshotsDir: dir } })
    try {
      assert.equal((await t.api('PUT', `${SYS}/models`, { M: { attributes: { x: 1 } } })).status, 200)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { a: 'M' })).status, 200)
      const saved = await t.api('POST', `${SYS}/snapshots/method/save`, { kwargs: { id: 'fleet-20260101T000000Z-ab12', label: 'one' } })
      assert.equal(saved.status, 200, JSON.stringify(saved.body))
      assert.equal(saved.body.result.id, 'fleet-20260101T000000Z-ab12')
      assert.equal(saved.body.result.persisted_path, join(dir, 'fleet-20260101T000000Z-ab12.json'))
      assert.equal(JSON.parse(await readFile(join(dir, 'fleet-20260101T000000Z-ab12.json'), 'utf8')).id, 'fleet-20260101T000000Z-ab12')

      assert.equal((await t.api('PUT', `${SYS}/instances`, { b: 'M' })).status, 200)
      const again = await t.api('POST', `${SYS}/snapshots/method/save`, { kwargs: { id: 'fleet-20260101T000000Z-ab12', label: 'two' } })
      assert.equal(again.status, 200, JSON.stringify(again.body))
      const listed = (await t.api('POST', `${SYS}/snapshots/method/list`, { kwargs: {} })).body.result
      assert.deepEqual(
        listed.files.filter((f: any) => f.id === 'fleet-20260101T000000Z-ab12').map((f: any) => f.label),
        ['two'],
      )
      assert.equal((await t.api('DELETE', `${SYS}/instances/b`)).status, 200)
      const loaded = await t.api('POST', `${SYS}/snapshots/method/load`, { kwargs: { id: 'fleet-20260101T000000Z-ab12' } })
      assert.equal(loaded.status, 200, JSON.stringify(loaded.body))
      assert.equal(loaded.body.result.instances, 2)

      for (const bad of ['../escape', '.hidden', 'a/b', '']) {
        const refused = await t.api('POST', `${SYS}/snapshots/method/save`, { kwargs: { id: bad } })
        assert.equal(refused.status, 422, `${bad}: ${JSON.stringify(refused.body)}`)
        assert.match(refused.body.error.message, /Invalid snapshot id/)
        assert.equal(refused.body.error.details[0].path, 'id')
      }
    } finally {
      await t.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})
