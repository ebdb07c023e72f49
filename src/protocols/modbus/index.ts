/**
 * Modbus TCP for Mimic: the `modbus_slave` definition schema, the codec, value encoding, register
 * maps, the shared listeners (hub) and the per-instance adapter.
 *
 * @example
 * import { ModbusHub, ModbusSlaveAdapter, parseModbusSlave } from './protocols/modbus/index.js'
 * const hub = new ModbusHub({ logger })
 * const adapter = new ModbusSlaveAdapter({ hub, logger, accessor, definition: parseModbusSlave(raw) })
 * await adapter.start()
 */
export { BIT_GROUPS, MODBUS_GROUPS, MODBUS_ORDERS, MODBUS_TYPES, TYPE_WIDTH, addressRange, modbusSlaveSchema, parseModbusSlave } from './schema.js'
export type { ModbusGroup, ModbusMappingEntry, ModbusOrder, ModbusSlaveDefinition, ModbusType } from './schema.js'
export {
  EXCEPTION_CODES,
  FUNCTION_CODES,
  LIMITS,
  MAX_ADU_LENGTH,
  MBAP_LENGTH,
  decodeResponse,
  encodeRequest,
  headerProblem,
  parseRequest,
  readMbapHeader,
} from './codec.js'
export type { EncodeRequestOptions, ExceptionCode, MbapHeader, ModbusRequest, ModbusResponse, RejectedRequest } from './codec.js'
export { checkValue, decodeFrom, decodeWords, encodeInto, encodeWords, encodingSpec } from './encoding.js'
export type { EncodableEntry, EncodingSpec } from './encoding.js'
export { GroupTable, RegisterMap } from './register-map.js'
export type { CompiledEntry } from './register-map.js'
export type { ModbusUnit, ShapedAnswer, UnitAnswer } from './connection.js'
export type { ModbusFaultSelector } from '../../definition/modbus-faults-schema.js'
export {
  DEFAULT_SPLIT_GAP,
  MODBUS_CORRUPTIONS,
  MODBUS_FAULT_KINDS,
  corruption,
  defineFault,
  emptyFaultCounters,
  modbusFaultsSchema,
  parseModbusFaults,
  swapRegisterBytes,
  touches,
} from './faults/index.js'
export type { AnswerShape, FaultAction, FaultDecision, ModbusCorruption, ModbusFaultCounter, ModbusFaultKind, ModbusFaults } from './faults/index.js'
export { FaultPlan, seededRandom } from './faults/plan.js'
export { DEFAULT_CONNECTION_RULES, combineRules, rulesOf } from './connection-rules.js'
export type { ConnectionCloseReason, ConnectionRules } from './connection-rules.js'
export { ModbusHub } from './hub.js'
export type { ModbusHubOptions, ModbusListenerInfo, ModbusRegisterOptions, ModbusRegistration, ModbusTransport } from './hub.js'
export { ModbusSlaveAdapter, checkMappedValue } from './adapter.js'
export type { AttributeAccessor, ModbusFaultCounters, ModbusSlaveAdapterOptions, ModbusSlaveCounters, ModbusSlaveInfo, ModbusSlaveState } from './adapter.js'
export { modbusSlaveKind } from './kind.js'
