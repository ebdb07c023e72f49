import { issueMessage } from './zod-issue.js'
import { z } from 'zod'
import { ValidationError, summarize } from '../errors.js'
import type { ErrorDetail } from '../errors.js'
import { serialDeviceIssue, serialSettingsShape } from './serial-schema.js'

/**
 * The `modbus_slave` adapter definition: what a model declares under `communication` to publish
 * its attributes as Modbus registers. Every rule that involves more than one field (width against
 * type, group against type, overlapping addresses) is reported as a zod issue located at the
 * offending field, so the model layer can embed this schema and show every problem at once.
 *
 * @example
 * const definition = modbusSlaveSchema.parse({
 *   port: 5020,
 *   mapping: { temperature: { address: [0, 1], group: 'h_r', type: 'float' } },
 * })
 * definition.unit_id // 1
 */

/** How a `modbus_slave` carries requests. @example MODBUS_TRANSPORTS.includes('udp') */
export const MODBUS_TRANSPORTS = ['tcp', 'udp', 'rtu_over_tcp', 'serial'] as const

/** Register groups: holding registers, input registers, coils, discrete inputs. @example MODBUS_GROUPS.includes('h_r') */
export const MODBUS_GROUPS = ['h_r', 'i_r', 'c_o', 'd_i'] as const
/** @example const g: ModbusGroup = 'h_r' */
export type ModbusGroup = (typeof MODBUS_GROUPS)[number]

/** Value types a mapping entry may declare. @example MODBUS_TYPES.includes('float_64') */
export const MODBUS_TYPES = ['bool', 'int_16', 'uint_16', 'int_32', 'uint_32', 'float', 'float_64', 'int_64', 'uint_64', 'str'] as const
/** @example const t: ModbusType = 'float' */
export type ModbusType = (typeof MODBUS_TYPES)[number]

/** Byte or word order of a multi-byte value. @example MODBUS_ORDERS // ['big', 'little'] */
export const MODBUS_ORDERS = ['big', 'little'] as const
/** @example const o: ModbusOrder = 'little' */
export type ModbusOrder = (typeof MODBUS_ORDERS)[number]

/**
 * Registers (or bits) each type occupies; `null` for `str`, which takes any width >= 1.
 *
 * @example
 * TYPE_WIDTH.float // 2
 */
export const TYPE_WIDTH: Readonly<Record<ModbusType, number | null>> = {
  bool: 1,
  int_16: 1,
  uint_16: 1,
  int_32: 2,
  uint_32: 2,
  float: 2,
  float_64: 4,
  int_64: 4,
  uint_64: 4,
  str: null,
}

/** Groups whose items are single bits. @example BIT_GROUPS.has('c_o') // true */
export const BIT_GROUPS: ReadonlySet<ModbusGroup> = new Set(['c_o', 'd_i'])

/**
 * The types a bit may be mapped as: `bool`, or `uint_16`, a number that is on when it is not 0 and
 * that a client's write sets to 1 or 0 (the reference product's library maps coils that way,
 * for attributes that hold 0 and 1).
 *
 * @example
 * BIT_TYPES.has('uint_16') // true
 */
export const BIT_TYPES: ReadonlySet<ModbusType> = new Set(['bool', 'uint_16'])

/**
 * What a `modbus_slave` definition gets for the connection settings it omits: a connection may go
 * 300 s without completing a request, must finish a frame it started within 10 s, and its
 * listener holds at most 256 connections. 256 rather than the thousands a socket allows: a real
 * device takes a handful of clients, each connection holds a descriptor of the server process
 * (which also serves HTTP and talks to its Python workers, often under a soft limit of 1024
 * descriptors), and a few busy listeners at 256 each stay well inside that.
 *
 * @example
 * MODBUS_CONNECTION_DEFAULTS.idle_timeout // 300
 */
export const MODBUS_CONNECTION_DEFAULTS = { idle_timeout: 300, frame_timeout: 10, max_connections: 256 } as const

const ATTRIBUTE_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/
const MAX_ADDRESS = 65535

