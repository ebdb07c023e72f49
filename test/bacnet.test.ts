// The bacnet adapter against a client built on @bacnet-js/client (the npm BACnet stack), run in this
// process on its own UDP port of 127.0.0.1: Who-Is and I-Am, ReadProperty and ReadPropertyMultiple
// of analog, binary and multi-state objects, WriteProperty with priorities, SubscribeCOV and its
// notifications after a step, faults answered as BACnet Error, Reject and Abort, detach, and the
// reference product's three BACnet models run unchanged.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import bacnet, { ApplicationTag, ObjectType, PropertyIdentifier } from '@bacnet-js/client'
import { loadDefinitionFile } from '../src/definition/load-file.js'
import { modelBehaviourProblems } from '../src/language/model/index.js'
import { ProtocolWrites, traceTail } from './helpers/protocol-writes.js'
import { eventually, freePort, startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const FIXTURES = join(import.meta.dirname, 'fixtures', 'spx')
const BACnetClient = bacnet.default
type Client = InstanceType<typeof BACnetClient>
const P = PropertyIdentifier
const ALL = 0xffffffff

const PANEL = {
  attributes: {
    temp: { type: 'float', default: 21.5, unit: 'degC' },
    door: { type: 'int', default: 1 },
    siren: { type: 'int', default: 0 },
    setpoint: { type: 'float', default: 19.0 },
    mode: { type: 'int', default: 2 },
    served: { type: 'int', default: 0 },
  },
  actions: [
    { function: '$out(temp)', call: '$in(temp) + 1.0' },
    { function: '$out(served)', call: '$attr(communication.bacnet.request_count)' },
  ],
  scenarios: { bacnet_silent: { overrides: { 'communication.bacnet.faults': { no_response: true } } } },
  communication: [
    {
      bacnet: {
        port: 0,
        device: { instance_id: 1234, vendor_id: 999, name: 'Test panel', model_name: 'mimic-test' },
        timing: { poll_interval: 0.5 },
        objects: {
          room_temp: { type: 'analogInput', instance: 1, properties: { presentValue: { read: '#attr(temp)' }, units: 'degreesCelsius' } },
          door_contact: { type: 'binaryInput', instance: 2, properties: { presentValue: { read: '#attr(door)', states: { 0: 'closed', 1: 'open' } } } },
          siren_output: {
            type: 'binaryOutput',
            instance: 3,
            priority: 8,
            properties: { presentValue: { read: '#attr(siren)', write: '#attr(siren)', states: { 0: 'off', 1: 'on' } }, relinquishDefault: 0 },
          },
          setpoint: {
            type: 'analogValue',
            instance: 4,
            properties: { presentValue: { read: '#attr(setpoint)', write: '#attr(setpoint)' }, units: 'degreesCelsius' },
          },
          room_temp_coarse: { type: 'analogInput', instance: 6, properties: { presentValue: { read: '#attr(temp)' }, covIncrement: 2.5 } },
          mode: {
            type: 'multiStateValue',
            instance: 5,
            properties: {
              presentValue: { read: '#attr(mode)', states: { 1: 'off', 2: 'auto', 3: 'on' } },
              numberOfStates: 3,
              stateText: ['off', 'auto', 'on'],
            },
          },
        },
      },
    },
  ],
}

/** A client of the npm stack on its own port of 127.0.0.1. */
async function client(): Promise<Client> {
  const c = new BACnetClient({ port: await freePort(), interface: '127.0.0.1', apduTimeout: 1500 })
  await new Promise<void>((resolve) => c.once('listening', () => resolve()))
  return c
}

/** The I-Am the device at `address` answers a unicast Who-Is with. */
function whoIs(c: Client, address: string, limits?: { lowLimit: number; highLimit: number }): Promise<{ deviceId: number; vendorId: number } | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      c.off('iAm', onIAm)
      resolve(undefined)
    }, 1500)
    const onIAm = (content: { payload: { deviceId: number; vendorId: number } }) => {
      clearTimeout(timer)
      c.off('iAm', onIAm)
      resolve(content.payload)
    }
    c.on('iAm', onIAm)
    c.whoIs({ address }, limits)
  })
}

const value = async (c: Client, address: string, type: number, instance: number, property = P.PRESENT_VALUE) =>
  (await c.readProperty({ address }, { type, instance }, property)).values.map((v) => v.value)

