import { z } from 'zod'
import { referencedAttribute } from './attribute-reference.js'

/**
 * The `bacnet` adapter definition: a BACnet/IP device on a UDP port, with the reference product's
 * keys as its catalog models write them: `device` (`instance_id`, `vendor_id`, `name`,
 * `model_name`, `description`), `objects` by name (each a `type`, an `instance`, a `priority` for a
 * commandable one, and `properties`: `presentValue` bound to attributes with `read`, `write` and
 * `states`, the others constants such as `units`, `relinquishDefault`, `stateText`), `timing`
 * (`poll_interval`, `poll_jitter`) and `alarms` (kept and shown, not served).
 *
 * @example
 * const d = bacnetSchema.parse({ port: 47808, device: { instance_id: 2 }, objects: { t: { type: 'analogInput', instance: 1, properties: { presentValue: { read: '#attr(t)' } } } } })
 * d.objects.t.properties.presentValue.read // 't'
 */

/** The object types a model may declare, by their BACnet names. @example BACNET_OBJECT_TYPES.includes('analogInput') */
export const BACNET_OBJECT_TYPES = [
  'analogInput',
  'analogOutput',
  'analogValue',
  'binaryInput',
  'binaryOutput',
  'binaryValue',
  'multiStateInput',
  'multiStateOutput',
  'multiStateValue',
  'integerValue',
  'positiveIntegerValue',
  'characterstringValue',
] as const
/** @example const t: BacnetObjectType = 'binaryOutput' */
export type BacnetObjectType = (typeof BACNET_OBJECT_TYPES)[number]

/** An attribute reference parsed to the attribute's name (a bare name, #attr(x), $in(x), ...). */
const referenceSchema = z
  .string()
  .max(256)
  .transform((reference, ctx) => {
    const name = referencedAttribute(reference)
    if (name === null) {
      ctx.addIssue({ code: 'custom', message: `'${reference}' is not an attribute reference: write a name or #attr(name) of this instance's attribute` })
      return z.NEVER
    }
    return name
  })

const presentValueSchema = z.strictObject({
  /** The attribute whose presented value is the object's presentValue. */
  read: referenceSchema,
  /** The attribute a WriteProperty of presentValue sets (its internal value); none: the property is read-only. */
  write: referenceSchema.optional(),
  /** The text of each value (binary: 0 inactive, 1 active; multi-state: 1..n), served as inactiveText/activeText or stateText. */
  states: z.record(z.string().regex(/^-?\d{1,10}$/, 'a state is keyed by its number'), z.string().max(256)).optional(),
})

/** A constant property: a number, text, boolean or a list of them (stateText). */
const constantSchema = z.union([z.number(), z.string().max(1024), z.boolean(), z.array(z.union([z.number(), z.string().max(1024), z.boolean()])).max(1024)])

const objectSchema = z.strictObject({
  type: z.enum(BACNET_OBJECT_TYPES),
  instance: z.number().int().min(0).max(4194302),
  /** Makes a value object commandable (outputs always are); shown as the object's default priority. */
  priority: z.number().int().min(1).max(16).optional(),
  description: z.string().max(1024).optional(),
  properties: z.object({ presentValue: presentValueSchema }).catchall(constantSchema),
})

/** One served object, after parsing. @example const o: BacnetObject = bacnetSchema.parse(raw).objects.siren */
export type BacnetObject = z.output<typeof objectSchema>

/** Where a fault applies: services by name (`readProperty`, ...) and objects as `type,instance`; omitted: all. */
const faultScope = {
  services: z
    .array(z.enum(['readProperty', 'readPropertyMultiple', 'writeProperty', 'subscribeCov', 'whoIs']))
    .max(8)
    .optional(),
  objects: z
    .array(z.string().regex(/^[A-Za-z]+,\d{1,7}$/, "an object is 'type,instance', e.g. 'analogInput,1'"))
    .max(1024)
    .optional(),
}

/**
 * The faults in force (the adapter's settable `faults`): each key optional; `{}` or null is normal
 * service. `error` answers a BACnet Error (class and code numbers, default device/operational-problem),
 * `reject` a Reject (reason, default 0 other), `abort` an Abort (reason, default 0 other),
 * `no_response` nothing at all; the first that applies wins in that order after `no_response`;
 * `response_delay` (seconds, or `{seconds, jitter}`) makes every answer, a fault's included, leave late.
 *
 * @example
 * bacnetFaultsSchema.parse({ error: { class: 2, code: 31 }, no_response: { services: ['whoIs'] } })
 */