const addressNumber = z.number().int('an address is an integer').min(0).max(MAX_ADDRESS)
const orderSchema = z.enum(MODBUS_ORDERS)

const mappingEntrySchema = z
  .strictObject({
    address: z.union([addressNumber, z.tuple([addressNumber, addressNumber])]),
    group: z.enum(MODBUS_GROUPS),
    type: z.enum(MODBUS_TYPES),
    byte_order: orderSchema.default('big'),
    word_order: orderSchema.default('big'),
    scale: z
      .number()
      .refine((s) => Number.isFinite(s) && s !== 0, 'scale must be a finite number other than 0')
      .optional(),
  })
  .superRefine((entry, ctx) => {
    const [first, last] = addressRange(entry.address)
    if (first > last) {
      ctx.addIssue({ code: 'custom', path: ['address'], message: `the first address (${first}) is after the last (${last})` })
      return
    }
    const width = last - first + 1
    const expected = TYPE_WIDTH[entry.type]
    if (expected !== null && width !== expected) {
      ctx.addIssue({
        code: 'custom',
        path: ['address'],
        message: `type ${entry.type} takes ${expected} ${expected === 1 ? 'address' : 'addresses'}, got ${width} (${first}..${last})`,
      })
    }
    if (BIT_GROUPS.has(entry.group) && !BIT_TYPES.has(entry.type)) {
      ctx.addIssue({
        code: 'custom',
        path: ['type'],
        message: `group ${entry.group} holds single bits: only type bool (or uint_16, as 0 and 1) is allowed, got ${entry.type}`,
      })
    }
    if (entry.scale !== undefined && (entry.type === 'bool' || entry.type === 'str')) {
      ctx.addIssue({ code: 'custom', path: ['scale'], message: `scale applies to numeric types only, not ${entry.type}` })
    } else if (entry.scale !== undefined && BIT_GROUPS.has(entry.group)) {
      ctx.addIssue({ code: 'custom', path: ['scale'], message: `group ${entry.group} holds single bits: scale does not apply` })
    }
  })

/** @example const e: ModbusMappingEntry = { address: 0, group: 'c_o', type: 'bool', byte_order: 'big', word_order: 'big' } */
export type ModbusMappingEntry = z.output<typeof mappingEntrySchema>

/**
 * The adapter definition, strict: unknown keys are errors.
 *
 * @example
 * modbusSlaveSchema.safeParse({ mapping: { t: { address: 0, group: 'h_r', type: 'float' } } }).success // false: float takes 2 addresses
 */
export const modbusSlaveSchema = z
  .strictObject({
    host: z.string().min(1).max(253).default('127.0.0.1'),
    /**
     * How requests travel: `tcp` (Modbus TCP, MBAP frames), `udp` (one MBAP frame per datagram) or
     * `rtu_over_tcp` (RTU frames with CRC over a TCP stream), or `serial` (RTU on the serial line
     * `device`, with `baudrate`, `parity`, `stopbits` and `bytesize`). See docs/modbus-transports.md.
     */
    transport: z.enum(MODBUS_TRANSPORTS).default('tcp'),
    ...serialSettingsShape,
    /** Omitted: the first port >= 5020 that is free on the host. 0 lets the OS choose. */
    port: z.number().int().min(0).max(65535).optional(),
    unit_id: z.number().int().min(0).max(255).default(1),
    response_delay: z.number().min(0).max(3600).default(0),
    /** Reads of addresses no attribute maps answer 0 (false for bits) instead of exception 0x02. */
    zero_fill: z.boolean().optional(),
    /** Seconds a connection may go without completing a request; 0: never closed for idling. */
    idle_timeout: z
      .number()
      .min(0, 'idle_timeout is seconds >= 0 (0: never)')
      .max(86_400, 'idle_timeout is at most 86400 seconds (one day)')
      .default(MODBUS_CONNECTION_DEFAULTS.idle_timeout),
    /** Seconds within which a frame whose first bytes arrived must be complete. */
    frame_timeout: z
      .number()
      .gt(0, 'frame_timeout is seconds > 0: a started frame always has a deadline')
      .max(3600, 'frame_timeout is at most 3600 seconds')
      .default(MODBUS_CONNECTION_DEFAULTS.frame_timeout),
    /** Connections the listener holds at once; at the limit the longest idle one makes room. */
    max_connections: z
      .number()
      .int('max_connections is a whole number')
      .min(1, 'max_connections is at least 1')
      .max(65_535, 'max_connections is at most 65535')
      .default(MODBUS_CONNECTION_DEFAULTS.max_connections),
    /**
     * Accepted and ignored. In the reference product's `modbus_tcp` it is how often the attribute
     * values are copied into the Modbus server's registers; Mimic reads the attribute when a
     * request arrives, so a client always gets the current value and there is no copy to refresh.
     */
    poll_interval: z.number().min(0, 'poll_interval is seconds >= 0').max(3600, 'poll_interval is at most 3600 seconds').optional(),
    mapping: z.record(z.string().regex(ATTRIBUTE_NAME, 'an attribute name must match [A-Za-z_][A-Za-z0-9_-]*'), mappingEntrySchema),
  })
  .superRefine((definition, ctx) => {
    const serial = serialDeviceIssue(definition)
    if (serial !== null) ctx.addIssue({ code: 'custom', ...serial })
    if (definition.transport === 'serial' && definition.port !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['port'], message: 'port applies to tcp, udp and rtu_over_tcp; a serial line has a device' })
    }
    for (const problem of overlaps(definition.mapping)) {
      ctx.addIssue({ code: 'custom', path: ['mapping', problem.attribute, 'address'], message: problem.message })
    }
  })

