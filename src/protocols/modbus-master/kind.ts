import { lazyKind } from '../lazy-kind.js'
import type { ProtocolContext } from '../adapter.js'
import { modbusMasterSchema, type ModbusMasterDefinition } from '../../definition/modbus-master-schema.js'

/**
 * The `modbus_master` protocol kind: the instance polls Modbus devices as a client. Its adapters
 * share nothing (each holds its own connections), so the context only has to close.
 *
 * @example
 * await modbusMasterKind.load()
 * const adapter = modbusMasterKind.create({ settings, accessor, logger, name: 'plc.modbus_master', context: modbusMasterKind.createContext({ logger }) })
 */
export const modbusMasterKind = lazyKind<ModbusMasterDefinition, ProtocolContext>(
  { name: 'modbus_master', aliases: [], nodeType: 'ModbusMaster', schema: modbusMasterSchema },
  async () => {
    const { ModbusMasterAdapter, checkBoundValue } = await import('./adapter.js')
    return {
      createContext: () => ({ close: async () => {} }),
      valueProblem: checkBoundValue,
      create: ({ settings, accessor, logger, name, trace }) => new ModbusMasterAdapter({ definition: settings, accessor, logger, name, trace }),
    }
  },
)
