import { z } from 'zod'
import { attributeReferenceSchema } from './attribute-reference.js'
import { BIT_GROUPS, BIT_TYPES, MODBUS_GROUPS, MODBUS_ORDERS, MODBUS_TYPES, TYPE_WIDTH, addressRange } from './modbus-schema.js'
import { serialDeviceIssue, serialSettingsShape } from './serial-schema.js'

/**
 * The `modbus_master` adapter definition: the instance is a Modbus client that polls other
 * devices. Its keys are the reference product's (`poll_interval`, `timeout`, `max_retries`,
 * `retry_delay`, `bindings` of `area`/`address`/`length`/`codec`/`direction`/`attribute`, with a
 * `host`/`port`/`slave_id` per binding or for all of them); `max_failures` and `transport` are
 * Mimic's. See docs/modbus-master.md.
 *
 * @example
 * const d = modbusMasterSchema.parse({
 *   port: 5020,
 *   bindings: [{ area: 'h_r', address: [0, 1], codec: 'float', attribute: 'temperature' }],
 * })
 * d.bindings[0].direction // 'inbound'
 */

/** How a master reaches its devices. @example MODBUS_MASTER_TRANSPORTS.includes('rtu_over_tcp') */
export const MODBUS_MASTER_TRANSPORTS = ['tcp', 'udp', 'rtu_over_tcp', 'serial'] as const
/** @example const t: ModbusMasterTransport = 'tcp' */
export type ModbusMasterTransport = (typeof MODBUS_MASTER_TRANSPORTS)[number]

/**
 * Which way a binding moves values: `inbound` reads registers into the attribute every poll,
 * `outbound` writes the attribute to the registers when it changes, `bidirectional` does both.
 *
 * @example MODBUS_MASTER_DIRECTIONS.includes('bidirectional') // true
 */
export const MODBUS_MASTER_DIRECTIONS = ['inbound', 'outbound', 'bidirectional'] as const

/** Codecs of a binding: the slave's value types, and `raw`, the registers as a list of words. @example MODBUS_MASTER_CODECS.includes('raw') */
export const MODBUS_MASTER_CODECS = [...MODBUS_TYPES, 'raw'] as const
/** @example const c: ModbusMasterCodec = 'raw' */
export type ModbusMasterCodec = (typeof MODBUS_MASTER_CODECS)[number]

const addressNumber = z.number().int('an address is an integer').min(0).max(65535)
const portNumber = z.number().int('a port is an integer').min(1).max(65535)
const unitNumber = z.number().int('a slave id is an integer').min(0).max(255)
const seconds = (name: string, min: number, max: number) => z.number().min(min, `${name} is seconds >= ${min}`).max(max, `${name} is at most ${max} seconds`)

const bindingSchema = z
  .strictObject({
    /** A label, shown in errors and logs. */
    name: z.string().max(256).optional(),
    host: z.string().min(1).max(253).optional(),
    port: portNumber.optional(),
    slave_id: unitNumber.optional(),
    area: z.enum(MODBUS_GROUPS),
    address: z.union([addressNumber, z.tuple([addressNumber, addressNumber])]),
    /** Registers (or bits) the value takes; defaults to the codec's width, or the address range. */
    length: z.number().int().min(1).max(125).optional(),
    codec: z.enum(MODBUS_MASTER_CODECS).default('uint_16'),
    byte_order: z.enum(MODBUS_ORDERS).default('big'),
    word_order: z.enum(MODBUS_ORDERS).default('big'),
    scale: z
      .number()
      .refine((s) => Number.isFinite(s) && s !== 0, 'scale must be a finite number other than 0')
      .optional(),
    direction: z.enum(MODBUS_MASTER_DIRECTIONS).default('inbound'),
    attribute: attributeReferenceSchema,
  })
  .superRefine((binding, ctx) => {
    const [first, last] = addressRange(binding.address)
    if (first > last) {
      ctx.addIssue({ code: 'custom', path: ['address'], message: `the first address (${first}) is after the last (${last})` })
      return
    }
    const width = bindingWidth(binding)
    if (first + width - 1 > 65535) ctx.addIssue({ code: 'custom', path: ['length'], message: `${width} registers from ${first} go past 65535` })
    const fixed = binding.codec === 'raw' ? null : TYPE_WIDTH[binding.codec]
    if (fixed !== null && binding.length !== undefined && binding.length !== fixed) {
      ctx.addIssue({ code: 'custom', path: ['length'], message: `codec ${binding.codec} takes ${fixed} register(s), got length ${binding.length}` })
    }
    if (BIT_GROUPS.has(binding.area) && binding.codec !== 'raw' && !BIT_TYPES.has(binding.codec)) {
      ctx.addIssue({
        code: 'custom',
        path: ['codec'],
        message: `area ${binding.area} holds single bits: only codec bool (or uint_16, as 0 and 1) is allowed, got ${binding.codec}`,
      })
    }
    if (binding.direction !== 'inbound' && (binding.area === 'i_r' || binding.area === 'd_i')) {
      ctx.addIssue({ code: 'custom', path: ['direction'], message: `area ${binding.area} is read-only on a Modbus device: only direction inbound is possible` })
    }
  })

