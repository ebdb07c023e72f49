import { spawn, spawnSync } from 'node:child_process'
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import { pino } from 'pino'
import type { Logger } from 'pino'
import { ModbusHub, ModbusSlaveAdapter, decodeResponse, encodeRequest, parseModbusSlave } from '../../../src/protocols/modbus/index.js'
import type { AttributeAccessor, ModbusRequest, ModbusResponse } from '../../../src/protocols/modbus/index.js'
import { ForbiddenError } from '../../../src/errors.js'

export const silentLogger: Logger = pino({ level: 'silent' })

/** An accessor backed by a plain Map, with knobs for read-only, slow and failing attributes. */
export class MapAccessor implements AttributeAccessor {
  readonly values: Map<string, unknown>
  readonly readOnly = new Set<string>()
  readonly failing = new Set<string>()
  /** Attributes that take finite numbers only, as a float attribute does. */
  readonly finite = new Set<string>()
  /** Attributes whose writes resolve after this many milliseconds. */
  readonly slow = new Map<string, number>()
  readonly writes: Array<[string, unknown]> = []

  constructor(initial: Record<string, unknown> = {}) {
    this.values = new Map(Object.entries(initial))
  }

  read(attr: string): unknown {
    return this.values.get(attr)
  }

  write(attr: string, value: unknown): void | Promise<void> {
    if (this.failing.has(attr)) throw new ForbiddenError(`attribute '${attr}' refuses writes`)
    const delay = this.slow.get(attr)
    if (delay !== undefined) {
      return new Promise((resolve) =>
        setTimeout(() => {
          this.values.set(attr, value)
          this.writes.push([attr, value])
          resolve()
        }, delay),
      )
    }
    this.values.set(attr, value)
    this.writes.push([attr, value])
  }

  writable(attr: string): boolean {
    return !this.readOnly.has(attr)
  }

  valueProblem(attr: string, value: unknown): string | null {
    return this.finite.has(attr) && !Number.isFinite(value) ? `expected a finite number, got ${String(value)}` : null
  }
}

/** A minimal Modbus TCP client over a raw socket: matches answers to requests by transaction id. */
export class TestClient {
  readonly socket: Socket
  /** Frames that matched no pending request. */
  readonly unmatched: ModbusResponse[] = []
  /** Every malformed frame or framing problem seen. */
  readonly problems: string[] = []
  /** Transaction ids of the answers, in the order they arrived. */
  readonly arrivals: number[] = []
  #buffer = Buffer.alloc(0)
  #nextId = 1
  #waiting = new Map<number, { resolve: (r: ModbusResponse) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>()
  readonly closed: Promise<void>

  private constructor(socket: Socket) {
    this.socket = socket
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()))
    socket.on('data', (chunk: Buffer) => this.#onData(chunk))
    socket.on('error', () => undefined)
    socket.once('close', () => {
      for (const [, w] of this.#waiting) {
        clearTimeout(w.timer)
        w.reject(new Error('connection closed'))
      }
      this.#waiting.clear()
    })
  }

  static connect(port: number, host = '127.0.0.1'): Promise<TestClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port, noDelay: true })
      socket.once('connect', () => resolve(new TestClient(socket)))
      socket.once('error', reject)
    })
  }

  /** Sends a request and waits for its answer (rejects on time-out or close). */
  request(request: ModbusRequest | { pdu: Buffer }, options: { unitId?: number; timeoutMs?: number; transactionId?: number } = {}): Promise<ModbusResponse> {
    const transactionId = options.transactionId ?? this.#nextId++ & 0xffff
    const frame = encodeRequest({ transactionId, unitId: options.unitId ?? 1, request })
    const answer = this.expect(transactionId, options.timeoutMs)
    this.socket.write(frame)
    return answer
  }

  /** Waits for the answer to a transaction id whose request is sent separately. */
  expect(transactionId: number, timeoutMs = 2000): Promise<ModbusResponse> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(transactionId)
        reject(new Error(`time-out waiting for transaction ${transactionId}`))
      }, timeoutMs)
      this.#waiting.set(transactionId, { resolve, reject, timer })
    })
  }

  send(bytes: Buffer): void {
    this.socket.write(bytes)
  }

  close(): void {
    this.socket.destroy()
  }

  #onData(chunk: Buffer): void {
    this.#buffer = Buffer.concat([this.#buffer, chunk])
    while (this.#buffer.length >= 6) {
      const length = this.#buffer.readUInt16BE(4)
      if (length < 2 || length > 254) {
        this.problems.push(`bad length field ${length}`)
        this.#buffer = Buffer.alloc(0)
        return
      }
      if (this.#buffer.length < 6 + length) return
      const frame = this.#buffer.subarray(0, 6 + length)
      this.#buffer = this.#buffer.subarray(6 + length)
      let response: ModbusResponse
      try {
        response = decodeResponse(frame)
      } catch (error) {
        this.problems.push((error as Error).message)
        continue
      }
      this.arrivals.push(response.transactionId)
      const waiter = this.#waiting.get(response.transactionId)
      if (waiter) {
        this.#waiting.delete(response.transactionId)
        clearTimeout(waiter.timer)
        waiter.resolve(response)
      } else {
        this.unmatched.push(response)
      }
    }
  }
}

/** A hub plus one started adapter on an OS-chosen port. */
export interface Rig {
  hub: ModbusHub
  adapter: ModbusSlaveAdapter
  accessor: MapAccessor
  port: number
  close(): Promise<void>
}

/** Starts an adapter for `definition` (parsed with the schema; port defaults to 0) over a MapAccessor. */
export async function startRig(definition: Record<string, unknown>, initial: Record<string, unknown> = {}): Promise<Rig> {
  const hub = new ModbusHub({ logger: silentLogger })
  const accessor = new MapAccessor(initial)
  const adapter = new ModbusSlaveAdapter({
    hub,
    accessor,
    logger: silentLogger,
    definition: parseModbusSlave({ port: 0, ...definition }),
    name: 'test.modbus_slave',
  })
  await adapter.start()
  const port = adapter.info().port!
  return {
    hub,
    adapter,
    accessor,
    port,
    close: async () => {
      await adapter.stop()
      await hub.close()
    },
  }
}

/** Register bytes of a list of words, for FC16/FC23 payloads. */
export function wordsToBuffer(words: number[]): Buffer {
  const buffer = Buffer.alloc(words.length * 2)
  words.forEach((w, i) => buffer.writeUInt16BE(w, i * 2))
  return buffer
}

/** Narrows a response to a register answer or fails with what came instead. */
export function registersOf(response: ModbusResponse): number[] {
  if ('registers' in response) return response.registers
  throw new Error(`expected registers, got ${JSON.stringify(response)}`)
}

/** The exception code of a response, or null when it is not an exception. */
export function exceptionOf(response: ModbusResponse): number | null {
  return 'exception' in response ? response.exception : null
}

/**
 * Whether an independent peer tool can run. Returns a skip message when it cannot; under CI
 * (process.env.CI set) a missing tool is a failure instead, so the check cannot silently vanish.
 */
export function peerSkipReason(name: string, probe: { command: string; args: string[] }, install: string): string | false {
  const result = spawnSync(probe.command, probe.args, { stdio: 'ignore', timeout: 10_000 })
  if (result.status === 0) return false
  const message = `${name} is not available (${install})`
  if (process.env.CI) throw new Error(`${message}; it is required when CI is set`)
  return message
}

/** Runs a command without blocking the event loop (the server under test lives in this process). */
export function run(
  command: string,
  args: string[],
  options: { input?: string; timeoutMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 15_000)
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    child.stdin.end(options.input ?? '')
  })
}
