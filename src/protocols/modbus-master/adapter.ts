import type { Logger } from 'pino'
import { ValidationError } from '../../errors.js'
import { addressRange } from '../../definition/modbus-schema.js'
import { bindingWidth, type ModbusMasterBinding, type ModbusMasterDefinition } from '../../definition/modbus-master-schema.js'
import { serialSettingsOf } from '../../definition/serial-schema.js'
import type { AdapterState, AdapterStats, AttributeAccessor, ProtocolAdapter } from '../adapter.js'
import type { AdapterTrace, Exchange } from '../trace.js'
import { AdapterLifecycle, ThrottledWarning, readOnly, secondsProblem } from '../adapter-kit.js'
import type { ModbusRequest, ModbusResponse } from '../modbus/codec.js'
import { checkValue, decodeWords, encodeWords, encodingSpec, type EncodingSpec } from '../modbus/encoding.js'
import { ModbusLink } from './link.js'

/**
 * The `modbus_master` adapter: the instance is a Modbus client. Every `poll_interval` it reads
 * its inbound bindings from their devices into the attributes (through the attributes' normal
 * write path, so hooks, events and the instance's other adapters see the values), and writes its
 * outbound bindings to the devices when their attributes changed (checked after each step of the
 * instance and at each poll). A request without answer is tried again `max_retries` times,
 * `retry_delay` apart; a poll in which a device did not answer is a failure. The state is
 * `CONNECTED` while every device answers, `RETRYING` after a failure, and `FAILED` after
 * `max_failures` consecutive ones, when polls go on at a slower pace (`failedInterval`) until
 * the device answers again. Outbound bindings are written again when a device comes back (it
 * may have restarted with other values). Detach closes the connections and stops polling, as a
 * controller whose network went down; attach resumes.
 *
 * @example
 * const adapter = new ModbusMasterAdapter({ definition, accessor, logger, name: 'plc.modbus_master' })
 * await adapter.start()
 * adapter.state // 'CONNECTED'
 * adapter.stats() // { state: 'CONNECTED', requests: 12, errors: 0, polls: 6, writes: 1, ... }
 */

/** One binding with what the adapter keeps for it. */
interface Binding {
  readonly def: ModbusMasterBinding
  readonly attribute: string
  readonly link: ModbusLink
  readonly unitId: number
  readonly first: number
  readonly width: number
  /** Null for `raw` (a list of words) and for bits. */
  readonly spec: EncodingSpec | null
  readonly reads: boolean
  readonly writes: boolean
  readonly label: string
  /** The value last read from or written to the device (compared as a key), undefined before. */
  synced: string | undefined
}

/** One device (a link) with its consecutive failed polls. */
interface Device {
  readonly link: ModbusLink
  readonly bindings: Binding[]
  failures: number
}

/** Counters of the adapter. */
export interface ModbusMasterCounters {
  /** Polls done (each reads every inbound binding once). */
  polls: number
  /** Modbus requests sent. */
  requests: number
  /** Requests without a usable answer, exception answers and values that could not be applied. */
  errors: number
  /** Values written to the devices. */
  writes: number
}

/** The running state of a master: how its devices answer. */
export type ModbusMasterState = 'CONNECTED' | 'RETRYING' | 'FAILED'

/** Options of an adapter. */
export interface ModbusMasterAdapterOptions {
  definition: ModbusMasterDefinition
  accessor: AttributeAccessor
  logger: Logger
  name?: string
  /** The adapter's traffic trace: each request and its answer is recorded there. */
  trace?: AdapterTrace | undefined
}

const SETTABLE = ['poll_interval', 'timeout', 'max_retries', 'retry_delay', 'max_failures'] as const

/**
 * Seconds between polls while FAILED: five poll intervals, at least 1 s and at most 30 s, so a
 * device that is gone is not hammered and one that returns is seen again soon.
 *
 * @example
 * failedInterval(0.2) // 1
 */
