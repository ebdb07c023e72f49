import { lazyKind } from '../lazy-kind.js'
import { opcuaServerSchema, type OpcuaServerDefinition } from '../../definition/opcua-schema.js'
import type { OpcuaServers } from './servers.js'

/**
 * The `opcua_server` protocol kind: a folder per instance on OPC UA servers shared by port.
 *
 * @example
 * await opcuaServerKind.load()
 * const servers = opcuaServerKind.createContext({ logger })
 * const adapter = opcuaServerKind.create({ settings, accessor, logger, name: 'boiler.opcua_server', instance: 'boiler', context: servers })
 */
export const opcuaServerKind = lazyKind<OpcuaServerDefinition, OpcuaServers>(
  { name: 'opcua_server', aliases: [], nodeType: 'OpcuaServer', schema: opcuaServerSchema },
  async () => {
    const [{ OpcuaServerAdapter, checkServedValue }, { OpcuaServers }] = await Promise.all([import('./adapter.js'), import('./servers.js')])
    return {
      createContext: ({ logger, portHolder, security }) => new OpcuaServers({ logger, portHolder, security }),
      valueProblem: checkServedValue,
      create: ({ settings, accessor, logger, name, instance, context, trace }) =>
        new OpcuaServerAdapter({ definition: settings, accessor, logger, name, instance, servers: context, trace }),
    }
  },
)
