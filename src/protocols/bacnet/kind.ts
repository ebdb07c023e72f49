import { lazyKind } from '../lazy-kind.js'
import { bacnetSchema, type BacnetDefinition } from '../../definition/bacnet-schema.js'
import type { BacnetDevices } from './devices.js'

/**
 * The `bacnet` protocol kind: a BACnet/IP device per instance, each on its own UDP port.
 *
 * @example
 * await bacnetKind.load()
 * const devices = bacnetKind.createContext({ logger })
 * const adapter = bacnetKind.create({ settings, accessor, logger, name: 'panel.bacnet', instance: 'panel', context: devices })
 */
export const bacnetKind = lazyKind<BacnetDefinition, BacnetDevices>(
  { name: 'bacnet', aliases: [], nodeType: 'BacnetDevice', schema: bacnetSchema },
  async () => {
    const [{ BacnetAdapter, checkBacnetValue }, { BacnetDevices }] = await Promise.all([import('./adapter.js'), import('./devices.js')])
    return {
      createContext: ({ logger, portHolder }) => new BacnetDevices({ logger, portHolder }),
      valueProblem: checkBacnetValue,
      create: ({ settings, accessor, logger, name, instance, context, trace }) =>
        new BacnetAdapter({ definition: settings, accessor, logger, name, ...(instance !== undefined ? { instance } : {}), devices: context, trace }),
    }
  },
)