/** @example const b: ModbusMasterBinding = modbusMasterSchema.parse({ port: 502, bindings: [{ area: 'c_o', address: 0, codec: 'bool', attribute: 'on' }] }).bindings[0] */
export type ModbusMasterBinding = z.output<typeof bindingSchema>

/**
 * Registers (or bits) a binding reads and writes: `length` when given, else the codec's width,
 * else the address range's.
 *
 * @example
 * bindingWidth({ address: 3060, codec: 'float' }) // 2
 * bindingWidth({ address: [10, 14], codec: 'str' }) // 5
 */
export function bindingWidth(binding: { address: number | readonly [number, number]; codec: ModbusMasterCodec; length?: number | undefined }): number {
  if (binding.length !== undefined) return binding.length
  const fixed = binding.codec === 'raw' ? null : TYPE_WIDTH[binding.codec]
  if (fixed !== null) return fixed
  const [first, last] = addressRange(binding.address)
  return Math.max(1, last - first + 1)
}

/**
 * The adapter definition, strict: unknown keys are errors.
 *
 * @example
 * modbusMasterSchema.safeParse({ bindings: [{ area: 'i_r', address: 0, direction: 'outbound', attribute: 'x' }] }).success // false
 */
export const modbusMasterSchema = z
  .strictObject({
    /** The device polled by bindings that name no host of their own. */
    host: z.string().min(1).max(253).default('127.0.0.1'),
    port: portNumber.default(502),
    slave_id: unitNumber.optional(),
    /** Another name of `slave_id`, as `modbus_slave` calls it. */
    unit_id: unitNumber.optional(),
    /** `tcp`, `rtu_over_tcp`, or `serial`: RTU on the serial line of `device`, `baudrate`, `parity`, `stopbits`, `bytesize`. */
    transport: z.enum(MODBUS_MASTER_TRANSPORTS).default('tcp'),
    ...serialSettingsShape,
    /** Seconds between polls of the inbound bindings (and checks of the outbound ones). */
    poll_interval: seconds('poll_interval', 0.01, 3600).default(1),
    /** Seconds to wait for a connection or an answer. */
    timeout: seconds('timeout', 0.01, 600).default(1),
    /** Further attempts of a request that got no answer, `retry_delay` seconds apart. */
    max_retries: z.number().int().min(0).max(100).default(0),
    retry_delay: seconds('retry_delay', 0, 600).default(0.1),
    /** Consecutive failed polls after which the state is FAILED (and polls slow down). */
    max_failures: z.number().int().min(1).max(1_000_000).default(3),
    bindings: z.array(bindingSchema).default([]),
  })
  .superRefine((definition, ctx) => {
    const serial = serialDeviceIssue(definition)
    if (serial !== null) ctx.addIssue({ code: 'custom', ...serial })
    if (definition.transport === 'serial') {
      definition.bindings.forEach((binding, index) => {
        for (const key of ['host', 'port'] as const) {
          if (binding[key] !== undefined) {
            ctx.addIssue({
              code: 'custom',
              path: ['bindings', index, key],
              message: `${key} does not apply to transport serial: the line is the adapter's device`,
            })
          }
        }
      })
    }
    if (definition.slave_id !== undefined && definition.unit_id !== undefined && definition.slave_id !== definition.unit_id) {
      ctx.addIssue({ code: 'custom', path: ['unit_id'], message: `unit_id ${definition.unit_id} differs from slave_id ${definition.slave_id}: give one` })
    }
  })

/**
 * A `modbus_master` definition after defaults.
 *
 * @example
 * const d: ModbusMasterDefinition = modbusMasterSchema.parse({})
 */
export type ModbusMasterDefinition = z.output<typeof modbusMasterSchema>
