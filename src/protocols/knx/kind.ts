import { lazyKind } from '../lazy-kind.js'
import type { ProtocolContext } from '../adapter.js'
import { knxSchema, type KnxDefinition } from '../../definition/knx-schema.js'

/**
 * The `knx_ip` protocol kind: a KNX device behind a KNXnet/IP tunnelling server, one tunnel per
 * instance. A client of the server, it holds no port of its own: the context has nothing to share.
 *
 * @example
 * await knxKind.load()
 * const adapter = knxKind.create({ settings, accessor, logger, name: 'room.knx_ip', context: knxKind.createContext({ logger }) })
 */
export const knxKind = lazyKind<KnxDefinition, ProtocolContext>({ name: 'knx_ip', aliases: [], nodeType: 'KnxDevice', schema: knxSchema }, async () => {
  const { KnxAdapter, checkKnxValue } = await import('./adapter.js')
  return {
    createContext: () => ({ close: async () => undefined }),
    valueProblem: checkKnxValue,
    create: ({ settings, accessor, logger, name, trace }) => new KnxAdapter({ definition: settings, accessor, logger, name, trace }),
  }
})
