/**
 * A KNXnet/IP tunnelling client over UDP: one tunnel connection (link layer) to a tunnelling
 * server such as knxd or a KNX IP interface, group telegrams sent through it and the bus's
 * telegrams received from it.
 *
 * Written here rather than taken from npm: `knx` (knx.js) has had no release for years and is
 * built for Node 6 era typings and parsers, and `knxultimate` brings a logging stack, an ETS XML
 * importer and a native serial-port build for what is, for a device on the bus, a dozen frame
 * types (KNXnet/IP core and tunnelling, cEMI L_Data, group APDUs): under 300 lines here.
 *
 * @example
 * const tunnel = new KnxTunnel({ host: '127.0.0.1', port: 3671, routeBack: true, timeoutMs: 3000 })
 * tunnel.on('telegram', (t) => console.log(t.service, t.destination, t.data))
 * await tunnel.connect() // true once the server gave a channel
 * await tunnel.send('write', 0x090a, { small: false, data: Buffer.from([0x0c, 0x33]) })
 * await tunnel.close()
 */
import { createSocket, type Socket } from 'node:dgram'
import { EventEmitter } from 'node:events'

const HEADER = 0x06
const VERSION = 0x10
const CONNECT_REQUEST = 0x0205
const CONNECT_RESPONSE = 0x0206
const CONNECTIONSTATE_REQUEST = 0x0207
const CONNECTIONSTATE_RESPONSE = 0x0208
const DISCONNECT_REQUEST = 0x0209
const DISCONNECT_RESPONSE = 0x020a
const TUNNELING_REQUEST = 0x0420
const TUNNELING_ACK = 0x0421
const L_DATA_REQ = 0x11
const L_DATA_IND = 0x29
/** How often the connection is checked (the server drops a tunnel after 120 s without). */
const HEARTBEAT_MS = 60_000

/** A group telegram of the bus. */
export interface KnxTelegram {
  service: 'read' | 'response' | 'write'
  /** Individual address of the sender. */
  source: number
  /** Group address. */
  destination: number
  /** The value's bytes (a 6-bit value as one byte). */
  data: Buffer
}

const APCI = { read: 0x000, response: 0x040, write: 0x080 } as const

export interface KnxTunnelOptions {
  host: string
  port: number
  /** NAT mode: ask the server to answer the address requests come from (HPAI 0.0.0.0:0). */
  routeBack: boolean
  timeoutMs: number
}

/**
 * See the module comment. Events: `telegram` (KnxTelegram) for each group telegram the bus
 * carries, `lost` (reason) once when the connection is gone (server disconnect, no heartbeat
 * answer, unacknowledged telegram).
 */
export class KnxTunnel extends EventEmitter {
  readonly #options: KnxTunnelOptions
  #socket: Socket | null = null
  #channel: number | null = null
  #sendSeq = 0
  #lastReceivedSeq = -1
  #individualAddress: number | null = null
  #localAddress = '0.0.0.0'
  /** The server's control endpoint, and its data endpoint (where tunnelling requests go). */
  #control = { address: '', port: 0 }
  #data = { address: '', port: 0 }
  #heartbeat: NodeJS.Timeout | null = null
  /** Waiters for an answer, by what they wait for (`ack:<seq>`, `connect`, `state`). */
  readonly #waiters = new Map<string, (frame: Buffer | undefined) => void>()
  /** Telegrams go one at a time: each waits for its acknowledgement. */
  #queue: Promise<unknown> = Promise.resolve()

  constructor(options: KnxTunnelOptions) {
    super()
    this.#options = options
  }

  get connected(): boolean {
    return this.#channel !== null
  }

  get channel(): number | null {
    return this.#channel
  }

  /** The individual address the server gave the tunnel (e.g. 0.0.2), or null. */
  get individualAddress(): string | null {
    const a = this.#individualAddress
    return a === null ? null : `${a >> 12}.${(a >> 8) & 0x0f}.${a & 0xff}`
  }

