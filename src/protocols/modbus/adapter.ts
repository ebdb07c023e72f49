import { performance } from 'node:perf_hooks'
import { AdapterLifecycle, readOnly, secondsProblem, ThrottledWarning } from '../adapter-kit.js'
import type { Logger } from 'pino'
import { ValidationError } from '../../errors.js'
import type { AdapterStats, AttributeAccessor, ProtocolAdapter } from '../adapter.js'
import {
  EXCEPTION_CODES,
  MAX_ADU_LENGTH,
  READ_DATA_OFFSET,
  isRejected,
  parseRequest,
  setResponseBit,
  writeBitsHead,
  writeException,
  writeReadHead,
  writeWriteResponse,
} from './codec.js'
import type { ModbusRequest } from './codec.js'
import type { ModbusUnit, UnitAnswer } from './connection.js'
import { disconnectFault, clearAfterFault, emptyFaultCounters, parseModbusFaults } from './faults/index.js'
import type { ModbusFaultCounters } from './faults/index.js'
import { FaultPlan } from './faults/plan.js'
import { rulesOf } from './connection-rules.js'
import type { ConnectionCloseReason } from './connection-rules.js'
import { checkValue, decodeFrom, encodeInto } from './encoding.js'
import type { ModbusHub, ModbusRegistration } from './hub.js'
import { RegisterMap } from './register-map.js'
import type { CompiledEntry, GroupTable } from './register-map.js'
import type { ModbusSlaveDefinition } from './schema.js'
import { serialSettingsOf } from '../serial/port.js'
import type { SerialSettings } from '../serial/port.js'
import type { AdapterTrace } from '../trace.js'
import { traceModbus } from './trace.js'

/**
 * The `modbus_slave` adapter of one instance: serves the instance's attributes as a Modbus unit on
 * a (possibly shared) listener of the hub. Registers carry the attributes' presented values; client
 * writes to holding registers and coils set attributes through the accessor.
 *
 * @example
 * const values = new Map<string, unknown>([['temperature', 25]])
 * const adapter = new ModbusSlaveAdapter({
 *   hub, logger, name: 'sensor.modbus_slave',
 *   definition: parseModbusSlave({ port: 5020, mapping: { temperature: { address: [0, 1], group: 'h_r', type: 'float' } } }),
 *   accessor: { read: (a) => values.get(a), write: (a, v) => void values.set(a, v), writable: () => true },
 * })
 * await adapter.start()
 * adapter.info().port // 5020
 * await adapter.stop()
 */

export type { AttributeAccessor }

/** Options of an adapter. */
export interface ModbusSlaveAdapterOptions {
  hub: ModbusHub
  definition: ModbusSlaveDefinition
  accessor: AttributeAccessor
  logger: Logger
  /** Shown in log lines, e.g. 'sensor.modbus_slave'. */
  name?: string
  /** Where each exchange is recorded (docs/traces.md). */
  trace?: AdapterTrace | undefined
}

/** The serial line of a `transport: serial` unit, as its node shows it. */
export interface ModbusSerialInfo extends SerialSettings {
  /** Set while the line failed (the device went away) and is being reopened: what went wrong, naming the device. */
  line_error?: string
}

/** Lifecycle state of an adapter. */
export type ModbusSlaveState = 'STOPPED' | 'RUNNING' | 'DETACHED'

/** What the adapter node shows. */
export interface ModbusSlaveInfo {
  host: string
  transport: ModbusSlaveDefinition['transport']
  /** Effective port; the configured one (or null) while stopped; null for a serial line. */
  port: number | null
  /** Transport serial only: the line's settings, and `line_error` while a line that failed is being reopened. */
  serial?: ModbusSerialInfo
  unit_id: number
  state: ModbusSlaveState
  response_delay: number
  idle_timeout: number
  frame_timeout: number
  max_connections: number
  /** The faults in force as they were set (a disconnect that happened left out); {} for none. */
  faults: Record<string, unknown>
  mapping: ModbusSlaveDefinition['mapping']
  counters: ModbusSlaveCounters
}

/**
 * What the adapter counted since it was created. The connection counters count what the
 * adapter's listener closed or refused by its rules while the adapter was on it; adapters that
 * share a listener each count the same events, since a connection belongs to no single unit.
 */
