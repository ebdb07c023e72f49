import { lazyKind } from '../lazy-kind.js'
import type { ModbusHub } from './hub.js'
import { modbusSlaveSchema, type ModbusSlaveDefinition } from './schema.js'

/**
 * The `modbus_slave` protocol kind (alias `modbus_tcp`): Modbus TCP server units sharing
 * listeners through one hub per server.
 *
 * @example
 * await modbusSlaveKind.load()
 * const hub = modbusSlaveKind.createContext({ logger })
 * const adapter = modbusSlaveKind.create({ settings, accessor, logger, name: 'meter.modbus_slave', context: hub })
 */
export const modbusSlaveKind = lazyKind<ModbusSlaveDefinition, ModbusHub>(
  { name: 'modbus_slave', aliases: ['modbus_tcp'], nodeType: 'ModbusSlave', schema: modbusSlaveSchema },
  async () => {
    const [{ ModbusSlaveAdapter, checkMappedValue }, { ModbusHub }] = await Promise.all([import('./adapter.js'), import('./hub.js')])
    return {
      createContext: ({ logger, portHolder }) => new ModbusHub({ logger, portHolder }),
      valueProblem: checkMappedValue,
      create: ({ settings, accessor, logger, name, context, trace }) =>
        new ModbusSlaveAdapter({ hub: context, definition: settings, accessor, logger, name, trace }),
    }
  },
)
