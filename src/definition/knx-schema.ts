import { z } from 'zod'
import { referencedAttribute } from './attribute-reference.js'

/**
 * The `knx_ip` adapter definition: a KNX device on the bus behind a KNXnet/IP tunnelling server
 * (`router: {host, port, route_back}`), with the reference product's keys: `bindings` of group
 * addresses, each with a datapoint type (`dpt`) or a `value_codec`, a `direction` (`inbound`: the
 * bus writes `write_attribute`; `outbound`: `read_attribute` is sent when it changes and answers
 * group reads; `bidirectional`: both) and `poll_interval` (seconds between checks for changes).
 *
 * @example
 * const d = knxSchema.parse({
 *   router: { host: '127.0.0.1', port: 3671 },
 *   bindings: [{ group_address: '1/1/10', dpt: 9.001, direction: 'outbound', read_attribute: '#attr(temp)' }],
 * })
 * d.bindings[0].read_attribute // 'temp'
 */

/** The codecs a binding may name instead of a DPT. @example KNX_VALUE_CODECS.includes('uint8') */
export const KNX_VALUE_CODECS = ['bool', 'uint8', 'int8', 'uint16', 'int16', 'uint32', 'int32', 'float16', 'float32', 'string'] as const
export type KnxValueCodec = (typeof KNX_VALUE_CODECS)[number]

/** The DPT main numbers the adapter encodes. @example KNX_DPT_MAINS.includes(9) */
export const KNX_DPT_MAINS = [1, 5, 6, 7, 8, 9, 12, 13, 14, 16, 17, 20] as const

/**
 * A DPT as written (`9.001`, `"1.100"`, `5`): its main number and subtype. A YAML number loses
 * trailing zeros (`1.100` reads as 1.1), so a subtype of fewer than three digits is padded on
 * the right, as the standard subtypes all have three.
 *
 * @example
 * parseDpt(1.1) // { main: 1, sub: 100 }
 * parseDpt('5.001') // { main: 5, sub: 1 }
 */
export function parseDpt(dpt: string | number): { main: number; sub: number } | null {
  const text = typeof dpt === 'number' ? String(dpt) : dpt.trim().replace(/^DPT-?/i, '')
  const match = /^(\d+)(?:[.-](\d{1,3}))?$/.exec(text)
  if (!match) return null
  return { main: Number(match[1]), sub: match[2] === undefined ? 0 : Number(match[2].padEnd(3, '0')) }
}

/**
 * A group address as a number: three levels `main/middle/sub` (5/3/8 bits), two levels
 * `main/sub` (5/11 bits) or the raw number.
 *
 * @example
 * parseGroupAddress('1/1/10') // 2314
 */
export function parseGroupAddress(address: string | number): number | null {
  if (typeof address === 'number') return Number.isInteger(address) && address >= 0 && address <= 0xffff ? address : null
  const parts = address.trim().split('/')
  if (parts.some((p) => !/^\d+$/.test(p))) return null
  const n = parts.map(Number)
  if (n.length === 3 && n[0]! <= 31 && n[1]! <= 7 && n[2]! <= 255) return (n[0]! << 11) | (n[1]! << 8) | n[2]!
  if (n.length === 2 && n[0]! <= 31 && n[1]! <= 2047) return (n[0]! << 11) | n[1]!
  if (n.length === 1 && n[0]! <= 0xffff) return n[0]!
  return null
}

/** A group address as KNX tools write it (three levels). @example formatGroupAddress(2314) // '1/1/10' */
export function formatGroupAddress(address: number): string {
  return `${address >> 11}/${(address >> 8) & 7}/${address & 0xff}`
}

const referenceSchema = z.string().transform((reference, ctx) => {
  const attribute = referencedAttribute(reference)
  if (attribute === null) {
    ctx.addIssue({ code: 'custom', message: `'${reference}' is not an attribute reference: write a name or #attr(name)` })
    return z.NEVER
  }
  return attribute
})

export const knxBindingSchema = z
  .object({
    name: z.string().min(1).optional(),
    direction: z.enum(['inbound', 'outbound', 'bidirectional']).default('bidirectional'),
    group_address: z
      .union([z.string(), z.number()])
      .refine((a) => parseGroupAddress(a) !== null, 'a group address such as 1/2/3 (main 0-31, middle 0-7, sub 0-255) or 1/515'),
    dpt: z
      .union([z.string(), z.number()])
      .refine(
        (d) => {
          const parsed = parseDpt(d)
          return parsed !== null && (KNX_DPT_MAINS as readonly number[]).includes(parsed.main)
        },
        `a datapoint type of main number ${KNX_DPT_MAINS.join(', ')} (e.g. 9.001)`,
      )
      .optional(),
    value_codec: z.enum(KNX_VALUE_CODECS).optional(),
    /** Bytes of a `string` codec's payload (zero-padded), 1 to 14. */
    payload_length: z.number().int().min(1).max(14).optional(),
    read_attribute: referenceSchema.optional(),
    write_attribute: referenceSchema.optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    if (b.dpt === undefined && b.value_codec === undefined) ctx.addIssue({ code: 'custom', path: ['dpt'], message: 'give a dpt (e.g. 9.001) or a value_codec' })
    if (b.direction !== 'inbound' && b.read_attribute === undefined)
      ctx.addIssue({ code: 'custom', path: ['read_attribute'], message: `a ${b.direction} binding sends an attribute: give read_attribute` })
    if (b.direction !== 'outbound' && b.write_attribute === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['write_attribute'],
        message: `a ${b.direction} binding takes group writes into an attribute: give write_attribute`,
      })
  })
export type KnxBinding = z.output<typeof knxBindingSchema>

export const knxSchema = z
  .object({
    router: z
      .object({
        host: z.string().min(1),
        port: z.number().int().min(1).max(65_535).default(3671),
        /** The tunnelling server answers to the address the requests came from (NAT mode) instead of the one they name. */
        route_back: z.boolean().default(false),
      })
      .strict(),
    /** Seconds between checks of the sent attributes for a change (a change after a step goes at once). */
    poll_interval: z.number().min(0.01).max(3600).default(1),
    bindings: z.array(knxBindingSchema).default([]),
    /** Seconds to wait for the tunnelling server's answer (connect, acknowledgement, heartbeat). */
    connect_timeout: z.number().min(0.1).max(60).default(3),
    /** Seconds before connecting again after the tunnel was lost (doubling up to 60). */
    reconnect_period: z.number().min(0.1).max(3600).default(5),
  })
  .strict()
export type KnxDefinition = z.output<typeof knxSchema>

/**
 * Every attribute a `knx_ip` definition's bindings name, with its path.
 *
 * @example
 * knxAttributeReferences({ bindings: [{ read_attribute: '#attr(t)' }] }) // [{ path: ['bindings', 0, 'read_attribute'], attribute: 't' }]
 */
export function knxAttributeReferences(settings: unknown): Array<{ path: (string | number)[]; attribute: string }> {
  const out: Array<{ path: (string | number)[]; attribute: string }> = []
  const bindings = (settings as { bindings?: unknown } | null)?.bindings
  if (!Array.isArray(bindings)) return out
  bindings.forEach((binding: Record<string, unknown> | null, i) => {
    for (const key of ['read_attribute', 'write_attribute']) {
      const reference = binding?.[key]
      const attribute = typeof reference === 'string' ? referencedAttribute(reference) : null
      if (attribute !== null) out.push({ path: ['bindings', i, key], attribute })
    }
  })
  return out
}
