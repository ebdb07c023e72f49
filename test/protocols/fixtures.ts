// What each protocol kind gives the shared conformance suite (conformance.test.ts): a minimal
// adapter entry serving the int attribute `level`, the transport of its port, and a probe that
// reads `level` through the protocol with a real client, as a user's client would. A new
// protocol kind adds its fixture here and passes the suite by implementing the adapter
// interface (src/protocols/adapter.ts) alone.
import { createSocket } from 'node:dgram'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import bacnetStack from '@bacnet-js/client'
import { connectAsync } from 'mqtt'
import { RPCClient } from 'ocpp-rpc'
import { decodeResponse, encodeRequest } from '../../src/protocols/modbus/codec.js'
import { appendCrc } from '../../src/protocols/modbus/rtu.js'
import { OpcuaClientProcess } from '../helpers/opcua-client.js'
import { freePort, TEST_KEY } from '../helpers/server.js'
import type { TestServer } from '../helpers/server.js'

/** How long a probe waits for an answer before it calls the adapter silent (a detached adapter never answers). */
export const SILENT_MS = 600

/** What a probe has at hand: the server, the instance and the port its adapter listens on. */
export interface ProbeContext {
  t: TestServer
  instance: string
  port: number
  /** The adapter's node as GET shows it (its settings and stats). */
  node: Record<string, any>
}

/** One case of the suite: a protocol kind, possibly on one of its transports. */
export interface ProtocolFixture {
  /** The kind's canonical name (its key under `communication` and its adapter node's). */
  kind: string
  /** e.g. `modbus_slave (udp)`. */
  label: string
  /** The transport of the adapter's port, for the port-clash case. */
  transport: 'tcp' | 'udp'
  /** The settings of an adapter serving the int attribute `level` on `port` (0: any free one). */
  settings(port: number): Record<string, unknown>
  /** Reads `level` through the protocol: its value, or undefined when the adapter does not answer. */
  probe(ctx: ProbeContext): Promise<unknown>
  /** The adapter counter a probe moves (`requests` unless the protocol counts otherwise). */
  counter?: string
  /** Frees what the fixture's probes hold (client processes), once the suite is done. */
  close?(): Promise<void>
}

/** The answer to one datagram or one request on a fresh connection, or undefined after SILENT_MS. */
function exchange(transport: 'tcp' | 'udp', port: number, request: Buffer, complete: (received: Buffer) => boolean): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    let received = Buffer.alloc(0)
    let finish: (answer: Buffer | undefined) => void
    if (transport === 'udp') {
      const socket = createSocket('udp4')
      finish = (answer) => {
        clearTimeout(timer)
        socket.close()
        resolve(answer)
      }
      socket.on('message', (message) => finish(message))
      socket.send(request, port, '127.0.0.1')
    } else {
      const socket = connect({ host: '127.0.0.1', port })
      finish = (answer) => {
        clearTimeout(timer)
        socket.destroy()
        resolve(answer)
      }
      socket.on('error', () => finish(undefined))
      socket.on('data', (chunk: Buffer) => {
        received = Buffer.concat([received, chunk])
        if (complete(received)) finish(received)
      })
      socket.write(request)
    }
    const timer = setTimeout(() => finish(undefined), SILENT_MS)
  })
}

const MAPPING = { level: { address: 0, group: 'h_r', type: 'uint_16' } }

function modbus(transport: 'tcp' | 'udp' | 'rtu_over_tcp'): ProtocolFixture {
  return {
    kind: 'modbus_slave',
    label: `modbus_slave (${transport})`,
    transport: transport === 'udp' ? 'udp' : 'tcp',
    settings: (port) => ({ port, transport, mapping: MAPPING }),
    async probe({ port }) {
      const read = { fc: 3 as const, address: 0, quantity: 1 }
      if (transport === 'rtu_over_tcp') {
        const frame = Buffer.alloc(8)
        encodeRequest({ transactionId: 0, unitId: 1, request: read }).copy(frame, 0, 6, 12)
        appendCrc(frame, 0, 6)
        const answer = await exchange('tcp', port, frame, (r) => r.length >= 7)
        return answer?.readUInt16BE(3)
      }
      const request = encodeRequest({ transactionId: 9, unitId: 1, request: read })
      const answer = await exchange(transport, port, request, (r) => r.length >= 6 && r.length >= 6 + r.readUInt16BE(4))
      if (answer === undefined) return undefined
      const response = decodeResponse(answer)
      return 'registers' in response ? response.registers[0] : response
    },
  }
}

const ascii: ProtocolFixture = {
  kind: 'ascii',
  label: 'ascii (tcp)',
  transport: 'tcp',
  settings: (port) => ({ port, mappings: { 'LEVEL?': 'level' } }),
  async probe({ port }) {
    const answer = await exchange('tcp', port, Buffer.from('LEVEL?\n'), (r) => r.includes(0x0a))
    return answer === undefined ? undefined : Number(answer.toString('latin1').trim())
  },
}