  /** Opens the tunnel; true once the server gave a channel, false when it did not answer or refused (`lastStatus`). */
  async connect(): Promise<boolean> {
    const socket = await this.#open()
    const hpai = this.#hpai(socket)
    const body = Buffer.concat([hpai, hpai, Buffer.from([0x04, 0x04, 0x02, 0x00])])
    const answer = await this.#request(frame(CONNECT_REQUEST, body), 'connect')
    if (answer === undefined || answer.length < 8 || answer[7] !== 0) return false
    this.#channel = answer[6]!
    // The data endpoint the server named, unless it is 0.0.0.0:0 (answer where the response came from).
    const dataAddress = [...answer.subarray(10, 14)].join('.')
    const dataPort = answer.readUInt16BE(14)
    if (dataAddress !== '0.0.0.0' && dataPort !== 0) this.#data = { address: dataAddress, port: dataPort }
    this.#individualAddress = answer.length >= 20 ? answer.readUInt16BE(18) : null
    this.#sendSeq = 0
    this.#lastReceivedSeq = -1
    this.#heartbeat = setInterval(() => void this.#checkState(), HEARTBEAT_MS)
    this.#heartbeat.unref()
    return true
  }

  /** Sends a group telegram; resolves true once acknowledged (retried once), false when not (the tunnel is then lost). */
  send(service: KnxTelegram['service'], destination: number, value: { small: boolean; data: Buffer }): Promise<boolean> {
    const next = this.#queue.then(() => this.#sendNow(service, destination, value))
    this.#queue = next.catch(() => false)
    return next
  }

