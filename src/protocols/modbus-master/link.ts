import { createSocket, type Socket as UdpSocket } from 'node:dgram'
import { isIPv6, Socket } from 'node:net'
import { ConflictError } from '../../errors.js'
import { MBAP_LENGTH, decodeResponse, encodeRequest, stampHeader, type ModbusRequest, type ModbusResponse } from '../modbus/codec.js'
import { crcOk, rtuFrame } from '../modbus/rtu.js'
import { characterTimeMs, openSerialLine, type SerialSettings } from '../serial/port.js'
import type { ModbusMasterTransport } from '../../definition/modbus-master-schema.js'

/**
 * One connection of a Modbus master to one device (host and port) or one serial line: Modbus TCP
 * (MBAP frames), Modbus UDP (one MBAP frame per datagram), RTU over TCP (RTU frames with CRC-16 on
 * a TCP stream, as a serial gateway passes them), or RTU on a serial line
 * (src/protocols/serial/port.ts), where a request waits for the 3.5-character silence after the
 * previous frame. Requests go one at a time, each waiting at most `timeoutMs` for the connection
 * and for its answer; a request that gets no answer closes a TCP connection (a late answer must not
 * be taken for the next request's) and the next request connects again; on a serial line, which
 * has no connection, what arrived is dropped instead, and over UDP a late answer is told apart by
 * its transaction id.
 * Frames are built and read with the Modbus server's codec (src/protocols/modbus/codec.ts, rtu.ts).
 *
 * @example
 * const link = new ModbusLink({ host: '127.0.0.1', port: 5020, transport: 'tcp', timeoutMs: 1000 })
 * const answer = await link.request(1, { fc: 3, address: 0, quantity: 2 }) // { fc: 3, registers: [...] } or { exception: 2 }
 * link.close()
 */
export class ModbusLink {
  readonly host: string
  readonly port: number
  readonly transport: ModbusMasterTransport
  readonly #serial: SerialSettings | null
  timeoutMs: number

  #channel: Channel | null = null
  #connecting: Promise<Channel> | null = null
  /** A serial line being closed: it must be let go before it is opened again (it is locked while open). */
  #closing: Promise<void> = Promise.resolve()
  /** When the last byte went out or came in, for the serial line's silent interval. */
  #lastTraffic = 0
  #buffer: Buffer = Buffer.alloc(0)
  #pending: Pending | null = null
  #queue: Promise<unknown> = Promise.resolve()
  #transactionId = 0
  #closed = false

  constructor(opts: { host: string; port: number; transport: ModbusMasterTransport; timeoutMs: number; serial?: SerialSettings }) {
    this.host = opts.host
    this.port = opts.port
    this.transport = opts.transport
    this.timeoutMs = opts.timeoutMs
    this.#serial = opts.serial ?? null
  }

