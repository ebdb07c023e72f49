import { ApplicationTag, EngineeringUnits, ErrorClass, ErrorCode, ObjectType, PropertyIdentifier } from '@bacnet-js/client'
import type { BacnetDefinition, BacnetObject, BacnetObjectType } from '../../definition/bacnet-schema.js'
import type { AttributeAccessor } from '../adapter.js'
import { BACnetClient } from './library.js'

/**
 * The objects of one BACnet device (its Device object and the model's objects) and what their
 * properties read: values of the bound attributes read at the moment of each request, the
 * model's constant properties, and the required properties every object of its type has. Writes
 * of presentValue go to the bound attribute, through a priority array where the object is
 * commandable (outputs, and value objects given a `priority`).
 *
 * @example
 * const device = new BacnetDevice(definition, accessor, 'boiler')
 * device.read({ type: ObjectType.ANALOG_INPUT, instance: 1 }, PropertyIdentifier.PRESENT_VALUE, ASN1_ARRAY_ALL) // [{ type: ApplicationTag.REAL, value: 21.5 }]
 */

/** A value as the library's encoder takes it (its own type is keyed by the tag, which these tables pick at run time). */
export interface BACNetAppData {
  type: number
  value: unknown
}

/** The index that asks for a whole array. */
export const ARRAY_ALL = 0xffffffff

/** A BACnet Error for a request (class and code), thrown by reads and writes. */
export class BacnetError extends Error {
  constructor(
    readonly errorClass: number,
    readonly errorCode: number,
    message: string,
  ) {
    super(message)
  }
}

/** `analogInput` -> ANALOG_INPUT, `presentValue` -> PRESENT_VALUE. */
function upperSnake(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()
}

/** The ObjectType number of a type name. @example objectTypeNumber('binaryOutput') // 4 */
export function objectTypeNumber(type: BacnetObjectType): number {
  return (ObjectType as unknown as Record<string, number>)[upperSnake(type)]!
}

/** The PropertyIdentifier of a camelCase property name, or undefined. @example propertyNumber('relinquishDefault') // 104 */
export function propertyNumber(name: string): number | undefined {
  return (PropertyIdentifier as unknown as Record<string, number>)[upperSnake(name)]
}

/** The EngineeringUnits number of `degreesCelsius`, `percent`, ... (or a number as is). */
function unitsNumber(units: unknown): number | undefined {
  if (typeof units === 'number') return units
  if (typeof units !== 'string') return undefined
  return (EngineeringUnits as unknown as Record<string, number>)[upperSnake(units)]
}

const P = PropertyIdentifier
const COMMANDABLE_TYPES: ReadonlySet<BacnetObjectType> = new Set(['analogOutput', 'binaryOutput', 'multiStateOutput'])

/** How an object type carries its presentValue. */
function valueTag(type: BacnetObjectType): number {
  if (type.startsWith('analog')) return ApplicationTag.REAL
  if (type.startsWith('binary')) return ApplicationTag.ENUMERATED
  if (type === 'integerValue') return ApplicationTag.SIGNED_INTEGER
  if (type === 'characterstringValue') return ApplicationTag.CHARACTER_STRING
  return ApplicationTag.UNSIGNED_INTEGER
}

/** An attribute's value as the object type carries it. */
export function toBacnet(type: BacnetObjectType, value: unknown): BACNetAppData {
  const tag = valueTag(type)
  if (tag === ApplicationTag.CHARACTER_STRING) return { type: tag, value: typeof value === 'string' ? value : JSON.stringify(value) }
  const n = typeof value === 'boolean' ? (value ? 1 : 0) : Number(value)
  const finite = Number.isFinite(n) ? n : 0
  if (tag === ApplicationTag.REAL) return { type: tag, value: finite }
  if (tag === ApplicationTag.ENUMERATED) return { type: tag, value: finite !== 0 ? 1 : 0 }
  if (tag === ApplicationTag.UNSIGNED_INTEGER) return { type: tag, value: Math.max(0, Math.round(finite)) }
  return { type: tag, value: Math.round(finite) }
}

