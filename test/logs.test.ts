import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { eventually, startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

const FILES: Record<string, string> = {
  'talker.py': `
import sys

class Talker:
    def __init__(self):
        self.level = 0.0

    def tick(self):
        self.level += 1.0

    def say(self, text="hello"):
        print("talker says", text)
        return text

    def complain(self, text="low pressure"):
        sys.stderr.write("warning: " + text + "\\n")

    def flood(self, n=500):
        for i in range(n):
            print("flood line", i)

    def explode(self):
        raise RuntimeError("valve stuck at " + str(self.level))
`,
}

const TALKER = {
  attributes: { level: 0.0 },
  import: {
    'talker.py': {
      class: 'Talker',
      attributes: { level: { property: 'level' } },
      methods: { run: 'tick', say: 'say', complain: 'complain', flood: 'flood', explode: 'explode' },
    },
  },
}

interface Entry {
  seq: number
  time: string
  level: string
  msg: string
  instance?: string
  correlation_id?: string
  [field: string]: unknown
}

describe('logs nodes: tail with filters, clear, ring bound, Python output, faults', () => {
  let t: TestServer
  const tail = async (path: string, kwargs: Record<string, unknown> = {}): Promise<Entry[]> => {
    const res = await t.call(`${path}/logs`, 'tail', kwargs)
    assert.equal(res.status, 200, JSON.stringify(res.body))
    return res.body.result as Entry[]
  }

  before(async () => {
    t = await startTestServer({ files: FILES, config: { logBuffer: 200 } })
    assert.equal((await t.api('PUT', `${SYS}/models`, { Talker: TALKER })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { pump: 'Talker', fan: 'Talker' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/pump`, 'prepare')).status, 200)
    assert.equal((await t.call(`${SYS}/instances/fan`, 'prepare')).status, 200)
  })
  after(async () => await t?.close())

  it('the system and every instance have a logs node with tail and clear', async () => {
    const root = await t.api('GET', SYS)
    assert.ok(root.body.children.some((c: { name: string }) => c.name === 'logs'))
    const node = await t.api('GET', `${SYS}/instances/pump/logs`)
    assert.equal(node.status, 200)
    assert.equal(node.body.type, 'Logs')
    assert.deepEqual(node.body.methods, ['tail', 'clear'])
    assert.equal(node.body.capacity, 200)
    assert.equal(node.body.instance, 'pump')
    assert.equal(node.body.value, undefined)
  })

  it("a Python print() shows in its instance's tail at info, tagged stdout, and not in another instance's", async () => {
    assert.equal((await t.call(`${SYS}/instances/pump`, 'say', { text: 'pressure nominal' })).status, 200)
    const lines = await eventually(async () =>
      (await tail(`${SYS}/instances/pump`, { contains: 'pressure nominal' })).filter((e) => e.msg.includes('talker says')),
    )
    assert.equal(lines[0]!.level, 'info')
    assert.equal(lines[0]!.instance, 'pump')
    assert.equal(lines[0]!.stream, 'stdout')
    assert.ok(!Number.isNaN(Date.parse(lines[0]!.time)))
    assert.deepEqual(await tail(`${SYS}/instances/fan`, { contains: 'pressure nominal' }), [])
    assert.ok(
      (await tail(SYS, { contains: 'pressure nominal' })).some((e) => e.instance === 'pump'),
      'the system view holds every record',
    )
  })

  it("a fault on an instance is in that instance's tail with its level and correlation id", async () => {
    const res = await t.api('POST', `${SYS}/instances/pump/method/explode`, { kwargs: {} }, { 'x-correlation-id': 'find-me-42' })
    assert.equal(res.status, 500)
    assert.equal(res.body.correlation_id, 'find-me-42')
    const found = await tail(`${SYS}/instances/pump`, { contains: 'find-me-42' })
    assert.equal(found.length, 1)
    assert.equal(found[0]!.level, 'error')
    assert.equal(found[0]!.correlation_id, 'find-me-42')
    assert.match(found[0]!.msg, /valve stuck/)
    // A client's mistake is logged too, as a warning.
    const bad = await t.api('PUT', `${SYS}/instances/pump/attributes/level/attr/internal_value`, { value: 'not a number' }, { 'x-correlation-id': 'typo-7' })
    assert.equal(bad.status, 422)
    const warned = await tail(`${SYS}/instances/pump`, { contains: 'typo-7' })
    assert.equal(warned.length, 1)
    assert.equal(warned[0]!.level, 'warn')
    assert.equal(warned[0]!.status, 422)
  })

  it('level keeps entries at or above it; limit keeps the newest; since takes a seq, a time or a duration', async () => {
    const pump = `${SYS}/instances/pump`
    await t.call(pump, 'complain', { text: 'filter check' })
    await eventually(async () => (await tail(pump, { contains: 'filter check' })).length === 1)
    const warnings = await tail(pump, { level: 'warn' })
    assert.ok(warnings.length >= 2)
    assert.ok(warnings.every((e) => ['warn', 'error', 'fatal'].includes(e.level)))
    assert.ok(warnings.some((e) => e.msg.includes('filter check') && e.stream === 'stderr'))
    assert.ok(!warnings.some((e) => e.msg.includes('talker says')))
    assert.ok((await tail(pump, { level: 'error' })).every((e) => e.level === 'error' || e.level === 'fatal'))

    for (const word of ['one', 'two', 'three']) await t.call(pump, 'say', { text: `count ${word}` })
    await eventually(async () => (await tail(pump, { contains: 'count three' })).length === 1)
    const lastTwo = await tail(pump, { contains: 'count', limit: 2 })
    assert.deepEqual(
      lastTwo.map((e) => e.msg),
      ['talker says count two', 'talker says count three'],
    )
    assert.ok(lastTwo[0]!.seq < lastTwo[1]!.seq)
    // Positional arguments work like the keywords: tail(limit, level, since, contains).
    const positional = await t.api('POST', `${pump}/logs/method/tail`, { args: [1, 'info', null, 'count'] })
    assert.deepEqual(
      positional.body.result.map((e: Entry) => e.msg),
      ['talker says count three'],
    )

    const afterOne = await tail(pump, { since: lastTwo[0]!.seq, contains: 'count' })
    assert.deepEqual(
      afterOne.map((e) => e.msg),
      ['talker says count three'],
    )
    assert.deepEqual(await tail(pump, { since: new Date(Date.now() + 60_000).toISOString() }), [])
    assert.ok((await tail(pump, { since: '1m', contains: 'count one' })).length === 1)
    const anHourAgo = new Date(Date.now() - 3_600_000).toISOString()
    assert.ok((await tail(pump, { since: anHourAgo, contains: 'count one' })).length === 1)
  })

  it('bad arguments are a 422 naming each one', async () => {
    const res = await t.call(`${SYS}/logs`, 'tail', { limit: 0, level: 'loud', since: 'yesterday', colour: 'red' })
    assert.equal(res.status, 422)
    const paths = res.body.error.details.map((d: { path: string }) => d.path).sort()
    assert.deepEqual(paths, ['kwargs.colour', 'kwargs.level', 'kwargs.limit'])
    const since = await t.call(`${SYS}/logs`, 'tail', { since: 'yesterday' })
    assert.equal(since.status, 422)
    assert.deepEqual(
      since.body.error.details.map((d: { path: string }) => d.path),
      ['kwargs.since'],
    )
  })

  it("clear empties only its own node's view", async () => {
    const pump = `${SYS}/instances/pump`
    await t.call(pump, 'say', { text: 'before clear' })
    await eventually(async () => (await tail(pump, { contains: 'before clear' })).length === 1)
    const cleared = await t.call(`${pump}/logs`, 'clear')
    assert.equal(cleared.status, 200)
    assert.ok(cleared.body.result.cleared >= 1)
    assert.deepEqual(await tail(pump), [])
    assert.equal((await t.api('GET', `${pump}/logs`)).body.entries, 0)
    assert.equal((await tail(SYS, { contains: 'before clear' })).length, 1, 'the system view keeps it')
    await t.call(pump, 'say', { text: 'after clear' })
    const now = await tail(pump)
    assert.ok(now.every((e) => !e.msg.includes('before clear')))
    assert.ok(now.some((e) => e.msg.includes('after clear')))
  })

  it('the ring stays at --log-buffer entries under a flood, keeping the newest', async () => {
    const before = (await t.api('GET', `${SYS}/logs`)).body.last_seq as number
    assert.equal((await t.call(`${SYS}/instances/fan`, 'flood', { n: 500 })).status, 200)
    const doc = (await t.api('GET', `${SYS}/logs`)).body
    assert.equal(doc.capacity, 200)
    assert.ok(doc.last_seq - before >= 500, 'the flood was logged')
    const all = await tail(SYS, { limit: 100_000 })
    assert.equal(all.length, 200)
    assert.equal(doc.entries, 200)
    assert.equal(all[all.length - 1]!.msg, 'flood line 499', 'the newest records are kept')
    for (let i = 1; i < all.length; i++) assert.ok(all[i]!.seq > all[i - 1]!.seq)
  })

  it('the event stream sends log lines only to a subscription that asks for them', async () => {
    // Reads a stream until `done(text since the action)` holds: the action runs once the first frame arrived.
    const read = async (query: string, act: () => Promise<unknown>, done: (since: string) => boolean): Promise<string> => {
      const controller = new AbortController()
      const guard = setTimeout(() => controller.abort(), 5000)
      const res = await fetch(`${t.url}/api/v3/events?${query}`, { headers: { authorization: `Bearer ${TEST_KEY}` }, signal: controller.signal })
      assert.equal(res.status, 200)
      const reader = res.body!.getReader()
      const decoder = new TextDecoder()
      let text = ''
      let mark = -1
      try {
        for (;;) {
          const chunk = await reader.read()
          if (chunk.done) break
          text += decoder.decode(chunk.value)
          if (mark < 0 && text.includes('event: frame')) {
            await act()
            mark = text.length
          }
          if (mark >= 0 && done(text.slice(mark))) return text.slice(mark)
        }
      } finally {
        clearTimeout(guard)
        controller.abort()
      }
      assert.fail(`the stream ended before the expected events: ${text}`)
    }
    const withLogs = await read(
      'hz=20&logs=info&instances=pump',
      () => t.call(`${SYS}/instances/pump`, 'say', { text: 'live line A' }),
      (since) => since.includes('live line A'),
    )
    const event = withLogs.split('\n\n').find((block) => block.startsWith('event: log') && block.includes('live line A'))
    assert.ok(event, withLogs)
    const entry = JSON.parse(event.split('\ndata: ')[1]!) as Entry
    assert.equal(entry.instance, 'pump')
    assert.equal(entry.level, 'info')

    // Without ?logs= the line is not sent: the frame of the run that came after it arrives alone.
    const without = await read(
      'hz=20&instances=pump',
      async () => {
        await t.call(`${SYS}/instances/pump`, 'say', { text: 'live line B' })
        await t.call(`${SYS}/instances/pump`, 'run')
      },
      (since) => since.includes('"level"'),
    )
    assert.ok(!without.includes('event: log'), without)
    assert.ok((await tail(`${SYS}/instances/pump`, { contains: 'live line B' })).length === 1, 'the line was logged')

    const bad = await t.api('GET', '/api/v3/events?logs=loud')
    assert.equal(bad.status, 422)
    assert.equal(bad.body.error.details[0].path, 'query.logs')
  })
})
