// The conformance suite every protocol kind passes (docs/protocols.md): it enumerates the kinds of
// the registry (src/protocols/index.ts) and runs each, through a running server and a real client
// of the protocol (fixtures.ts), through the same cases: the lifecycle (prepare, stop, start),
// detach and attach, a port another kind holds (a fault naming the port and its holder), bad
// settings (422 with paths), stats that are there and count, and a snapshot round trip of an
// instance with the adapter.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { protocolKinds } from '../../src/protocols/index.js'
import { TEST_KEY, eventually, startTestServer, type TestServer } from '../helpers/server.js'
import { FIXTURES, type ProtocolFixture } from './fixtures.js'

const SYS = '/api/v3/system'

describe('every registered protocol kind has a conformance fixture', () => {
  it('names each kind of the registry', () => {
    assert.deepEqual(
      protocolKinds()
        .map((kind) => kind.name)
        .filter((name) => FIXTURES[name] === undefined),
      [],
      'add a fixture to test/protocols/fixtures.ts',
    )
  })
})

let serial = 0

/** The adapter's stats as the event stream carries them (its first frame has every entry). */
async function streamStats(t: TestServer, instance: string, adapter: string): Promise<Record<string, unknown>> {
  const controller = new AbortController()
  const res = await fetch(`${t.url}/api/v3/events?instances=${instance}`, { headers: { authorization: `Bearer ${TEST_KEY}` }, signal: controller.signal })
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`the event stream ended without a frame of ${instance}.${adapter}`)
      text += decoder.decode(value, { stream: true })
      for (const event of text.split('\n\n')) {
        const data = /^event: frame\ndata: (.*)$/ms.exec(event)?.[1]
        if (data === undefined) continue
        const stats = (JSON.parse(data) as { instances?: Record<string, { adapters?: Record<string, Record<string, unknown>> }> }).instances?.[instance]
          ?.adapters?.[adapter]
        if (stats !== undefined) return stats
      }
    }
  } finally {
    controller.abort()
  }
}

for (const kind of protocolKinds()) {
  for (const fixture of FIXTURES[kind.name] ?? []) conformance(fixture)
}