  /** Whether frames are MBAP (Modbus TCP and UDP), not RTU. */
  #mbap(): boolean {
    return this.transport === 'tcp' || this.transport === 'udp'
  }

  /** `host:port`, or the serial device, for messages. */
  get address(): string {
    if (this.#serial) return this.#serial.device
    return `${this.host.includes(':') ? `[${this.host}]` : this.host}:${this.port}`
  }

  /** Whether a connection (or the serial line) is open now. */
  get connected(): boolean {
    return this.#channel !== null
  }

  /**
   * Sends one request to `unitId` and resolves with the device's answer (an exception answer
   * included); rejects with an Error naming the device when there is no answer (refused, timed
   * out, closed, a malformed or corrupt frame).
   */
  request(unitId: number, request: ModbusRequest): Promise<ModbusResponse> {
    const run = this.#queue.then(() => this.#send(unitId, request))
    this.#queue = run.catch(() => undefined)
    return run
  }

  /** Closes the connection; requests after this connect again. */
  drop(): void {
    const channel = this.#channel
    this.#channel = null
    this.#buffer = Buffer.alloc(0)
    if (channel) this.#closing = channel.close()
    this.#pending?.fail(new Error(`connection to ${this.address} closed`))
  }

  /** Closes the connection for good: later requests are refused. */
  close(): void {
    this.#closed = true
    this.drop()
  }

  async #send(unitId: number, request: ModbusRequest): Promise<ModbusResponse> {
    if (this.#closed) throw new ConflictError(`connection to ${this.address} closed`)
    const channel = await this.#connect()
    if (this.#serial) await this.#silence(this.#serial)
    this.#transactionId = (this.#transactionId + 1) & 0xffff
    const transactionId = this.#transactionId
    const adu = encodeRequest({ transactionId, unitId, request })
    const frame = this.#mbap() ? adu : rtuFrame(unitId, adu, MBAP_LENGTH)
    return new Promise<ModbusResponse>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.fail(new Error(`no answer from ${this.address} (unit ${unitId}, function ${request.fc}) within ${this.timeoutMs / 1000} s`))
        // A serial line stays open: what arrived of a late answer is dropped. A UDP socket stays
        // open too: a late answer has an older transaction id.
        if (this.#serial || this.transport === 'udp') this.#buffer = Buffer.alloc(0)
        else this.drop()
      }, this.timeoutMs)
      const pending: Pending = {
        transactionId,
        unitId,
        done: (answer) => {
          clearTimeout(timer)
          this.#pending = null
          resolve(answer)
        },
        fail: (error) => {
          clearTimeout(timer)
          this.#pending = null
          reject(error)
        },
      }
      this.#pending = pending
      this.#buffer = Buffer.alloc(0)
      this.#lastTraffic = Date.now()
      channel.write(frame)
    })
  }

  /** Waits until the line has been silent for 3.5 characters (at least 1.75 ms above 19200 baud), as RTU requires between frames. */
  async #silence(settings: SerialSettings): Promise<void> {
    const gap = settings.baudrate > 19_200 ? 1.75 : characterTimeMs(settings, 3.5)
    const wait = this.#lastTraffic + Math.ceil(gap) - Date.now()
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
  }

  #connect(): Promise<Channel> {
    if (this.#channel) return Promise.resolve(this.#channel)
    this.#connecting ??= (this.#serial ? this.#openSerial(this.#serial) : this.transport === 'udp' ? this.#openUdp() : this.#openTcp()).finally(() => {
      this.#connecting = null
    })
    return this.#connecting
  }

  async #openSerial(settings: SerialSettings): Promise<Channel> {
    await this.#closing
    const holder: { channel: Channel | null } = { channel: null }
    let line
    try {
      line = await openSerialLine(settings, {
        onData: (chunk) => holder.channel && this.#received(holder.channel, chunk),
        onLost: (error) => holder.channel && this.#gone(holder.channel, `lost: ${error.message}`),
      })
    } catch (error) {
      throw new ConflictError(`cannot open ${(error as Error).message}`)
    }
    const channel: Channel = { write: (data) => void line.write(data), close: () => line.close() }
    holder.channel = channel
    this.#channel = channel
    this.#buffer = Buffer.alloc(0)
    return channel
  }

  #openTcp(): Promise<Channel> {
    return new Promise<Channel>((resolve, reject) => {
      const socket = new Socket()
      const timer = setTimeout(() => {
        socket.destroy()
        reject(new Error(`cannot connect to ${this.address}: no connection within ${this.timeoutMs / 1000} s`))
      }, this.timeoutMs)
      socket.once('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer)
        reject(new Error(`cannot connect to ${this.address}: ${error.code === 'ECONNREFUSED' ? 'connection refused' : error.message}`))
      })
      socket.connect({ host: this.host, port: this.port }, () => {
        clearTimeout(timer)
        socket.removeAllListeners('error')
        socket.setNoDelay(true)
        const channel: Channel = {
          write: (data) => void socket.write(data),
          close: () => {
            socket.destroy()
            return Promise.resolve()
          },
        }
        this.#channel = channel
        this.#buffer = Buffer.alloc(0)
        socket.on('data', (chunk: Buffer) => this.#received(channel, chunk))
        socket.on('error', (error) => this.#gone(channel, `failed: ${error.message}`))
        socket.on('close', () => this.#gone(channel, 'closed by the device'))
        resolve(channel)
      })
    })
  }

  /**
   * A UDP socket connected to the device: it sends there and hears only datagrams from there. A
   * device that is not listening shows as the next send or receive failing with ECONNREFUSED (the
   * ICMP port unreachable the kernel keeps for a connected socket), or as no answer in time.
   */
  #openUdp(): Promise<Channel> {
    return new Promise<Channel>((resolve, reject) => {
      const socket: UdpSocket = createSocket(isIPv6(this.host) ? 'udp6' : 'udp4')
      const timer = setTimeout(() => {
        socket.close()
        reject(new Error(`cannot reach ${this.address}: no route within ${this.timeoutMs / 1000} s`))
      }, this.timeoutMs)
      socket.once('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer)
        socket.close()
        reject(new Error(`cannot reach ${this.address}: ${error.message}`))
      })
      socket.connect(this.port, this.host, () => {
        clearTimeout(timer)
        socket.removeAllListeners('error')
        let open = true
        const close = (): Promise<void> =>
          new Promise<void>((done) => {
            if (!open) return done()
            open = false
            socket.close(() => done())
          })
        const fail = (error: NodeJS.ErrnoException): void => {
          this.#gone(channel, `failed: ${refusal(error)}`)
          void close()
        }
        const channel: Channel = {
          // A socket closed by an error sends nothing (send would throw): the request times out.
          write: (data) => open && socket.send(data, (error) => error && fail(error)),
          close,
        }
        this.#channel = channel
        this.#buffer = Buffer.alloc(0)
        // Each datagram is one frame: a short or corrupt one is not joined to the next.
        socket.on('message', (datagram: Buffer) => {
          if (this.#channel !== channel) return
          this.#buffer = Buffer.alloc(0)
          this.#received(channel, datagram)
          this.#buffer = Buffer.alloc(0)
        })
        socket.on('error', fail)
        resolve(channel)
      })
    })
  }

  #received(channel: Channel, chunk: Buffer): void {
    if (this.#channel !== channel) return
    this.#lastTraffic = Date.now()
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk])
    this.#read()
  }

  #gone(channel: Channel, why: string): void {
    if (this.#channel !== channel) return
    this.#channel = null
    this.#pending?.fail(new Error(`connection to ${this.address} ${why}`))
  }

  /** Takes every complete frame from the buffer; answers nobody waits for are dropped. */
  #read(): void {
    for (;;) {
      const length = this.#mbap() ? tcpFrameLength(this.#buffer) : rtuAnswerLength(this.#buffer)
      if (length === 0 || this.#buffer.length < length) return
      const frame = this.#buffer.subarray(0, length)
      this.#buffer = this.#buffer.subarray(length)
      const pending = this.#pending
      if (!pending) continue
      let answer: ModbusResponse
      try {
        answer = this.#mbap() ? decodeResponse(frame) : decodeRtu(frame, pending.transactionId)
      } catch (error) {
        pending.fail(new Error(`bad answer from ${this.address}: ${(error as Error).message}`))
        this.drop()
        return
      }
      if (this.#mbap() && answer.transactionId !== pending.transactionId) continue
      if (answer.unitId !== pending.unitId) continue
      pending.done(answer)
    }
  }
}

