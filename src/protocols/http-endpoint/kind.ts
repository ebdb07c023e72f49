import type { ProtocolKind } from '../adapter.js'
import { httpEndpointSchema, type HttpEndpointDefinition } from '../../definition/http-endpoint-schema.js'
import { HttpEndpointAdapter } from './adapter.js'
import { HttpEndpointHub } from './hub.js'

/**
 * The `http_endpoint` protocol kind: an HTTP server per instance answering JSON built from its
 * attributes (the reference product's HTTP adapter); the hub of servers is the shared context.
 *
 * @example
 * const hub = httpEndpointKind.createContext({ logger, security: {} })
 * const adapter = httpEndpointKind.create({ settings, accessor, logger, name: 'aq.http_endpoint', context: hub })
 */
export const httpEndpointKind: ProtocolKind<HttpEndpointDefinition, HttpEndpointHub> = {
  name: 'http_endpoint',
  aliases: [],
  nodeType: 'HttpEndpoint',
  schema: httpEndpointSchema,
  createContext: ({ logger, portHolder, security }) => new HttpEndpointHub({ logger, portHolder, loopbackOnly: security?.productKey === undefined }),
  valueProblem: () => null,
  create: ({ settings, accessor, logger, name, context }) => new HttpEndpointAdapter({ hub: context, definition: settings, accessor, logger, name }),
}
