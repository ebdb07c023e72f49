/**
 * OCPP 1.6J for Mimic: the `ocpp` adapter as a charge point or a central system.
 *
 * @example
 * import { ocppKind } from './protocols/ocpp/index.js'
 */
export { OcppAdapter } from './adapter.js'
export type { OcppAdapterOptions } from './adapter.js'
export { OcppContext } from './context.js'
export { boundFields, fillPayload, fitValue, templateAttribute } from './payload.js'
export { ocppKind } from './kind.js'
export * from '../../definition/ocpp-schema.js'
