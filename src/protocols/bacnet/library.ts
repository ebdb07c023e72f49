import bacnet from '@bacnet-js/client'

/**
 * @bacnet-js/client's client class. The package is CommonJS with its class as `exports.default`,
 * so an ES module's default import is the whole `exports` object; this takes the class from it.
 *
 * @example
 * const client = new BACnetClient({ transport })
 */
export const BACnetClient = bacnet.default
/** An instance of the client. @example let client: BACnetClient */
export type BACnetClient = InstanceType<typeof bacnet.default>