/** A written value as the attribute of type `attrType` takes it, or a BacnetError. */
function fromBacnet(type: BacnetObjectType, data: BACNetAppData, attrType: string | undefined): unknown {
  const expected = valueTag(type)
  const numeric: number[] = [
    ApplicationTag.REAL,
    ApplicationTag.DOUBLE,
    ApplicationTag.UNSIGNED_INTEGER,
    ApplicationTag.SIGNED_INTEGER,
    ApplicationTag.ENUMERATED,
  ]
  if (expected === ApplicationTag.CHARACTER_STRING) {
    if (data.type !== ApplicationTag.CHARACTER_STRING) throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.INVALID_DATA_TYPE, 'a character string is expected')
    return String(data.value)
  }
  if (!numeric.includes(data.type) && data.type !== ApplicationTag.BOOLEAN) {
    throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.INVALID_DATA_TYPE, `application tag ${data.type} does not fit a ${type}`)
  }
  let n = typeof data.value === 'boolean' ? (data.value ? 1 : 0) : Number(data.value)
  if (!Number.isFinite(n)) throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.VALUE_OUT_OF_RANGE, 'not a finite number')
  if (expected === ApplicationTag.ENUMERATED) {
    if (n !== 0 && n !== 1) throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.VALUE_OUT_OF_RANGE, 'a binary value is 0 (inactive) or 1 (active)')
  } else if (expected !== ApplicationTag.REAL) {
    if (!Number.isInteger(n)) throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.INVALID_DATA_TYPE, `a ${type} takes whole numbers`)
    if (expected === ApplicationTag.UNSIGNED_INTEGER && n < 0) throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.VALUE_OUT_OF_RANGE, 'must not be negative')
  }
  if (attrType === 'bool') return n !== 0
  if (attrType === 'int') {
    if (!Number.isInteger(n)) n = Math.round(n)
    return n
  }
  if (attrType === 'str') return String(n)
  return n
}

/** A constant of the model as BACnet data: a list becomes an array. */
function constant(property: number, value: unknown, pvTag: number): BACNetAppData[] {
  const one = (v: unknown): BACNetAppData => {
    if (typeof v === 'string') return { type: ApplicationTag.CHARACTER_STRING, value: v }
    if (typeof v === 'boolean') return { type: ApplicationTag.BOOLEAN, value: v }
    const n = Number(v)
    if (property === P.COV_INCREMENT) return { type: ApplicationTag.REAL, value: n }
    if (property === P.RELINQUISH_DEFAULT) return pvTag === ApplicationTag.REAL ? { type: pvTag, value: n } : { type: pvTag, value: Math.round(n) }
    if (property === P.UNITS || property === P.POLARITY || property === P.RELIABILITY || property === P.EVENT_STATE) {
      return { type: ApplicationTag.ENUMERATED, value: n }
    }
    if (Number.isInteger(n) && n >= 0) return { type: ApplicationTag.UNSIGNED_INTEGER, value: n }
    return { type: ApplicationTag.REAL, value: n }
  }
  return Array.isArray(value) ? value.map(one) : [one(value)]
}

/** One served object. */
interface Served {
  name: string
  definition: BacnetObject
  typeNumber: number
  /** The 16 slots of a commandable object (null: relinquished), or null. */
  priorities: Array<BACNetAppData | null> | null
  relinquishDefault: BACNetAppData | null
  /** Constant properties by number, as the model wrote them. */
  constants: Map<number, BACNETConstant>
}
type BACNETConstant = BACNetAppData[]

/** The properties of an object (besides objectIdentifier, objectName, objectType, propertyList). */
const STATUS_FLAGS: BACNetAppData = { type: ApplicationTag.BIT_STRING, value: { bitsUsed: 4, value: [0] } }

