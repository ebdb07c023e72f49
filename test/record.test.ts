// mimic record (docs/capture.md): attributes of a running server, from its event stream, into a
// CSV and a JSONL file on the simulated clock; the CSV is ready for a playback action, which
// plays the recorded values back at the recorded times.
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { recordAttributes } from '../src/capture/record.js'
import { startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

describe('mimic record', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
    const defined = await t.api('PUT', `${SYS}/models`, {
      Tank: {
        attributes: { level: 0.0, mode: '' },
        actions: [
          { ramp: '$out(level)', start_value: 0, stop_value: 1000, duration: 1000 },
          { function: '$out(mode)', call: '"high" if $in(level) > 1 else "low"' },
        ],
      },
    })
    assert.equal(defined.status, 200, JSON.stringify(defined.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { tank_1: 'Tank' })).status, 200)
    assert.equal((await t.call(SYS, 'prepare')).status, 200)
  })
  after(async () => t?.close())

  it('records chosen attributes on the simulated clock; a playback of the CSV gives them back at their times', async () => {
    // Five steps a second of wall time, each one second of simulated time.
    const polled = await t.api('PUT', `${SYS}/polling/attr/interval`, { value: 0.2 })
    assert.equal(polled.status, 200, JSON.stringify(polled.body))
    assert.equal((await t.api('PUT', `${SYS}/timer/attr/dt`, { value: 1 })).status, 200)
    assert.equal((await t.call(SYS, 'start')).status, 200)
    const csv = join(t.extensions, 'tank.csv')
    const jsonl = join(t.extensions, 'tank.jsonl')
    const lines: string[] = []
    const [fromCsv, fromJsonl] = await Promise.all([
      recordAttributes({
        url: t.url,
        productKey: TEST_KEY,
        attributes: 'tank_1.level,tank_1.mode',
        out: csv,
        durationS: 2,
        hz: 20,
        clock: 'simulated',
        progress: (l) => lines.push(l),
      }),
      recordAttributes({ url: t.url, productKey: TEST_KEY, attributes: 'tank_1.level', out: jsonl, durationS: 2, hz: 20, clock: 'simulated' }),
    ])
    assert.equal((await t.call(SYS, 'stop')).status, 200)
    assert.ok(fromCsv.rows >= 2 && fromJsonl.rows >= 2, `${fromCsv.rows} and ${fromJsonl.rows} rows`)
    assert.ok(
      lines.some((l) => l.startsWith('record: wrote')),
      'progress on stderr',
    )

    const text = (await readFile(csv, 'utf8')).trim().split('\n')
    assert.equal(text[0], 'time,level,mode')
    const rows = text.slice(1).map((l) => l.split(','))
    for (let i = 0; i < rows.length; i++) {
      const [time, level, mode] = rows[i]!.map((v, k) => (k < 2 ? Number(v) : v)) as [number, number, string]
      if (i > 0) assert.ok(time > Number(rows[i - 1]![0]), 'times increase')
      assert.ok(Math.abs(level - time) < 1e-9, `the ramp's level is its time: ${level} at ${time}`)
      assert.equal(mode, level > 1 ? 'high' : 'low')
    }
    for (const line of (await readFile(jsonl, 'utf8')).trim().split('\n')) {
      const row = JSON.parse(line) as { time: number; level: number }
      assert.ok(Math.abs(row.level - row.time) < 1e-9)
    }

    const replay = await t.api('PUT', `${SYS}/models`, { Replay: { attributes: { level: 0.0, mode: '' }, actions: [{ playback: 'tank.csv' }] } })
    assert.equal(replay.status, 200, JSON.stringify(replay.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { replay_1: 'Replay' })).status, 200)
    const first = Number(rows[0]![0])
    for (const [time, level, mode] of rows) {
      assert.equal((await t.api('PUT', `${SYS}/instances/replay_1/timer/attr/time`, { value: Number(time) - first })).status, 200)
      assert.equal((await t.call(`${SYS}/instances/replay_1`, 'run')).status, 200)
      const got = await Promise.all(
        ['level', 'mode'].map(async (a) => (await t.api('GET', `${SYS}/instances/replay_1/attributes/${a}/attr/internal_value`)).body.value),
      )
      assert.deepEqual(got, [Number(level), mode])
    }
  })

  it('an attribute the server does not have is named', async () => {
    await assert.rejects(
      recordAttributes({
        url: t.url,
        productKey: TEST_KEY,
        attributes: 'tank_1.volume',
        out: join(t.extensions, 'x.csv'),
        durationS: 2,
        hz: 10,
        clock: 'simulated',
      }),
      /the server has no tank_1\.volume/,
    )
    await assert.rejects(
      recordAttributes({
        url: t.url,
        productKey: 'wrong',
        attributes: 'tank_1.level',
        out: join(t.extensions, 'x.csv'),
        durationS: 2,
        hz: 10,
        clock: 'simulated',
      }),
      /asks for the product key/,
    )
  })
})
