// Automatic snapshots: `mimic serve --snapshot-on-shutdown` saves the system with its runtime
// state when it gets SIGTERM or SIGINT, `--load-snapshot latest` resumes from the newest snapshot,
// and `--snapshots-retention N` keeps the newest N of the snapshots the server saved by itself,
// never one a user saved. Real `mimic serve` processes, real signals and files.
import assert from 'node:assert/strict'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { serveProcess, type ServerProcess } from './helpers/process.js'

const SYS = '/api/v3/system'
const SNAP = `${SYS}/snapshots`

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

/** A class whose state cannot be saved: a shutdown snapshot of it fails. */
const STUBBORN_PY = `
class Stubborn:
    def __init__(self):
        self.value = 1.0
    def __getstate__(self):
        raise RuntimeError("not today")
    def __setstate__(self, state):
        pass
`

async function values(server: ServerProcess): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const name of ['count', 'level', 'noisy']) out[name] = (await server.api('GET', `${SYS}/instances/c1/attributes/${name}/attr/internal_value`)).text
  return out
}

async function snapshotFiles(dir: string): Promise<Array<{ id: string; automatic: boolean; state: boolean; label: string }>> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.json'))
  const files = await Promise.all(names.map(async (n) => JSON.parse(await readFile(join(dir, n), 'utf8'))))
  return files
    .sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at))
    .map((f) => ({ id: f.id, automatic: f.automatic === true, state: f.state !== undefined, label: f.label }))
}

describe('snapshots saved on shutdown, resumed with --load-snapshot latest, kept to a retention', () => {
  let dir: string
  let extensions: string
  const started: ServerProcess[] = []
  const serve = async (snapshots: string, args: string[] = []): Promise<ServerProcess> => {
    const server = await serveProcess(['--extensions', extensions, '--snapshots-dir', snapshots, ...args])
    started.push(server)
    return server
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-shutdown-'))
    extensions = join(dir, 'extensions')
    await mkdir(extensions)
    await writeFile(join(extensions, 'stubborn.py'), STUBBORN_PY)
  })
  after(async () => {
    for (const server of started) await server.stop('SIGKILL')
    await rm(dir, { recursive: true, force: true })
  })

  it('SIGTERM saves the system with its state; a new process with --load-snapshot latest goes on from the same values', async () => {
    const snapshots = join(dir, 'resume')
    const first = await serve(snapshots, ['--snapshot-on-shutdown'])
    const put = await first.api('PUT', SYS, COUNTER)
    assert.equal(put.status, 200, put.text)
    await first.call(SYS, 'run', { steps: 7 })
    const before = await values(first)
    assert.equal(before.count, '{"value":7}')
    assert.equal(await first.stop('SIGTERM'), 0)
    assert.match(first.output(), /"msg":"snapshot saved on shutdown"/)
    const [saved] = await snapshotFiles(snapshots)
    assert.deepEqual([saved?.automatic, saved?.state, saved?.label], [true, true, 'on SIGTERM'])

    const second = await serve(snapshots, ['--load-snapshot', 'latest'])
    assert.match(second.output(), /"msg":"snapshot loaded at start"/)
    assert.deepEqual(await values(second), before, 'the values it stopped with')
    await second.call(SYS, 'run', { steps: 3 })
    // The same as ten steps in one server: the noise goes on from its generator's state.
    const reference = await serve(join(dir, 'reference'))
    await reference.api('PUT', SYS, COUNTER)
    await reference.call(SYS, 'run', { steps: 10 })
    assert.deepEqual(await values(second), await values(reference))
    await reference.stop()
    assert.equal(await second.stop('SIGINT'), 0, 'without --snapshot-on-shutdown nothing is saved')
    assert.equal((await snapshotFiles(snapshots)).length, 1)
  })

  it('--snapshots-retention 2 keeps the newest two automatic snapshots and every snapshot saved by hand', async () => {
    const snapshots = join(dir, 'retention')
    const flags = ['--snapshot-on-shutdown', '--snapshots-retention', '2', '--load-snapshot', 'latest']
    let server = await serve(snapshots, flags)
    assert.match(server.output(), /no snapshot in the snapshots directory yet, starting without one/)
    await server.api('PUT', SYS, COUNTER)
    const byHand = await server.call(SNAP, 'save', { label: 'by hand, structure' })
    const byHandWithState = await server.call(SNAP, 'save', { label: 'by hand, state', include_state: true })
    const automatic: string[] = []
    for (let round = 1; round <= 4; round++) {
      await server.call(SYS, 'run', { steps: 1 })
      assert.equal(await server.stop('SIGTERM'), 0)
      const files = await snapshotFiles(snapshots)
      automatic.push(files[files.length - 1]!.id)
      server = await serve(snapshots, flags)
      assert.equal(JSON.parse((await server.api('GET', `${SYS}/instances/c1/attributes/count/attr/internal_value`)).text).value, round, 'resumed')
    }
    await server.stop('SIGKILL')
    const files = await snapshotFiles(snapshots)
    assert.deepEqual(
      files.map((f) => f.id),
      [byHand.id, byHandWithState.id, ...automatic.slice(-2)],
    )
    assert.deepEqual(
      files.map((f) => f.automatic),
      [false, false, true, true],
    )
    const listed = (await (await serve(snapshots)).call(SNAP, 'list')).files as Array<{ id: string; automatic?: true; state?: true }>
    assert.deepEqual(
      listed.map((f) => [f.id, f.automatic ?? false, f.state ?? false]),
      [
        [byHand.id, false, false],
        [byHandWithState.id, false, true],
        [automatic[2], true, true],
        [automatic[3], true, true],
      ],
    )
  })

  it('a shutdown snapshot that cannot be saved is logged and the process exits with status 3', async () => {
    const snapshots = join(dir, 'failing')
    const server = await serve(snapshots, ['--snapshot-on-shutdown'])
    await server.api('PUT', SYS, {
      models: { S: { attributes: { value: 0.0 }, import: { 'stubborn.py': { class: 'Stubborn', attributes: { value: { property: 'value' } } } } } },
      instances: [{ s: 'S' }],
    })
    await server.call(`${SYS}/instances/s`, 'prepare')
    assert.equal(await server.stop('SIGTERM'), 3)
    assert.match(server.output(), /"msg":"the snapshot on shutdown could not be saved"/)
    assert.match(server.output(), /not today/)
    assert.deepEqual(await snapshotFiles(snapshots).catch(() => []), [])
  })
})
