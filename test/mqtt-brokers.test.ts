import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { TEST_KEY, eventually, freePort, startTestServer, type TestServer } from './helpers/server.js'
import { canConnect, Mosquitto, mosquittoMissing, MosquittoSub, mosquittoPub, socketsOnPort, type MosquittoLogin } from './helpers/mosquitto.js'

// The `mqtt` adapter against two brokers with the same cases: Debian's mosquitto, started by the
// test on a free port with its own configuration, and the embedded broker (`broker: embedded`).
// The clients on the other side are mosquitto_sub and mosquitto_pub, in their own processes.

const SYS = '/api/v3/system'
const missing = mosquittoMissing()

/**
 * Users the mosquitto broker knows (anonymous clients are accepted too); the embedded broker of a
 * server with a product key takes any user with the key as password.
 */
const USERS = { relay: 'relay-secret', pump: 'pump-secret' }

/** A broker for the suite, and how the suite takes it away from an adapter and gives it back. */
interface BrokerRig {
  readonly kind: 'mosquitto' | 'embedded'
  readonly port: number
  /** The adapter settings that point at this broker. */
  readonly settings: { broker: string; port: number }
  /** What mosquitto_sub and mosquitto_pub log in with. */
  readonly login: MosquittoLogin
  /** The mosquitto broker itself, to freeze or kill it (undefined for the embedded one). */
  readonly mosquitto?: Mosquitto
  /** Takes the broker away from the adapter at `node`; resolves to the `connection` the adapter shows then. */
  cut(t: TestServer, node: string): Promise<string>
  /** The broker is back on its port but does not yet let `user` in. */
  backWithout(user: keyof typeof USERS): Promise<void>
  /** The broker lets the adapter at `node`, of user `user`, in again. */
  admit(t: TestServer, node: string): Promise<void>
  close(): Promise<void>
}

/**
 * mosquitto with persistence in its temp directory: a stop saves the sessions and a start on the
 * same port restores them, as a broker restarted for maintenance does. It comes back refusing the
 * adapter's user, so what is published to the adapter while it is away is there before it can
 * connect, and reloads its users to let it in.
 */
async function mosquittoRig(): Promise<BrokerRig> {
  const broker = await Mosquitto.start({ users: USERS })
  return {
    kind: 'mosquitto',
    port: broker.port,
    settings: { broker: '127.0.0.1', port: broker.port },
    login: {},
    mosquitto: broker,
    cut: async () => {
      await broker.down()
      return 'reconnecting'
    },
    backWithout: async (user) => {
      const { [user]: _refused, ...others } = USERS
      await broker.setUsers(others)
      await broker.up()
    },
    admit: async () => broker.setUsers(USERS),
    close: () => broker.close(),
  }
}

/**
 * The embedded broker, kept open for the whole suite by an instance of its own (a broker shared by
 * every adapter on its port, as several devices use one site broker). It lives in the server's
 * process and closes with its last adapter, so it cannot be restarted under a running adapter:
 * its "restart" is the adapter dropping its link without a goodbye (detach) and coming back (attach);
 * the broker keeps the persistent session meanwhile as mosquitto does across its restart.
 */
async function embeddedRig(t: TestServer): Promise<BrokerRig> {
  // Chosen ahead: a snapshot load closes the broker, and the loaded system opens it again on this port.
  const port = await freePort()
  const keeper = { attributes: { up: true }, communication: { mqtt: { broker: 'embedded', port, bindings: [] } } }
  assert.equal((await t.api('PUT', `${SYS}/models`, { SiteBroker: keeper })).status, 200)
  assert.equal((await t.api('PUT', `${SYS}/instances`, { site_broker: 'SiteBroker' })).status, 200)
  assert.equal((await t.call(`${SYS}/instances/site_broker`, 'prepare')).status, 200)
  return {
    kind: 'embedded',
    port,
    settings: { broker: 'embedded', port },
    login: { username: 'tester', password: TEST_KEY },
    cut: async (t, node) => {
      assert.equal((await t.call(node, 'detach')).status, 200)
      return 'detached'
    },
    backWithout: async () => undefined,
    admit: async (t, node) => {
      assert.equal((await t.call(node, 'attach')).status, 200)
    },
    close: async () => undefined,
  }
}

