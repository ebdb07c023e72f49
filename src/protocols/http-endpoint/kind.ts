import { lazyKind } from '../lazy-kind.js'
import { httpEndpointSchema, type HttpEndpointDefinition } from '../../definition/http-endpoint-schema.js'
import type { HttpEndpointHub } from './hub.js'

/**
 * The `http_endpoint` protocol kind: an HTTP server per instance answering JSON built from its
 * attributes (the reference product's HTTP adapter); the hub of servers is the shared context.
 *
 * @example
 * await httpEndpointKind.load()
 * const hub = httpEndpointKind.createContext({ logger, security: {} })
 * const adapter = httpEndpointKind.create({ settings, accessor, logger, name: 'aq.http_endpoint', context: hub })
 */
export const httpEndpointKind = lazyKind<HttpEndpointDefinition, HttpEndpointHub>(
  { name: 'http_endpoint', aliases: [], nodeType: 'HttpEndpoint', schema: httpEndpointSchema },
  async () => {
    const [{ HttpEndpointAdapter }, { HttpEndpointHub }] = await Promise.all([import('./adapter.js'), import('./hub.js')])
    return {
      createContext: ({ logger, portHolder, security }) => new HttpEndpointHub({ logger, portHolder, loopbackOnly: security?.productKey === undefined }),
      valueProblem: () => null,
      create: ({ settings, accessor, logger, name, context, trace }) =>
        new HttpEndpointAdapter({ hub: context, definition: settings, accessor, logger, name, trace }),
    }
  },
)
