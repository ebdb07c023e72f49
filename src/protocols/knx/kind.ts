import type { ProtocolContext, ProtocolKind } from '../adapter.js'
import { knxSchema, type KnxDefinition } from '../../definition/knx-schema.js'
import { KnxAdapter, checkKnxValue } from './adapter.js'

/**
 * The `knx_ip` protocol kind: a KNX device behind a KNXnet/IP tunnelling server, one tunnel per
 * instance. A client of the server, it holds no port of its own: the context has nothing to share.
 *
 * @example
 * const adapter = knxKind.create({ settings, accessor, logger, name: 'room.knx_ip', context: knxKind.createContext({ logger }) })
 */
export const knxKind: ProtocolKind<KnxDefinition, ProtocolContext> = {
  name: 'knx_ip',
  aliases: [],
  nodeType: 'KnxDevice',
  schema: knxSchema,
  createContext: () => ({ close: async () => undefined }),
  valueProblem: checkKnxValue,
  create: ({ settings, accessor, logger, name }) => new KnxAdapter({ definition: settings, accessor, logger, name }),
}