function brokerSuite(kind: BrokerRig['kind']): void {
  describe(
    `mqtt adapter with ${kind === 'mosquitto' ? "Debian's mosquitto" : 'the embedded broker'}, mosquitto_sub and mosquitto_pub`,
    { skip: missing && 'mosquitto is not installed' },
    () => {
      let t: TestServer
      let rig: BrokerRig
      const subs: MosquittoSub[] = []
      const prefix = `site/${kind}/`
      const node = (instance: string) => `${SYS}/instances/${instance}/communication/mqtt`
      const attr = (instance: string, name: string) => `${SYS}/instances/${instance}/attributes/${name}`
      const value = async (instance: string, name: string) => (await t.api('GET', attr(instance, name))).body.internal_value
      const setValue = async (instance: string, name: string, v: unknown) =>
        assert.equal((await t.api('PUT', `${attr(instance, name)}/attr/internal_value`, { value: v })).status, 200)
      const adapter = async (instance: string) => (await t.api('GET', node(instance))).body
      const subscribe = async (filters: string[]) => {
        const sub = await MosquittoSub.start(rig.port, filters, rig.login)
        subs.push(sub)
        return sub
      }
      /**
       * An mqtt adapter's settings: this broker, quick reconnects, publications on change and on
       * connection only. An attempt that gets no answer is given up after 2 s (default 5): the
       * waits below are 5 s, which one unanswered attempt would take whole. (Once, in a full run
       * of the suite, the adapter was still not connected 5 s after mosquitto let it in again.)
       */
      const link = (extra: Record<string, unknown>) => ({
        ...rig.settings,
        reconnect_period: 0.05,
        reconnect_max: 0.2,
        connect_timeout: 2,
        publish_interval: 0,
        ...extra,
      })
      const create = async (instance: string, model: string, definition: Record<string, unknown>, prepare = true) => {
        assert.equal((await t.api('PUT', `${SYS}/models`, { [model]: definition })).status, 200)
        assert.equal((await t.api('PUT', `${SYS}/instances`, { [instance]: model })).status, 200)
        if (!prepare) return
        assert.equal((await t.call(`${SYS}/instances/${instance}`, 'prepare')).status, 200)
        await eventually(async () => (await adapter(instance)).connection === 'connected')
      }

      before(async () => {
        t = await startTestServer()
        rig = kind === 'mosquitto' ? await mosquittoRig() : await embeddedRig(t)
      })
      after(async () => {
        for (const sub of subs) await sub.stop()
        await t?.close()
        await rig?.close()
      })

      it('publishes values to their topics under topic_prefix, raw and json, with the QoS of each binding', async () => {
        const sub = await subscribe([`${prefix}meter/#`])
        await create('meter', 'Meter', {
          attributes: {
            power: { default: 1500.5, type: 'float', unit: 'W' },
            label: { default: 'idle', type: 'str' },
            running: { default: true, type: 'bool' },
            phases: { default: [230.1, 229.8, 231.0], type: 'list' },
          },
          communication: {
            mqtt: link({
              topic_prefix: `${prefix}meter/`,
              bindings: [
                { attribute: 'power', topic: 'power', on_change: true, qos: 1, retain: true },
                {
                  name: 'power_json',
                  attribute: 'power',
                  topic: 'power/json',
                  format: 'json',
                  template: '{"w": {{value}}, "device": "{{instance}}"}',
                  on_change: true,
                  qos: 1,
                },
                { attribute: 'label', topic: 'label' },
                { attribute: 'running', topic: 'running', format: 'json' },
                { attribute: 'phases', topic: 'phases', format: 'json', qos: 1, retain: true },
              ],
            }),
          },
        })
        // Every publish binding is published once on connection.
        const heard = (topic: string) => eventually(() => sub.heard.find((m) => m.topic === `${prefix}meter/${topic}`))
        assert.deepEqual(await heard('power'), { topic: `${prefix}meter/power`, payload: '1500.5', qos: 1, retain: false })
        const json = (await heard('power/json'))!
        assert.deepEqual(JSON.parse(json.payload), { w: 1500.5, device: 'meter' })
        assert.equal(json.qos, 1)
        assert.deepEqual(await heard('label'), { topic: `${prefix}meter/label`, payload: 'idle', qos: 0, retain: false })
        assert.equal((await heard('running'))!.payload, 'true')
        assert.deepEqual(JSON.parse((await heard('phases'))!.payload), [230.1, 229.8, 231])

        await setValue('meter', 'power', 1620.25)
        await eventually(() => sub.payloads(`${prefix}meter/power`).includes('1620.25'))
        await eventually(() => sub.payloads(`${prefix}meter/power/json`).some((p) => JSON.parse(p).w === 1620.25))
        assert.ok((await adapter('meter')).counters.published >= 7)
      })

      it('an on_change binding publishes after every step: a run of five steps in one request gives five messages, in order', async () => {
        const sub = await subscribe([`${prefix}counter/#`])
        await create('counter', 'Counter', {
          attributes: { n: { default: 0, type: 'int' } },
          actions: [{ function: '$out(n)', call: 'n + 1' }],
          communication: {
            // A prefix without its closing slash, as the reference product's library writes it, is joined with one.
            mqtt: link({ topic_prefix: `${prefix}counter`, scan_interval: 60, bindings: [{ attribute: 'n', topic: 'n', on_change: true, qos: 1 }] }),
          },
        })
        await eventually(() => sub.payloads(`${prefix}counter/n`).includes('0'))
        // The scan comes once a minute here: only the steps themselves can publish these.
        const ran = await t.call(`${SYS}`, 'run', { steps: 5 })
        assert.equal(ran.status, 200, JSON.stringify(ran.body))
        await eventually(() => sub.payloads(`${prefix}counter/n`).includes('5'))
        assert.deepEqual(sub.payloads(`${prefix}counter/n`), ['0', '1', '2', '3', '4', '5'])
        assert.equal((await t.api('DELETE', `${SYS}/instances/counter`)).status, 200)
      })

      it('retained values reach a subscriber that comes after the publication; the others do not', async () => {
        const late = await subscribe([`${prefix}meter/#`])
        await eventually(() => late.heard.length >= 2)
        const topics = late.heard.map((m) => m.topic).sort()
        assert.deepEqual(topics, [`${prefix}meter/phases`, `${prefix}meter/power`])
        assert.ok(late.heard.every((m) => m.retain))
        assert.deepEqual(late.payloads(`${prefix}meter/power`), ['1620.25'])
      })

      it('subscribe bindings write the attribute: raw text, json, a json template, one message read by two bindings', async () => {
        await create('thermostat', 'Thermostat', {
          attributes: {
            setpoint: { default: 60.0, type: 'float' },
            mode: { default: 'off', type: 'str' },
            enabled: { default: false, type: 'bool' },
            count: { default: 0, type: 'int' },
          },
          communication: {
            mqtt: link({
              topic_prefix: `${prefix}thermostat/`,
              bindings: [
                { attribute: 'setpoint', topic: 'setpoint', direction: 'both', on_change: true, qos: 1 },
                { attribute: 'mode', topic: 'mode/set', direction: 'subscribe', qos: 1 },
                { attribute: 'enabled', topic: 'enabled/set', direction: 'subscribe', format: 'json', qos: 1 },
                { attribute: 'count', topic: 'count/set', direction: 'subscribe', format: 'json', template: '{"data": {"n": {{value}}}}', qos: 1 },
                {
                  name: 'state_setpoint',
                  attribute: 'setpoint',
                  topic: 'state/set',
                  direction: 'subscribe',
                  format: 'json',
                  template: '{"setpoint": {{value}}}',
                  qos: 1,
                },
                {
                  name: 'state_mode',
                  attribute: 'mode',
                  topic: 'state/set',
                  direction: 'subscribe',
                  format: 'json',
                  template: '{"mode": "{{value}}"}',
                  qos: 1,
                },
              ],
            }),
          },
        })
        const pub = (topic: string, payload: string) => mosquittoPub(rig.port, `${prefix}thermostat/${topic}`, payload, { qos: 1, ...rig.login })
        await pub('setpoint', '72.5')
        await eventually(async () => (await value('thermostat', 'setpoint')) === 72.5)
        await pub('mode/set', 'auto')
        await eventually(async () => (await value('thermostat', 'mode')) === 'auto')
        await pub('enabled/set', 'true')
        await eventually(async () => (await value('thermostat', 'enabled')) === true)
        await pub('count/set', '{"data": {"n": 7}}')
        await eventually(async () => (await value('thermostat', 'count')) === 7)
        await pub('state/set', '{"setpoint": 65, "mode": "eco"}')
        await eventually(async () => (await value('thermostat', 'setpoint')) === 65 && (await value('thermostat', 'mode')) === 'eco')
        // The `both` binding publishes a value set over HTTP.
        const sub = await subscribe([`${prefix}thermostat/setpoint`])
        await setValue('thermostat', 'setpoint', 64.5)
        await eventually(() => sub.payloads(`${prefix}thermostat/setpoint`).includes('64.5'))
        await setValue('thermostat', 'setpoint', 65)
        await eventually(() => sub.payloads(`${prefix}thermostat/setpoint`).includes('65'))
      })

      it('refuses payloads that do not fit: counted in the adapter stats, logged, never applied, not even in part', async () => {
        const refusedBefore = (await adapter('thermostat')).counters.refused as number
        const pub = (topic: string, payload: string) => mosquittoPub(rig.port, `${prefix}thermostat/${topic}`, payload, { qos: 1, ...rig.login })
        await pub('setpoint', 'warm')
        await pub('enabled/set', 'maybe')
        await pub('count/set', '{"data": {"n": 1.5}}')
        await pub('count/set', '{"other": 3}')
        // The setpoint in this message fits, the mode does not: the message is refused as a whole.
        await pub('state/set', '{"setpoint": 80, "mode": 5}')
        await pub('state/set', 'garbage')
        await eventually(async () => (await adapter('thermostat')).counters.refused === refusedBefore + 6)
        assert.equal(await value('thermostat', 'setpoint'), 65)
        assert.equal(await value('thermostat', 'mode'), 'eco')
        assert.equal(await value('thermostat', 'enabled'), true)
        assert.equal(await value('thermostat', 'count'), 7)
        const stats = await adapter('thermostat')
        assert.equal(stats.state, 'RUNNING')
        assert.equal(stats.connection, 'connected')
        assert.ok(
          t.logs.some((l) => l.msg === 'mqtt payload refused' && l.topic === `${prefix}thermostat/setpoint` && /not a finite number/.test(String(l.reason))),
        )
        // A good message after the bad ones is applied.
        await pub('state/set', '{"setpoint": 66.5, "mode": "comfort"}')
        await eventually(async () => (await value('thermostat', 'setpoint')) === 66.5 && (await value('thermostat', 'mode')) === 'comfort')
        assert.equal((await adapter('thermostat')).counters.refused, refusedBefore + 6)
      })

      // What QoS 1 promises here: the broker keeps a persistent session (clean: false) with its QoS 1
      // subscriptions while the client is away — mosquitto across its restart too, from its
      // persistence file — and delivers what was published to it at QoS 1 once the client is back.
      // The adapter queues no publications while away (they would be stale); it publishes every
      // binding's current value when it is back.
      it('the broker goes away mid-run: the adapter says so, the server keeps serving, it comes back by itself and gets the QoS 1 commands sent meanwhile', async () => {
        await create('relay', 'Relay', {
          attributes: {
            a: { default: 0, type: 'int' },
            b: { default: 0, type: 'int' },
            c: { default: 0, type: 'int' },
            level: { default: 1.5, type: 'float' },
          },
          communication: {
            mqtt: link({
              client_id: `relay-${kind}`,
              clean: false,
              username: 'relay',
              password: USERS.relay,
              topic_prefix: `${prefix}relay/`,
              bindings: [
                { attribute: 'a', topic: 'cmd/a', direction: 'subscribe', qos: 1 },
                { attribute: 'b', topic: 'cmd/b', direction: 'subscribe', qos: 1 },
                { attribute: 'c', topic: 'cmd/c', direction: 'subscribe', qos: 1 },
                { attribute: 'level', topic: 'level', on_change: true, qos: 1, retain: true },
              ],
            }),
          },
        })
        // The broker holds the adapter's subscriptions before it goes away: the adapter says
        // 'connected' before the broker has acknowledged them, and a broker cut in between keeps
        // a session without them, which drops what is published meanwhile (seen on a busy
        // machine). A command the adapter receives (c stays 0) shows they are in place.
        const receivedBefore = (await adapter('relay')).counters.received as number
        await eventually(async () => {
          await mosquittoPub(rig.port, `${prefix}relay/cmd/c`, '0', { qos: 1, ...rig.login })
          return ((await adapter('relay')).counters.received as number) > receivedBefore
        })
        const reconnectsBefore = (await adapter('relay')).counters.reconnects as number
        const expected = await rig.cut(t, node('relay'))
        await eventually(async () => (await adapter('relay')).connection === expected)
        assert.notEqual((await adapter('relay')).state, 'STOPPED')
        // The server keeps serving: health, reads and writes.
        assert.equal((await t.api('GET', '/health')).status, 200)
        await setValue('relay', 'level', 7.25)
        assert.equal(await value('relay', 'level'), 7.25)

        await rig.backWithout('relay')
        if (kind === 'mosquitto') {
          // Back, refusing the adapter's user for now: the adapter keeps trying and says why it failed.
          const refused = await eventually(async () => {
            const doc = await adapter('relay')
            return /not authori[sz]ed/i.test(String(doc.last_error)) && doc
          })
          assert.equal(refused.connection, 'reconnecting')
          assert.ok(refused.counters.reconnects > reconnectsBefore)
        }
        for (const [name, v] of [
          ['a', '1'],
          ['b', '2'],
          ['c', '3'],
        ] as const)
          await mosquittoPub(rig.port, `${prefix}relay/cmd/${name}`, v, { qos: 1, ...rig.login })
        // The adapter was away: nothing is applied yet.
        assert.deepEqual([await value('relay', 'a'), await value('relay', 'b'), await value('relay', 'c')], [0, 0, 0])

        await rig.admit(t, node('relay'))
        await eventually(async () => (await adapter('relay')).connection === 'connected')
        await eventually(async () => (await value('relay', 'a')) === 1 && (await value('relay', 'b')) === 2 && (await value('relay', 'c')) === 3)
        // The value set while away is published on reconnection (retained: a later subscriber sees it).
        const sub = await subscribe([`${prefix}relay/level`])
        await eventually(() => sub.heard.some((m) => m.payload === '7.25' && m.retain))
        if (kind === 'mosquitto') assert.ok((await adapter('relay')).counters.reconnects > reconnectsBefore)
      })

      // MQTT.js keeps each QoS 1 publication until the broker acknowledges it and sends it again on
      // the next connection (the adapter hands its message stores to the reconnection). A frozen
      // broker receives nothing it acknowledges; killed then, it loses what it had not read.
      it(
        'a QoS 1 publication the broker never acknowledged is sent again when the broker is back',
        { skip: kind === 'embedded' && 'the embedded broker runs in the server and acknowledges at once: it cannot be frozen or killed apart from it' },
        async () => {
          const broker = rig.mosquitto!
          await create('pump', 'Pump', {
            attributes: { flow: { default: 0, type: 'int' } },
            communication: {
              mqtt: link({
                client_id: 'pump',
                username: 'pump',
                password: USERS.pump,
                bindings: [{ attribute: 'flow', topic: `${prefix}pump/flow`, on_change: true, qos: 1 }],
              }),
            },
          })
          broker.freeze()
          for (const flow of [11, 12]) {
            const published = (await adapter('pump')).counters.published as number
            await setValue('pump', 'flow', flow)
            await eventually(async () => (await adapter('pump')).counters.published > published)
          }
          assert.equal((await adapter('pump')).connection, 'connected', 'a frozen broker keeps its connections open')
          await broker.down('SIGKILL')
          await eventually(async () => (await adapter('pump')).connection === 'reconnecting')
          await rig.backWithout('pump')
          const sub = await subscribe([`${prefix}pump/flow`])
          await rig.admit(t, node('pump'))
          await eventually(async () => (await adapter('pump')).connection === 'connected')
          // 11 was never the current value after the restart: only the resend carries it.
          await eventually(() => sub.payloads(`${prefix}pump/flow`).includes('11') && sub.payloads(`${prefix}pump/flow`).includes('12'))
          assert.equal(await value('pump', 'flow'), 12)
          assert.equal(sub.heard.find((m) => m.payload === '11')!.qos, 1)
        },
      )

      it(
        'a broker that stops reading: publications wait instead of piling up in the server, and the latest value goes out when it reads again',
        { skip: kind === 'embedded' && "the embedded broker runs in the server's own process: it cannot stop reading while the server runs" },
        async () => {
          const broker = rig.mosquitto!
          await create('flood', 'Flood', {
            attributes: { blob: { default: 'x'.repeat(200_000), type: 'str' }, mark: { default: 'a', type: 'str' } },
            communication: {
              mqtt: link({
                scan_interval: 0.01,
                topic_prefix: `${prefix}flood/`,
                bindings: [
                  { attribute: 'blob', topic: 'blob' },
                  { attribute: 'mark', topic: 'mark', on_change: true },
                ],
              }),
            },
          })
          const sub = await subscribe([`${prefix}flood/mark`])
          broker.freeze()
          // 200 kB every 20 ms into a broker that reads nothing: the socket buffers fill, then the link is backed up.
          assert.equal((await t.api('PUT', node('flood'), { publish_interval: 0.02 })).status, 200)
          await eventually(async () => (await adapter('flood')).counters.deferred > 0, 30_000)
          const backedUp = (await adapter('flood')).counters
          await setValue('flood', 'mark', 'b')
          await eventually(async () => (await adapter('flood')).counters.deferred > backedUp.deferred)
          const waiting = await adapter('flood')
          assert.equal(waiting.counters.published, backedUp.published, 'nothing more is handed to a link that cannot take it')
          assert.equal(waiting.connection, 'connected')
          assert.equal((await t.api('PUT', node('flood'), { publish_interval: 0 })).status, 200)
          broker.thaw()
          await eventually(() => sub.payloads(`${prefix}flood/mark`).includes('b'), 30_000)
          assert.equal((await t.api('DELETE', `${SYS}/instances/flood`)).status, 200)
        },
      )

      describe('closing cleanly', () => {
        /** The sockets one adapter holds on the broker port: its link, and with the embedded broker the broker's side of it. */
        let footprint = 0
        /**
         * This process's sockets on the broker port once the count holds still for 200 ms: a
         * client of an earlier test (or mosquitto_sub just started) may still be connecting or
         * closing when a busy machine takes its first reading.
         */
        const settledSockets = async (): Promise<number> => {
          let last = socketsOnPort(rig.port)
          await eventually(async () => {
            await new Promise((resolve) => setTimeout(resolve, 200))
            const now = socketsOnPort(rig.port)
            const still = now === last
            last = now
            return still
          }, 5000)
          return last
        }
        const probe = () => ({
          attributes: { level: { default: 3.5, type: 'float' } },
          communication: {
            mqtt: link({
              topic_prefix: `${prefix}probe/`,
              will: { topic: `${prefix}probe/status`, payload: 'offline', qos: 1 },
              birth: { topic: `${prefix}probe/status`, payload: 'online', qos: 1 },
              bindings: [{ attribute: 'level', topic: 'level', qos: 1, retain: true }],
            }),
          },
        })

        it('detach drops the link without a goodbye (the broker sends the last will) and leaves no socket; attach connects again', async () => {
          const sub = await subscribe([`${prefix}probe/status`])
          const baseline = await settledSockets()
          await create('probe', 'Probe', probe())
          await eventually(async () => (await adapter('probe')).connection === 'connected')
          const connected = await settledSockets()
          footprint = connected - baseline
          assert.equal(footprint, kind === 'embedded' ? 2 : 1)
          await eventually(() => sub.payloads(`${prefix}probe/status`).includes('online'))
          assert.equal((await t.call(node('probe'), 'detach')).status, 200)
          await eventually(() => sub.payloads(`${prefix}probe/status`).includes('offline'))
          await eventually(() => socketsOnPort(rig.port) === baseline)
          assert.equal((await adapter('probe')).connection, 'detached')
          assert.equal((await t.call(node('probe'), 'attach')).status, 200)
          await eventually(async () => (await adapter('probe')).connection === 'connected')
          await eventually(() => sub.payloads(`${prefix}probe/status`).filter((p) => p === 'online').length === 2)
          assert.equal(socketsOnPort(rig.port), connected)
        })

        it('deleting the instance while mosquitto_sub is connected says goodbye (no last will) and leaves no socket', async () => {
          const sub = await subscribe([`${prefix}probe/#`])
          const connected = socketsOnPort(rig.port)
          await eventually(() => sub.payloads(`${prefix}probe/level`).includes('3.5'))
          assert.equal((await t.api('DELETE', `${SYS}/instances/probe`)).status, 200)
          await eventually(() => socketsOnPort(rig.port) === connected - footprint)
          // Whatever the broker did on the goodbye comes before this marker.
          await mosquittoPub(rig.port, `${prefix}probe/marker`, 'after-delete', { qos: 1, ...rig.login })
          await eventually(() => sub.payloads(`${prefix}probe/marker`).includes('after-delete'))
          assert.ok(!sub.payloads(`${prefix}probe/status`).includes('offline'), 'no last will after a goodbye')
          assert.ok(sub.running, 'the subscriber keeps its connection to the broker')
          assert.equal(await canConnect(rig.port), true)
          await create('probe', 'Probe', probe())
          assert.equal(socketsOnPort(rig.port), connected)
        })

        it('a snapshot load stops every adapter: no socket left on the broker port, and the loaded system connects again', async () => {
          const saved = await t.call(`${SYS}/snapshots`, 'save')
          assert.equal(saved.status, 200)
          assert.ok(socketsOnPort(rig.port) > 0)
          const loaded = await t.call(`${SYS}/snapshots`, 'load', { id: saved.body.result.id })
          assert.equal(loaded.status, 200, JSON.stringify(loaded.body))
          // mosquitto keeps running with no Mimic client; the embedded broker closed with its last adapter.
          await eventually(() => socketsOnPort(rig.port) === 0)
          assert.equal(await canConnect(rig.port), kind === 'mosquitto')
          assert.equal((await adapter('probe')).state, 'STOPPED')
          if (kind === 'embedded') assert.equal((await t.call(`${SYS}/instances/site_broker`, 'prepare')).status, 200)
          assert.equal((await t.call(`${SYS}/instances/probe`, 'prepare')).status, 200)
          await eventually(async () => (await adapter('probe')).connection === 'connected')
          const sub = await subscribe([`${prefix}probe/level`])
          await eventually(() => sub.payloads(`${prefix}probe/level`).includes('3.5'))
        })
      })
    },
  )
}

brokerSuite('mosquitto')
brokerSuite('embedded')
