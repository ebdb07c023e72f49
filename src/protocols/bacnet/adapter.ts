import {
  AbortReason,
  ConfirmedServiceChoice,
  ErrorClass,
  ErrorCode,
  NpduControlPriority,
  ObjectType,
  PduType,
  PropertyIdentifier,
  RejectReason,
} from '@bacnet-js/client'
import { encodeAbort } from '@bacnet-js/client/dist/lib/apdu.js'
import { encode as encodeNpdu } from '@bacnet-js/client/dist/lib/npdu.js'
import type { Logger } from 'pino'
import { ConflictError, ValidationError } from '../../errors.js'
import { bacnetFaultsObjectSchema, type BacnetDefinition, type BacnetFaults } from '../../definition/bacnet-schema.js'
import { parseFaultsValue } from '../../definition/modbus-faults-schema.js'
import { AdapterLifecycle, listenProblem, readOnly, ThrottledWarning } from '../adapter-kit.js'
import type { AdapterState, AdapterStats, AttributeAccessor, ProtocolAdapter } from '../adapter.js'
import type { AdapterTrace, Exchange } from '../trace.js'
import type { BacnetDevices } from './devices.js'
import { ARRAY_ALL, BacnetDevice, BacnetError, type BACNetAppData } from './objects.js'
import { BACnetClient } from './library.js'
import { DeviceTransport } from './transport.js'

/**
 * The `bacnet` adapter of one instance: a BACnet/IP device on its own UDP port, built on
 * @bacnet-js/client, which decodes every request and encodes every answer; this adapter decides
 * the answers. It answers Who-Is (with I-Am to the asker), ReadProperty, ReadPropertyMultiple,
 * WriteProperty (through the priority array of a commandable object) and SubscribeCOV, and after
 * each step of its instance notifies each subscriber whose object's presentValue changed. The
 * `faults` setting makes it answer BACnet Error, Reject or Abort, or nothing. Detached, it drops
 * every datagram.
 *
 * @example
 * const adapter = new BacnetAdapter({ definition, accessor, logger, devices, name: 'panel.bacnet', instance: 'panel' })
 * await adapter.start()
 * adapter.stats() // { state: 'RUNNING', port: 47808, requests: 0, errors: 0, who_is: 0, ... }
 */

/** Options of an adapter. */
export interface BacnetAdapterOptions {
  definition: BacnetDefinition
  accessor: AttributeAccessor
  logger: Logger
  devices: BacnetDevices
  name?: string
  instance?: string
  /** The adapter's traffic trace (docs/traces.md): each request and its answer, and each COV notification sent. */
  trace?: AdapterTrace | undefined
}

/** What the adapter holds while started. */
interface Running {
  transport: DeviceTransport
  client: BACnetClient
  port: number
}

/** One COV subscription. */
interface Subscription {
  address: string
  processId: number
  objectId: { type: number; instance: number }
  confirmed: boolean
  /** Date.now() at which it ends, or null for a lifetime of 0 (indefinite). */
  expires: number | null
  lifetime: number
  /** The values last notified, as JSON. */
  last: string
  /** The presentValue last notified. */
  lastValue?: unknown
}

/** At most this many subscriptions per device; a SubscribeCOV beyond is refused (resources, no-space-to-add-list-element). */
const MAX_SUBSCRIPTIONS = 1024

type Service = 'readProperty' | 'readPropertyMultiple' | 'writeProperty' | 'subscribeCov' | 'whoIs'
type Receiver = { address?: string; forwardedFrom?: string | null }

/**
 * A request and its answer as the trace keeps it (docs/traces.md): made whole in one literal by
 * `#exchange` (one shape for every entry), then `value` filled in by the service's handler and
 * `error`, `latency` by the answer.
 */
interface BacnetExchange extends Exchange {
  direction: 'in' | 'out'
  /** The client, `address:port`. */
  client: string
  /** `analog-value,1`; the objects asked, for a ReadPropertyMultiple; null for a Who-Is. */
  object: string | string[] | null
  /** `present-value`, `priority-array[8]` (an array index); null when the request names none. */
  property: string | null
  /** What was read or written, as the client sees it (single values unwrapped). */
  value: unknown
  /** A WriteProperty's priority. */
  priority: number | undefined
}