export const bacnetFaultsObjectSchema = z.strictObject({
  response_delay: z
    .union([
      z.number().min(0).max(3600),
      z.strictObject({ seconds: z.number().min(0).max(3600), jitter: z.number().min(0).max(3600).default(0), ...faultScope }),
    ])
    .optional(),
  no_response: z.union([z.literal(true), z.strictObject({ ...faultScope })]).optional(),
  error: z
    .strictObject({ class: z.number().int().min(0).max(65535).default(0), code: z.number().int().min(0).max(65535).default(25), ...faultScope })
    .optional(),
  reject: z.strictObject({ reason: z.number().int().min(0).max(255).default(0), ...faultScope }).optional(),
  abort: z.strictObject({ reason: z.number().int().min(0).max(255).default(0), ...faultScope }).optional(),
})
/** The faults as a model writes them: null is none. */
export const bacnetFaultsSchema = bacnetFaultsObjectSchema.nullable()
/** @example const f: BacnetFaults = { abort: { reason: 4 } } */
export type BacnetFaults = z.output<typeof bacnetFaultsObjectSchema>

/** See the module comment. */
export const bacnetSchema = z
  .strictObject({
    /** The address the device's UDP socket binds; 0.0.0.0 for every interface. */
    host: z.string().min(1).max(253).default('127.0.0.1'),
    /** The UDP port (BACnet/IP's own is 47808, 0xBAC0); 0 lets the OS choose. */
    port: z.number().int().min(0).max(65535).default(47808),
    device: z
      .strictObject({
        instance_id: z.number().int().min(0).max(4194302),
        vendor_id: z.number().int().min(0).max(65535).default(999),
        name: z.string().min(1).max(256).optional(),
        model_name: z.string().max(256).default('Mimic'),
        vendor_name: z.string().max(256).default('Mimic'),
        description: z.string().max(1024).optional(),
        firmware_revision: z.string().max(64).default('1.0'),
      })
      .optional(),
    /** The reference product's polling of bound attributes; Mimic reads them on each request and checks COV after each step. */
    timing: z.strictObject({ poll_interval: z.number().min(0).max(3600).optional(), poll_jitter: z.number().min(0).max(3600).optional() }).optional(),
    objects: z.record(z.string().min(1).max(256), objectSchema).default({}),
    /** Intrinsic alarm (event enrollment) settings of the reference product: kept and shown, not served. */
    alarms: z.record(z.string(), z.unknown()).optional(),
    faults: bacnetFaultsSchema.optional(),
  })
  .superRefine((d, ctx) => {
    const seen = new Map<string, string>()
    for (const [name, o] of Object.entries(d.objects)) {
      const key = `${o.type},${o.instance}`
      const other = seen.get(key)
      if (other !== undefined) ctx.addIssue({ code: 'custom', path: ['objects', name, 'instance'], message: `object ${key} is also '${other}'` })
      seen.set(key, name)
    }
  })

/** A `bacnet` definition after defaults. @example const d: BacnetDefinition = bacnetSchema.parse({}) */
export type BacnetDefinition = z.output<typeof bacnetSchema>

/**
 * Where a `bacnet` definition references attributes (each object's presentValue `read` and `write`),
 * for the model check that each names a declared attribute.
 *
 * @example
 * bacnetAttributeReferences({ objects: { t: { properties: { presentValue: { read: '#attr(t)' } } } } })
 * // [{ path: ['objects', 't', 'properties', 'presentValue', 'read'], attribute: 't' }]
 */
export function bacnetAttributeReferences(settings: unknown): Array<{ path: (string | number)[]; attribute: string }> {
  const out: Array<{ path: (string | number)[]; attribute: string }> = []
  const record = (value: unknown): Record<string, unknown> =>
    value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
  for (const [name, raw] of Object.entries(record(record(settings).objects))) {
    const pv = record(record(record(raw).properties).presentValue)
    for (const key of ['read', 'write'] as const) {
      const attribute = typeof pv[key] === 'string' ? referencedAttribute(pv[key]) : null
      if (attribute !== null) out.push({ path: ['objects', name, 'properties', 'presentValue', key], attribute })
    }
  }
  return out
}
