import { issueMessage } from './zod-issue.js'
import { z } from 'zod'
import { ValidationError, summarize } from '../errors.js'
import type { ErrorDetail } from '../errors.js'

/**
 * The value of a Modbus adapter's `faults` property: what the adapter does wrong on purpose, so
 * that a client's unhappy paths can be tested on demand. Every key is optional; `{}` (or null)
 * means normal service. The schema lives in the definition layer, so that a scenario can check a
 * faults value it will set later without loading protocol code.
 *
 * Faults that act on single requests (`response_delay` in its object form, `exception`,
 * `no_response`, `corrupt`, `split_frames`) may narrow the requests they hit with the same four
 * keys, applied in this order: `functions` (function codes), `addresses` (ranges the request
 * touches), `every` (only every Nth request left), `probability` (each of those with this chance).
 *
 * @example
 * const faults = parseModbusFaults({ exception: { code: 6, functions: [3], addresses: [[0, 9]] }, clear_after: { requests: 2 } })
 * faults.exception?.code // 6
 */

const MAX_ADDRESS = 65535
const MAX_COUNT = 1_000_000_000

const address = z.number({ error: 'an address is a number from 0 to 65535' }).int('an address is an integer').min(0).max(MAX_ADDRESS)
const addressRange = z
  .union([address, z.tuple([address, address])], { error: 'an address range is an address or a pair [first, last]' })
  .refine((r) => typeof r === 'number' || r[0] <= r[1], 'the first address of a range is after the last')

/** The keys that narrow which requests a fault hits. */
const selectorShape = {
  /** Function codes the fault applies to (all when omitted). */
  functions: z
    .array(z.number().int('a function code is an integer').min(1).max(127, 'a function code is 1..127'))
    .min(1, 'list at least one function code, or leave functions out')
    .max(127)
    .optional(),
  /** Address ranges; a request matches when any address it reads or writes lies in one. */
  addresses: z.array(addressRange).min(1, 'list at least one range, or leave addresses out').max(1024).optional(),
  /** Only every Nth request that matched so far (1: each one). */
  every: z.number().int('every is a whole number').min(1, 'every is at least 1').max(MAX_COUNT).optional(),
  /** The chance in 0..1 that a request hits the fault. */
  probability: z.number().min(0, 'a probability is from 0 to 1').max(1, 'a probability is from 0 to 1').optional(),
}

const seconds = (what: string, max: number) =>
  z
    .number({ error: `${what} is a number of seconds` })
    .min(0, `${what} is at least 0 seconds`)
    .max(max, `${what} is at most ${max} seconds`)

/** `true` for an object with every key left out, `false` (or null) for the fault being off. */
function switchable<T extends z.ZodType>(schema: T) {
  return z.preprocess((v) => (v === true ? {} : v === false || v === null ? undefined : v), schema.optional())
}

const delaySchema = z.preprocess(
  (v) => (typeof v === 'number' ? { seconds: v } : v),
  z.strictObject(
    {
      seconds: seconds('response_delay', 3600),
      /** Adds a random 0..jitter seconds to each delay. */
      jitter: seconds('jitter', 3600).optional(),
      ...selectorShape,
    },
    { error: 'response_delay is seconds, or {seconds, jitter}' },
  ),
)

const exceptionSchema = z.strictObject(
  {
    code: z.number({ error: 'code is an exception code, 1..255' }).int('code is a whole number').min(1, 'code is 1..255').max(255, 'code is 1..255'),
    ...selectorShape,
  },
  { error: 'exception is an object {code, functions, addresses, every, probability}' },
)

const noResponseSchema = z.strictObject(selectorShape, { error: 'no_response is true, or an object {every, probability, functions, addresses}' })

/** What `corrupt` does to an answer. */
export const MODBUS_CORRUPTIONS = ['transaction_id', 'length', 'junk'] as const
/** @example const kind: ModbusCorruption = 'junk' */
export type ModbusCorruption = (typeof MODBUS_CORRUPTIONS)[number]