function conformance(fixture: ProtocolFixture): void {
  describe(`conformance: ${fixture.label}`, () => {
    let t: TestServer
    const tag = `c${++serial}`
    const instance = `dev_${tag}`
    const model = `Dev_${tag}`
    const node = `${SYS}/instances/${instance}/communication/${fixture.kind}`
    const counter = fixture.counter ?? 'requests'
    const doc = async (): Promise<Record<string, any>> => (await t.api('GET', node)).body
    const probe = async (): Promise<unknown> => {
      const current = await doc()
      return fixture.probe({ t, instance, port: current.port, node: current })
    }
    const modelOf = (settings: Record<string, unknown>) => ({
      attributes: { level: { default: 7, type: 'int' } },
      communication: [{ [fixture.kind]: settings }],
    })
    const prepare = async (name: string) => {
      const res = await t.call(`${SYS}/instances/${name}`, 'prepare')
      assert.equal(res.status, 200, JSON.stringify(res.body))
    }

    before(async () => {
      t = await startTestServer()
      assert.equal((await t.api('PUT', `${SYS}/models`, { [model]: modelOf(fixture.settings(0)) })).status, 200)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { [instance]: model })).status, 200)
    })
    after(async () => {
      await fixture.close?.()
      await t?.close()
    })

    it('lifecycle: STOPPED until prepared, RUNNING and serving after, STOPPED by stop, serving again after start', async () => {
      assert.equal((await doc()).state, 'STOPPED')
      await prepare(instance)
      const running = await doc()
      assert.equal(running.state, 'RUNNING')
      assert.equal(typeof running.port, 'number')
      assert.equal(await eventually(async () => (await probe()) === 7 || undefined), true)
      assert.equal((await t.call(`${SYS}/instances/${instance}`, 'stop')).status, 200)
      assert.equal((await doc()).state, 'STOPPED')
      assert.equal((await t.call(`${SYS}/instances/${instance}`, 'start')).status, 200)
      assert.equal((await doc()).state, 'RUNNING')
      assert.equal(await eventually(async () => (await probe()) === 7 || undefined), true)
    })

    it('stats: state, requests and errors are in the event stream, and the protocol counter moves with each probe', async () => {
      const before = await streamStats(t, instance, fixture.kind)
      for (const key of ['state', 'requests', 'errors', counter]) assert.equal(typeof before[key], key === 'state' ? 'string' : 'number', `stats lack ${key}`)
      assert.equal(before.state, 'RUNNING')
      assert.equal(await probe(), 7)
      await eventually(async () => ((await streamStats(t, instance, fixture.kind))[counter] as number) > (before[counter] as number))
    })

    it('detach: the adapter keeps its port but answers nothing; attach: it answers again; both refused while stopped', async () => {
      const port = (await doc()).port
      assert.equal((await t.call(node, 'detach')).status, 200)
      assert.equal((await doc()).state, 'DETACHED')
      assert.equal((await doc()).port, port)
      assert.equal(await probe(), undefined)
      assert.equal((await t.call(node, 'attach')).status, 200)
      assert.equal((await doc()).state, 'RUNNING')
      assert.equal(await eventually(async () => (await probe()) === 7 || undefined), true)
      assert.equal((await t.call(node, 'stop')).status, 200)
      assert.equal((await t.call(node, 'detach')).status, 409)
      assert.equal((await t.call(node, 'attach')).status, 409)
      assert.equal((await t.call(node, 'start')).status, 200)
    })

    it('port clash: a port another kind of this server holds is a 409 naming the port and its holder', async () => {
      // The holder: an ascii adapter (tcp or udp), or a Modbus one for the ascii kind itself.
      const holderKind = fixture.kind === 'ascii' ? 'modbus_slave' : 'ascii'
      const holderSettings =
        holderKind === 'ascii'
          ? { port: 0, transport: fixture.transport, mappings: { 'LEVEL?': 'level' } }
          : { port: 0, mapping: { level: { address: 0, group: 'h_r', type: 'uint_16' } } }
      const holder = { attributes: { level: { default: 1, type: 'int' } }, communication: [{ [holderKind]: holderSettings }] }
      assert.equal((await t.api('PUT', `${SYS}/models`, { [`Holder_${tag}`]: holder })).status, 200)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { [`holder_${tag}`]: `Holder_${tag}` })).status, 200)
      await prepare(`holder_${tag}`)
      const port = (await t.api('GET', `${SYS}/instances/holder_${tag}/communication/${holderKind}`)).body.port as number
      assert.equal((await t.api('PUT', `${SYS}/models`, { [`Clash_${tag}`]: modelOf(fixture.settings(port)) })).status, 200)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { [`clash_${tag}`]: `Clash_${tag}` })).status, 200)
      const res = await t.call(`${SYS}/instances/clash_${tag}`, 'prepare')
      assert.equal(res.status, 409, JSON.stringify(res.body))
      const text = JSON.stringify(res.body.error)
      assert.match(text, new RegExp(`\\b${port}\\b`))
      assert.match(text, new RegExp(`holder_${tag}\\.${holderKind}|${holderKind === 'ascii' ? 'text instrument' : 'Modbus'}`, 'i'))
      assert.equal(await probe(), 7, 'the adapter that was there keeps serving')
    })

    it('bad settings: an unknown key and a bad port are a 422 naming each by its path', async () => {
      const bad = { ...fixture.settings(0), port: 'eighty', bogus_key: 1 }
      const res = await t.api('PUT', `${SYS}/models`, { [`Bad_${tag}`]: modelOf(bad) })
      assert.equal(res.status, 422, JSON.stringify(res.body))
      const paths = (res.body.error.details as Array<{ path: string }>).map((d) => d.path)
      assert.ok(
        paths.some((p) => p.startsWith('communication') && p.endsWith('bogus_key')),
        paths.join(', '),
      )
      assert.ok(
        paths.some((p) => p.startsWith('communication') && p.endsWith('port')),
        paths.join(', '),
      )
    })

    it('snapshot round trip: the instance and its adapter come back from a snapshot (same node type and properties), and serve once prepared', async () => {
      const before = await doc()
      const saved = await t.call(`${SYS}/snapshots`, 'save', { label: tag })
      assert.equal(saved.status, 200, JSON.stringify(saved.body))
      assert.equal((await t.api('DELETE', `${SYS}/instances/${instance}`)).status, 200)
      const load = await t.call(`${SYS}/snapshots`, 'load', { id: saved.body.result.id })
      assert.equal(load.status, 200, JSON.stringify(load.body))
      const loaded = await doc()
      assert.equal(loaded.state, 'STOPPED')
      assert.equal(loaded.type, before.type)
      assert.deepEqual(Object.keys(loaded.attr).sort(), Object.keys(before.attr).sort())
      await prepare(instance)
      assert.equal((await doc()).state, 'RUNNING')
      assert.equal(await eventually(async () => (await probe()) === 7 || undefined), true)
    })
  })
}