  /** Ends the tunnel with a DISCONNECT_REQUEST (not waited for long) and closes the socket. */
  async close(): Promise<void> {
    const socket = this.#socket
    const channel = this.#channel
    this.#stop()
    if (socket === null) return
    if (channel !== null) {
      const body = Buffer.concat([Buffer.from([channel, 0]), this.#hpai(socket)])
      await new Promise<void>((resolve) => socket.send(frame(DISCONNECT_REQUEST, body), this.#control.port, this.#control.address, () => resolve()))
    }
    await new Promise<void>((resolve) => socket.close(() => resolve()))
  }

  async #sendNow(service: KnxTelegram['service'], destination: number, value: { small: boolean; data: Buffer }): Promise<boolean> {
    const socket = this.#socket
    const channel = this.#channel
    if (socket === null || channel === null) return false
    const apci = APCI[service]
    const tpdu =
      service === 'read'
        ? Buffer.from([0x00, apci])
        : value.small
          ? Buffer.from([0x00, apci | ((value.data[0] ?? 0) & 0x3f)])
          : Buffer.concat([Buffer.from([0x00, apci]), value.data])
    // cEMI L_Data.req: standard frame, group destination, hop count 6, source filled in by the server.
    const cemi = Buffer.concat([Buffer.from([L_DATA_REQ, 0x00, 0xbc, 0xe0, 0x00, 0x00, destination >> 8, destination & 0xff, tpdu.length - 1]), tpdu])
    const seq = this.#sendSeq
    const message = frame(TUNNELING_REQUEST, Buffer.concat([Buffer.from([0x04, channel, seq, 0x00]), cemi]))
    for (let attempt = 0; attempt < 2; attempt++) {
      const ack = await this.#request(message, `ack:${seq}`, this.#data)
      if (ack !== undefined) {
        this.#sendSeq = (seq + 1) & 0xff
        return true
      }
    }
    this.#lose('the tunnelling server did not acknowledge a telegram')
    return false
  }

  async #open(): Promise<Socket> {
    if (this.#socket !== null) return this.#socket
    const { host, port } = this.#options
    // The address this machine reaches the server from, for the endpoints a request names
    // (outside NAT mode): a connected socket knows it, and is closed again at once.
    const probe = createSocket('udp4')
    const { local, remote } = await new Promise<{ local: string; remote: string }>((resolve, reject) => {
      probe.once('error', reject)
      probe.connect(port, host, () => resolve({ local: probe.address().address, remote: probe.remoteAddress().address }))
    }).finally(() => probe.close())
    // Not connected: the server may answer tunnelling requests from another port (its data endpoint).
    const socket = createSocket('udp4')
    socket.on('message', (message, from) => this.#received(message, from))
    socket.on('error', () => this.#lose('socket error'))
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject)
      socket.bind(0, () => {
        socket.off('error', reject)
        resolve()
      })
    })
    this.#localAddress = local
    this.#control = { address: remote, port }
    this.#data = this.#control
    this.#socket = socket
    return socket
  }

  /** The endpoint the server answers: 0.0.0.0:0 in NAT mode, else this socket's address. */
  #hpai(socket: Socket): Buffer {
    const hpai = Buffer.alloc(8)
    hpai[0] = 0x08
    hpai[1] = 0x01
    if (!this.#options.routeBack) {
      this.#localAddress.split('.').forEach((part, i) => (hpai[2 + i] = Number(part)))
      hpai.writeUInt16BE(socket.address().port, 6)
    }
    return hpai
  }

  /** Sends a frame and waits for the answer `key` names, or undefined after the timeout. */
  #request(message: Buffer, key: string, to: { address: string; port: number } = this.#control): Promise<Buffer | undefined> {
    const socket = this.#socket
    if (socket === null) return Promise.resolve(undefined)
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(key)
        resolve(undefined)
      }, this.#options.timeoutMs)
      this.#waiters.set(key, (answer) => {
        clearTimeout(timer)
        this.#waiters.delete(key)
        resolve(answer)
      })
      socket.send(message, to.port, to.address, (error) => error && this.#lose(`send failed: ${error.message}`))
    })
  }

  async #checkState(): Promise<void> {
    const socket = this.#socket
    const channel = this.#channel
    if (socket === null || channel === null) return
    for (let attempt = 0; attempt < 3; attempt++) {
      const answer = await this.#request(frame(CONNECTIONSTATE_REQUEST, Buffer.concat([Buffer.from([channel, 0]), this.#hpai(socket)])), 'state')
      if (answer !== undefined && answer[7] === 0) return
      if (answer !== undefined) break
    }
    this.#lose('the tunnelling server did not answer the connection check')
  }

  #received(message: Buffer, from: { address: string; port: number }): void {
    if (message.length < 6 || message[0] !== HEADER || message[1] !== VERSION) return
    const service = message.readUInt16BE(2)
    switch (service) {
      case CONNECT_RESPONSE:
        return this.#waiters.get('connect')?.(message)
      case CONNECTIONSTATE_RESPONSE:
        return this.#waiters.get('state')?.(message)
      case TUNNELING_ACK:
        if (message[7] === this.#channel) this.#waiters.get(`ack:${message[8]}`)?.(message)
        return
      case DISCONNECT_REQUEST:
        if (message[6] !== this.#channel) return
        this.#socket?.send(frame(DISCONNECT_RESPONSE, Buffer.from([message[6]!, 0])), from.port, from.address)
        return this.#lose('the tunnelling server ended the connection')
      case TUNNELING_REQUEST: {
        const channel = message[7]
        const seq = message[8]!
        if (channel !== this.#channel) return
        this.#socket?.send(frame(TUNNELING_ACK, Buffer.from([0x04, channel, seq, 0x00])), from.port, from.address)
        if (seq === this.#lastReceivedSeq) return // a repeat of one already taken
        this.#lastReceivedSeq = seq
        const telegram = parseCemi(message.subarray(10))
        if (telegram !== null) this.emit('telegram', telegram)
        return
      }
    }
  }

  #lose(reason: string): void {
    if (this.#channel === null && this.#socket === null) return
    const socket = this.#socket
    this.#stop()
    socket?.close()
    this.emit('lost', reason)
  }

  #stop(): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat)
    this.#heartbeat = null
    this.#channel = null
    this.#socket = null
    for (const waiter of [...this.#waiters.values()]) waiter(undefined)
    this.#waiters.clear()
  }
}

function frame(service: number, body: Buffer): Buffer {
  const header = Buffer.from([HEADER, VERSION, service >> 8, service & 0xff, 0, 0])
  header.writeUInt16BE(6 + body.length, 4)
  return Buffer.concat([header, body])
}

/** A group telegram out of a cEMI L_Data.ind, or null for anything else. */
function parseCemi(cemi: Buffer): KnxTelegram | null {
  if (cemi.length < 2 || cemi[0] !== L_DATA_IND) return null
  const at = 2 + cemi[1]!
  if (cemi.length < at + 8) return null
  if ((cemi[at + 1]! & 0x80) === 0) return null // not to a group address
  const length = cemi[at + 6]!
  const tpdu = cemi.subarray(at + 7, at + 8 + length)
  if (tpdu.length < 2) return null
  const apci = ((tpdu[0]! & 0x03) << 8) | (tpdu[1]! & 0xc0)
  const service = apci === APCI.read ? 'read' : apci === APCI.response ? 'response' : apci === APCI.write ? 'write' : null
  if (service === null) return null
  return {
    service,
    source: cemi.readUInt16BE(at + 2),
    destination: cemi.readUInt16BE(at + 4),
    data: length === 1 ? Buffer.from([tpdu[1]! & 0x3f]) : Buffer.from(tpdu.subarray(2)),
  }
}
