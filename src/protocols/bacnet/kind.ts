import type { ProtocolKind } from '../adapter.js'
import { bacnetSchema, type BacnetDefinition } from '../../definition/bacnet-schema.js'
import { BacnetAdapter, checkBacnetValue } from './adapter.js'
import { BacnetDevices } from './devices.js'

/**
 * The `bacnet` protocol kind: a BACnet/IP device per instance, each on its own UDP port.
 *
 * @example
 * const devices = bacnetKind.createContext({ logger })
 * const adapter = bacnetKind.create({ settings, accessor, logger, name: 'panel.bacnet', instance: 'panel', context: devices })
 */
export const bacnetKind: ProtocolKind<BacnetDefinition, BacnetDevices> = {
  name: 'bacnet',
  aliases: [],
  nodeType: 'BacnetDevice',
  schema: bacnetSchema,
  createContext: ({ logger, portHolder }) => new BacnetDevices({ logger, portHolder }),
  valueProblem: checkBacnetValue,
  create: ({ settings, accessor, logger, name, instance, context }) =>
    new BacnetAdapter({ definition: settings, accessor, logger, name, ...(instance !== undefined ? { instance } : {}), devices: context }),
}