export function failedInterval(pollInterval: number): number {
  return Math.min(30, Math.max(1, pollInterval * 5))
}

export class ModbusMasterAdapter implements ProtocolAdapter {
  readonly name: string
  readonly settable: readonly string[] = SETTABLE
  readonly #definition: ModbusMasterDefinition
  readonly #accessor: AttributeAccessor
  readonly #logger: Logger
  readonly #warning: ThrottledWarning
  readonly #life: AdapterLifecycle<true>
  readonly #bindings: Binding[]
  readonly #devices: Device[]
  readonly #counters: ModbusMasterCounters = { polls: 0, requests: 0, errors: 0, writes: 0 }
  readonly #traceRing: AdapterTrace | undefined
  #lastError: string | null = null
  #lastPoll: string | null = null
  #timer: NodeJS.Timeout | null = null
  /** The poll or write pass under way, if any: passes never overlap. */
  #busy: Promise<void> | null = null
  /** Outbound values changed while a pass ran: a write pass follows it. */
  #writeAgain = false
  /** Bumped by stop and detach, so a pass that started before stops at its next request. */
  #generation = 0

  constructor(opts: ModbusMasterAdapterOptions) {
    const d = opts.definition
    this.name = opts.name ?? 'modbus_master'
    this.#definition = { ...d, bindings: d.bindings.map((b) => ({ ...b })) }
    this.#accessor = opts.accessor
    this.#traceRing = opts.trace
    this.#logger = opts.logger.child({ adapter: this.name })
    this.#warning = new ThrottledWarning(this.#logger)
    this.#life = new AdapterLifecycle<true>(this.name)
    const links = new Map<string, ModbusLink>()
    const defaultUnit = d.slave_id ?? d.unit_id ?? 1
    const serial = d.transport === 'serial' ? serialSettingsOf(d) : undefined
    this.#bindings = d.bindings.map((def, index) => {
      const host = def.host ?? d.host
      const port = def.port ?? d.port
      // On a serial line every binding is on the one line (multi-drop, by slave_id).
      const key = serial ? serial.device : `${host} ${port}`
      let link = links.get(key)
      if (!link) {
        link = new ModbusLink({ host, port, transport: d.transport, timeoutMs: d.timeout * 1000, ...(serial && { serial }) })
        links.set(key, link)
      }
      const { first, width, spec } = bindingLayout(def)
      return {
        def,
        attribute: def.attribute,
        link,
        unitId: def.slave_id ?? defaultUnit,
        first,
        width,
        spec,
        reads: def.direction !== 'outbound',
        writes: def.direction !== 'inbound',
        label: `binding ${def.name ?? index} (${def.area} ${first} of ${link.address} unit ${def.slave_id ?? defaultUnit})`,
        synced: undefined,
      }
    })
    this.#devices = [...links.values()].map((link) => ({ link, bindings: this.#bindings.filter((b) => b.link === link), failures: 0 }))
  }

  /** STOPPED, DETACHED, or while running how the devices answer (CONNECTED, RETRYING, FAILED). */
  get state(): AdapterState {
    const life = this.#life.state
    return life === 'RUNNING' ? this.#linkState() : life
  }

  #linkState(): ModbusMasterState {
    const worst = Math.max(0, ...this.#devices.map((d) => d.failures))
    if (worst === 0) return 'CONNECTED'
    return worst >= this.#definition.max_failures ? 'FAILED' : 'RETRYING'
  }

  /** Starts polling; resolves after the first poll (answered or not). Idempotent. */
  async start(): Promise<void> {
    let opened = false
    await this.#life.start(async () => {
      for (const device of this.#devices) device.failures = 0
      for (const binding of this.#bindings) binding.synced = undefined
      opened = true
      return true
    })
    if (opened) await this.#resume()
  }

  /** Stops polling and closes the connections. Idempotent. */
  stop(): Promise<void> {
    return this.#life.stop(async () => {
      this.#halt()
      await this.#busy
    })
  }

  detach(): void {
    this.#life.detach()
    this.#halt()
  }

  attach(): void {
    const wasDetached = this.#life.detached
    this.#life.attach()
    if (wasDetached) void this.#resume()
  }

  /** Polls now and then every interval; resolves after this first poll. */
  async #resume(): Promise<void> {
    await this.#busy
    if (this.#life.state !== 'RUNNING') return
    await this.#poll()
  }

  /** No further polls or writes; connections closed. */
  #halt(): void {
    this.#generation++
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    for (const device of this.#devices) device.link.drop()
  }

  /** One poll (writes first, then reads), then the next one scheduled. */
  #poll(): Promise<void> {
    const generation = this.#generation
    const started = Date.now()
    return this.#exclusive(async () => {
      await Promise.all(this.#devices.map((device) => this.#pollDevice(device, generation)))
      if (generation !== this.#generation) return
      this.#counters.polls++
      this.#lastPoll = new Date().toISOString()
    })
      .catch((error: unknown) => this.#fail(`poll failed: ${(error as Error).message}`))
      .finally(() => {
        if (generation !== this.#generation || this.#life.state !== 'RUNNING') return
        const interval = this.#linkState() === 'FAILED' ? failedInterval(this.#definition.poll_interval) : this.#definition.poll_interval
        const delay = Math.max(0, started + interval * 1000 - Date.now())
        this.#timer = setTimeout(() => void this.#poll(), delay)
        this.#timer.unref()
      })
  }

  /** Runs `pass` when no other pass runs; then a write pass if outbound values changed meanwhile. */
  async #exclusive(pass: () => Promise<void>): Promise<void> {
    while (this.#busy) await this.#busy
    const run = pass().finally(() => {
      this.#busy = null
    })
    this.#busy = run
    await run
    if (this.#writeAgain && this.#life.state === 'RUNNING') {
      this.#writeAgain = false
      const generation = this.#generation
      await this.#exclusive(() => Promise.all(this.#devices.map((d) => this.#writeDevice(d, generation))).then(() => undefined))
    }
  }

  async #pollDevice(device: Device, generation: number): Promise<void> {
    const answered = await this.#writeDevice(device, generation)
    let ok = answered
    if (ok) {
      for (const binding of device.bindings) {
        if (!binding.reads || generation !== this.#generation) continue
        if (!(await this.#read(binding, generation))) {
          ok = false
          break
        }
      }
    }
    if (generation !== this.#generation) return
    this.#settle(device, ok)
  }

  /** Counts a poll of a device; a device back after failures gets its outbound values again. */
  #settle(device: Device, ok: boolean): void {
    const before = this.#linkState()
    if (ok) {
      if (device.failures > 0) {
        this.#logger.info({ device: device.link.address, failures: device.failures }, `modbus master: ${device.link.address} answers again`)
        for (const binding of device.bindings) if (binding.writes && binding.def.direction === 'outbound') binding.synced = undefined
        device.failures = 0
      }
    } else {
      device.failures++
    }
    const after = this.#linkState()
    if (after !== before) this.#logger.info({ from: before, to: after, last_error: this.#lastError }, `modbus master state ${before} -> ${after}`)
  }

  /** Writes the outbound values that changed; false when the device did not answer. */
  async #writeDevice(device: Device, generation: number): Promise<boolean> {
    for (const binding of device.bindings) {
      if (!binding.writes || generation !== this.#generation) continue
      // A bidirectional binding takes the device's value first; it writes only what changes after.
      if (binding.def.direction === 'bidirectional' && binding.synced === undefined) continue
      const value = this.#accessor.read(binding.attribute)
      const key = valueKey(value)
      if (key === binding.synced) continue
      const words = this.#encode(binding, value)
      if (words === null) {
        binding.synced = key
        continue
      }
      const answer = await this.#request(binding, writeRequest(binding, words), generation)
      if (answer === null) return false
      binding.synced = key
      if ('exception' in answer) this.#fail(`${binding.label}: the device refused the write with exception ${answer.exception}`)
      else this.#counters.writes++
    }
    return true
  }

  /** Reads one binding into its attribute; false when the device did not answer. */
  async #read(binding: Binding, generation: number): Promise<boolean> {
    const fc = ({ c_o: 1, d_i: 2, h_r: 3, i_r: 4 } as const)[binding.def.area]
    const answer = await this.#request(binding, { fc, address: binding.first, quantity: binding.width }, generation)
    if (answer === null) return false
    if ('exception' in answer) {
      this.#fail(`${binding.label}: the device answered exception ${answer.exception}`)
      return true
    }
    let value: unknown
    try {
      value = this.#decode(binding, answer)
    } catch (error) {
      this.#fail(`${binding.label}: ${(error as Error).message}`)
      return true
    }
    const key = valueKey(value)
    if (key === binding.synced) return true
    try {
      await this.#accessor.write(binding.attribute, value)
      binding.synced = key
    } catch (error) {
      this.#fail(`${binding.label}: cannot set attribute '${binding.attribute}' to ${JSON.stringify(value)}: ${(error as Error).message}`)
    }
    return true
  }

  /** Sends a request with its retries; null when the device did not answer (or the pass was called off). */
  async #request(binding: Binding, request: ModbusRequest, generation: number): Promise<ModbusResponse | null> {
    const d = this.#definition
    for (let attempt = 0; attempt <= d.max_retries; attempt++) {
      if (generation !== this.#generation) return null
      if (attempt > 0 && d.retry_delay > 0) await sleep(d.retry_delay * 1000)
      if (generation !== this.#generation) return null
      this.#counters.requests++
      const started = performance.now()
      try {
        const answer = await binding.link.request(binding.unitId, request)
        this.#trace(binding, request, started, answer)
        return answer
      } catch (error) {
        if (generation !== this.#generation) return null
        this.#trace(binding, request, started, (error as Error).message)
        this.#fail(`${binding.label}: ${(error as Error).message}`)
      }
    }
    return null
  }

  /** Records one request and its answer (or why there was none) in the adapter's trace (docs/traces.md). */
  #trace(binding: Binding, request: ModbusRequest, started: number, answer: ModbusResponse | string): void {
    const trace = this.#traceRing
    if (!trace?.on) return
    const exchange: Exchange = {
      operation: request.fc <= 4 ? 'read' : 'write',
      direction: 'out',
      device: binding.link.address,
      unit: binding.unitId,
      function: request.fc,
      address: binding.first,
      count: binding.width,
      latency: (performance.now() - started) / 1000,
    }
    if (request.fc === 5 || request.fc === 6) exchange.values = [typeof request.value === 'boolean' ? (request.value ? 1 : 0) : request.value]
    else if (request.fc === 15) exchange.values = request.values.map((v) => (v ? 1 : 0))
    else if (request.fc === 16) exchange.values = Array.from({ length: request.quantity }, (_, i) => request.data.readUInt16BE(i * 2))
    if (typeof answer === 'string') exchange.error = answer
    else if ('exception' in answer) exchange.exception = answer.exception
    else if ('registers' in answer) exchange.values = answer.registers.slice(0, binding.width)
    else if ('bits' in answer) exchange.values = answer.bits.slice(0, binding.width).map((b) => (b ? 1 : 0))
    trace.record(exchange)
  }

  #fail(message: string): void {
    this.#counters.errors++
    this.#lastError = message
    this.#warning.warn({ error: message }, `modbus master: ${message}`)
  }

  #decode(binding: Binding, answer: ModbusResponse): unknown {
    if ('bits' in answer) {
      const bits = answer.bits.slice(0, binding.width)
      if (bits.length < binding.width) throw new ValidationError(`the device answered ${bits.length} bits for ${binding.width}`)
      if (binding.def.codec === 'raw') return bits.map((b) => (b ? 1 : 0))
      const on = bits[0]!
      return this.#asAttribute(binding, binding.def.codec === 'bool' ? on : on ? 1 : 0)
    }
    if (!('registers' in answer)) throw new ValidationError(`unexpected answer to a read (function ${answer.fc})`)
    const words = answer.registers.slice(0, binding.width)
    if (words.length < binding.width) throw new ValidationError(`the device answered ${words.length} registers for ${binding.width}`)
    if (binding.spec === null) return words
    return this.#asAttribute(binding, decodeWords(words, binding.spec))
  }

  /** A bit or number in the attribute's own type: a bool attribute takes true/false, a number attribute 1/0. */
  #asAttribute(binding: Binding, value: unknown): unknown {
    const type = this.#accessor.describe?.(binding.attribute)?.type
    if (type === 'bool' && typeof value === 'number') return value !== 0
    if ((type === 'int' || type === 'float') && typeof value === 'boolean') return value ? 1 : 0
    return value
  }

  /** The words (or bits as 0/1) of `value`, or null (counted) when the binding cannot carry it. */
  #encode(binding: Binding, value: unknown): number[] | null {
    const problem = bindingValueProblem(binding, value)
    if (problem !== null) {
      this.#fail(`${binding.label}: cannot write ${JSON.stringify(value)}: ${problem}`)
      return null
    }
    if (binding.spec !== null) return encodeWords(value, binding.spec)
    if (Array.isArray(value)) return value.map((v) => (typeof v === 'boolean' ? (v ? 1 : 0) : (v as number)))
    return [value === true || (typeof value === 'number' && value !== 0) ? 1 : 0]
  }

  /** After a step of the instance: writes the outbound values that changed, without waiting for the next poll. */
  afterStep(): void {
    if (this.#life.state !== 'RUNNING') return
    if (!this.#bindings.some((b) => b.writes && b.synced !== undefined && valueKey(this.#accessor.read(b.attribute)) !== b.synced)) return
    if (this.#busy) {
      this.#writeAgain = true
      return
    }
    const generation = this.#generation
    void this.#exclusive(() => Promise.all(this.#devices.map((d) => this.#writeDevice(d, generation))).then(() => undefined))
  }

  stats(): AdapterStats {
    const c = this.#counters
    return {
      state: this.state,
      requests: c.requests,
      errors: c.errors,
      polls: c.polls,
      writes: c.writes,
      consecutive_failures: Math.max(0, ...this.#devices.map((d) => d.failures)),
      connected: this.state === 'CONNECTED',
      last_error: this.#lastError,
    }
  }

  settings(): Record<string, unknown> {
    const d = this.#definition
    const c = this.#counters
    return {
      host: d.host,
      port: d.port,
      slave_id: d.slave_id ?? d.unit_id ?? 1,
      transport: d.transport,
      ...(d.transport === 'serial' && serialSettingsOf(d)),
      poll_interval: d.poll_interval,
      timeout: d.timeout,
      max_retries: d.max_retries,
      retry_delay: d.retry_delay,
      max_failures: d.max_failures,
      bindings: structuredClone(d.bindings),
      devices: this.#devices.map((device) => ({ address: device.link.address, consecutive_failures: device.failures })),
      connected: this.state === 'CONNECTED',
      consecutive_failures: Math.max(0, ...this.#devices.map((device) => device.failures)),
      polls: c.polls,
      writes: c.writes,
      requests: c.requests,
      errors: c.errors,
      // The reference product's names of the two counters.
      request_count: c.requests,
      error_count: c.errors,
      last_error: this.#lastError,
      last_poll: this.#lastPoll,
    }
  }

  refusal(name: string, value: unknown): ValidationError | null {
    switch (name) {
      case 'poll_interval':
        return secondsProblem(name, value, 0.01, 3600)
      case 'timeout':
        return secondsProblem(name, value, 0.01, 600)
      case 'retry_delay':
        return secondsProblem(name, value, 0, 600)
      case 'max_retries':
        return wholeProblem(name, value, 0, 100)
      case 'max_failures':
        return wholeProblem(name, value, 1, 1_000_000)
      default:
        return readOnly(this, name)
    }
  }

  set(name: string, value: unknown): void {
    const refusal = this.refusal(name, value)
    if (refusal) throw refusal
    const d = this.#definition as Record<string, unknown>
    d[name] = value
    if (name === 'timeout') for (const device of this.#devices) device.link.timeoutMs = (value as number) * 1000
  }

  valueProblem(attr: string, value: unknown): string | null {
    for (const binding of this.#bindings) {
      if (binding.attribute !== attr || !binding.writes) continue
      const problem = bindingValueProblem(binding, value)
      if (problem !== null) return `${binding.label}: ${problem}`
    }
    return null
  }
}

/** Where a binding's value sits and how its registers encode it (null spec: raw words or bits). */
function bindingLayout(def: ModbusMasterDefinition['bindings'][number]): {
  first: number
  width: number
  spec: ReturnType<typeof encodingSpec> | null
} {
  const [first] = addressRange(def.address)
  const width = bindingWidth(def)
  const bits = def.area === 'c_o' || def.area === 'd_i'
  const spec =
    def.codec === 'raw' || bits
      ? null
      : encodingSpec({ address: [first, first + width - 1], type: def.codec, byte_order: def.byte_order, word_order: def.word_order, scale: def.scale })
  return { first, width, spec }
}

/**
 * Why an outbound binding cannot write `value`, or null.
 *
 * @example
 * checkBoundValue(definition, 'speed', 70000) // "binding 0 (h_r 12762 ...): 70000 is out of range for uint_16 (0..65535)"
 */
export function checkBoundValue(definition: ModbusMasterDefinition, attr: string, value: unknown): string | null {
  for (const [index, def] of definition.bindings.entries()) {
    if (def.attribute !== attr || def.direction === 'inbound') continue
    const { first, width, spec } = bindingLayout(def)
    const problem = bindingValueProblem({ def, width, spec }, value)
    if (problem !== null) return `binding ${def.name ?? index} (${def.area} ${first}): ${problem}`
  }
  return null
}

function bindingValueProblem(binding: Pick<Binding, 'def' | 'width' | 'spec'>, value: unknown): string | null {
  if (binding.def.codec === 'raw') {
    const ok =
      Array.isArray(value) && value.length === binding.width && value.every((v) => typeof v === 'boolean' || (Number.isInteger(v) && v >= 0 && v <= 0xffff))
    return ok ? null : `codec raw takes a list of ${binding.width} register values (0..65535)`
  }
  if (binding.spec === null) {
    return typeof value === 'boolean' || typeof value === 'number' ? null : `a bit takes true/false or a number, got ${JSON.stringify(value)}`
  }
  return checkValue(value, binding.spec)
}

function writeRequest(binding: Binding, words: number[]): ModbusRequest {
  const address = binding.first
  if (binding.def.area === 'c_o') {
    return words.length === 1 ? { fc: 5, address, value: words[0] !== 0 } : { fc: 15, address, quantity: words.length, values: words.map((w) => w !== 0) }
  }
  if (words.length === 1) return { fc: 6, address, value: words[0]! }
  const data = Buffer.allocUnsafe(words.length * 2)
  words.forEach((w, i) => data.writeUInt16BE(w & 0xffff, i * 2))
  return { fc: 16, address, quantity: words.length, data }
}

function wholeProblem(name: string, value: unknown, min: number, max: number): ValidationError | null {
  if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return null
  return new ValidationError(`'${name}' must be a whole number from ${min} to ${max}`, [
    { path: name, message: `expected a whole number from ${min} to ${max}` },
  ])
}

/** A comparable form of a value (numbers and lists alike). */
function valueKey(value: unknown): string {
  return JSON.stringify(value) ?? 'undefined'
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