/** The trace's operation of each service. */
const OPERATIONS: Record<Service, string> = {
  whoIs: 'who_is',
  readProperty: 'read',
  readPropertyMultiple: 'read_multiple',
  writeProperty: 'write',
  subscribeCov: 'subscribe_cov',
}

const P = PropertyIdentifier

/** See the module comment. */
export class BacnetAdapter implements ProtocolAdapter {
  readonly name: string
  readonly settable = ['faults'] as const
  readonly #definition: BacnetDefinition
  readonly #accessor: AttributeAccessor
  readonly #logger: Logger
  readonly #devices: BacnetDevices
  readonly #device: BacnetDevice
  readonly #life: AdapterLifecycle<Running>
  readonly #warning: ThrottledWarning
  readonly #trace: AdapterTrace | undefined
  #faults: BacnetFaults
  readonly #subscriptions = new Map<string, Subscription>()
  #counters = { who_is: 0, reads: 0, writes: 0, subscribes: 0, notifications: 0, error_replies: 0, fault_replies: 0, delayed: 0, dropped: 0 }
  #requests = 0

  constructor(options: BacnetAdapterOptions) {
    this.name = options.name ?? 'bacnet'
    this.#definition = structuredClone(options.definition)
    this.#accessor = options.accessor
    this.#logger = options.logger.child({ adapter: this.name })
    this.#devices = options.devices
    this.#life = new AdapterLifecycle(this.name)
    this.#warning = new ThrottledWarning(this.#logger)
    this.#trace = options.trace
    this.#device = new BacnetDevice(this.#definition, this.#accessor, options.instance ?? this.name.split('.')[0]!)
    this.#faults = parseFaultsValue(bacnetFaultsObjectSchema, this.#definition.faults ?? null, 'BACnet faults', 'faults')
  }

  get state(): AdapterState {
    return this.#life.state
  }

