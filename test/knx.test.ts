// KNX IP against peers the project did not write: Debian's knxd as the KNXnet/IP tunnelling
// server on loopback (its own bus, no routing, no multicast) and knxtool (knxd-tools) writing,
// reading and listening to group addresses. The simulated device is the reference product's
// library model lighting_zone__knx.yaml, unchanged. knx_ip is a client of a tunnelling server
// and holds no port, so the shared conformance suite (listener-shaped) does not cover it: its
// life cycle, detach/attach, stats and a snapshot round trip are here.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import { parse } from 'yaml'
import { Knxd } from './helpers/knxd.js'
import { ProtocolWrites, traceTail } from './helpers/protocol-writes.js'
import { eventually, startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const PROMTOOL = '/usr/bin/promtool'
const ZONE = `${SYS}/instances/zone`
const ADAPTER = `${ZONE}/communication/knx_ip`
const fixture = (name: string) => new URL(`fixtures/spx/${name}`, import.meta.url).pathname

async function attribute(t: TestServer, name: string): Promise<unknown> {
  const res = await t.api('GET', `${ZONE}/attributes/${name}`)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return res.body.internal_value
}

async function until(check: () => Promise<boolean> | boolean): Promise<void> {
  await eventually(async () => ((await check()) ? true : undefined))
}

describe('knx_ip: the library lighting zone behind knxd, driven by knxtool', () => {
  let t: TestServer
  let knxd: Knxd
  const doc = async () => (await t.api('GET', ADAPTER)).body

  before(async () => {
    knxd = await Knxd.start()
    t = await startTestServer()
    const model = parse(await readFile(fixture('lighting_zone__knx.yaml'), 'utf8'))
    assert.equal((await t.api('PUT', `${SYS}/models`, { LightingZone: model })).status, 200)
    const parameters = { knx_router_host: '127.0.0.1', knx_router_port: knxd.udpPort }
    const put = await t.api('PUT', `${SYS}/instances`, { zone: { type: 'LightingZone', parameters } })
    assert.equal(put.status, 200, JSON.stringify(put.body))
  })
  after(async () => {
    await t?.close()
    await knxd?.close()
  })

  it('lifecycle: STOPPED until prepared, then a tunnel to knxd', async () => {
    assert.equal((await doc()).state, 'STOPPED')
    assert.equal((await t.call(ZONE, 'prepare')).status, 200)
    await until(async () => (await doc()).connection === 'connected')
    const d = await doc()
    assert.equal(d.state, 'RUNNING')
    assert.match(d.individual_address, /^0\.0\.\d+$/)
    assert.equal(d.bindings.find((b: { name: string }) => b.name === 'daylight_sensor').codec, '9.004')
  })

  it('a group write from knxtool changes the attribute (bool, uint8 and string codecs)', async () => {
    await knxd.tool('groupswrite', '1/1/14', '0')
    await until(async () => (await attribute(t, 'k__occupancy_detected')) === 0)
    await knxd.tool('groupwrite', '1/1/10', '50') // 0x50 = 80
    await until(async () => (await attribute(t, 'k__circuit_a_target_percent')) === 80)
    // "manual" as 8 bytes, zero padded.
    await knxd.tool('groupwrite', '1/1/13', ...[...Buffer.from('cleaning')].map((b) => b.toString(16)))
    await until(async () => (await attribute(t, 'k__scene_active')) === 'cleaning')
  })

  it('a group read from knxtool gets the attribute value (DPT 9.004, uint8)', async () => {
    const listener = await knxd.listen()
    try {
      await knxd.tool('groupread', '1/1/15')
      // 280 lux as DPT 9: 0.01 * 1750 * 2^4 = 280 -> 0x26 0xD6.
      await until(() => listener.lines.some((l) => /Response from .* to 1\/1\/15: 26 D6/i.test(l))).catch((error: Error) => {
        throw new Error(`${error.message}; knxtool heard:\n${listener.lines.join('\n')}`)
      })
      await knxd.tool('groupread', '1/1/10')
      await until(() => listener.lines.some((l) => /Response from .* to 1\/1\/10: 41/i.test(l))) // 65 %
    } finally {
      listener.stop()
    }
  })

  it('a bound attribute that changes is sent as a group write (on a poll, and after a step)', async () => {
    const listener = await knxd.listen()
    try {
      assert.equal((await t.api('PUT', `${ZONE}/attributes`, { alarm_failure: 1 })).status, 200)
      await until(() => listener.lines.some((l) => /Write from .* to 1\/1\/18: 01/i.test(l)))
      // A step: the daylight follows the circuits and the occupancy (0 since the write above).
      assert.equal((await t.call(ZONE, 'run')).status, 200)
      const lux = (await attribute(t, 'k__daylight_lux')) as number
      assert.notEqual(lux, 280)
      await until(() => listener.lines.some((l) => /Write from .* to 1\/1\/15: [0-9A-F]{2} [0-9A-F]{2}/i.test(l)))
      const hex = listener.lines
        .filter((l) => /to 1\/1\/15:/.test(l))
        .at(-1)!
        .replace(/.*: /, '')
        .split(' ')
        .map((h) => parseInt(h, 16))
      const raw = (hex[0]! << 8) | hex[1]!
      const decoded = ((raw & 0x7ff) - (raw & 0x8000 ? 2048 : 0)) * 2 ** ((raw >> 11) & 0x0f) * 0.01
      assert.ok(Math.abs(decoded - lux) <= 0.08 * 2 ** ((raw >> 11) & 0x0f), `${decoded} vs ${lux}`)
    } finally {
      listener.stop()
    }
  })

  it('stats count telegrams; detach leaves the bus (writes are not taken), attach joins it again', async () => {
    const before = await doc()
    assert.ok(before.counters.telegrams_received >= 4 && before.counters.telegrams_sent >= 3, JSON.stringify(before.counters))
    assert.ok(before.counters.reads_answered >= 2)
    assert.equal((await t.call(ADAPTER, 'detach')).status, 200)
    assert.equal((await doc()).state, 'DETACHED')
    assert.equal((await doc()).connection, 'detached')
    await knxd.tool('groupswrite', '1/1/14', '1')
    await knxd.tool('groupwrite', '1/1/10', '20')
    assert.equal(await attribute(t, 'k__occupancy_detected'), 0, 'a detached device takes no writes')
    assert.equal((await t.call(ADAPTER, 'attach')).status, 200)
    await until(async () => (await doc()).connection === 'connected')
    await knxd.tool('groupswrite', '1/1/14', '1')
    await until(async () => (await attribute(t, 'k__occupancy_detected')) === 1)
    assert.equal((await t.call(ADAPTER, 'stop')).status, 200)
    assert.equal((await t.call(ADAPTER, 'detach')).status, 409)
    assert.equal((await t.call(ADAPTER, 'start')).status, 200)
    await until(async () => (await doc()).connection === 'connected')
  })

  it("/metrics counts its telegrams as the adapter's requests, and promtool accepts the scrape", async () => {
    const counters = (await doc()).counters
    const scrape = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${TEST_KEY}` } })
    assert.equal(scrape.status, 200)
    const text = await scrape.text()
    const series = 'mimic_adapter_requests_total{instance="zone",adapter="knx_ip",kind="knx_ip"}'
    const line = text.split('\n').find((l) => l.startsWith(`${series} `))
    assert.ok(line !== undefined, `no ${series} in the scrape`)
    assert.ok(Number(line.slice(series.length + 1)) >= counters.telegrams_received + counters.telegrams_sent, `${line} for ${JSON.stringify(counters)}`)
    // CI installs Debian's prometheus for its promtool (test/metrics.test.ts checks the other kinds).
    if (existsSync(PROMTOOL) || process.env.CI) {
      const check = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' })
      assert.equal(check.status, 0, `promtool check metrics:\n${check.stdout}${check.stderr}`)
    }
  })

  it('poll_interval is settable; a bad value and a read-only setting are refused', async () => {
    assert.equal((await t.api('PATCH', ADAPTER, { poll_interval: 0.1 })).status, 200)
    assert.equal((await doc()).poll_interval, 0.1)
    assert.equal((await t.api('PATCH', ADAPTER, { poll_interval: -1 })).status, 422)
    assert.equal((await t.api('PATCH', ADAPTER, { connect_timeout: 1 })).status, 422)
  })

  it('a tunnelling server that does not answer is retried, counted as no answer, and does not fail the adapter', async () => {
    const silent = { knx_router_host: '127.0.0.1', knx_router_port: 9 }
    assert.equal((await t.api('PUT', `${SYS}/instances`, { lonely: { type: 'LightingZone', parameters: silent } })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/lonely`, 'prepare')).status, 200)
    const node = `${SYS}/instances/lonely/communication/knx_ip`
    await until(async () => (await t.api('GET', node)).body.counters.no_answer >= 1)
    const d = (await t.api('GET', node)).body
    assert.equal(d.state, 'RUNNING')
    assert.equal(d.connection, 'reconnecting')
    assert.match(d.last_error, /127\.0\.0\.1:9|ECONNREFUSED|no answer/)
    assert.equal((await t.api('DELETE', `${SYS}/instances/lonely`)).status, 200)
  })

  it('snapshot round trip: the instance and its adapter come back, and join the bus once prepared', async () => {
    const settings = await doc()
    const saved = await t.call(`${SYS}/snapshots`, 'save', { label: 'knx' })
    assert.equal(saved.status, 200, JSON.stringify(saved.body))
    assert.equal((await t.api('DELETE', ZONE)).status, 200)
    assert.equal((await t.call(`${SYS}/snapshots`, 'load', { id: saved.body.result.id })).status, 200)
    assert.equal((await doc()).state, 'STOPPED')
    assert.equal((await doc()).type, 'KnxDevice')
    const loaded = await doc()
    assert.deepEqual([loaded.router, loaded.bindings], [settings.router, settings.bindings])
    assert.equal((await t.call(ZONE, 'prepare')).status, 200)
    await until(async () => (await doc()).connection === 'connected')
    await knxd.tool('groupswrite', '1/1/16', '1')
    await until(async () => (await attribute(t, 'k__emergency_override')) === 1)
  })

  it('the trace: group reads, writes and responses with group address, DPT and value, in and out; a refused write has its error; a write is one protocol.write event', async () => {
    const probe = {
      attributes: { level: { type: 'float', default: 1.5 }, lux: { type: 'float', default: 280.0 } },
      communication: [
        {
          knx_ip: {
            router: { host: '127.0.0.1', port: knxd.udpPort, route_back: true },
            poll_interval: 0.05,
            bindings: [
              { name: 'level', direction: 'inbound', group_address: '3/1/1', dpt: 9.001, write_attribute: '#attr(level)' },
              // Text for a float attribute: every write of it is refused.
              { name: 'label', direction: 'inbound', group_address: '3/1/2', value_codec: 'string', payload_length: 8, write_attribute: '#attr(level)' },
              { name: 'lux', direction: 'outbound', group_address: '3/1/3', dpt: 9.004, read_attribute: '#attr(lux)' },
            ],
          },
        },
      ],
    }
    assert.equal((await t.api('PUT', `${SYS}/models`, { Probe: probe })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { probe: 'Probe' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/probe`, 'prepare')).status, 200)
    const node = `${SYS}/instances/probe/communication/knx_ip`
    await until(async () => (await t.api('GET', node)).body.connection === 'connected')
    const tail = (kwargs: Record<string, unknown> = {}) => traceTail(t, node, kwargs)
    const writes = await ProtocolWrites.open(t.url, 'probe')
    const listener = await knxd.listen()
    try {
      await knxd.tool('groupread', '3/1/3')
      await until(() => listener.lines.some((l) => /Response from .* to 3\/1\/3: 26 D6/i.test(l)))
      await until(async () => (await tail()).length === 2)
      await knxd.tool('groupwrite', '3/1/2', ...[...Buffer.from('warm')].map((b) => b.toString(16)))
      await until(async () => (await tail()).length === 3)
      await knxd.tool('groupread', '3/1/1')
      await until(async () => (await tail()).length === 4)
      await knxd.tool('groupwrite', '3/1/1', '0C', '1A') // 21.0 as DPT 9
      // The write's event: the only one (the refused write made none).
      await writes.until((e) => e.attributes?.level === 21)
      assert.deepEqual(
        writes.events.map((e) => [e.adapter, e.kind, e.operation, e.direction, e.group_address, e.dpt, e.value]),
        [['knx_ip', 'knx_ip', 'group_write', 'in', '3/1/1', '9.001', 21]],
      )
      // A changed value goes on the bus on its own: direction out.
      assert.equal((await t.api('PUT', `${SYS}/instances/probe/attributes`, { lux: 300.0 })).status, 200)
      await until(() => listener.lines.some((l) => /Write from .* to 3\/1\/3:/i.test(l)))
      await until(async () => (await tail()).length === 6)
      assert.equal(writes.events.length, 1)
    } finally {
      listener.stop()
      writes.close()
    }
    const entries = await tail()
    assert.deepEqual(
      entries.map((e) => [e.operation, e.direction, e.group_address, e.dpt, e.data]),
      [
        ['group_read', 'in', '3/1/3', '9.004', undefined],
        ['group_response', 'out', '3/1/3', '9.004', '26d6'],
        ['group_write', 'in', '3/1/2', 'string', '7761726d'],
        ['group_read', 'in', '3/1/1', '9.001', undefined],
        ['group_write', 'in', '3/1/1', '9.001', '0c1a'],
        ['group_write', 'out', '3/1/3', '9.004', entries[5]!.data],
      ],
    )
    assert.equal(entries[1]!.value, 280)
    assert.equal(entries[1]!.error, undefined)
    assert.match(entries[2]!.error, /finite number/)
    assert.equal(entries[2]!.value, 'warm')
    assert.equal(entries[2]!.attributes, undefined)
    assert.match(entries[3]!.error, /no binding answers reads/)
    assert.deepEqual([entries[4]!.value, entries[4]!.attribute, entries[4]!.attributes], [21, 'level', { level: 21 }])
    assert.match(entries[4]!.source, /^\d+\.\d+\.\d+$/)
    assert.ok(Math.abs(entries[5]!.value - 300) < 1, JSON.stringify(entries[5]))
    assert.ok(typeof entries[5]!.latency === 'number' && entries[5]!.error === undefined, JSON.stringify(entries[5]))
    // The filters select them.
    assert.deepEqual(
      (await tail({ direction: 'out' })).map((e) => e.operation),
      ['group_response', 'group_write'],
    )
    assert.deepEqual(
      (await tail({ operation: 'group_write', direction: 'in' })).map((e) => e.group_address),
      ['3/1/2', '3/1/1'],
    )
    assert.deepEqual(
      (await tail({ contains: 'FINITE NUMBER' })).map((e) => e.group_address),
      ['3/1/2'],
    )
    assert.equal((await t.api('DELETE', `${SYS}/instances/probe`)).status, 200)
  })
})

describe("knx_ip: the library's other KNX models run unchanged and answer knxd", () => {
  let t: TestServer
  let knxd: Knxd
  const MODELS = [
    ['RoomController', 'room_controller__knx.yaml', 'room'],
    ['SwitchActuator', 'abb_sa_s12_16_5_1__knx.yaml', 'switches'],
    ['BlindActuator', 'abb_jra_s4_230_5_1__knx.yaml', 'blinds'],
    ['PresenceDetector', 'theronda_p360__knx.yaml', 'presence'],
  ] as const
  const value = async (instance: string, name: string) => (await t.api('GET', `${SYS}/instances/${instance}/attributes/${name}`)).body.internal_value

  before(async () => {
    knxd = await Knxd.start()
    t = await startTestServer()
    for (const [model, file, instance] of MODELS) {
      const put = await t.api('PUT', `${SYS}/models`, { [model]: parse(await readFile(fixture(file), 'utf8')) })
      assert.equal(put.status, 200, `${file}: ${JSON.stringify(put.body)}`)
      const parameters = { knx_router_host: '127.0.0.1', knx_router_port: knxd.udpPort }
      assert.equal((await t.api('PUT', `${SYS}/instances`, { [instance]: { type: model, parameters } })).status, 200)
      assert.equal((await t.call(`${SYS}/instances/${instance}`, 'prepare')).status, 200)
      const node = `${SYS}/instances/${instance}/communication/knx_ip`
      await until(async () => (await t.api('GET', node)).body.connection === 'connected')
    }
  })
  after(async () => {
    await t?.close()
    await knxd?.close()
  })

  it('room controller: a DPT 9.001 setpoint is taken, the room temperature is read', async () => {
    const listener = await knxd.listen()
    try {
      await knxd.tool('groupwrite', '2/0/2', '0C', '1A') // 21.0 degC
      await until(async () => (await value('room', 'k__room_command_c')) === 21)
      await knxd.tool('groupread', '2/0/1')
      await until(() => listener.lines.some((l) => /Response from .* to 2\/0\/1: 0C 65/i.test(l))) // 22.5 degC
    } finally {
      listener.stop()
    }
  })

  it('switch actuator: a channel command is taken and its state is sent back', async () => {
    const listener = await knxd.listen()
    try {
      await knxd.tool('groupswrite', '1/3/1', '1')
      await until(async () => (await value('switches', 'k__ch01')) === 1)
      await until(() => listener.lines.some((l) => /Write from .* to 1\/4\/1: 01/i.test(l)))
    } finally {
      listener.stop()
    }
  })

  it('blind actuator: a uint8 position command is taken, the position state is read', async () => {
    const listener = await knxd.listen()
    try {
      await knxd.tool('groupwrite', '2/3/1', '80')
      await until(async () => (await value('blinds', 'c1_position_set_raw_cmd')) === 128)
      await knxd.tool('groupread', '2/4/1')
      await until(() => listener.lines.some((l) => /Response from .* to 2\/4\/1: 1A/i.test(l))) // 26
    } finally {
      listener.stop()
    }
  })

  it('presence detector: a DPT 7 time delay is taken, the DPT 9.004 brightness is read', async () => {
    const listener = await knxd.listen()
    try {
      await knxd.tool('groupwrite', '3/2/4', '03', '84') // 900 s
      await until(async () => (await value('presence', 'obj27_lighting_time_delay_in_s')) === 900)
      await knxd.tool('groupread', '3/0/10')
      await until(() => listener.lines.some((l) => /Response from .* to 3\/0\/10: 26 D6/i.test(l))) // 280 lux
    } finally {
      listener.stop()
    }
  })
})