const corruptSchema = z.strictObject(
  {
    kind: z.enum(MODBUS_CORRUPTIONS, { error: `kind is one of ${MODBUS_CORRUPTIONS.join(', ')}` }),
    ...selectorShape,
  },
  { error: 'corrupt is an object {kind, functions, addresses, every, probability}' },
)

const splitSchema = z.strictObject(
  {
    /** Pieces each answer is cut into (a piece is at least one byte). */
    parts: z.number().int('parts is a whole number').min(2, 'parts is 2..64').max(64, 'parts is 2..64').optional(),
    /** Seconds between two pieces. */
    gap: seconds('gap', 10).optional(),
    ...selectorShape,
  },
  { error: 'split_frames is true, or an object {parts, gap, functions, addresses, every, probability}' },
)

const disconnectSchema = z.strictObject(
  {
    /** Requests answered before every connection is closed; 0 closes them now. */
    after: z.number().int('after is a whole number of requests').min(0, 'after is at least 0').max(MAX_COUNT).optional(),
  },
  { error: 'disconnect is true, or an object {after}' },
)

const clearAfterSchema = z
  .strictObject(
    {
      requests: z.number().int('requests is a whole number').min(1, 'requests is at least 1').max(MAX_COUNT).optional(),
      seconds: z.number().gt(0, 'seconds is more than 0').max(86_400, 'seconds is at most 86400 (one day)').optional(),
    },
    { error: 'clear_after is an object {requests, seconds}' },
  )
  .refine((c) => c.requests !== undefined || c.seconds !== undefined, 'give requests, seconds or both')

/**
 * The faults value, strict: unknown keys are errors.
 *
 * @example
 * modbusFaultsSchema.safeParse({ no_response: { every: 0 } }).success // false: every is at least 1
 */
export const modbusFaultsSchema = z.strictObject(
  {
    response_delay: delaySchema.optional(),
    exception: exceptionSchema.optional(),
    no_response: switchable(noResponseSchema),
    corrupt: corruptSchema.optional(),
    split_frames: switchable(splitSchema),
    disconnect: switchable(disconnectSchema),
    clear_after: clearAfterSchema.optional(),
    /** Seeds the random choices (probability, jitter, junk bytes), so a run can be repeated. */
    seed: z.number().int('seed is a whole number').min(0, 'seed is 0..4294967295').max(0xffffffff, 'seed is 0..4294967295').optional(),
  },
  { error: 'faults is an object (or {} / null for none)' },
)

/**
 * A faults value after validation: booleans turned into objects (`true` into `{}`), a number
 * `response_delay` into `{seconds}`, switched-off faults left out.
 *
 * @example
 * const f: ModbusFaults = parseModbusFaults({ split_frames: true }) // { split_frames: {} }
 */
export type ModbusFaults = z.output<typeof modbusFaultsSchema>
/** @example const s: ModbusFaultSelector = { functions: [3], every: 2 } */
export type ModbusFaultSelector = z.output<z.ZodObject<typeof selectorShape>>

/**
 * Validates a faults value (null means none), throwing a ValidationError (422) that lists every
 * problem with its path under `prefix`, e.g. `value.exception.code`.
 *
 * @example
 * parseModbusFaults(null) // {}
 * parseModbusFaults({ exception: { code: 0 } }) // throws: value.exception.code: code is 1..255
 */
export function parseModbusFaults(input: unknown, prefix = 'value'): ModbusFaults {
  if (input === null) return {}
  const result = modbusFaultsSchema.safeParse(input)
  if (result.success) {
    // A fault switched off (false, null) is left out rather than kept as undefined.
    for (const key of Object.keys(result.data) as Array<keyof ModbusFaults>) if (result.data[key] === undefined) delete result.data[key]
    return result.data
  }
  const at = (path: PropertyKey[]): string => [prefix, ...path.map(String)].filter((p) => p !== '').join('.')
  const details: ErrorDetail[] = result.error.issues.flatMap((issue) =>
    // One detail per unknown key, at the key itself, rather than one at the object around it.
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: at([...issue.path, key]), message: 'unknown key' }))
      : [{ path: at(issue.path), message: issueMessage(issue) }],
  )
  throw new ValidationError(summarize('Modbus faults', details), details)
}
