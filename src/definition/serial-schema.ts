import { z } from 'zod'

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

/**
 * The fields of the settings, to spread into an adapter's own strict object (the keys sit beside
 * the adapter's other keys). `device` is optional here: an adapter requires it when its transport
 * is `serial` (see `serialDeviceIssue`).
 *
 * @example
 * z.strictObject({ transport: z.enum(['tcp', 'serial']), ...serialSettingsShape })
 */
export const serialSettingsShape = {
  /** The serial device: /dev/ttyUSB0, /dev/ttyS1, a pseudo-terminal such as /dev/pts/3, or COM3 on Windows. */
  device: z.string().min(1, 'device names the serial port, e.g. /dev/ttyUSB0').max(4096).optional(),
  /** Bits per second. */
  baudrate: z
    .number()
    .int('baudrate is a whole number')
    .min(50, 'baudrate is at least 50')
    .max(4_000_000, 'baudrate is at most 4000000')
    .default(SERIAL_DEFAULTS.baudrate),
  parity: z.enum(SERIAL_PARITIES).default(SERIAL_DEFAULTS.parity),
  stopbits: z.union([z.literal(1), z.literal(2)], { error: 'stopbits is 1 or 2' }).default(SERIAL_DEFAULTS.stopbits),
  bytesize: z.union([z.literal(7), z.literal(8)], { error: 'bytesize is 7 or 8' }).default(SERIAL_DEFAULTS.bytesize),
}

/**
 * The settings on their own, strict, with `device` required.
 *
 * @example
 * serialSettingsSchema.safeParse({ device: '/dev/ttyS0', parity: 'mark' }).success // false
 */
export const serialSettingsSchema = z.strictObject({ ...serialSettingsShape, device: z.string().min(1).max(4096) })

/** Settings after validation. @example const s: SerialSettings = { device: '/dev/ttyS0', baudrate: 9600, parity: 'none', stopbits: 1, bytesize: 8 } */
export type SerialSettings = z.output<typeof serialSettingsSchema>

/**
 * The issue for a definition whose transport is `serial` and names no device, or that names serial
 * settings with another transport; null when it is fine. For a superRefine.
 *
 * @example
 * serialDeviceIssue({ transport: 'serial' }) // { path: ['device'], message: 'transport serial needs a device, e.g. /dev/ttyUSB0' }
 */
export function serialDeviceIssue(definition: { transport: string; device?: string | undefined }): { path: string[]; message: string } | null {
  if (definition.transport === 'serial' && definition.device === undefined) {
    return { path: ['device'], message: 'transport serial needs a device, e.g. /dev/ttyUSB0' }
  }
  if (definition.transport !== 'serial' && definition.device !== undefined) {
    return { path: ['device'], message: `device applies to transport serial, not ${definition.transport}` }
  }
  return null
}
