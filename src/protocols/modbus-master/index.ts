/**
 * Modbus master for Mimic: an instance that polls Modbus devices (TCP or RTU over TCP) and mirrors
 * their registers into its attributes. See docs/modbus-master.md.
 *
 * @example
 * import { ModbusMasterAdapter } from './protocols/modbus-master/index.js'
 */
export { ModbusMasterAdapter, checkBoundValue, failedInterval } from './adapter.js'
export type { ModbusMasterAdapterOptions, ModbusMasterCounters, ModbusMasterState } from './adapter.js'
export { ModbusLink } from './link.js'
export { modbusMasterKind } from './kind.js'
