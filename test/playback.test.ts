// The playback action (docs/playback.md) on a running server: a CSV and a JSONL series in the
// extension directory drive attributes on the instance time, step and linear, with loop, speed
// and time_offset; a bad file is a 422 naming its line, and a file outside the extension
// directories is refused.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

const PUMP_CSV = `# a pump's run, recorded every 10 s
time,flow,state,count
0,1.0,idle,0
10,3.0,running,10
20,2.0,running,20
`
const PUMP_JSONL = `{"t": "2026-01-01T00:00:00Z", "flow": 5, "state": "idle"}
{"t": "2026-01-01T00:00:04Z", "flow": 9}
{"t": "2026-01-01T00:00:08Z", "flow": 1, "state": "alarm"}
`

describe('playback', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({
      files: {
        'pump.csv': PUMP_CSV,
        'series/pump.jsonl': PUMP_JSONL,
        'bad.csv': 'time,flow\n0,1.0\n5,abc\n',
        'backwards.csv': 'time,flow\n0,1\n10,2\n5,3\n',
      },
    })
  })
  after(async () => t?.close())

  const define = async (models: Record<string, unknown>) => t.api('PUT', `${SYS}/models`, models)
  const at = async (instance: string, time: number): Promise<void> => {
    assert.equal((await t.api('PUT', `${SYS}/instances/${instance}/timer/attr/time`, { value: time })).status, 200)
    const run = await t.call(`${SYS}/instances/${instance}`, 'run')
    assert.equal(run.status, 200, JSON.stringify(run.body))
  }
  const values = async (instance: string, ...names: string[]): Promise<unknown[]> =>
    Promise.all(names.map(async (n) => (await t.api('GET', `${SYS}/instances/${instance}/attributes/${n}/attr/internal_value`)).body.value))
  const attributes = { flow: 0.0, state: '', count: { default: 0, type: 'int' } }

  it('step holds each row until the next; linear goes between numbers (strings step); the ends hold', async () => {
    const res = await define({
      stepped: { attributes, actions: [{ playback: 'pump.csv' }] },
      smooth: { attributes, actions: [{ playback: 'pump.csv', interpolation: 'linear' }] },
    })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { s: 'stepped', l: 'smooth' })).status, 200)
    await at('s', 15)
    assert.deepEqual(await values('s', 'flow', 'state', 'count'), [3.0, 'running', 10])
    await at('l', 15)
    assert.deepEqual(await values('l', 'flow', 'state', 'count'), [2.5, 'running', 15])
    await at('l', 12.5)
    assert.deepEqual(await values('l', 'flow', 'count'), [2.75, 12], 'an int attribute gets the value rounded half to even')
    await at('l', 500)
    assert.deepEqual(await values('l', 'flow', 'state'), [2.0, 'running'], 'after the last row it holds')
  })

  it('loop, speed and time_offset on the instance time; JSONL with ISO times and left-out columns', async () => {
    const res = await define({
      looped: { attributes, actions: [{ playback: 'pump.csv', loop: true, speed: 10, time_offset: 5, columns: ['flow'] }] },
      json: { attributes: { flow: 0.0, state: '' }, actions: [{ playback: 'series/pump.jsonl', columns: { flow: '$out(flow)', state: '#attr(state)' } }] },
    })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { o: 'looped', j: 'json' })).status, 200)
    // File time = 5 + 10 × t; a loop lasts 30 s of file time (the span and one more interval).
    await at('o', 0.6) // file 11
    assert.deepEqual(await values('o', 'flow'), [3.0])
    await at('o', 2.6) // file 31 = 1 of the second pass
    assert.deepEqual(await values('o', 'flow'), [1.0])
    await at('o', 2.0) // file 25: the last row holds through its interval
    assert.deepEqual(await values('o', 'flow'), [2.0])
    await at('j', 5)
    assert.deepEqual(await values('j', 'flow', 'state'), [9, 'idle'], 'a left-out column keeps its value')
    await at('j', 8)
    assert.deepEqual(await values('j', 'flow', 'state'), [1, 'alarm'])
  })

  it('a bad file is a 422 naming the file and its line; a file outside the extension directories is refused', async () => {
    const problem = async (model: Record<string, unknown>): Promise<{ path: string; message: string }> => {
      const res = await define({ broken: { attributes: { flow: 0.0 }, actions: [model] } })
      assert.equal(res.status, 422, JSON.stringify(res.body))
      return res.body.error.details[0]
    }
    const notNumber = await problem({ playback: 'bad.csv' })
    assert.equal(notNumber.path, 'actions[0].playback')
    assert.match(notNumber.message, /bad\.csv line 3: 'flow' holds "abc", not a number/)
    assert.match((await problem({ playback: 'backwards.csv' })).message, /backwards\.csv line 4: time 5 is not after/)
    assert.match((await problem({ playback: '../../etc/passwd.csv' })).message, /outside the extension directories/)
    assert.match((await problem({ playback: '/etc/hosts.csv' })).message, /outside the extension directories/)
    assert.match((await problem({ playback: 'missing.csv' })).message, /not found in the extension directories/)
    assert.match((await problem({ playback: 'pump.csv' })).message, /column 'state' is not an attribute of this model/)
    assert.match((await problem({ playback: 'pump.csv', columns: ['flow'], speed: 0 })).message, /must be a number > 0/)
  })
})
