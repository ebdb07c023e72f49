import { z } from 'zod'
import { modelDefinitionSchema } from '../definition/model-schema.js'
import { API_VERSION, SERVER_VERSION } from '../version.js'
import { DEFAULT_EVENTS_HZ, EVENTS_HZ_RANGE } from './events.js'
import { treePaths } from './openapi-tree.js'

const faultResponse = { description: 'Fault document (API.md section 6)', content: { 'application/json': { schema: { $ref: '#/components/schemas/Fault' } } } }
const faults = Object.fromEntries(['400', '401', '403', '404', '409', '415', '422', '500', '503', '504'].map((s) => [s, faultResponse]))
const json = (ref: string, description: string) => ({ description, content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } } })

/**
 * The OpenAPI 3.1 document of the HTTP API. The tree's paths are concrete per kind of node
 * (openapi-tree.ts), so that Swagger UI's "Try it out" works for each; the model definition schema
 * comes straight from the zod schema the server validates with, so the docs cannot drift from the code.
 *
 * @example
 * const doc = buildOpenApi(); doc.info.version // server version
 */
export function buildOpenApi(): Record<string, unknown> & { info: { title: string; version: string; description: string } } {
  const modelSchema = z.toJSONSchema(modelDefinitionSchema, { unrepresentable: 'any', io: 'input' })
  delete (modelSchema as Record<string, unknown>).$schema
  return {
    openapi: '3.1.0',
    info: {
      title: 'Mimic HTTP API',
      version: SERVER_VERSION,
      description: `Mimic device-simulation server, API ${API_VERSION}. Everything lives in one component tree under /api/v3/system; every /api/v3 request carries \`Authorization: Bearer <product key>\`.`,
    },
    components: {
      securitySchemes: { productKey: { type: 'http', scheme: 'bearer', description: 'The server product key (--product-key / MIMIC_PRODUCT_KEY)' } },
      schemas: {
        ModelDefinition: modelSchema,
        NodeDocument: {
          type: 'object',
          required: ['name', 'type', 'path', 'attr', 'children'],
          properties: {
            name: { type: 'string' },
            type: { type: 'string' },
            path: { type: 'string' },
            state: { type: 'string', enum: ['INITIALIZED', 'PREPARED', 'RUNNING', 'STOPPED', 'ERROR'] },
            attr: { type: 'object', additionalProperties: { type: 'object', properties: { value: {} } } },
            children: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } } } },
            methods: { type: 'array', items: { type: 'string' } },
          },
          additionalProperties: true,
        },
        Value: { type: 'object', required: ['value'], properties: { value: {} } },
        SystemDefinition: {
          type: 'object',
          description: 'A whole system: what a snapshot holds and a --system file holds; loads as it is',
          required: ['models', 'instances', 'connections'],
          properties: {
            models: { type: 'object', additionalProperties: { $ref: '#/components/schemas/ModelDefinition' } },
            instances: {
              type: 'array',
              description: 'Single-entry maps {"<instance>": "<model>"} or {"<instance>": {"type", "parameters", "init_parameters"}}',
              items: { type: 'object', minProperties: 1, maxProperties: 1 },
            },
            connections: {
              type: 'object',
              additionalProperties: {
                type: 'object',
                required: ['from', 'to'],
                properties: { from: { type: 'string' }, to: { type: 'string' }, enabled: { type: 'boolean' } },
              },
            },
          },
        },
        CallBody: { type: 'object', properties: { kwargs: { type: 'object' }, args: { type: 'array' } } },
        CallResult: { type: 'object', required: ['result'], properties: { result: {} } },
        Deleted: { type: 'object', properties: { detail: { type: 'string' }, destroyed: { type: 'boolean' }, removed_from_parent: { type: 'boolean' } } },
        Fault: {
          type: 'object',
          required: ['type', 'event', 'http_status', 'error', 'correlation_id'],
          properties: {
            type: { const: 'fault' },
            event: { type: 'string' },
            http_status: { type: 'integer' },
            action: { type: 'string' },
            component: { type: ['object', 'null'], properties: { name: { type: 'string' }, path: { type: 'string' }, state: { type: ['string', 'null'] } } },
            correlation_id: { type: 'string' },
            when: { type: 'string', format: 'date-time' },
            error: {
              type: 'object',
              properties: {
                type: { type: 'string' },
                message: { type: 'string' },
                details: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } } },
              },
            },
          },
        },
      },
    },
    paths: {
      '/': {
        get: { summary: 'Server identity and API versions', responses: { 200: { description: 'message, server_version, api_version, supported_versions' } } },
      },
      '/health': {
        get: {
          summary: 'Health: status "ok" when the server can serve requests',
          responses: { 200: { description: 'status, server_version, api_version, uptime_s, instances, http (connections and refusals counted)' } },
        },
      },
      ...treePaths({ faults, json }),
      '/api/v3/system/definition': {
        get: {
          summary:
            'The whole current structure as a system definition (read-only root property `definition`, also `definition_snapshot` and `/attr/definition`): models as given, instances with their parameters, connections; loadable as it is',
          security: [{ productKey: [] }],
          responses: {
            200: {
              description: '{"value": SystemDefinition}',
              content: {
                'application/json': {
                  schema: { type: 'object', required: ['value'], properties: { value: { $ref: '#/components/schemas/SystemDefinition' } } },
                },
              },
            },
            ...faults,
          },
        },
      },
      '/api/v3/system/method/reload': {
        post: {
          summary:
            'Read the --system file again and replace the whole structure with it, as a snapshot load does. 422 (every problem with path and line:column, system untouched) for a bad file; 409 when the server was started without --system',
          security: [{ productKey: [] }],
          requestBody: { required: false, content: { 'application/json': { schema: { $ref: '#/components/schemas/CallBody' } } } },
          responses: {
            200: {
              description: '{"result": {"file", "loaded": true, "models", "instances", "connections"}}',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/CallResult' } } },
            },
            ...faults,
          },
        },
      },
      '/api/v3/events': {
        get: {
          summary:
            'Server-sent events (text/event-stream): `structure` when instances, attributes or connections change, `frame` with the values that changed since the last frame, `log` lines when asked for. See docs/events.md',
          security: [{ productKey: [] }],
          parameters: [
            {
              name: 'hz',
              in: 'query',
              required: false,
              description: `Frames per second, ${EVENTS_HZ_RANGE.min} to ${EVENTS_HZ_RANGE.max}`,
              schema: { type: 'integer', minimum: EVENTS_HZ_RANGE.min, maximum: EVENTS_HZ_RANGE.max, default: DEFAULT_EVENTS_HZ },
            },
            { name: 'instances', in: 'query', required: false, description: 'Only these instances, comma-separated', schema: { type: 'string' } },
            { name: 'logs', in: 'query', required: false, description: 'Also send log lines of this level and above', schema: { type: 'string' } },
          ],
          responses: { 200: { description: 'An event stream that stays open', content: { 'text/event-stream': { schema: { type: 'string' } } } }, ...faults },
        },
      },
      '/mcp': {
        post: {
          summary:
            'Model Context Protocol over Streamable HTTP: JSON-RPC 2.0 messages (initialize, tools/list, tools/call). Same key as the API; writes only with --mcp-allow-write. See docs/mcp.md',
          security: [{ productKey: [] }],
          requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['jsonrpc', 'method'] } } } },
          responses: { 200: { description: 'A JSON-RPC answer (application/json or text/event-stream)' }, ...faults },
        },
        get: {
          summary: 'Not used: 405 (the server opens no stream of its own)',
          security: [{ productKey: [] }],
          responses: { 405: { description: 'Method not allowed' } },
        },
        delete: { summary: 'Not used: 405 (no session to end)', security: [{ productKey: [] }], responses: { 405: { description: 'Method not allowed' } } },
      },
      '/metrics': {
        get: {
          summary:
            'Mimic in the Prometheus text format: HTTP requests, steps and step time, adapter requests, errors and injected faults, Python workers, the process. Asks for the product key as the API does (--metrics auth), or not (open); see docs/metrics.md',
          security: [{ productKey: [] }],
          responses: { 200: { description: 'Prometheus text exposition format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } }, ...faults },
        },
      },
      '/system/reload': {
        post: {
          summary:
            'The admin form of POST /api/v3/system/method/reload_modules: loads the Python modules of the extension directories again and rebinds the instances that use them',
          security: [{ productKey: [] }],
          requestBody: { required: false, content: { 'application/json': { schema: { $ref: '#/components/schemas/CallBody' } } } },
          responses: { 200: json('CallResult', '{"result": {"reloaded", "files", "directories"}}'), ...faults },
        },
      },
    },
  }
}