  /** Binds the device's UDP port; resolves once clients can reach it. ConflictError (409) when the port cannot be had. */
  start(): Promise<void> {
    return this.#life.start(async () => {
      const { host, port } = this.#definition
      const transport = new DeviceTransport({ host, port, silent: () => this.#life.detached })
      let bound: number
      try {
        bound = await transport.bind()
      } catch (error) {
        transport.close()
        const problem = listenProblem(error, host, port, { label: 'BACnet/IP (udp)', heldBy: this.#devices.holderOf(this.name, port) })
        throw new ConflictError(`Cannot open the BACnet device of adapter '${this.name}': ${problem.message}`, [problem])
      }
      const client = new BACnetClient({ transport, apduTimeout: 3000 })
      client.on('error', (error) => this.#warning.warn({ err: error.message }, 'BACnet socket error'))
      client.on('whoIs', (content) => this.#guard('whoIs', content, (traced) => this.#whoIs(client, content, traced)))
      client.on('readProperty', (content) => this.#guard('readProperty', content, (traced) => this.#readProperty(client, content, traced)))
      client.on('readPropertyMultiple', (content) =>
        this.#guard('readPropertyMultiple', content, (traced) => this.#readPropertyMultiple(client, content, traced)),
      )
      client.on('writeProperty', (content) => this.#guard('writeProperty', content, (traced) => this.#writeProperty(client, content, traced)))
      client.on('subscribeCov', (content) => this.#guard('subscribeCov', content, (traced) => this.#subscribeCov(client, content, traced)))
      this.#devices.hold(this.name, { host, port: bound, device: this.#device.instance })
      this.#logger.info({ host, port: bound, device: this.#device.instance, objects: this.#device.objectNames().length }, 'BACnet device listening')
      return { transport, client, port: bound }
    })
  }

  /** Closes the socket, forgets subscriptions and commanded priorities. Idempotent. */
  stop(): Promise<void> {
    return this.#life.stop(async (running) => {
      this.#devices.release(this.name)
      this.#subscriptions.clear()
      this.#device.relinquishAll()
      running.client.close()
      this.#logger.info('BACnet device closed')
    })
  }

  detach(): void {
    this.#life.detach()
  }

  attach(): void {
    this.#life.attach()
  }

  stats(): AdapterStats {
    const running = this.#life.resource
    return {
      state: this.state,
      requests: this.#requests,
      errors: this.#counters.error_replies + this.#counters.fault_replies,
      port: running?.port ?? this.#definition.port,
      device: this.#device.instance,
      // The reference product's names of its BACnet adapter's runtime properties.
      running: this.state === 'RUNNING',
      request_count: this.#requests,
      subscriptions: this.#subscriptions.size,
      ...this.#counters,
      dropped: running?.transport.dropped ?? 0,
    }
  }

  settings(): Record<string, unknown> {
    const d = this.#definition
    return {
      host: d.host,
      port: this.#life.resource?.port ?? d.port,
      device: d.device ?? null,
      timing: d.timing ?? null,
      objects: structuredClone(d.objects),
      ...(d.alarms ? { alarms: structuredClone(d.alarms), alarms_served: false } : {}),
      faults: structuredClone(this.#faults),
      commanded: this.#device.commanded(),
      subscriptions: [...this.#subscriptions.values()].map((s) => ({
        subscriber: s.address,
        process_id: s.processId,
        object: `${s.objectId.type},${s.objectId.instance}`,
        confirmed: s.confirmed,
        lifetime: s.lifetime,
      })),
      counters: { ...this.#counters },
      // The reference product's runtime properties of its BACnet adapter, for expressions that read them.
      running: this.state === 'RUNNING',
      request_count: this.#requests,
    }
  }

  set(name: string, value: unknown): void {
    if (name !== 'faults') throw readOnly(this, name)
    this.#faults = parseFaultsValue(bacnetFaultsObjectSchema, value, 'BACnet faults')
    this.#logger.info({ faults: this.#faults }, 'BACnet faults set')
  }

  refusal(name: string, value: unknown): ValidationError | null {
    if (name !== 'faults') return readOnly(this, name)
    try {
      parseFaultsValue(bacnetFaultsObjectSchema, value, 'BACnet faults')
      return null
    } catch (error) {
      if (error instanceof ValidationError) return error
      throw error
    }
  }

  valueProblem(attr: string, value: unknown): string | null {
    return checkBacnetValue(this.#definition, attr, value)
  }

  /** Notifies each subscriber whose object's values changed since it was last told; drops ended subscriptions. */
  afterStep(): void {
    const running = this.#life.resource
    if (running === null || this.#life.detached || this.#subscriptions.size === 0) return
    const now = Date.now()
    for (const [key, s] of this.#subscriptions) {
      if (s.expires !== null && now >= s.expires) {
        this.#subscriptions.delete(key)
        continue
      }
      this.#notify(running.client, s, false)
    }
  }

  /** Sends `s` its object's values when they changed (or always, for the first). */
  #notify(client: BACnetClient, s: Subscription, first: boolean): void {
    let values
    try {
      values = this.#device.covValues(s.objectId.type, s.objectId.instance)
    } catch {
      return
    }
    const text = JSON.stringify(values)
    if (!first && text === s.last) return
    // An analog object with a covIncrement notifies once its value moved that far from the last one told.
    const now = values[0]!.value[0]?.value
    const increment = this.#device.covIncrement(s.objectId.type, s.objectId.instance)
    if (!first && increment > 0 && typeof now === 'number' && typeof s.lastValue === 'number' && Math.abs(now - s.lastValue) < increment) return
    s.last = text
    s.lastValue = now
    const remaining = s.expires === null ? 0 : Math.max(0, Math.round((s.expires - Date.now()) / 1000))
    const receiver = { address: s.address }
    this.#counters.notifications++
    const list = values as Parameters<BACnetClient['unconfirmedCOVNotification']>[5]
    if (this.#trace?.on) {
      this.#trace.record({
        operation: 'cov_notification',
        direction: 'out',
        client: s.address,
        object: objectText(s.objectId.type, s.objectId.instance),
        property: 'present-value',
        value: plainValue(now),
        confirmed: s.confirmed,
      })
    }
    if (s.confirmed) {
      client.confirmedCOVNotification(receiver, s.objectId, s.processId, this.#device.instance, remaining, list).catch((error: Error) => {
        this.#warning.warn({ subscriber: s.address, err: error.message }, 'confirmed COV notification not acknowledged')
      })
    } else {
      client.unconfirmedCOVNotification(receiver, s.processId, this.#device.instance, s.objectId, remaining, list)
    }
  }

  /**
   * Counts a request and applies the faults in force before `answer`: no answer, or an Error,
   * Reject or Abort in place of the answer (the request is not carried out).
   */
  #guard(
    service: Service,
    content: { header?: { sender: Receiver; expectingReply?: boolean }; invokeId?: number; service?: number; payload?: unknown },
    answer: (traced: BacnetExchange | null) => void | Promise<void>,
  ): void {
    this.#requests++
    const sender = content.header?.sender
    if (!sender?.address) return
    const traced = this.#exchange(service, sender.address, content.payload)
    const objects = this.#objectsOf(service, content.payload)
    const applies = (scope: { services?: string[] | undefined; objects?: string[] | undefined } | true | undefined): boolean => {
      if (scope === undefined) return false
      if (scope === true) return true
      if (scope.services && !scope.services.includes(service)) return false
      if (scope.objects && !objects.some((o) => scope.objects!.includes(o))) return false
      return true
    }
    const f = this.#faults
    if (applies(f.no_response)) {
      this.#counters.fault_replies++
      this.#traced(traced, performance.now(), 'NO_ANSWER')
      return
    }
    const confirmed = service !== 'whoIs' && content.invokeId !== undefined
    const running = this.#life.resource
    const rd = f.response_delay
    const delay = rd === undefined ? 0 : typeof rd === 'number' || applies(rd) ? delaySeconds(rd) : 0
    if (delay > 0) {
      this.#counters.delayed++
      // The answer (a fault's included) leaves late; a stop meanwhile closes the socket and it is not sent.
      setTimeout(() => this.#reply(service, content, sender, confirmed, running, applies, answer, traced), delay * 1000).unref()
      return
    }
    this.#reply(service, content, sender, confirmed, running, applies, answer, traced)
  }

  /** Answers a request: the Error, Reject or Abort of a fault in force, else `answer`'s, else the Error it threw. */
  #reply(
    service: Service,
    content: { invokeId?: number; service?: number },
    sender: Receiver,
    confirmed: boolean,
    running: Running | null,
    applies: (scope: { services?: string[] | undefined; objects?: string[] | undefined } | true | undefined) => boolean,
    answer: (traced: BacnetExchange | null) => void | Promise<void>,
    traced: BacnetExchange | null,
  ): void {
    if (this.#life.resource !== running) return
    const started = performance.now()
    const f = this.#faults
    if (confirmed && running !== null) {
      const invokeId = content.invokeId!
      const serviceChoice = content.service ?? 0
      if (applies(f.error)) {
        this.#counters.fault_replies++
        running.client.errorResponse(sender as never, serviceChoice, invokeId, f.error!.class, f.error!.code)
        this.#traced(traced, started, errorText(f.error!.class, f.error!.code))
        return
      }
      if (applies(f.reject)) {
        this.#counters.fault_replies++
        this.#sendAbortOrReject(running.client, sender, PduType.REJECT, invokeId, f.reject!.reason)
        this.#traced(traced, started, `reject/${enumText(RejectReason, f.reject!.reason)}`)
        return
      }
      if (applies(f.abort)) {
        this.#counters.fault_replies++
        // The server bit (1) says the device, not the client, aborted.
        this.#sendAbortOrReject(running.client, sender, PduType.ABORT | 1, invokeId, f.abort!.reason)
        this.#traced(traced, started, `abort/${enumText(AbortReason, f.abort!.reason)}`)
        return
      }
    }
    Promise.resolve(traced)
      .then(answer)
      .then(
        // Recorded once the answer is made, in the turn that took a write (its attributes join the entry).
        () => this.#traced(traced, started, undefined),
        (error: unknown) => {
          if (running === null || !confirmed) return
          if (error instanceof BacnetError) {
            this.#counters.error_replies++
            running.client.errorResponse(sender as never, content.service ?? 0, content.invokeId!, error.errorClass, error.errorCode)
            this.#traced(traced, started, errorText(error.errorClass, error.errorCode))
            return
          }
          // An answer larger than one APDU: this device does not segment.
          this.#counters.error_replies++
          this.#warning.warn({ service, err: (error as Error).message }, 'BACnet request failed')
          const tooLong = error instanceof RangeError
          const reason = tooLong ? AbortReason.SEGMENTATION_NOT_SUPPORTED : AbortReason.OTHER
          this.#sendAbortOrReject(running.client, sender, PduType.ABORT | 1, content.invokeId!, reason)
          this.#traced(traced, started, `abort/${enumText(AbortReason, reason)}`)
        },
      )
  }

  /**
   * The trace's description of a request (see BacnetExchange), or null when nothing is kept: a
   * write is described even then, as its `protocol.write` event carries the description.
   */
  #exchange(service: Service, client: string, payload: unknown): BacnetExchange | null {
    const trace = this.#trace
    if (trace === undefined || (!trace.on && service !== 'writeProperty')) return null
    type Id = { type: number; instance: number }
    const p = (payload ?? {}) as {
      objectId?: Id
      property?: { id: number; index: number }
      value?: { property: { id: number; index: number }; value: BACNetAppData[]; priority: number }
      properties?: Array<{ objectId: Id }>
      monitoredObjectId?: Id
    }
    const id = p.objectId ?? p.monitoredObjectId
    const wanted = p.property ?? p.value?.property
    return {
      operation: OPERATIONS[service],
      direction: 'in',
      client,
      object:
        service === 'readPropertyMultiple'
          ? (p.properties ?? []).map((spec) => objectText(spec.objectId.type, spec.objectId.instance))
          : id
            ? objectText(id.type, id.instance)
            : null,
      property: service === 'subscribeCov' ? 'present-value' : wanted ? propertyText(wanted.id, wanted.index) : null,
      value: p.value ? appValues(p.value.value) : undefined,
      priority: p.value?.priority,
      error: undefined,
      latency: 0,
    }
  }

  /** Records a request and its answer (`error`: the Error, Reject or Abort answered, or `NO_ANSWER`). */
  #traced(traced: BacnetExchange | null, started: number, error: string | undefined): void {
    if (traced === null) return
    traced.error = error
    traced.latency = (performance.now() - started) / 1000
    this.#trace!.record(traced)
  }

  /** `type,instance` of the objects a request names, for faults scoped to objects. */
  #objectsOf(service: Service, payload: unknown): string[] {
    const name = (id: { type: number; instance: number } | undefined) => (id ? [`${typeName(id.type)},${id.instance}`] : [])
    type Id = { type: number; instance: number }
    const p = payload as { objectId?: Id; monitoredObjectId?: Id; properties?: Array<{ objectId: Id }> } | undefined
    if (!p) return []
    if (service === 'readProperty' || service === 'writeProperty') return name(p.objectId)
    if (service === 'subscribeCov') return name(p.monitoredObjectId)
    if (service === 'readPropertyMultiple') return (p.properties ?? []).flatMap((spec) => name(spec.objectId))
    return []
  }

  /** A Reject or Abort PDU, encoded by the library's APDU encoder (its client has no method for them). */
  #sendAbortOrReject(client: BACnetClient, receiver: Receiver, type: number, invokeId: number, reason: number): void {
    const buffer = { buffer: Buffer.alloc(1482), offset: 4 }
    encodeNpdu(buffer, NpduControlPriority.NORMAL_MESSAGE, receiver as never)
    encodeAbort(buffer, type, invokeId, reason)
    client.sendBvlc(receiver as never, buffer)
  }