export interface ModbusSlaveCounters {
  requests: number
  errors: number
  /** Connections closed after idle_timeout without a complete request. */
  idle_timeouts: number
  /** Connections closed because a started frame was not complete within frame_timeout. */
  frame_timeouts: number
  /** Connections closed to make room for a new one at max_connections. */
  evictions: number
  /** New connections refused at max_connections, every open one waiting for an answer. */
  refusals: number
  /**
   * rtu_over_tcp and serial only (absent otherwise): frames dropped because their CRC did not
   * match. Every unit of the listener or line counts each, as every device of a serial line sees it.
   */
  crc_errors?: number
}

export type { ModbusFaultCounters }

const CLOSE_COUNTERS: Readonly<Record<ConnectionCloseReason, 'idle_timeouts' | 'frame_timeouts' | 'evictions' | 'refusals'>> = {
  idle: 'idle_timeouts',
  frame: 'frame_timeouts',
  evicted: 'evictions',
  refused: 'refusals',
}

/** One attribute write decided by a request, applied after every check passed. */
interface PendingWrite {
  attribute: string
  value: unknown
}

/** An answer as the request alone decides it, before faults shape it (see UnitAnswer). */
type PlainAnswer = number | Promise<Buffer | null>

/** Writes a response ADU at `at` of `out` and returns its length (see ModbusUnit.handle). */
type Respond = (out: Buffer, at: number) => number

/**
 * One instance's `modbus_slave` adapter (see the module comment).
 *
 * @example
 * const adapter = new ModbusSlaveAdapter({ hub, definition, accessor, logger, name: 'sensor.modbus_slave' })
 * await adapter.start()
 * adapter.detach() // clients now time out
 * adapter.attach()
 * await adapter.stop()
 */
export class ModbusSlaveAdapter implements ProtocolAdapter {
  readonly name: string
  readonly settable = ['response_delay', 'faults'] as const
  #hub: ModbusHub
  #definition: ModbusSlaveDefinition
  #accessor: AttributeAccessor
  #logger: Logger
  #holding: GroupTable
  #inputRegisters: GroupTable
  #coils: GroupTable
  #discreteInputs: GroupTable
  #unit: ModbusUnit
  /** Start, stop, detach and attach; the resource is the unit's registration with the hub. */
  readonly #life: AdapterLifecycle<ModbusRegistration>
  /** Warnings a client can cause, at most one a second. */
  readonly #warning: ThrottledWarning
  #requests = 0
  #errors = 0
  #closes = { idle_timeouts: 0, frame_timeouts: 0, evictions: 0, refusals: 0 }
  #crcErrors = 0
  /** The faults in force, or null: the one check normal service pays. */
  #faults: FaultPlan | null = null
  /** The faults value as it was set, for the node. */
  #faultsValue: Record<string, unknown> = {}
  #faultsTimer: NodeJS.Timeout | null = null
  #faultsEverSet = false
  /** Counts every change of the faults in force (set, cleared, ended by clear_after), for watchers. */
  #faultsVersion = 0
  /** One counter per fault of the registry (faults/index.ts). */
  #faultCounts: ModbusFaultCounters = emptyFaultCounters()
  readonly #trace: AdapterTrace | undefined