/** A socket error as a message: a refused datagram says so in words. */
function refusal(error: NodeJS.ErrnoException): string {
  return error.code === 'ECONNREFUSED' ? 'refused (nothing listens on that port)' : error.message
}

/** An open connection or serial line. */
interface Channel {
  write(data: Buffer): void
  close(): Promise<void>
}

interface Pending {
  transactionId: number
  unitId: number
  done(answer: ModbusResponse): void
  fail(error: Error): void
}

/** The length of the MBAP frame at the start of `buffer`, or 0 while its header is incomplete. */
function tcpFrameLength(buffer: Buffer): number {
  if (buffer.length < MBAP_LENGTH) return 0
  return 6 + buffer.readUInt16BE(4)
}

/**
 * The length of the RTU answer at the start of `buffer` (unit, function, data, CRC), from its
 * function code and byte count; 0 while too little has arrived to tell.
 */
function rtuAnswerLength(buffer: Buffer): number {
  if (buffer.length < 2) return 0
  const fc = buffer[1]!
  if (fc & 0x80) return 5
  if (fc >= 1 && fc <= 4) return buffer.length < 3 ? 0 : 5 + buffer[2]!
  if (fc === 5 || fc === 6 || fc === 15 || fc === 16) return 8
  // An unknown function code: take what is there, so the decoder names the defect.
  return buffer.length
}

/** An RTU answer as the TCP decoder reads it: its PDU behind an MBAP header. */
function decodeRtu(frame: Buffer, transactionId: number): ModbusResponse {
  if (!crcOk(frame, 0, frame.length)) throw new RangeError('CRC error')
  const pduLength = frame.length - 3
  const adu = Buffer.allocUnsafe(MBAP_LENGTH + pduLength)
  frame.copy(adu, MBAP_LENGTH, 1, 1 + pduLength)
  stampHeader(adu, 0, adu.length, transactionId, frame[0]!)
  return decodeResponse(adu)
}