  #whoIs(client: BACnetClient, content: { header?: { sender: Receiver }; payload?: unknown }, traced: BacnetExchange | null): void {
    this.#counters.who_is++
    const { lowLimit, highLimit } = (content.payload ?? {}) as { lowLimit?: number; highLimit?: number }
    const id = this.#device.instance
    if (lowLimit !== undefined && highLimit !== undefined && (id < lowLimit || id > highLimit)) return
    // The trace's value of a Who-Is is the device instance its I-Am told (none: not asked for this device).
    if (traced !== null) traced.value = id
    // Answered to the asker: a broadcast from a device bound to one address may not reach it.
    client.iAmResponse(content.header!.sender as never, id, 3, this.#device.vendorId)
  }

  #readProperty(client: BACnetClient, content: { header?: { sender: Receiver }; invokeId?: number; payload?: unknown }, traced: BacnetExchange | null): void {
    this.#counters.reads++
    const { objectId, property } = content.payload as { objectId: { type: number; instance: number }; property: { id: number; index: number } }
    const instance = this.#deviceInstance(objectId)
    const values = this.#device.read(objectId.type, instance, property.id, property.index)
    if (traced !== null) traced.value = appValues(values)
    client.readPropertyResponse(content.header!.sender as never, content.invokeId!, { type: objectId.type, instance }, property as never, values as never)
  }

  #readPropertyMultiple(
    client: BACnetClient,
    content: { header?: { sender: Receiver }; invokeId?: number; payload?: unknown },
    traced: BacnetExchange | null,
  ): void {
    this.#counters.reads++
    const { properties } = content.payload as {
      properties: Array<{ objectId: { type: number; instance: number }; properties: Array<{ id: number; index: number }> }>
    }
    const results = properties.map((spec) => {
      const instance = this.#deviceInstance(spec.objectId)
      const objectId = { type: spec.objectId.type, instance }
      const wanted = spec.properties.flatMap((p) => {
        if (p.id !== P.ALL && p.id !== P.REQUIRED && p.id !== P.OPTIONAL) return [p]
        if (!this.#device.has(objectId.type, instance)) return [{ id: P.OBJECT_IDENTIFIER, index: ARRAY_ALL }]
        return [
          P.OBJECT_IDENTIFIER,
          P.OBJECT_NAME,
          P.OBJECT_TYPE,
          ...this.#device.propertyIds(objectId.type, instance).filter((id) => id !== P.OBJECT_IDENTIFIER && id !== P.OBJECT_NAME && id !== P.OBJECT_TYPE),
        ].map((id) => ({ id, index: ARRAY_ALL }))
      })
      return {
        objectId,
        values: wanted.map((property) => {
          try {
            return { property, value: this.#device.read(objectId.type, instance, property.id, property.index) }
          } catch (error) {
            if (!(error instanceof BacnetError)) throw error
            return { property, value: [{ value: { type: 'BacnetError', errorClass: error.errorClass, errorCode: error.errorCode } }] }
          }
        }),
      }
    })
    client.readPropertyMultipleResponse(content.header!.sender as never, content.invokeId!, results as never)
    // The trace's value: each object's properties and what they read (an error in place of a value the object lacks).
    if (traced !== null)
      traced.value = Object.fromEntries(
        results.map((r) => [
          objectText(r.objectId.type, r.objectId.instance),
          Object.fromEntries(r.values.map((v) => [propertyText(v.property.id, v.property.index), appValues(v.value as BACNetAppData[])])),
        ]),
      )
  }

  async #writeProperty(
    client: BACnetClient,
    content: { header?: { sender: Receiver }; invokeId?: number; payload?: unknown },
    _traced: BacnetExchange | null,
  ): Promise<void> {
    this.#counters.writes++
    const { objectId, value } = content.payload as {
      objectId: { type: number; instance: number }
      value: { property: { id: number; index: number }; value: BACNetAppData[]; priority: number }
    }
    const instance = this.#deviceInstance(objectId)
    await this.#device.write(objectId.type, instance, value.property.id, value.property.index, value.value, value.priority)
    client.simpleAckResponse(content.header!.sender as never, ConfirmedServiceChoice.WRITE_PROPERTY, content.invokeId!)
  }

  #subscribeCov(client: BACnetClient, content: { header?: { sender: Receiver }; invokeId?: number; payload?: unknown }, traced: BacnetExchange | null): void {
    this.#counters.subscribes++
    const p = content.payload as {
      subscriberProcessId: number
      monitoredObjectId: { type: number; instance: number }
      cancellationRequest?: boolean
      issueConfirmedNotifications?: boolean
      lifetime?: number
    }
    if (traced !== null)
      traced.value = p.cancellationRequest
        ? { process_id: p.subscriberProcessId, cancel: true }
        : { process_id: p.subscriberProcessId, confirmed: p.issueConfirmedNotifications === true, lifetime: p.lifetime ?? 0 }
    const address = content.header!.sender.address!
    const key = `${address}|${p.subscriberProcessId}|${p.monitoredObjectId.type}:${p.monitoredObjectId.instance}`
    if (!this.#device.has(p.monitoredObjectId.type, p.monitoredObjectId.instance))
      throw new BacnetError(ErrorClass.OBJECT, ErrorCode.UNKNOWN_OBJECT, 'no such object')
    if (!this.#device.covObject(p.monitoredObjectId.type, p.monitoredObjectId.instance))
      throw new BacnetError(ErrorClass.OBJECT, ErrorCode.OPTIONAL_FUNCTIONALITY_NOT_SUPPORTED, 'the Device object has no COV')
    if (p.cancellationRequest) {
      this.#subscriptions.delete(key)
      client.simpleAckResponse(content.header!.sender as never, ConfirmedServiceChoice.SUBSCRIBE_COV, content.invokeId!)
      return
    }
    if (!this.#subscriptions.has(key) && this.#subscriptions.size >= MAX_SUBSCRIPTIONS) {
      throw new BacnetError(ErrorClass.RESOURCES, ErrorCode.NO_SPACE_TO_ADD_LIST_ELEMENT, 'too many COV subscriptions')
    }
    const lifetime = p.lifetime ?? 0
    const s: Subscription = {
      address,
      processId: p.subscriberProcessId,
      objectId: p.monitoredObjectId,
      confirmed: p.issueConfirmedNotifications === true,
      expires: lifetime > 0 ? Date.now() + lifetime * 1000 : null,
      lifetime,
      last: '',
    }
    this.#subscriptions.set(key, s)
    client.simpleAckResponse(content.header!.sender as never, ConfirmedServiceChoice.SUBSCRIBE_COV, content.invokeId!)
    // A new subscriber is told the current values at once (BACnet's initial notification).
    this.#notify(client, s, true)
  }

  /** The device's own instance for the wildcard 4194303. */
  #deviceInstance(id: { type: number; instance: number }): number {
    return id.type === ObjectType.DEVICE && id.instance === 4194303 ? this.#device.instance : id.instance
  }
}