describe('bacnet adapter with a client of @bacnet-js/client', () => {
  let t: TestServer
  let c: Client
  let address: string
  const node = `${SYS}/instances/panel_1/communication/bacnet`
  const attr = async (name: string) => (await t.api('GET', `${SYS}/instances/panel_1/attributes/${name}`)).body

  before(async () => {
    t = await startTestServer()
    assert.equal((await t.api('PUT', `${SYS}/models`, { Panel: PANEL })).status, 200)
    assert.equal((await t.api('PUT', `${SYS}/instances`, { panel_1: 'Panel' })).status, 200)
    const prepared = await t.call(`${SYS}/instances/panel_1`, 'prepare')
    assert.equal(prepared.status, 200, JSON.stringify(prepared.body))
    const doc = (await t.api('GET', node)).body
    assert.equal(doc.type, 'BacnetDevice')
    assert.equal(doc.state, 'RUNNING')
    address = `127.0.0.1:${doc.attr?.port?.value ?? doc.port}`
    c = await client()
  })
  after(async () => {
    c?.close()
    await t?.close()
  })

  it('answers a unicast Who-Is with its I-Am, and a Who-Is for other instances not at all', async () => {
    assert.deepEqual(await whoIs(c, address).then((r) => r && { deviceId: r.deviceId, vendorId: r.vendorId }), { deviceId: 1234, vendorId: 999 })
    assert.equal(await whoIs(c, address, { lowLimit: 1, highLimit: 100 }), undefined)
  })

  it('reads the Device object and presentValue of analog, binary and multi-state objects', async () => {
    assert.deepEqual(await value(c, address, ObjectType.DEVICE, 1234, P.OBJECT_NAME), ['Test panel'])
    assert.deepEqual(await value(c, address, ObjectType.DEVICE, 1234, P.MODEL_NAME), ['mimic-test'])
    const list = await value(c, address, ObjectType.DEVICE, 1234, P.OBJECT_LIST)
    assert.equal(list.length, 7)
    const [temp] = await value(c, address, ObjectType.ANALOG_INPUT, 1)
    assert.ok(Math.abs((temp as number) - 21.5) < 1e-6, String(temp))
    assert.deepEqual(await value(c, address, ObjectType.ANALOG_INPUT, 1, P.UNITS), [62])
    assert.deepEqual(await value(c, address, ObjectType.BINARY_INPUT, 2), [1])
    assert.deepEqual(await value(c, address, ObjectType.BINARY_INPUT, 2, P.ACTIVE_TEXT), ['open'])
    assert.deepEqual(await value(c, address, ObjectType.MULTI_STATE_VALUE, 5), [2])
    assert.deepEqual(await value(c, address, ObjectType.MULTI_STATE_VALUE, 5, P.STATE_TEXT), ['off', 'auto', 'on'])

    const multiple = await c.readPropertyMultiple({ address }, [
      {
        objectId: { type: ObjectType.ANALOG_INPUT, instance: 1 },
        properties: [
          { id: P.PRESENT_VALUE, index: ALL },
          { id: P.OBJECT_NAME, index: ALL },
        ],
      },
      { objectId: { type: ObjectType.BINARY_OUTPUT, instance: 3 }, properties: [{ id: P.PRESENT_VALUE, index: ALL }] },
      { objectId: { type: ObjectType.ANALOG_INPUT, instance: 99 }, properties: [{ id: P.PRESENT_VALUE, index: ALL }] },
    ])
    const [ai, bo, missing] = multiple.values
    assert.equal(ai!.values[1]!.value[0]!.value, 'room_temp')
    assert.deepEqual(
      bo!.values.map((v) => v.value.map((x) => x.value)),
      [[0]],
    )
    // An object the device lacks is an error in its place, not a failed request.
    assert.equal(ai!.values.length, 2)
    assert.equal((missing!.values[0]!.value[0]!.value as any).errorCode, 31)
  })

  it('an unknown object or property is a BACnet Error with its class and code', async () => {
    await assert.rejects(c.readProperty({ address }, { type: ObjectType.ANALOG_INPUT, instance: 99 }, P.PRESENT_VALUE), /Class:1 - Code:31/)
    await assert.rejects(c.readProperty({ address }, { type: ObjectType.ANALOG_INPUT, instance: 1 }, P.PRIORITY_ARRAY), /Class:2 - Code:32/)
    // A read-only object: write-access-denied.
    await assert.rejects(
      c.writeProperty({ address }, { type: ObjectType.ANALOG_INPUT, instance: 1 }, P.PRESENT_VALUE, [{ type: ApplicationTag.REAL, value: 5 }], {}),
      /Class:2 - Code:40/,
    )
  })

  it('a write of a commandable object goes through its priority array to the attribute; relinquishing returns to relinquishDefault', async () => {
    const bo = { type: ObjectType.BINARY_OUTPUT, instance: 3 }
    await c.writeProperty({ address }, bo, P.PRESENT_VALUE, [{ type: ApplicationTag.ENUMERATED, value: 1 }], { priority: 8 })
    assert.equal((await attr('siren')).internal_value, 1)
    assert.deepEqual(await value(c, address, ObjectType.BINARY_OUTPUT, 3), [1])
    const slots = await value(c, address, ObjectType.BINARY_OUTPUT, 3, P.PRIORITY_ARRAY)
    assert.equal(slots.length, 16)
    assert.equal(slots[7], 1)
    // A lower priority (16) does not win over 8.
    await c.writeProperty({ address }, bo, P.PRESENT_VALUE, [{ type: ApplicationTag.ENUMERATED, value: 0 }], { priority: 16 })
    assert.equal((await attr('siren')).internal_value, 1)
    // Relinquish 8: slot 16's 0 is in force.
    await c.writeProperty({ address }, bo, P.PRESENT_VALUE, [{ type: ApplicationTag.NULL, value: null }], { priority: 8 })
    assert.equal((await attr('siren')).internal_value, 0)
    assert.deepEqual((await t.api('GET', node)).body.attr?.commanded?.value ?? (await t.api('GET', node)).body.commanded, { siren_output: { 16: 0 } })

    // A value object without priority: the write sets the attribute directly.
    await c.writeProperty({ address }, { type: ObjectType.ANALOG_VALUE, instance: 4 }, P.PRESENT_VALUE, [{ type: ApplicationTag.REAL, value: 22.5 }], {})
    assert.equal((await attr('setpoint')).internal_value, 22.5)
    // A binary object takes 0 or 1 only.
    await assert.rejects(
      c.writeProperty({ address }, bo, P.PRESENT_VALUE, [{ type: ApplicationTag.ENUMERATED, value: 7 }], { priority: 8 }),
      /Class:2 - Code:37/,
    )
  })

  it('a SubscribeCOV gets the current values at once, then a notification after each step that changed the value', async () => {
    const notes: Array<{ object: number; value: unknown }> = []
    c.on('covNotifyUnconfirmed', (content: any) => {
      const pv = content.payload.values.find((v: any) => v.property.id === P.PRESENT_VALUE)
      notes.push({ object: content.payload.monitoredObjectId.instance, value: pv?.value[0]?.value })
    })
    await c.subscribeCov({ address }, { type: ObjectType.ANALOG_INPUT, instance: 1 }, 7, false, false, 0)
    await eventually(() => notes.length === 1)
    const first = notes[0]!.value as number
    assert.equal((await t.api('GET', node)).body.attr?.subscriptions?.value?.length ?? (await t.api('GET', node)).body.subscriptions.length, 1)
    // One step adds 1.0 to temp: one notification with the new value.
    assert.equal((await t.call(`${SYS}/instances/panel_1`, 'run')).status, 200)
    await eventually(() => notes.length === 2)
    assert.ok(Math.abs((notes[1]!.value as number) - (first + 1)) < 1e-6, JSON.stringify(notes))
    // Cancelled: no more notifications.
    await c.subscribeCov({ address }, { type: ObjectType.ANALOG_INPUT, instance: 1 }, 7, true, false, 0)
    assert.equal((await t.call(`${SYS}/instances/panel_1`, 'run')).status, 200)
    const stats = (await t.api('GET', node)).body
    assert.ok(JSON.stringify(stats).includes('"notifications"'), JSON.stringify(stats))
    assert.equal(notes.length, 2)
  })

  it('an object with a covIncrement notifies once its value moved that far', async () => {
    const notes: number[] = []
    c.on('covNotifyUnconfirmed', (content: any) => {
      if (content.payload.monitoredObjectId.instance === 6) notes.push(content.payload.values[0].value[0].value)
    })
    await c.subscribeCov({ address }, { type: ObjectType.ANALOG_INPUT, instance: 6 }, 8, false, false, 0)
    await eventually(() => notes.length === 1)
    // Each step adds 1.0: the first two stay within 2.5 of the value told, the third does not.
    for (let i = 0; i < 3; i++) assert.equal((await t.call(`${SYS}/instances/panel_1`, 'run')).status, 200)
    await eventually(() => notes.length === 2)
    assert.ok(Math.abs(notes[1]! - (notes[0]! + 3)) < 1e-6, JSON.stringify(notes))
    await c.subscribeCov({ address }, { type: ObjectType.ANALOG_INPUT, instance: 6 }, 8, true, false, 0)
  })

  it('faults answer BACnet Error, Reject, Abort or nothing, scoped by service; null returns to normal service', async () => {
    const read = () => c.readProperty({ address }, { type: ObjectType.ANALOG_INPUT, instance: 1 }, P.PRESENT_VALUE)
    const set = async (faults: unknown) => {
      const res = await t.api('PUT', `${node}/attr/faults`, { value: faults })
      assert.equal(res.status, 200, JSON.stringify(res.body))
    }
    await set({ error: { class: 0, code: 25, services: ['readProperty'] } })
    await assert.rejects(read(), /Class:0 - Code:25/)
    await set({ reject: { reason: 9 } })
    await assert.rejects(read(), /BacnetAbort - Reason:9/)
    await set({ abort: { reason: 4 } })
    await assert.rejects(read(), /BacnetAbort - Reason:4/)
    // Late answers: one within the client's APDU timeout arrives, one beyond it does not.
    await set({ response_delay: 0.2 })
    assert.equal((await read()).values.length, 1)
    await set({ response_delay: { seconds: 5, services: ['readProperty'] } })
    await assert.rejects(read(), /ERR_TIMEOUT/)
    assert.ok((await t.api('GET', node)).body.counters.delayed >= 2)
    await set({ no_response: { services: ['whoIs'] } })
    assert.equal(await whoIs(c, address), undefined)
    assert.ok((await read()).values.length === 1)
    const bad = await t.api('PUT', `${node}/attr/faults`, { value: { error: { code: 'x' } } })
    assert.equal(bad.status, 422)
    assert.match(JSON.stringify(bad.body), /error\.code/)
    await set(null)
    assert.ok(await whoIs(c, address))
  })

  it('a scenario sets faults through an override, and they end with it', async () => {
    const scenario = `${SYS}/instances/panel_1/scenarios/bacnet_silent`
    assert.equal((await t.call(scenario, 'start')).status, 200)
    assert.equal(await whoIs(c, address), undefined)
    assert.equal((await t.call(scenario, 'stop')).status, 200)
    assert.ok(await whoIs(c, address))
  })

  it("the model's expressions read the adapter's request_count", async () => {
    assert.equal((await t.call(`${SYS}/instances/panel_1`, 'run')).status, 200)
    const stats = (await t.api('GET', node)).body
    const served = await attr('served')
    assert.ok(typeof served.external_value === 'number' && served.external_value > 10, JSON.stringify({ served, stats: stats.attr?.request_count }))
  })

  it('GET /health lists its UDP listener with its holder', async () => {
    const health = (await t.api('GET', '/health')).body
    const listener = health.listeners.find((l: { kind: string }) => l.kind === 'bacnet')
    assert.equal(listener.transport, 'udp')
    assert.equal(`127.0.0.1:${listener.port}`, address)
    assert.match(listener.holder, /BACnet device 1234 of adapter 'panel_1\.bacnet'/)
  })

  it('detached, it answers nothing; attached, it answers again', async () => {
    assert.equal((await t.call(node, 'detach')).status, 200)
    assert.equal(await whoIs(c, address), undefined)
    assert.equal((await t.call(node, 'attach')).status, 200)
    assert.ok(await whoIs(c, address))
  })

  it('the trace: reads, writes, refusals and COV notifications with object, property, value and error; a write is one protocol.write event', async () => {
    assert.equal((await t.call(node, 'clear_trace')).status, 200)
    const writes = await ProtocolWrites.open(t.url, 'panel_1')
    const av4 = { type: ObjectType.ANALOG_VALUE, instance: 4 }
    let temp: unknown
    let setpoint: unknown
    const notes: unknown[] = []
    const onNote = (content: any) => notes.push(content.payload.monitoredObjectId.instance)
    c.on('covNotifyUnconfirmed', onNote)
    try {
      ;[temp] = await value(c, address, ObjectType.ANALOG_INPUT, 1)
      const multiple = await c.readPropertyMultiple({ address }, [{ objectId: av4, properties: [{ id: P.PRESENT_VALUE, index: ALL }] }])
      setpoint = multiple.values[0]!.values[0]!.value[0]!.value
      await assert.rejects(value(c, address, ObjectType.ANALOG_INPUT, 99), /Class:1 - Code:31/)
      await assert.rejects(
        c.writeProperty({ address }, { type: ObjectType.ANALOG_INPUT, instance: 1 }, P.PRESENT_VALUE, [{ type: ApplicationTag.REAL, value: 5 }], {}),
        /Class:2 - Code:40/,
      )
      await c.subscribeCov({ address }, { type: ObjectType.ANALOG_INPUT, instance: 1 }, 9, false, false, 0)
      await eventually(() => notes.length === 1)
      await c.subscribeCov({ address }, { type: ObjectType.ANALOG_INPUT, instance: 1 }, 9, true, false, 0)
      await c.writeProperty({ address }, av4, P.PRESENT_VALUE, [{ type: ApplicationTag.REAL, value: 23.5 }], {})
      // The last write's event: every earlier one came before it.
      await writes.until((e) => e.attributes?.setpoint === 23.5)
      assert.deepEqual(
        writes.events.map((e) => [e.adapter, e.kind, e.operation, e.object, e.property, e.value]),
        [['bacnet', 'bacnet', 'write', 'analog-value,4', 'present-value', 23.5]],
      )
    } finally {
      c.off('covNotifyUnconfirmed', onNote)
      writes.close()
    }
    const tail = (kwargs: Record<string, unknown> = {}) => traceTail(t, node, kwargs)
    const entries = await tail()
    assert.deepEqual(
      entries.map((e) => [e.operation, e.direction, e.object, e.property, e.error]),
      [
        ['read', 'in', 'analog-input,1', 'present-value', undefined],
        ['read_multiple', 'in', ['analog-value,4'], null, undefined],
        ['read', 'in', 'analog-input,99', 'present-value', 'object/unknown-object'],
        ['write', 'in', 'analog-input,1', 'present-value', 'property/write-access-denied'],
        ['cov_notification', 'out', 'analog-input,1', 'present-value', undefined],
        ['subscribe_cov', 'in', 'analog-input,1', 'present-value', undefined],
        ['subscribe_cov', 'in', 'analog-input,1', 'present-value', undefined],
        ['write', 'in', 'analog-value,4', 'present-value', undefined],
      ],
    )
    assert.equal(entries[0]!.value, temp)
    assert.deepEqual(entries[1]!.value, { 'analog-value,4': { 'present-value': setpoint } })
    assert.equal(entries[3]!.value, 5)
    assert.equal(entries[3]!.attributes, undefined)
    assert.equal(entries[4]!.value, temp)
    assert.deepEqual(entries[5]!.value, { process_id: 9, confirmed: false, lifetime: 0 })
    assert.deepEqual(entries[6]!.value, { process_id: 9, cancel: true })
    assert.deepEqual([entries[7]!.value, entries[7]!.attributes], [23.5, { setpoint: 23.5 }])
    assert.ok(
      entries.every((e) => e.client === entries[0]!.client && /^127\.0\.0\.1:\d+$/.test(e.client)),
      JSON.stringify(entries),
    )
    assert.ok(
      entries.filter((e) => e.direction === 'in').every((e) => typeof e.latency === 'number'),
      JSON.stringify(entries),
    )
    // The filters select them.
    assert.deepEqual(
      (await tail({ operation: 'write' })).map((e) => e.object),
      ['analog-input,1', 'analog-value,4'],
    )
    assert.deepEqual(
      (await tail({ direction: 'out' })).map((e) => e.operation),
      ['cov_notification'],
    )
    assert.deepEqual(
      (await tail({ contains: 'UNKNOWN-OBJECT' })).map((e) => e.object),
      ['analog-input,99'],
    )
    // A Who-Is: the I-Am's device instance.
    assert.ok(await whoIs(c, address))
    assert.deepEqual(
      (await tail({ operation: 'who_is' })).map((e) => e.value),
      [1234],
    )
    // A fault's answer is the entry's error.
    const faults = async (value: unknown) => assert.equal((await t.api('PUT', `${node}/attr/faults`, { value })).status, 200)
    await faults({ reject: { reason: 9 } })
    await assert.rejects(value(c, address, ObjectType.ANALOG_INPUT, 1), /BacnetAbort - Reason:9/)
    await faults({ no_response: { services: ['whoIs'] } })
    assert.equal(await whoIs(c, address), undefined)
    await faults(null)
    assert.deepEqual(
      (await tail({ limit: 2 })).map((e) => [e.operation, e.error]),
      [
        ['read', 'reject/unrecognized-service'],
        ['who_is', 'NO_ANSWER'],
      ],
    )
  })
})

