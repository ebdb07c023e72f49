import { z } from 'zod'
import { ValidationError } from '../errors.js'

/**
 * The settings of a serial line, as the adapters that talk over one declare them next to their
 * other keys (`transport: serial` on `modbus_slave`, `ascii` and `modbus_master`): the device and
 * its character format. The defaults are the common 9600 baud, 8 data bits, no parity, 1 stop bit
 * ("9600 8N1"). The schema lives here, with the other definition schemas, so that validating a
 * model never reaches up into the protocol code; src/protocols/serial/port.ts opens the line.
 *
 * @example
 * const line = serialSettingsSchema.parse({ device: '/dev/ttyUSB0' })
 * line.baudrate // 9600
 */

/** Parities a line may use. @example SERIAL_PARITIES.includes('even') // true */
export const SERIAL_PARITIES = ['none', 'even', 'odd'] as const
/** @example const p: SerialParity = 'none' */
export type SerialParity = (typeof SERIAL_PARITIES)[number]

/** What a definition gets for the line settings it omits. @example SERIAL_DEFAULTS.baudrate // 9600 */
export const SERIAL_DEFAULTS = { baudrate: 9600, parity: 'none', stopbits: 1, bytesize: 8 } as const

const baudrate = z.number().int('baudrate is a whole number').min(50, 'baudrate is at least 50').max(4_000_000, 'baudrate is at most 4000000')
const parity = z.enum(SERIAL_PARITIES)
const stopbits = z.union([z.literal(1), z.literal(2)], { error: 'stopbits is 1 or 2' })
const bytesize = z.union([z.literal(7), z.literal(8)], { error: 'bytesize is 7 or 8' })
const device = z.string().min(1, 'device names the serial port, e.g. /dev/ttyUSB0').max(4096)

/**
 * The fields of the settings, to spread into an adapter's own strict object (the keys sit beside
 * the adapter's other keys). All optional and without defaults, so that a definition of another
 * transport parses as it did: `serialSettingsOf` fills the defaults, and an adapter requires
 * `device` when its transport is `serial` (see `serialDeviceIssue`).
 *
 * @example
 * z.strictObject({ transport: z.enum(['tcp', 'serial']), ...serialSettingsShape })
 */
export const serialSettingsShape = {
  /** The serial device: /dev/ttyUSB0, /dev/ttyS1, a pseudo-terminal such as /dev/pts/3, or COM3 on Windows. */
  device: device.optional(),
  /** Bits per second; default 9600. */
  baudrate: baudrate.optional(),
  /** Default none. */
  parity: parity.optional(),
  /** Default 1. */
  stopbits: stopbits.optional(),
  /** Data bits per character; default 8. */
  bytesize: bytesize.optional(),
}

/**
 * The settings on their own, strict, with `device` required and the defaults filled.
 *
 * @example
 * serialSettingsSchema.safeParse({ device: '/dev/ttyS0', parity: 'mark' }).success // false
 */
export const serialSettingsSchema = z.strictObject({
  device,
  baudrate: baudrate.default(SERIAL_DEFAULTS.baudrate),
  parity: parity.default(SERIAL_DEFAULTS.parity),
  stopbits: stopbits.default(SERIAL_DEFAULTS.stopbits),
  bytesize: bytesize.default(SERIAL_DEFAULTS.bytesize),
})

/** Settings after validation. @example const s: SerialSettings = { device: '/dev/ttyS0', baudrate: 9600, parity: 'none', stopbits: 1, bytesize: 8 } */
export type SerialSettings = z.output<typeof serialSettingsSchema>

/**
 * The settings of a definition that spread `serialSettingsShape`, with the defaults filled.
 * Throws when it names no device (the definition's schema reports that first).
 *
 * @example
 * serialSettingsOf({ device: '/dev/ttyS0', parity: 'even' }) // { device: '/dev/ttyS0', baudrate: 9600, parity: 'even', stopbits: 1, bytesize: 8 }
 */
export function serialSettingsOf(definition: {
  device?: string | undefined
  baudrate?: number | undefined
  parity?: SerialParity | undefined
  stopbits?: 1 | 2 | undefined
  bytesize?: 7 | 8 | undefined
}): SerialSettings {
  if (definition.device === undefined)
    throw new ValidationError('a serial line needs a device', [{ path: 'device', message: 'transport serial needs a device, e.g. /dev/ttyUSB0' }])
  return {
    device: definition.device,
    baudrate: definition.baudrate ?? SERIAL_DEFAULTS.baudrate,
    parity: definition.parity ?? SERIAL_DEFAULTS.parity,
    stopbits: definition.stopbits ?? SERIAL_DEFAULTS.stopbits,
    bytesize: definition.bytesize ?? SERIAL_DEFAULTS.bytesize,
  }
}

/**
 * The issue for a definition whose transport is `serial` and names no device, or that names a serial
 * setting with another transport; null when it is fine. For a superRefine.
 *
 * @example
 * serialDeviceIssue({ transport: 'serial' }) // { path: ['device'], message: 'transport serial needs a device, e.g. /dev/ttyUSB0' }
 */
export function serialDeviceIssue(
  definition: { transport: string; device?: string | undefined } & Record<string, unknown>,
): { path: string[]; message: string } | null {
  if (definition.transport === 'serial' && definition.device === undefined) {
    return { path: ['device'], message: 'transport serial needs a device, e.g. /dev/ttyUSB0' }
  }
  if (definition.transport !== 'serial') {
    const named = SERIAL_KEYS.find((key) => definition[key] !== undefined)
    if (named !== undefined) return { path: [named], message: `${named} applies to transport serial, not ${definition.transport}` }
  }
  return null
}

const SERIAL_KEYS = ['device', 'baudrate', 'parity', 'stopbits', 'bytesize'] as const
