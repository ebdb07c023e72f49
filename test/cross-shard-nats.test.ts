import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { eventually, freePort, startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'
import { shardOf } from '../src/system/shard.js'

/** Debian's nats-server (`apt-get install nats-server`); .ci/run installs it. */
const NATS_SERVER = '/usr/sbin/nats-server'
const missing = !existsSync(NATS_SERVER)
if (missing && process.env.CI) throw new Error(`${NATS_SERVER} is missing: install Debian's nats-server to run the cross-shard connection tests`)

const SYS = '/api/v3/system'

/** The first name `<base>_<i>` that shard `index` of 2 owns. */
function nameOn(base: string, index: number): string {
  for (let i = 0; ; i++) if (shardOf(`${base}_${i}`, 2) === index) return `${base}_${i}`
}

const SRC = nameOn('src', 1)
const DST = nameOn('dst', 2)

const SYSTEM = {
  models: {
    Src: {
      attributes: { level: { default: 0, type: 'int' }, temp: { default: 0.0, type: 'float' }, fixed: { default: 7, type: 'int' } },
      actions: [
        { function: '$out(level)', call: 'level + 1' },
        { function: '$out(temp)', call: 'temp + 1.0' },
      ],
    },
    Dst: {
      attributes: {
        level_in: { default: 0, type: 'int' },
        temp_in: { default: 0.0, type: 'float' },
        off_in: { default: 0, type: 'int' },
        fixed_in: { default: 0, type: 'int' },
      },
    },
  },
  instances: { [SRC]: 'Src', [DST]: 'Dst' },
  connections: {
    wire_level: { from: `${SRC}.attributes.level`, to: `${DST}.attributes.level_in` },
    wire_temp: { from: `${SRC}.attributes.temp`, to: `${DST}.attributes.temp_in` },
    wire_fixed: { from: `${SRC}.attributes.fixed`, to: `${DST}.attributes.fixed_in` },
    wire_off: { from: `${SRC}.attributes.level`, to: `${DST}.attributes.off_in`, enabled: false },
  },
}

/** A nats-server of this test on 127.0.0.1. */
async function startNats(): Promise<{ url: string; port: number; child: ChildProcess }> {
  const port = await freePort()
  const child = spawn(NATS_SERVER, ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' })
  await eventually(
    () =>
      new Promise<boolean>((resolve) => {
        const socket = connect(port, '127.0.0.1')
        socket.once('connect', () => (socket.destroy(), resolve(true)))
        socket.once('error', () => resolve(false))
      }),
    10_000,
  )
  return { url: `nats://127.0.0.1:${port}`, port, child }
}

describe('connections across shards over NATS (--nats)', { skip: missing ? `${NATS_SERVER} is not installed` : false }, () => {
  let nats: { url: string; port: number; child: ChildProcess }
  let dir: string
  let file: string
  const servers: TestServer[] = []
  const prefix = `t${process.pid}`

  const shard = async (index: number): Promise<TestServer> => {
    const t = await startTestServer({ config: { system: file, shard: `${index}/2`, nats: nats.url, natsPrefix: prefix } })
    servers.push(t)
    return t
  }
  const run = async (t: TestServer, steps: number): Promise<void> => {
    const res = await t.call(SYS, 'run', { steps })
    assert.equal(res.status, 200, JSON.stringify(res.body))
  }
  const value = async (t: TestServer, instance: string, attribute: string): Promise<unknown> =>
    (await t.api('GET', `${SYS}/instances/${instance}/attributes/${attribute}`)).body.internal_value

  before(async () => {
    nats = await startNats()
    dir = await mkdtemp(join(tmpdir(), 'mimic-nats-'))
    file = join(dir, 'system.json')
    await writeFile(file, JSON.stringify(SYSTEM))
  })
  after(async () => {
    for (const t of servers) await t.close()
    nats?.child.kill()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('the names of the test land on different shards', () => {
    assert.equal(shardOf(SRC, 2), 1)
    assert.equal(shardOf(DST, 2), 2)
  })

  let a: TestServer
  let b: TestServer
  it('a target shard started after the owner stepped gets the current value at its first step', async () => {
    a = await shard(1)
    assert.equal((await a.call(SYS, 'prepare')).status, 200)
    await run(a, 3)
    assert.equal(await value(a, SRC, 'level'), 3)
    const starting = performance.now()
    b = await shard(2)
    const started = performance.now()
    assert.equal((await b.call(SYS, 'prepare')).status, 200)
    // The answer to the late joiner's request arrives on its own: until then a step writes nothing.
    await eventually(async () => {
      await run(b, 1)
      return (await value(b, DST, 'level_in')) === 3
    })
    console.log(`# late joiner: started in ${(started - starting).toFixed(0)} ms, had the value ${(performance.now() - started).toFixed(0)} ms later`)
    assert.equal(await value(b, DST, 'temp_in'), 3)
  })

  it('a value the owner publishes is written at the target shard step after it arrives, a float as a float', async () => {
    const received = async (): Promise<number> => (await b.api('GET', `${SYS}/connections/wire_level`)).body.across_shards.received
    const before = await received()
    const started = performance.now()
    await run(a, 1)
    const stepped = performance.now()
    // Three values change in the owner's step (level, temp; fixed did not): level's arrival is seen
    // by its count, and the next step of the target writes it.
    await eventually(async () => (await received()) > before, 5000, 1)
    const arrived = performance.now()
    assert.equal(await value(b, DST, 'level_in'), 3, 'nothing is written between steps')
    await run(b, 1)
    assert.equal(await value(b, DST, 'level_in'), 4)
    console.log(
      `# owner's step ${(stepped - started).toFixed(1)} ms; the value arrived on the target shard at most ${(arrived - stepped).toFixed(1)} ms after it`,
    )
    const raw = await fetch(`${b.url}${SYS}/instances/${DST}/attributes/temp_in`, { headers: { authorization: `Bearer ${TEST_KEY}` } })
    assert.match(await raw.text(), /"internal_value":4\.0[,}]/)
    const wire = (await b.api('GET', `${SYS}/connections/wire_level`)).body
    assert.deepEqual(wire.across_shards, { far_end: 'from', subject: `${prefix}.value.${SRC}.level`, received: 2 }, 'the late answer and one message')
    assert.ok(wire.transfers > 0)
    const owner = (await a.api('GET', `${SYS}/connections/wire_level`)).body
    assert.deepEqual(owner.across_shards, { far_end: 'to', subject: `${prefix}.value.${SRC}.level` })
    assert.equal(owner.transfers, 4, 'published once per changed value')
  })

  it('a disabled connection carries nothing', async () => {
    await run(a, 2)
    await eventually(async () => {
      await run(b, 1)
      return (await value(b, DST, 'level_in')) === 6
    })
    assert.equal(await value(b, DST, 'off_in'), 0)
  })

  it('a value is published when it changed, an unchanged one once', async () => {
    assert.equal((await a.api('GET', `${SYS}/connections/wire_level`)).body.transfers, 6)
    assert.equal((await a.api('GET', `${SYS}/connections/wire_fixed`)).body.transfers, 1)
    assert.equal(await value(b, DST, 'fixed_in'), 7)
  })

  it('a NATS server lost while running: both shards keep stepping and say so, and values flow again once it is back', async () => {
    const stopped = new Promise((resolve) => nats.child.once('exit', resolve))
    nats.child.kill()
    await stopped
    await run(a, 2)
    await run(b, 1)
    const lost = (t: TestServer): boolean => t.logs.some((r) => String(r.msg).startsWith('lost the connection to the NATS server'))
    await eventually(() => lost(a) && lost(b), 10_000)
    // Back on the same address: the shards reconnect by themselves, and the owner's values (the
    // ones changed while it was away included) reach the target shard again.
    nats = { ...nats, child: spawn(NATS_SERVER, ['-a', '127.0.0.1', '-p', String(nats.port)], { stdio: 'ignore' }) }
    await eventually(
      async () => {
        await run(a, 1)
        await run(b, 1)
        return (await value(b, DST, 'level_in')) === (await value(a, SRC, 'level'))
      },
      20_000,
      200,
    )
  })

  it('an unreachable NATS server fails the start naming its URL', async () => {
    const url = `nats://127.0.0.1:${await freePort()}`
    await assert.rejects(startTestServer({ config: { system: file, shard: '1/2', nats: url } }), (err: Error) => err.message.includes(url))
  })
})
