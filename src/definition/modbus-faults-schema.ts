import { issueMessage } from './zod-issue.js'
import { z } from 'zod'
import { ValidationError, summarize } from '../errors.js'
import type { ErrorDetail } from '../errors.js'

/**
 * The parts every Modbus fault's schema is made of (the value of a Modbus adapter's `faults`
 * property, docs/modbus-faults.md): the four keys that narrow the requests a fault hits, seconds,
 * faults that may be switched on with `true`, and the validation that names every problem by its
 * path. Each fault's own schema lives in its file under src/protocols/modbus/faults/, and the
 * registry there (index.ts) puts the whole `faults` schema together from them.
 *
 * Faults that act on single requests may narrow the requests they hit with the same four keys,
 * applied in this order: `functions` (function codes), `addresses` (ranges the request touches),
 * `every` (only every Nth request left), `probability` (each of those with this chance).
 *
 * @example
 * const exception = z.strictObject({ code: z.number(), ...selectorShape })
 * parseFaultsValue(z.strictObject({ exception }), { exception: { code: 6 } }, 'Modbus faults') // { exception: { code: 6 } }
 */

const MAX_ADDRESS = 65535
/** The largest count a fault takes (`every`, `after`, `requests`). */
export const MAX_FAULT_COUNT = 1_000_000_000

const address = z.number({ error: 'an address is a number from 0 to 65535' }).int('an address is an integer').min(0).max(MAX_ADDRESS)
const addressRange = z
  .union([address, z.tuple([address, address])], { error: 'an address range is an address or a pair [first, last]' })
  .refine((r) => typeof r === 'number' || r[0] <= r[1], 'the first address of a range is after the last')

/** The keys that narrow which requests a fault hits. */
export const selectorShape = {
  /** Function codes the fault applies to (all when omitted). */
  functions: z
    .array(z.number().int('a function code is an integer').min(1).max(127, 'a function code is 1..127'))
    .min(1, 'list at least one function code, or leave functions out')
    .max(127)
    .optional(),
  /** Address ranges; a request matches when any address it reads or writes lies in one. */
  addresses: z.array(addressRange).min(1, 'list at least one range, or leave addresses out').max(1024).optional(),
  /** Only every Nth request that matched so far (1: each one). */
  every: z.number().int('every is a whole number').min(1, 'every is at least 1').max(MAX_FAULT_COUNT).optional(),
  /** The chance in 0..1 that a request hits the fault. */
  probability: z.number().min(0, 'a probability is from 0 to 1').max(1, 'a probability is from 0 to 1').optional(),
}

/** @example const s: ModbusFaultSelector = { functions: [3], every: 2 } */
export type ModbusFaultSelector = z.output<z.ZodObject<typeof selectorShape>>

/**
 * A number of seconds from 0 to `max`, with messages that name `what`.
 *
 * @example
 * faultSeconds('gap', 10).parse(0.05) // 0.05
 */
export const faultSeconds = (what: string, max: number) =>
  z
    .number({ error: `${what} is a number of seconds` })
    .min(0, `${what} is at least 0 seconds`)
    .max(max, `${what} is at most ${max} seconds`)

/**
 * `true` for an object with every key left out, `false` (or null) for the fault being off.
 *
 * @example
 * switchable(z.strictObject({ every: z.number().optional() })).parse(true) // {}
 */
export function switchable<T extends z.ZodType>(schema: T) {
  return z.preprocess((v) => (v === true ? {} : v === false || v === null ? undefined : v), schema.optional())
}

/**
 * Validates a faults value against `schema` (null means none), throwing a ValidationError (422)
 * that lists every problem with its path under `prefix`, e.g. `value.exception.code`. A fault
 * switched off (false, null) is left out rather than kept as undefined.
 *
 * @example
 * parseFaultsValue(schema, null, 'Modbus faults') // {}
 * parseFaultsValue(schema, { exception: { code: 0 } }, 'Modbus faults') // throws: value.exception.code: code is 1..255
 */
export function parseFaultsValue<T extends Record<string, unknown>>(schema: z.ZodType<T>, input: unknown, what: string, prefix = 'value'): T {
  if (input === null) return {} as T
  const result = schema.safeParse(input)
  if (result.success) {
    const data = result.data as Record<string, unknown>
    for (const key of Object.keys(data)) if (data[key] === undefined) delete data[key]
    return result.data
  }
  const at = (path: PropertyKey[]): string => [prefix, ...path.map(String)].filter((p) => p !== '').join('.')
  const details: ErrorDetail[] = result.error.issues.flatMap((issue) =>
    // One detail per unknown key, at the key itself, rather than one at the object around it.
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: at([...issue.path, key]), message: 'unknown key' }))
      : [{ path: at(issue.path), message: issueMessage(issue) }],
  )
  throw new ValidationError(summarize(what, details), details)
}