  constructor(options: ModbusSlaveAdapterOptions) {
    this.#hub = options.hub
    this.#trace = options.trace
    this.#accessor = options.accessor
    this.name = options.name ?? 'modbus_slave'
    this.#logger = options.logger.child({ adapter: this.name })
    this.#warning = new ThrottledWarning(this.#logger)
    this.#life = new AdapterLifecycle(this.name)
    const map = RegisterMap.compile(options.definition.mapping)
    this.#holding = map.group('h_r')
    this.#inputRegisters = map.group('i_r')
    this.#coils = map.group('c_o')
    this.#discreteInputs = map.group('d_i')
    this.#definition = { ...options.definition }
    const definition = this.#definition
    this.#unit = {
      handle: (frame, offset, length, out, at) => this.#handle(frame, offset, length, out, at),
      // Read on every request, so a response_delay set while running applies to the next answer.
      get responseDelayMs() {
        return Math.round(definition.response_delay * 1000)
      },
      connectionRules: rulesOf(options.definition),
      connectionClosed: (reason) => void this.#closes[CLOSE_COUNTERS[reason]]++,
      crcError: () => void this.#crcErrors++,
    }
  }

  /** 'STOPPED', 'RUNNING', or 'DETACHED' (registered but silent). */
  get state(): ModbusSlaveState {
    return this.#life.state
  }

  /**
   * Registers the unit with the hub; resolves once clients can connect. Idempotent.
   * Throws ValidationError (duplicate unit id on the port) or ConflictError (port unavailable).
   */
  start(): Promise<void> {
    return this.#life.start(async () => {
      const d = this.#definition
      const serial = d.transport === 'serial' ? serialSettingsOf(d) : undefined
      const registration = await this.#hub.register({ host: d.host, transport: d.transport, port: d.port, serial, unitId: d.unit_id, unit: this.#unit })
      const where = serial !== undefined ? { device: serial.device, baudrate: serial.baudrate } : { host: registration.host, port: registration.port }
      this.#logger.info({ ...where, transport: d.transport, unit_id: d.unit_id }, 'modbus unit started')
      return registration
    })
  }

  /** Unregisters the unit (its listener closes when no unit is left). Idempotent. */
  stop(): Promise<void> {
    return this.#life.stop(async (registration) => {
      await this.#hub.unregister(registration)
      this.#logger.info({ host: registration.host, port: registration.port }, 'modbus unit stopped')
    })
  }

  /** Keeps the unit registered and connections open but stops answering: clients time out. */
  detach(): void {
    this.#life.detach()
  }

  /** Answers again after detach. */
  attach(): void {
    this.#life.attach()
  }

  /**
   * What the adapter node shows.
   *
   * @example
   * adapter.info().counters // { requests: 12, errors: 1, idle_timeouts: 0, frame_timeouts: 0, evictions: 0, refusals: 0 }
   */
  info(): ModbusSlaveInfo {
    const d = this.#definition
    const crc = d.transport === 'rtu_over_tcp' || d.transport === 'serial' ? { crc_errors: this.#crcErrors } : {}
    return {
      host: d.host,
      transport: d.transport,
      port: d.transport === 'serial' ? null : (this.#life.resource?.port ?? d.port ?? null),
      ...(d.transport === 'serial' ? { serial: this.#serialInfo() } : {}),
      unit_id: d.unit_id,
      state: this.state,
      response_delay: d.response_delay,
      idle_timeout: d.idle_timeout,
      frame_timeout: d.frame_timeout,
      max_connections: d.max_connections,
      faults: structuredClone(this.#faultsValue),
      mapping: structuredClone(d.mapping),
      counters: { requests: this.#requests, errors: this.#errors, ...this.#closes, ...crc, ...this.#faultCounts },
    }
  }

  /** The line of a serial unit as the node shows it, with what is wrong with it while it is being reopened. */
  #serialInfo(): ModbusSerialInfo {
    const registration = this.#life.resource
    const problem = registration !== null ? this.#hub.lineProblem(registration) : null
    return { ...serialSettingsOf(this.#definition), ...(problem !== null ? { line_error: problem } : {}) }
  }

  /**
   * Live state, effective port and request counters, without the mapping (cheap enough to sample
   * often); once faults were set, also `active_faults`, `faults_version` (counts every change of
   * the faults in force) and the fault counters. The connection
   * counters are in settings().counters.
   *
   * @example
   * adapter.stats() // { state: 'RUNNING', port: 5020, requests: 3, errors: 0 }
   */
  stats(): AdapterStats & { port: number | null } {
    const port = this.#definition.transport === 'serial' ? null : (this.#life.resource?.port ?? this.#definition.port ?? null)
    const stats = { state: this.state, port, requests: this.#requests, errors: this.#errors }
    // An adapter never given faults keeps its stats (sampled for every stream client) lean.
    if (!this.#faultsEverSet) return stats
    return { ...stats, active_faults: this.#faults === null ? '' : this.#faults.active.join(','), faults_version: this.#faultsVersion, ...this.#faultCounts }
  }

  /** What the adapter node shows (see ProtocolAdapter.settings). */
  settings(): Record<string, unknown> {
    const { host, transport, port, serial, unit_id, response_delay, idle_timeout, frame_timeout, max_connections, faults, mapping, counters } = this.info()
    return {
      host,
      transport,
      port,
      ...(serial !== undefined ? { serial } : {}),
      unit_id,
      response_delay,
      idle_timeout,
      frame_timeout,
      max_connections,
      faults,
      mapping,
      counters,
    }
  }

  /**
   * Changes `response_delay` (seconds, 0..3600) or `faults` (see setFaults) while running;
   * anything else is refused.
   *
   * @example
   * adapter.set('response_delay', 0.5)
   * adapter.set('faults', { no_response: { every: 3 } })
   */
  set(name: string, value: unknown): void {
    if (name === 'faults') return this.setFaults(value)
    const refusal = this.refusal(name, value)
    if (refusal) throw refusal
    this.#definition.response_delay = value as number
  }

  refusal(name: string, value: unknown): ValidationError | null {
    if (name === 'faults') {
      try {
        parseModbusFaults(value)
        return null
      } catch (err) {
        if (err instanceof ValidationError) return err
        throw err
      }
    }
    return name === 'response_delay' ? secondsProblem(name, value, 0, 3600) : readOnly(this, name)
  }

  /**
   * Replaces the faults in force (src/definition/modbus-faults-schema.ts); `{}` or null returns
   * to normal service. A bad value throws a ValidationError naming each problem under `value.`
   * and leaves the faults in force as they were. A disconnect without `after` (or `after: 0`)
   * closes the connections at once.
   *
   * @example
   * adapter.setFaults({ exception: { code: 6, functions: [3] }, clear_after: { requests: 2 } })
   * adapter.setFaults({}) // normal service
   */
  setFaults(value: unknown): void {
    const parsed = parseModbusFaults(value)
    const plan = new FaultPlan(parsed)
    this.#faultsEverSet = true
    this.#faultsVersion++
    if (this.#faultsTimer !== null) clearTimeout(this.#faultsTimer)
    this.#faultsTimer = null
    const shown = { ...(value as Record<string, unknown> | null) }
    if (plan.disconnectNow) {
      this.#disconnect()
      plan.disconnected()
      delete shown.disconnect
    }
    if (plan.empty) {
      this.#faults = null
      this.#faultsValue = {}
      this.#logger.info('modbus faults cleared')
      return
    }
    this.#faults = plan
    this.#faultsValue = structuredClone(shown)
    const remaining = plan.remainingMs()
    if (remaining !== null) {
      this.#faultsTimer = setTimeout(() => this.#clearFaults(plan, true), remaining)
      this.#faultsTimer.unref()
    }
    this.#logger.info({ faults: this.#faultsValue }, 'modbus faults set')
  }

  /** Ends the faults of `plan` (by clear_after, or when none is left), unless others replaced them meanwhile. */
  #clearFaults(plan: FaultPlan, byClearAfter: boolean): void {
    if (this.#faults !== plan) return
    if (this.#faultsTimer !== null) clearTimeout(this.#faultsTimer)
    this.#faultsTimer = null
    this.#faults = null
    this.#faultsValue = {}
    this.#faultsVersion++
    if (byClearAfter) this.#faultCounts[clearAfterFault.counter]++
    this.#logger.info(byClearAfter ? 'modbus faults cleared by clear_after' : 'modbus faults over: none left')
  }

  /** Closes every connection of the listener now. */
  #disconnect(): void {
    const registration = this.#life.resource
    if (registration === null) return
    this.#faultCounts[disconnectFault.counter] += this.#hub.dropConnections(registration)
  }

  /** Why `value` cannot be published for `attr`, or null (also when `attr` is not mapped). */
  valueProblem(attr: string, value: unknown): string | null {
    return checkMappedValue(this.#definition, attr, value)
  }

  #handle(frame: Buffer, offset: number, length: number, out: Buffer, at: number): UnitAnswer {
    this.#requests++
    if (this.#life.detached) return 0
    const trace = this.#trace
    if (trace?.on === true) {
      const started = performance.now()
      return traceModbus(trace, this.#definition.unit_id, frame, offset, length, out, at, this.#serve(frame, offset, length, out, at), started)
    }
    return this.#serve(frame, offset, length, out, at)
  }

  #serve(frame: Buffer, offset: number, length: number, out: Buffer, at: number): UnitAnswer {
    if (this.#faults !== null) return this.#faulty(this.#faults, frame, offset, length, out, at)
    return this.#answer(frame, offset, length, out, at)
  }

  /** Answers a request while faults are set: as the plan decides (see faults.ts). */
  #faulty(plan: FaultPlan, frame: Buffer, offset: number, length: number, out: Buffer, at: number): UnitAnswer {
    if (plan.remainingMs() === 0) {
      this.#clearFaults(plan, true)
      return this.#answer(frame, offset, length, out, at)
    }
    const decision = plan.decide(frame, offset, length)
    let answer: PlainAnswer
    switch (decision.action) {
      case 'disconnect':
        plan.disconnected()
        if (plan.empty) this.#clearFaults(plan, false)
        else delete this.#faultsValue.disconnect
        this.#disconnect()
        return 0
      case 'drop':
        answer = 0
        break
      case 'exception':
        answer = writeException(out, at, frame[offset]!, decision.code)
        break
      case 'answer':
        answer = this.#answer(frame, offset, length, out, at)
    }
    for (const counter of decision.hits) this.#faultCounts[counter as keyof ModbusFaultCounters]++
    if (plan.spent) this.#clearFaults(plan, true)
    const shape = decision.shape
    if (answer === 0 || shape === null) return answer
    const edit = shape.edit
    if (edit !== null) {
      if (typeof answer === 'number') edit(out, at, answer)
      else answer = answer.then((adu) => (adu === null ? adu : (edit(adu, 0, adu.length), adu)))
      if (shape.delayMs === null && shape.rewrite === null && shape.parts === 1) return answer
    }
    return { answer, delayMs: shape.delayMs ?? this.#unit.responseDelayMs, rewrite: shape.rewrite, parts: shape.parts, gapMs: shape.gapMs }
  }

  #answer(frame: Buffer, offset: number, length: number, out: Buffer, at: number): PlainAnswer {
    const request = parseRequest(frame, offset, length)
    if (isRejected(request)) return this.#exception(request.fc, request.exception, out, at)
    switch (request.fc) {
      case 1:
        return this.#readBits(request.fc, this.#coils, request.address, request.quantity, out, at)
      case 2:
        return this.#readBits(request.fc, this.#discreteInputs, request.address, request.quantity, out, at)
      case 3:
        return this.#readRegisters(request.fc, this.#holding, request.address, request.quantity, out, at)
      case 4:
        return this.#readRegisters(request.fc, this.#inputRegisters, request.address, request.quantity, out, at)
      case 5:
      case 15:
        return this.#writeCoils(request, out, at)
      case 6:
      case 16:
      case 23:
        return this.#writeRegisters(request, out, at)
    }
  }

  #readBits(fc: number, table: GroupTable, address: number, quantity: number, out: Buffer, at: number): number {
    const length = writeBitsHead(out, at, fc, quantity)
    for (let i = 0; i < quantity; i++) {
      const entry = table.entryAt(address + i)
      if (entry === undefined) {
        if (this.#definition.zero_fill === true) continue
        return this.#exception(fc, EXCEPTION_CODES.ILLEGAL_DATA_ADDRESS, out, at)
      }
      const value = this.#read(entry)
      if (value === true || value === 1) setResponseBit(out, at, i)
      else if (value === false || value === 0) continue
      else if (entry.spec.type === 'uint_16') {
        // A bit mapped as uint_16 is on when the number is not 0 (as a register would carry it).
        const problem = checkValue(value, entry.spec)
        if (problem !== null) return this.#failure(fc, `'${entry.attribute}': ${problem}`, out, at)
        if (typeof value === 'bigint' ? value !== 0n : Math.round(value as number) !== 0) setResponseBit(out, at, i)
      } else return this.#failure(fc, `'${entry.attribute}' holds ${describeValue(value)}, not a bool`, out, at)
    }
    return length
  }

  #readRegisters(fc: number, table: GroupTable, address: number, quantity: number, out: Buffer, at: number): number {
    const length = writeReadHead(out, at, fc, quantity * 2)
    let to = at + READ_DATA_OFFSET
    let current = -1
    let encoded: Buffer | null = null
    for (let a = address; a < address + quantity; a++) {
      const index = table.indexAt(a)
      if (index < 0) {
        if (this.#definition.zero_fill !== true) return this.#exception(fc, EXCEPTION_CODES.ILLEGAL_DATA_ADDRESS, out, at)
        out[to] = 0
        out[to + 1] = 0
        to += 2
        continue
      }
      if (index !== current) {
        // Entries are contiguous ranges, so each attribute is read and encoded once per request.
        const entry = table.entries[index]!
        const problem = this.#encode(entry)
        if (problem !== null) return this.#failure(fc, `'${entry.attribute}': ${problem}`, out, at)
        current = index
        encoded = entry.scratch
      }
      const word = table.wordOffset(a) * 2
      out[to] = encoded![word]!
      out[to + 1] = encoded![word + 1]!
      to += 2
    }
    return length
  }

  /**
   * Encodes the attribute's current value into the entry's scratch bytes, unless they already
   * hold that value (a polled attribute usually has not changed since the last request).
   */
  #encode(entry: CompiledEntry): string | null {
    const value = this.#read(entry)
    if (entry.scratchValid && Object.is(entry.scratchValue, value)) return null
    entry.scratchValid = false
    const problem = encodeInto(value, entry.spec, entry.scratch, 0)
    if (problem !== null) return problem
    entry.scratchValid = true
    entry.scratchValue = value
    return null
  }

  #writeCoils(request: Extract<ModbusRequest, { fc: 5 | 15 }>, out: Buffer, at: number): PlainAnswer {
    const { fc, address } = request
    const values = request.fc === 5 ? [request.value] : request.values
    const table = this.#coils
    const writes: PendingWrite[] = []
    for (let i = 0; i < values.length; i++) {
      const entry = table.entryAt(address + i)
      if (entry === undefined || !this.#accessor.writable(entry.attribute)) {
        return this.#exception(fc, EXCEPTION_CODES.ILLEGAL_DATA_ADDRESS, out, at)
      }
      // A bit mapped as uint_16 sets the attribute to the number 1 or 0.
      writes.push({ attribute: entry.attribute, value: entry.spec.type === 'uint_16' ? Number(values[i]) : values[i] })
    }
    const word = request.fc === 5 ? (request.value ? 0xff00 : 0) : request.quantity
    return this.#apply(fc, writes, (o, p) => writeWriteResponse(o, p, fc, address, word), out, at)
  }

  #writeRegisters(request: Extract<ModbusRequest, { fc: 6 | 16 | 23 }>, out: Buffer, at: number): PlainAnswer {
    const { fc } = request
    let address: number
    let data: Buffer
    if (request.fc === 6) {
      address = request.address
      data = Buffer.allocUnsafe(2)
      data.writeUInt16BE(request.value, 0)
    } else if (request.fc === 16) {
      address = request.address
      data = request.data
    } else {
      address = request.writeAddress
      data = request.data
    }
    const quantity = data.length / 2
    const table = this.#holding
    if (!table.covers(address, quantity)) return this.#exception(fc, EXCEPTION_CODES.ILLEGAL_DATA_ADDRESS, out, at)
    if (request.fc === 23 && !table.covers(request.readAddress, request.readQuantity)) {
      return this.#exception(fc, EXCEPTION_CODES.ILLEGAL_DATA_ADDRESS, out, at)
    }
    const writes: PendingWrite[] = []
    let a = address
    while (a < address + quantity) {
      const entry = table.entryAt(a)!
      if (!this.#accessor.writable(entry.attribute)) return this.#exception(fc, EXCEPTION_CODES.ILLEGAL_DATA_ADDRESS, out, at)
      const from = Math.max(address, entry.first)
      const to = Math.min(address + quantity, entry.first + entry.width)
      const merged = Buffer.allocUnsafe(entry.width * 2)
      if (from > entry.first || to < entry.first + entry.width) {
        // A write that covers only some words keeps the others as they are now.
        const problem = encodeInto(this.#read(entry), entry.spec, merged, 0)
        if (problem !== null) return this.#failure(fc, `'${entry.attribute}' cannot be merged with a partial write: ${problem}`, out, at)
      }
      data.copy(merged, (from - entry.first) * 2, (from - address) * 2, (to - address) * 2)
      const value = decodeFrom(entry.spec, merged, 0)
      if (value === undefined) return this.#exception(fc, EXCEPTION_CODES.ILLEGAL_DATA_VALUE, out, at)
      writes.push({ attribute: entry.attribute, value })
      a = to
    }
    if (request.fc === 23) {
      const { readAddress, readQuantity } = request
      return this.#apply(fc, writes, (o, p) => this.#readRegisters(fc, table, readAddress, readQuantity, o, p), out, at)
    }
    const word = request.fc === 6 ? request.value : request.quantity
    return this.#apply(fc, writes, (o, p) => writeWriteResponse(o, p, fc, address, word), out, at)
  }

  /**
   * Applies writes in order, synchronously as long as the accessor is synchronous, then answers
   * with `respond`. A value an attribute does not take (NaN into a float) answers exception 03
   * before anything is written; a write that fails while applied (a Python setter that raises)
   * answers exception 04, and the writes before it stay applied.
   */
  #apply(fc: number, writes: PendingWrite[], respond: Respond, out: Buffer, at: number): PlainAnswer {
    for (const { attribute, value } of writes) {
      const problem = this.#accessor.valueProblem?.(attribute, value) ?? null
      if (problem !== null) {
        this.#warning.warn({ attribute, reason: problem }, 'modbus write refused by the attribute')
        return this.#exception(fc, EXCEPTION_CODES.ILLEGAL_DATA_VALUE, out, at)
      }
    }
    for (let i = 0; i < writes.length; i++) {
      const { attribute, value } = writes[i]!
      let result: void | Promise<void>
      try {
        result = this.#accessor.write(attribute, value)
      } catch (error) {
        return this.#writeFailure(fc, attribute, error, out, at)
      }
      if (result instanceof Promise) return this.#applyRest(fc, writes, i, result, respond)
    }
    return respond(out, at)
  }

  /** The rest of #apply once a write turned out asynchronous: the answer is a buffer of its own. */
  async #applyRest(fc: number, writes: PendingWrite[], index: number, pending: Promise<void>, respond: Respond): Promise<Buffer> {
    const out = Buffer.allocUnsafe(MAX_ADU_LENGTH)
    let i = index
    try {
      await pending
      for (i = index + 1; i < writes.length; i++) await this.#accessor.write(writes[i]!.attribute, writes[i]!.value)
    } catch (error) {
      return out.subarray(0, this.#writeFailure(fc, writes[i]!.attribute, error, out, 0))
    }
    return out.subarray(0, respond(out, 0))
  }

  #read(entry: CompiledEntry): unknown {
    try {
      return this.#accessor.read(entry.attribute)
    } catch (error) {
      this.#warning.warn({ err: error, attribute: entry.attribute }, 'modbus read failed')
      return undefined
    }
  }

  #writeFailure(fc: number, attribute: string, error: unknown, out: Buffer, at: number): number {
    this.#warning.warn({ err: (error as Error).message, attribute }, 'modbus write failed')
    return this.#exception(fc, EXCEPTION_CODES.SERVER_DEVICE_FAILURE, out, at)
  }

  #failure(fc: number, reason: string, out: Buffer, at: number): number {
    this.#warning.warn({ reason }, 'modbus read cannot encode a value')
    return this.#exception(fc, EXCEPTION_CODES.SERVER_DEVICE_FAILURE, out, at)
  }

  #exception(fc: number, code: number, out: Buffer, at: number): number {
    this.#errors++
    return writeException(out, at, fc, code)
  }
}

/**
 * Why `value` cannot be published for attribute `attr`, or null (also when `attr` is not mapped).
 * The HTTP layer uses it to refuse such writes with 422 before they reach the attribute.
 *
 * @example
 * checkMappedValue(definition, 'status', -1) // "-1 is out of range for uint_16 (0..65535)"
 */
export function checkMappedValue(definition: ModbusSlaveDefinition, attr: string, value: unknown): string | null {
  if (!Object.hasOwn(definition.mapping, attr)) return null
  return checkValue(value, definition.mapping[attr]!)
}

function describeValue(value: unknown): string {
  if (typeof value === 'string') return 'a string'
  if (value === undefined) return 'no value'
  return String(value)
}