const mqtt: ProtocolFixture = {
  kind: 'mqtt',
  label: 'mqtt (embedded broker)',
  transport: 'tcp',
  counter: 'received',
  settings: (port) => ({
    broker: 'embedded',
    port,
    reconnect_period: 0.05,
    reconnect_max: 0.2,
    bindings: [{ attribute: 'level', topic: 'level', direction: 'both' }],
  }),
  // An MQTT adapter is a client of its broker: the probe writes `level` through the broker and
  // reads it back from the instance; a detached adapter is off the broker and hears nothing.
  async probe({ t, instance, port }) {
    // The topic has no prefix: each suite's server has one MQTT instance.
    const client = await connectAsync(`mqtt://127.0.0.1:${port}`, { username: 'tester', password: TEST_KEY, reconnectPeriod: 0 })
    try {
      const attr = `/api/v3/system/instances/${instance}/attributes/level`
      const before = (await t.api('GET', attr)).body.internal_value as number
      const sent = before + 1
      await client.publishAsync('level', String(sent), { qos: 1 })
      const until = Date.now() + SILENT_MS
      while (Date.now() < until) {
        const now = (await t.api('GET', attr)).body.internal_value
        if (now === sent) {
          await t.api('PUT', `${attr}/attr/internal_value`, { value: before })
          return before
        }
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      return undefined
    } finally {
      await client.endAsync()
    }
  },
}

let opcuaClient: OpcuaClientProcess | null = null
const opcua: ProtocolFixture = {
  kind: 'opcua_server',
  label: 'opcua_server',
  transport: 'tcp',
  counter: 'reads',
  settings: (port) => ({ port, bindings: [{ attribute: 'level' }] }),
  // A detached OPC UA server keeps its sessions but answers reads BadNoCommunication.
  async probe({ instance, node }) {
    opcuaClient ??= OpcuaClientProcess.start({ pki: join(tmpdir(), 'mimic-conformance-opcua-pki') })
    await opcuaClient.ok({ op: 'connect', url: node.endpoint, user: { username: 'tester', password: TEST_KEY } })
    const read = await opcuaClient.request({ op: 'read', nodeId: `ns=1;s=${instance}.level` })
    await opcuaClient.request({ op: 'close' })
    return read.ok && read.status === 'Good' ? read.value : undefined
  },
  async close() {
    await opcuaClient?.close()
    opcuaClient = null
  },
}

const httpEndpoint: ProtocolFixture = {
  kind: 'http_endpoint',
  label: 'http_endpoint',
  transport: 'tcp',
  settings: (port) => ({ port, endpoints: { '/level': { method: 'GET', response: { level: '#attr(level)' } } } }),
  // A detached endpoint reads the request and never answers it.
  async probe({ port }) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/level`, { signal: AbortSignal.timeout(SILENT_MS) })
      return ((await res.json()) as { level: unknown }).level
    } catch {
      return undefined
    }
  },
}

const ocpp: ProtocolFixture = {
  kind: 'ocpp',
  label: 'ocpp (central_system)',
  transport: 'tcp',
  settings: (port) => ({
    role: 'central_system',
    server: { host: '127.0.0.1', port, path: '/ocpp' },
    bindings: {
      boot: { direction: 'outbound', frame_type: 'call_result', action: 'BootNotification', payload: { status: 'Accepted', interval: '#attr(level)' } },
    },
  }),
  // The probe is a charge point (ocpp-rpc) booting: `level` is the heartbeat interval it is given.
  // A detached central system drops the connection before the WebSocket opens.
  async probe({ port }) {
    const client = new RPCClient({
      endpoint: `ws://127.0.0.1:${port}/ocpp`,
      identity: 'probe',
      protocols: ['ocpp1.6'],
      reconnect: false,
      callTimeoutMs: SILENT_MS,
    } as never)
    try {
      await client.connect()
      const answer = (await client.call('BootNotification', { chargePointVendor: 'probe', chargePointModel: 'probe' })) as { interval?: unknown }
      return answer.interval
    } catch {
      return undefined
    } finally {
      await client.close({ force: true }).catch(() => undefined)
    }
  },
}

let bacnetClient: InstanceType<typeof bacnetStack.default> | null = null
const bacnet: ProtocolFixture = {
  kind: 'bacnet',
  label: 'bacnet (udp)',
  transport: 'udp',
  settings: (port) => ({
    port,
    device: { instance_id: 7 },
    objects: { level: { type: 'analogValue', instance: 1, properties: { presentValue: { read: 'level' } } } },
  }),
  // A client of @bacnet-js/client reads presentValue; a detached device drops every datagram.
  async probe({ port }) {
    bacnetClient ??= new bacnetStack.default({ port: await freePort(), interface: '127.0.0.1', apduTimeout: SILENT_MS })
    try {
      const read = await bacnetClient.readProperty({ address: `127.0.0.1:${port}` }, { type: 2, instance: 1 }, 85)
      return read.values[0]?.value
    } catch {
      return undefined
    }
  },
  async close() {
    bacnetClient?.close()
    bacnetClient = null
  },
}

/** Every fixture, by kind: a registered kind without one fails the suite. */
export const FIXTURES: Readonly<Record<string, readonly ProtocolFixture[]>> = {
  // transport serial holds a device, not a port, so the listener-shaped cases (a port number, a
  // port clash, a bad port) do not fit it: test/modbus-serial.test.ts covers it on a pty pair.
  modbus_slave: [modbus('tcp'), modbus('udp'), modbus('rtu_over_tcp')],
  ascii: [ascii],
  mqtt: [mqtt],
  opcua_server: [opcua],
  bacnet: [bacnet],
  http_endpoint: [httpEndpoint],
  ocpp: [ocpp],
  // knx_ip is a client of a tunnelling server and holds no port of its own, so the listener-shaped
  // cases (a port, a port clash) do not fit: test/knx.test.ts covers its life cycle, detach and
  // attach, stats and a snapshot round trip against knxd.
  knx_ip: [],
  // modbus_master is a client: it polls devices and holds no port of its own, so the
  // listener-shaped cases (a port, a port clash, a probe of its port) do not fit:
  // test/modbus-master.test.ts covers its life cycle, detach and attach, stats, bad settings and
  // a snapshot round trip against pymodbus and a modbus_slave instance.
  modbus_master: [],
}