/**
 * A `modbus_slave` definition after defaults.
 *
 * @example
 * const d: ModbusSlaveDefinition = modbusSlaveSchema.parse({ mapping: {} })
 */
export type ModbusSlaveDefinition = z.output<typeof modbusSlaveSchema>

/**
 * The inclusive [first, last] addresses of an `address` field.
 *
 * @example
 * addressRange(7)      // [7, 7]
 * addressRange([0, 1]) // [0, 1]
 */
export function addressRange(address: number | readonly [number, number]): [number, number] {
  return typeof address === 'number' ? [address, address] : [address[0], address[1]]
}

/**
 * Parses an adapter definition, throwing a ValidationError (422) that lists every problem.
 *
 * @example
 * const definition = parseModbusSlave({ mapping: { alarm: { address: 0, group: 'c_o', type: 'bool' } } })
 */
export function parseModbusSlave(input: unknown, subject = 'modbus_slave'): ModbusSlaveDefinition {
  const result = modbusSlaveSchema.safeParse(input)
  if (result.success) return result.data
  const details: ErrorDetail[] = result.error.issues.map((issue) => ({
    path: issue.path.map(String).join('.'),
    message: issueMessage(issue),
  }))
  throw new ValidationError(summarize(subject, details), details)
}

interface OverlapProblem {
  attribute: string
  message: string
}

/** Finds addresses claimed by two attributes of one group; each clash is reported once. */
function overlaps(mapping: Record<string, ModbusMappingEntry>): OverlapProblem[] {
  const byGroup = new Map<ModbusGroup, Array<{ name: string; first: number; last: number }>>()
  for (const [name, entry] of Object.entries(mapping)) {
    const [first, last] = addressRange(entry.address)
    if (first > last) continue
    let list = byGroup.get(entry.group)
    if (!list) byGroup.set(entry.group, (list = []))
    list.push({ name, first, last })
  }
  const problems: OverlapProblem[] = []
  for (const [group, list] of byGroup) {
    list.sort((a, b) => a.first - b.first || a.last - b.last)
    // Compare each range with the furthest-reaching one before it, so a long range that covers
    // several later ones is reported against each of them.
    let reach = list[0]
    for (let i = 1; i < list.length; i++) {
      const current = list[i]!
      if (reach && current.first <= reach.last) {
        problems.push({
          attribute: current.name,
          message: `addresses ${current.first}..${current.last} overlap '${reach.name}' (${reach.first}..${reach.last}) in group ${group}`,
        })
      }
      if (!reach || current.last > reach.last) reach = current
    }
  }
  return problems
}
