/**
 * The `mqtt` adapter's life cycle against Debian's mosquitto, in a real `mimic serve` process:
 * detach, attach and DELETE of the instance (and creating it again) 100 times, at once and after
 * the link is up, and the reference library's `mqtt_disconnect` scenario (detach, attach when it
 * ends) cut short by a DELETE. No request may hang, the process may not die (a late `connect`
 * event of a client already let go once killed it), and the server answers afterwards.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Mosquitto, mosquittoMissing, MosquittoSub } from '../helpers/mosquitto.js'
import { TEST_KEY } from '../helpers/server.js'
import { SYS, TEST_AUTH, request, running, serveMimic, waitFor, type ServedMimic } from './helpers.js'

const missing = mosquittoMissing()
const ROUNDS = 100

/**
 * A gateway as the reference library writes one: QoS 1, a retained birth and will, frequent
 * publications; with `scenario`, its `mqtt_disconnect` scenario, enabled, so it detaches the
 * adapter as soon as the instance is prepared and attaches it 2 s later.
 */
function gateway(port: number, scenario: boolean): Record<string, unknown> {
  return {
    attributes: { flow: 1.5, total: 10.0, setpoint: 20.0 },
    timer: { time_step: 0.1 },
    actions: [{ function: '$out(total)', call: '$in(total) + $in(flow)' }],
    communication: [
      {
        mqtt: {
          broker: '127.0.0.1',
          port,
          client_id: 'gw-{{instance}}',
          topic_prefix: 'spx/{{instance}}',
          publish_interval: 0.05,
          scan_interval: 0.02,
          default_qos: 1,
          default_retain: true,
          reconnect_period: 0.05,
          reconnect_max: 0.2,
          birth_topic: 'availability',
          birth_payload: 'online',
          birth_retain: true,
          will_topic: 'availability',
          will_payload: 'offline',
          will_retain: true,
          bindings: [
            { name: 'flow', attribute: '$ext(flow)', topic: 'flow', publish_on_change: true },
            { name: 'total', attribute: '$ext(total)', topic: 'total' },
            { name: 'setpoint', attribute: '$attr(setpoint)', topic: 'command/setpoint', direction: 'subscribe' },
          ],
        },
      },
    ],
    ...(scenario && {
      scenarios: {
        mqtt_disconnect: {
          display_name: 'MQTT Disconnect',
          enabled: true,
          duration: 2.0,
          call: { path: 'communication.mqtt.detach', stop_path: 'communication.mqtt.attach' },
        },
      },
    }),
  }
}

describe('mqtt adapter life cycle against mosquitto', { skip: missing && 'mosquitto is not installed' }, () => {
  let broker: Mosquitto
  let mimic: ServedMimic
  const api = async (method: string, path: string, body?: unknown) => {
    const answer = await request(`${mimic.url}${path}`, method, body, TEST_AUTH)
    return answer
  }
  const ok = async (method: string, path: string, body?: unknown) => {
    const answer = await api(method, path, body)
    assert.equal(answer.status, 200, `${method} ${path}: ${JSON.stringify(answer.body)}`)
    return answer.body
  }
  const call = (path: string, method: string, kwargs: Record<string, unknown> = {}) => ok('POST', `${path}/method/${method}`, { kwargs })
  const node = (instance: string) => `${SYS}/instances/${instance}/communication/mqtt`

  before(async () => {
    broker = await Mosquitto.start()
    mimic = await serveMimic(['--python-workers', '1'], { env: { MIMIC_PRODUCT_KEY: TEST_KEY } })
    await ok('PUT', `${SYS}/models`, { Gateway: gateway(broker.port, false), Flaky: gateway(broker.port, true) })
  })
  after(async () => {
    mimic?.kill()
    await broker?.close()
  })

  it(`detach, attach and DELETE, ${ROUNDS} times, at once and with the link up: nothing hangs, nothing dies`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const instance = `gw${round % 3}`
      await ok('PUT', `${SYS}/instances`, { [instance]: 'Gateway' })
      await call(`${SYS}/instances/${instance}`, 'prepare')
      // Every other round waits for the link, so both a link in the making and one that is up are cut.
      if (round % 2 === 1) await waitFor(async () => (await ok('GET', node(instance))).connection === 'connected')
      await call(node(instance), 'detach')
      await call(node(instance), 'attach')
      // A third of the rounds delete while the attach's connection is still on its way.
      if (round % 3 !== 0) await waitFor(async () => (await ok('GET', node(instance))).connection === 'connected')
      await ok('DELETE', `${SYS}/instances/${instance}`)
      assert.ok(running(mimic.pid), `the server died in round ${round}:\n${mimic.stderr()}`)
    }
    assert.deepEqual(Object.keys((await ok('GET', `${SYS}/instances`)).children ?? {}), [])
    assert.equal((await api('GET', '/health')).status, 200)
    assert.ok(!mimic.logs.some((r) => Number(r.level) >= 50), JSON.stringify(mimic.logs.filter((r) => Number(r.level) >= 50).slice(0, 3)))
  })

  it('the mqtt_disconnect scenario followed by DELETE, and the instance made again, ten times', async () => {
    const sub = await MosquittoSub.start(broker.port, ['spx/+/availability'])
    try {
      for (let round = 0; round < 10; round++) {
        await ok('PUT', `${SYS}/instances`, { sc: 'Flaky' })
        await call(`${SYS}/instances/sc`, 'prepare')
        await call(`${SYS}/instances/sc`, 'start')
        assert.equal((await ok('GET', node('sc'))).connection, 'detached')
        // Half the rounds delete during the scenario, half once it ended (2 s of simulated time,
        // one step of 2.5 s) and attached again.
        if (round % 2 === 1) {
          await call(`${SYS}/instances/sc`, 'run', { dt: 2.5 })
          await waitFor(async () => (await ok('GET', node('sc'))).connection === 'connected')
        }
        await ok('DELETE', `${SYS}/instances/sc`)
        assert.ok(running(mimic.pid), `the server died in round ${round}:\n${mimic.stderr()}`)
      }
      // Every detach made mosquitto send the will; every connection announced itself.
      await waitFor(() => sub.payloads('spx/sc/availability').filter((p) => p === 'offline').length >= 10)
    } finally {
      await sub.stop()
    }
    await ok('PUT', `${SYS}/instances`, { after: 'Gateway' })
    await call(`${SYS}/instances/after`, 'prepare')
    await waitFor(async () => (await ok('GET', node('after'))).connection === 'connected')
    await ok('DELETE', `${SYS}/instances/after`)
    assert.equal((await api('GET', '/health')).status, 200)
  })
})