/** The seconds of a `response_delay` fault: its own, plus a random part of its jitter. */
function delaySeconds(delay: number | { seconds: number; jitter: number; services?: string[] | undefined; objects?: string[] | undefined }): number {
  if (typeof delay === 'number') return delay
  return delay.seconds + Math.random() * delay.jitter
}

/** An enum member's name as BACnet's standard writes it (`UNKNOWN_OBJECT` as `unknown-object`), or the number. */
function enumText(names: object, value: number): string {
  const name = (names as Record<number, string | undefined>)[value]
  return name === undefined ? String(value) : name.toLowerCase().replace(/_/g, '-')
}

/** An object as the trace names it: `analog-value,1`. */
function objectText(type: number, instance: number): string {
  return `${enumText(ObjectType, type)},${instance}`
}

/** A property as the trace names it: `present-value`, or `priority-array[8]` for one element of an array. */
function propertyText(id: number, index: number | undefined): string {
  const name = enumText(PropertyIdentifier, id)
  return index === undefined || index === ARRAY_ALL ? name : `${name}[${index}]`
}

/** An Error's class and code as the trace shows them: `object/unknown-object`. */
function errorText(errorClass: number, errorCode: number): string {
  return `${enumText(ErrorClass, errorClass)}/${enumText(ErrorCode, errorCode)}`
}

