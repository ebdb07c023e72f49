import { InternalError } from '../errors.js'
import type { KindDeclaration, KindRuntime, ProtocolContext, ProtocolKind } from './adapter.js'

/**
 * A protocol kind whose protocol code is imported on its first `load()`. The declaration (names,
 * schema, access checks) is at hand at once, so that models validate and the registry answers
 * without the protocol's library; `valueProblem`, `createContext` and `create` throw until the
 * kind is loaded, which the registry's `loadProtocolKinds` does for every kind a definition names
 * before anything needs them.
 *
 * @example
 * export const knxKind = lazyKind({ name: 'knx_ip', aliases: [], nodeType: 'KnxDevice', schema: knxSchema }, async () => {
 *   const { KnxAdapter, checkKnxValue } = await import('./adapter.js')
 *   return { createContext: () => ({ close: async () => undefined }), valueProblem: checkKnxValue, create: (o) => new KnxAdapter(o) }
 * })
 */
export function lazyKind<Settings, Context extends ProtocolContext>(
  declaration: KindDeclaration<Settings>,
  importRuntime: () => Promise<KindRuntime<Settings, Context>>,
): ProtocolKind<Settings, Context> {
  let runtime: KindRuntime<Settings, Context> | undefined
  let loading: Promise<void> | undefined
  const loaded = (): KindRuntime<Settings, Context> => {
    if (runtime) return runtime
    throw new InternalError(`The ${declaration.name} protocol's code is not loaded: loadProtocolKinds() runs before its adapters are checked or made`)
  }
  return {
    ...declaration,
    load() {
      // A failed import (a damaged installation) is tried again by the next definition that names the kind.
      loading ??= importRuntime().then(
        (r) => void (runtime = r),
        (err: unknown) => {
          loading = undefined
          throw err
        },
      )
      return loading
    },
    get loaded() {
      return runtime !== undefined
    },
    createContext: (opts) => loaded().createContext(opts),
    valueProblem: (settings, attr, value) => loaded().valueProblem(settings, attr, value),
    create: (opts) => loaded().create(opts),
  }
}