describe("the reference product's BACnet models run unchanged and answer", () => {
  let t: TestServer
  let c: Client
  before(async () => {
    t = await startTestServer()
    c = await client()
  })
  after(async () => {
    c?.close()
    await t?.close()
  })

  // Their ports as written (every interface); the client reaches them on 127.0.0.1.
  const MODELS = [
    { file: 'fire_alarm_panel__bacnet.yaml', port: 47828, device: 3010, analog: 1, binary: 30 },
    { file: 'security_access_controller__bacnet.yaml', port: 47818, device: 3020, analog: undefined, binary: 11 },
    { file: 'hvac_flexit_nordic__bacnet.yaml', port: 47808, device: 2, analog: 1, binary: 50 },
  ]
  for (const m of MODELS) {
    it(`${m.file}: discovered, its objects read`, async () => {
      const loaded = await loadDefinitionFile(join(FIXTURES, m.file), modelBehaviourProblems)
      assert.deepEqual(loaded.details, [])
      const name = m.file.replace(/\.yaml$/, '')
      assert.equal((await t.api('PUT', `${SYS}/models`, { [name]: loaded.data })).status, 200)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { [`${name}_1`]: name })).status, 200)
      const prepared = await t.call(`${SYS}/instances/${name}_1`, 'prepare')
      assert.equal(prepared.status, 200, JSON.stringify(prepared.body))
      assert.equal((await t.call(`${SYS}/instances/${name}_1`, 'run')).status, 200)
      const address = `127.0.0.1:${m.port}`
      // @bacnet-js/client takes any datagram from 127.0.0.1:47808 for its own broadcast and drops
      // it, so the device on 47808 is found by reading the Device object through its wildcard instance.
      if (m.port === 47808)
        assert.deepEqual(await value(c, address, ObjectType.DEVICE, 4194303, P.OBJECT_IDENTIFIER), [{ type: ObjectType.DEVICE, instance: m.device }])
      else assert.equal((await whoIs(c, address))?.deviceId, m.device)
      if (m.analog !== undefined) assert.equal(typeof (await value(c, address, ObjectType.ANALOG_INPUT, m.analog))[0], 'number')
      const binaryType = m.binary === 50 ? ObjectType.BINARY_VALUE : ObjectType.BINARY_INPUT
      assert.deepEqual(await value(c, address, binaryType, m.binary), [m.binary === 50 ? 1 : 0])
      if (m.port === 47808) {
        // Every property of every object is more than one APDU: this device does not segment.
        const objects = (await value(c, address, ObjectType.DEVICE, m.device, P.OBJECT_LIST)) as Array<{ type: number; instance: number }>
        assert.equal(objects.length, 38)
        await assert.rejects(
          c.readPropertyMultiple(
            { address },
            objects.map((objectId) => ({ objectId, properties: [{ id: P.ALL, index: ALL }] })),
          ),
          /BacnetAbort - Reason:4/,
        )
      }
      assert.equal((await t.call(`${SYS}/instances/${name}_1`, 'stop')).status, 200)
    })
  }
})