/** Application values as the client sees them: one value unwrapped, object identifiers as `type,instance`, an error as `{error}`. */
function appValues(values: BACNetAppData[]): unknown {
  if (values.length === 1) return plainValue(values[0]!.value)
  return values.map((v) => plainValue(v.value))
}

function plainValue(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value
  const v = value as { type?: unknown; instance?: unknown; errorClass?: number; errorCode?: number }
  if (v.type === 'BacnetError' && v.errorClass !== undefined && v.errorCode !== undefined) return { error: errorText(v.errorClass, v.errorCode) }
  if (typeof v.type === 'number' && typeof v.instance === 'number' && Object.keys(v).length === 2) return objectText(v.type, v.instance)
  return value
}

/** The name of an object type number (`analogInput`), for faults scoped to objects. */
function typeName(type: number): string {
  const upper = (ObjectType as unknown as Record<number, string>)[type] ?? String(type)
  return upper.toLowerCase().replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())
}

/**
 * Why `value` cannot be served for `attr` under `definition`, or null: an attribute bound to a
 * numeric object (analog, binary, multi-state, integer) must be a number or a boolean.
 *
 * @example
 * checkBacnetValue(definition, 'siren', 'loud') // "attribute 'siren' is served by BACnet object 'siren_output' (binaryOutput): it must be a number or a boolean"
 */
export function checkBacnetValue(definition: BacnetDefinition, attr: string, value: unknown): string | null {
  for (const [name, o] of Object.entries(definition.objects)) {
    if (o.properties.presentValue.read !== attr || o.type === 'characterstringValue') continue
    if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') continue
    return `attribute '${attr}' is served by BACnet object '${name}' (${o.type}): it must be a number or a boolean`
  }
  return null
}
