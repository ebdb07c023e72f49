import { lazyKind } from '../lazy-kind.js'
import { ocppSchema, type OcppDefinition } from '../../definition/ocpp-schema.js'
import type { OcppContext } from './context.js'

/**
 * The `ocpp` protocol kind: OCPP 1.6J over WebSocket, as a charge point or a central system.
 * The context records the central systems' ports.
 *
 * @example
 * await ocppKind.load()
 * const context = ocppKind.createContext({ logger })
 * const adapter = ocppKind.create({ settings, accessor, logger, name: 'evse.ocpp', instance: 'evse', context })
 */
export const ocppKind = lazyKind<OcppDefinition, OcppContext>({ name: 'ocpp', aliases: [], nodeType: 'OcppAdapter', schema: ocppSchema }, async () => {
  const [{ OcppAdapter }, { OcppContext }] = await Promise.all([import('./adapter.js'), import('./context.js')])
  return {
    createContext: ({ portHolder }) => new OcppContext({ portHolder }),
    valueProblem: () => null,
    create: ({ settings, accessor, logger, name, instance, context, subject, trace }) =>
      new OcppAdapter({ definition: settings, accessor, logger, name, instance, context, model: subject?.model, trace }),
  }
})