/** See the module comment. */
export class BacnetDevice {
  readonly instance: number
  readonly vendorId: number
  readonly #definition: BacnetDefinition
  readonly #accessor: AttributeAccessor
  readonly #name: string
  readonly #objects = new Map<string, Served>()

  constructor(definition: BacnetDefinition, accessor: AttributeAccessor, instanceName: string) {
    this.#definition = definition
    this.#accessor = accessor
    this.instance = definition.device?.instance_id ?? 0
    this.vendorId = definition.device?.vendor_id ?? 999
    this.#name = definition.device?.name ?? instanceName
    for (const [name, o] of Object.entries(definition.objects)) {
      const typeNumber = objectTypeNumber(o.type)
      const tag = valueTag(o.type)
      const constants = new Map<number, BACNETConstant>()
      for (const [key, value] of Object.entries(o.properties)) {
        if (key === 'presentValue') continue
        const id = propertyNumber(key)
        if (id === undefined) continue
        if (id === P.UNITS) {
          const units = unitsNumber(value)
          if (units !== undefined) constants.set(id, [{ type: ApplicationTag.ENUMERATED, value: units }])
          continue
        }
        constants.set(id, constant(id, value, tag))
      }
      const commandable = COMMANDABLE_TYPES.has(o.type) || o.priority !== undefined
      const relinquish = constants.get(P.RELINQUISH_DEFAULT)?.[0] ?? (commandable ? toBacnet(o.type, 0) : null)
      this.#objects.set(`${typeNumber}:${o.instance}`, {
        name,
        definition: o,
        typeNumber,
        priorities: commandable ? Array<BACNetAppData | null>(16).fill(null) : null,
        relinquishDefault: relinquish,
        constants,
      })
    }
  }

  /** Names of the objects, with what each serves, for the adapter node. */
  objectNames(): string[] {
    return [...this.#objects.values()].map((o) => o.name)
  }

  /** Whether the object exists (the Device object included). */
  has(type: number, instance: number): boolean {
    return this.#isDevice(type, instance) || this.#objects.has(`${type}:${instance}`)
  }

  #isDevice(type: number, instance: number): boolean {
    // 4194303 is the wildcard instance a client may use for "the device I am talking to".
    return type === ObjectType.DEVICE && (instance === this.instance || instance === 4194303)
  }

  #object(type: number, instance: number): Served {
    const served = this.#objects.get(`${type}:${instance}`)
    if (!served) throw new BacnetError(ErrorClass.OBJECT, ErrorCode.UNKNOWN_OBJECT, `no object ${type},${instance}`)
    return served
  }

  /** The property ids an object has, for propertyList and ReadPropertyMultiple's `all`. */
  propertyIds(type: number, instance: number): number[] {
    if (this.#isDevice(type, instance)) return [...this.#deviceProperties().keys()]
    return [...this.#objectProperties(this.#object(type, instance)).keys()]
  }

  /** The value of a property (its element at `index`, or all of it), or a BacnetError. */
  read(type: number, instance: number, property: number, index: number): BACNetAppData[] {
    const properties = this.#isDevice(type, instance) ? this.#deviceProperties() : this.#objectProperties(this.#object(type, instance))
    const get = properties.get(property)
    if (!get) throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.UNKNOWN_PROPERTY, `the object has no property ${property}`)
    const value = get()
    if (index === ARRAY_ALL) return value.values
    if (!value.array) throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.PROPERTY_IS_NOT_AN_ARRAY, `property ${property} is not an array`)
    if (index === 0) return [{ type: ApplicationTag.UNSIGNED_INTEGER, value: value.values.length }]
    const element = value.values[index - 1]
    if (element === undefined) throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.INVALID_ARRAY_INDEX, `index ${index} of ${value.values.length}`)
    return [element]
  }

  /**
   * The presentValue of an object and its status flags, for COV notifications. No index: the
   * library's COV encoder (3.3.2) writes the index exactly when it is the whole-array one, so a
   * whole value must come without it.
   */
  covValues(type: number, instance: number): Array<{ property: { id: number }; value: BACNetAppData[] }> {
    return [
      { property: { id: P.PRESENT_VALUE }, value: this.read(type, instance, P.PRESENT_VALUE, ARRAY_ALL) },
      { property: { id: P.STATUS_FLAGS }, value: [STATUS_FLAGS] },
    ]
  }

  /** An object's covIncrement (its constant property), or 0: every change is notified. */
  covIncrement(type: number, instance: number): number {
    const value = this.#objects.get(`${type}:${instance}`)?.constants.get(P.COV_INCREMENT)?.[0]?.value
    return typeof value === 'number' && value > 0 ? value : 0
  }

  /** Whether an object supports COV (its presentValue is bound). */
  covObject(type: number, instance: number): boolean {
    return this.#objects.has(`${type}:${instance}`)
  }

  /**
   * Writes a property: presentValue to its bound attribute (through the priority array of a
   * commandable object), relinquishDefault of a commandable one; anything else is write-access-denied.
   */
  async write(type: number, instance: number, property: number, index: number, values: BACNetAppData[], priority: number): Promise<void> {
    if (this.#isDevice(type, instance)) throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.WRITE_ACCESS_DENIED, 'the Device object is read-only')
    const o = this.#object(type, instance)
    if (property !== P.PRESENT_VALUE) {
      if (this.#objectProperties(o).has(property))
        throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.WRITE_ACCESS_DENIED, `property ${property} is read-only`)
      throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.UNKNOWN_PROPERTY, `the object has no property ${property}`)
    }
    if (index !== ARRAY_ALL) throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.PROPERTY_IS_NOT_AN_ARRAY, 'presentValue is not an array')
    const target = o.definition.properties.presentValue.write
    if (target === undefined) throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.WRITE_ACCESS_DENIED, `'${o.name}' has no write binding`)
    if (!this.#accessor.writable(target)) throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.WRITE_ACCESS_DENIED, `attribute '${target}' cannot be written`)
    const data = values[0]
    if (data === undefined || values.length !== 1) throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.INVALID_DATA_TYPE, 'one value is expected')
    const attrType = this.#accessor.describe?.(target)?.type
    let effective: BACNetAppData
    if (o.priorities !== null) {
      const slot = Math.min(16, Math.max(1, priority || 16)) - 1
      if (data.type === ApplicationTag.NULL) o.priorities[slot] = null
      else {
        fromBacnet(o.definition.type, data, attrType)
        o.priorities[slot] = toBacnet(o.definition.type, data.value)
      }
      effective = o.priorities.find((p) => p !== null) ?? o.relinquishDefault ?? toBacnet(o.definition.type, 0)
    } else {
      if (data.type === ApplicationTag.NULL)
        throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.INVALID_DATA_TYPE, `'${o.name}' is not commandable: NULL cannot be written`)
      effective = data
    }
    const value = fromBacnet(o.definition.type, effective, attrType)
    const problem = this.#accessor.valueProblem?.(target, value)
    if (problem) throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.VALUE_OUT_OF_RANGE, problem)
    try {
      await this.#accessor.write(target, value)
    } catch (error) {
      throw new BacnetError(ErrorClass.PROPERTY, ErrorCode.WRITE_ACCESS_DENIED, (error as Error).message)
    }
  }

  /** Forgets what clients commanded (a stop). */
  relinquishAll(): void {
    for (const o of this.#objects.values()) o.priorities?.fill(null)
  }

  /** Each object's priority array as shown by the adapter node: only the slots in use. */
  commanded(): Record<string, Record<string, unknown>> {
    const out: Record<string, Record<string, unknown>> = {}
    for (const o of this.#objects.values()) {
      if (!o.priorities) continue
      const used: Record<string, unknown> = {}
      o.priorities.forEach((p, i) => {
        if (p !== null) used[String(i + 1)] = p.value
      })
      if (Object.keys(used).length) out[o.name] = used
    }
    return out
  }

  #objectProperties(o: Served): Map<number, () => { values: BACNetAppData[]; array?: boolean }> {
    const d = o.definition
    const one = (value: BACNetAppData) => () => ({ values: [value] })
    const m = new Map<number, () => { values: BACNetAppData[]; array?: boolean }>()
    m.set(P.OBJECT_IDENTIFIER, one({ type: ApplicationTag.OBJECTIDENTIFIER, value: { type: o.typeNumber, instance: d.instance } }))
    m.set(P.OBJECT_NAME, one({ type: ApplicationTag.CHARACTER_STRING, value: o.name }))
    m.set(P.OBJECT_TYPE, one({ type: ApplicationTag.ENUMERATED, value: o.typeNumber }))
    m.set(P.PRESENT_VALUE, () => ({ values: [toBacnet(d.type, this.#accessor.read(d.properties.presentValue.read))] }))
    m.set(P.STATUS_FLAGS, one(STATUS_FLAGS))
    m.set(P.EVENT_STATE, one({ type: ApplicationTag.ENUMERATED, value: 0 }))
    m.set(P.OUT_OF_SERVICE, one({ type: ApplicationTag.BOOLEAN, value: false }))
    if (d.description !== undefined) m.set(P.DESCRIPTION, one({ type: ApplicationTag.CHARACTER_STRING, value: d.description }))
    if (d.type.startsWith('analog')) m.set(P.UNITS, one({ type: ApplicationTag.ENUMERATED, value: EngineeringUnits.NO_UNITS }))
    const states = d.properties.presentValue.states
    if (d.type === 'binaryInput' || d.type === 'binaryOutput') m.set(P.POLARITY, one({ type: ApplicationTag.ENUMERATED, value: 0 }))
    if (d.type.startsWith('binary') && states) {
      if (states['0'] !== undefined) m.set(P.INACTIVE_TEXT, one({ type: ApplicationTag.CHARACTER_STRING, value: states['0'] }))
      if (states['1'] !== undefined) m.set(P.ACTIVE_TEXT, one({ type: ApplicationTag.CHARACTER_STRING, value: states['1'] }))
    }
    if (d.type.startsWith('multiState') && states) {
      const texts = Object.entries(states)
        .map(([k, text]) => [Number(k), text] as const)
        .filter(([k]) => k >= 1)
        .sort((a, b) => a[0] - b[0])
      m.set(P.NUMBER_OF_STATES, one({ type: ApplicationTag.UNSIGNED_INTEGER, value: texts.length ? texts[texts.length - 1]![0] : 0 }))
      m.set(P.STATE_TEXT, () => ({ values: texts.map(([, text]) => ({ type: ApplicationTag.CHARACTER_STRING, value: text })), array: true }))
    }
    for (const [id, values] of o.constants) {
      const array = id === P.STATE_TEXT || values.length > 1
      m.set(id, () => ({ values, ...(array ? { array: true } : {}) }))
    }
    if (o.priorities !== null) {
      const priorities = o.priorities
      m.set(P.PRIORITY_ARRAY, () => ({ values: priorities.map((p) => p ?? { type: ApplicationTag.NULL, value: null }), array: true }))
      const relinquish = o.relinquishDefault!
      m.set(P.RELINQUISH_DEFAULT, one(relinquish))
      m.set(P.CURRENT_COMMAND_PRIORITY, () => {
        const at = priorities.findIndex((p) => p !== null)
        return { values: [at < 0 ? { type: ApplicationTag.NULL, value: null } : { type: ApplicationTag.UNSIGNED_INTEGER, value: at + 1 }] }
      })
    }
    m.set(P.PROPERTY_LIST, () => ({ values: this.#propertyList(m), array: true }))
    return m
  }

  #deviceProperties(): Map<number, () => { values: BACNetAppData[]; array?: boolean }> {
    const device = this.#definition.device
    const text = (value: string): BACNetAppData => ({ type: ApplicationTag.CHARACTER_STRING, value })
    const unsigned = (value: number): BACNetAppData => ({ type: ApplicationTag.UNSIGNED_INTEGER, value })
    const enumerated = (value: number): BACNetAppData => ({ type: ApplicationTag.ENUMERATED, value })
    const one = (value: BACNetAppData) => () => ({ values: [value] })
    const m = new Map<number, () => { values: BACNetAppData[]; array?: boolean }>()
    m.set(P.OBJECT_IDENTIFIER, one({ type: ApplicationTag.OBJECTIDENTIFIER, value: { type: ObjectType.DEVICE, instance: this.instance } }))
    m.set(P.OBJECT_NAME, one(text(this.#name)))
    m.set(P.OBJECT_TYPE, one(enumerated(ObjectType.DEVICE)))
    m.set(P.SYSTEM_STATUS, one(enumerated(0)))
    m.set(P.VENDOR_NAME, one(text(device?.vendor_name ?? 'Mimic')))
    m.set(P.VENDOR_IDENTIFIER, one(unsigned(this.vendorId)))
    m.set(P.MODEL_NAME, one(text(device?.model_name ?? 'Mimic')))
    m.set(P.FIRMWARE_REVISION, one(text(device?.firmware_revision ?? '1.0')))
    m.set(P.APPLICATION_SOFTWARE_VERSION, one(text('mimic')))
    if (device?.description !== undefined) m.set(P.DESCRIPTION, one(text(device.description)))
    m.set(P.PROTOCOL_VERSION, one(unsigned(1)))
    m.set(P.PROTOCOL_REVISION, one(unsigned(14)))
    // Services: subscribeCOV 5, readProperty 12, readPropertyMultiple 14, writeProperty 15, i-Am 26, who-Is 34 (of 49 bits).
    m.set(P.PROTOCOL_SERVICES_SUPPORTED, one(bitString([5, 12, 14, 15, 26, 34], 49)))
    const types = new Set([ObjectType.DEVICE, ...[...this.#objects.values()].map((o) => o.typeNumber)])
    m.set(P.PROTOCOL_OBJECT_TYPES_SUPPORTED, one(bitString([...types], 60)))
    m.set(P.OBJECT_LIST, () => ({
      values: [
        { type: ApplicationTag.OBJECTIDENTIFIER, value: { type: ObjectType.DEVICE, instance: this.instance } },
        ...[...this.#objects.values()].map((o) => ({ type: ApplicationTag.OBJECTIDENTIFIER, value: { type: o.typeNumber, instance: o.definition.instance } })),
      ],
      array: true,
    }))
    m.set(P.MAX_APDU_LENGTH_ACCEPTED, one(unsigned(1476)))
    m.set(P.SEGMENTATION_SUPPORTED, one(enumerated(3)))
    m.set(P.APDU_TIMEOUT, one(unsigned(3000)))
    m.set(P.NUMBER_OF_APDU_RETRIES, one(unsigned(0)))
    m.set(P.DEVICE_ADDRESS_BINDING, () => ({ values: [] }))
    m.set(P.DATABASE_REVISION, one(unsigned(1)))
    m.set(P.PROPERTY_LIST, () => ({ values: this.#propertyList(m), array: true }))
    return m
  }

  #propertyList(m: Map<number, unknown>): BACNetAppData[] {
    const skip = new Set<number>([P.OBJECT_IDENTIFIER, P.OBJECT_NAME, P.OBJECT_TYPE, P.PROPERTY_LIST])
    return [...m.keys()].filter((id) => !skip.has(id)).map((id) => ({ type: ApplicationTag.ENUMERATED, value: id }))
  }
}

/** A BACnet bit string of `size` bits with `bits` set. */
function bitString(bits: number[], size: number): BACNetAppData {
  const made = BACnetClient.createBitstring(bits.filter((b) => b < size))
  const bytes = Math.ceil(size / 8)
  const value = [...made.value]
  while (value.length < bytes) value.push(0)
  return { type: ApplicationTag.BIT_STRING, value: { bitsUsed: size, value } }
}
