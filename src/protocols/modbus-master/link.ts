import { Socket } from 'node:net'
import { ConflictError } from '../../errors.js'
import { MBAP_LENGTH, decodeResponse, encodeRequest, stampHeader, type ModbusRequest, type ModbusResponse } from '../modbus/codec.js'
import { crcOk, rtuFrame } from '../modbus/rtu.js'
import type { ModbusMasterTransport } from '../../definition/modbus-master-schema.js'

/**
 * One connection of a Modbus master to one device (host and port): Modbus TCP (MBAP frames) or
 * RTU over TCP (RTU frames with CRC-16 on a TCP stream, as a serial gateway passes them). Requests
 * go one at a time, each waiting at most `timeoutMs` for the connection and for its answer; a
 * request that gets no answer closes the connection (a late answer must not be taken for the next
 * request's), and the next request connects again. Frames are built and read with the Modbus
 * server's codec (src/protocols/modbus/codec.ts, rtu.ts).
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
  timeoutMs: number

  #socket: Socket | null = null
  #connecting: Promise<Socket> | null = null
  #buffer: Buffer = Buffer.alloc(0)
  #pending: Pending | null = null
  #queue: Promise<unknown> = Promise.resolve()
  #transactionId = 0
  #closed = false

  constructor(opts: { host: string; port: number; transport: ModbusMasterTransport; timeoutMs: number }) {
    this.host = opts.host
    this.port = opts.port
    this.transport = opts.transport
    this.timeoutMs = opts.timeoutMs
  }

  /** `host:port`, for messages. */
  get address(): string {
    return `${this.host.includes(':') ? `[${this.host}]` : this.host}:${this.port}`
  }

  /** Whether a connection is open now. */
  get connected(): boolean {
    return this.#socket !== null
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
    const socket = this.#socket
    this.#socket = null
    this.#buffer = Buffer.alloc(0)
    socket?.destroy()
    this.#pending?.fail(new Error(`connection to ${this.address} closed`))
  }

  /** Closes the connection for good: later requests are refused. */
  close(): void {
    this.#closed = true
    this.drop()
  }

  async #send(unitId: number, request: ModbusRequest): Promise<ModbusResponse> {
    if (this.#closed) throw new ConflictError(`connection to ${this.address} closed`)
    const socket = await this.#connect()
    this.#transactionId = (this.#transactionId + 1) & 0xffff
    const transactionId = this.#transactionId
    const adu = encodeRequest({ transactionId, unitId, request })
    const frame = this.transport === 'tcp' ? adu : rtuFrame(unitId, adu, MBAP_LENGTH)
    return new Promise<ModbusResponse>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.fail(new Error(`no answer from ${this.address} (unit ${unitId}, function ${request.fc}) within ${this.timeoutMs / 1000} s`))
        this.drop()
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
      socket.write(frame)
    })
  }

  #connect(): Promise<Socket> {
    if (this.#socket) return Promise.resolve(this.#socket)
    this.#connecting ??= new Promise<Socket>((resolve, reject) => {
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
        this.#attach(socket)
        resolve(socket)
      })
    }).finally(() => {
      this.#connecting = null
    })
    return this.#connecting
  }

  #attach(socket: Socket): void {
    this.#socket = socket
    this.#buffer = Buffer.alloc(0)
    socket.on('data', (chunk: Buffer) => {
      if (this.#socket !== socket) return
      this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk])
      this.#read()
    })
    const gone = (why: string) => {
      if (this.#socket !== socket) return
      this.#socket = null
      this.#pending?.fail(new Error(`connection to ${this.address} ${why}`))
    }
    socket.on('error', (error) => gone(`failed: ${error.message}`))
    socket.on('close', () => gone('closed by the device'))
  }

  /** Takes every complete frame from the buffer; answers nobody waits for are dropped. */
  #read(): void {
    for (;;) {
      const length = this.transport === 'tcp' ? tcpFrameLength(this.#buffer) : rtuAnswerLength(this.#buffer)
      if (length === 0 || this.#buffer.length < length) return
      const frame = this.#buffer.subarray(0, length)
      this.#buffer = this.#buffer.subarray(length)
      const pending = this.#pending
      if (!pending) continue
      let answer: ModbusResponse
      try {
        answer = this.transport === 'tcp' ? decodeResponse(frame) : decodeRtu(frame, pending.transactionId)
      } catch (error) {
        pending.fail(new Error(`bad answer from ${this.address}: ${(error as Error).message}`))
        this.drop()
        return
      }
      if (this.transport === 'tcp' && answer.transactionId !== pending.transactionId) continue
      if (answer.unitId !== pending.unitId) continue
      pending.done(answer)
    }
  }
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
