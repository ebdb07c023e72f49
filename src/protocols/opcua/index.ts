/**
 * OPC UA for Mimic: the `opcua_server` adapter (a folder per instance), the servers shared by
 * port, and the value conversions between attributes and variants.
 *
 * @example
 * import { opcuaServerKind } from './protocols/opcua/index.js'
 */
export { OpcuaServerAdapter, checkServedValue } from './adapter.js'
export type { OpcuaServerAdapterOptions } from './adapter.js'
export { OpcuaServers } from './servers.js'
export type { EndpointLease } from './servers.js'
export { DATA_TYPE_IDS, defaultDataType, fromVariantValue, toVariantValue } from './data-types.js'
export type { Conversion } from './data-types.js'
export { opcuaServerKind } from './kind.js'
export * from '../../definition/opcua-schema.js'
