import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { connect } from '../client/index.js'
import { BadRequestError, UnauthorizedError } from '../errors.js'
import type { createMcpServer } from '../mcp/index.js'
import { bearerCheck } from './auth.js'

/** Options of the `/mcp` endpoint. */
export interface McpRouteOptions {
  /** The server's product key: `/mcp` asks for it like `/api/v3` does. */
  productKey?: string | undefined
  /** Whether MCP tools may change the system (`--mcp-allow-write`). */
  allowWrite: boolean
}

/**
 * Registers `/mcp`: the MCP server over Streamable HTTP, stateless (each POST carries its own
 * JSON-RPC messages and gets a JSON answer; no session to keep). The tools drive this server
 * through the TypeScript client, whose requests are answered in-process (`app.inject`), so they
 * take the same path, checks and faults as any client's.
 *
 * @example
 * registerMcp(app, { productKey: 'k', allowWrite: false })
 * // an MCP client: new StreamableHTTPClientTransport(new URL('http://127.0.0.1:8000/mcp'), { requestInit: { headers: { authorization: 'Bearer k' } } })
 */
export function registerMcp(app: FastifyInstance, options: McpRouteOptions): void {
  const authorized = bearerCheck(options.productKey)
  const client = connect({ address: 'http://127.0.0.1', productKey: options.productKey, fetch: injectFetch(app) })

  const handle = async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (!authorized(req.headers.authorization)) throw new UnauthorizedError()
    if (req.method !== 'POST') {
      // Stateless: nothing to stream to (GET) or end (DELETE) between requests.
      void reply
        .status(405)
        .header('allow', 'POST')
        .send({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: POST JSON-RPC messages to /mcp' }, id: null })
      return
    }
    if (req.body === undefined) throw new BadRequestError('POST /mcp needs a JSON-RPC message as its body')
    const { StreamableHTTPServerTransport, createMcpServer } = await loadMcp()
    const server = createMcpServer({ client, allowWrite: options.allowWrite })
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    reply.hijack()
    reply.raw.on('close', () => {
      void transport.close()
      void server.close()
    })
    await server.connect(transport)
    await transport.handleRequest(req.raw, reply.raw, req.body)
  }
  app.route({ method: ['GET', 'POST', 'DELETE'], url: '/mcp', handler: handle })
}

/**
 * The MCP SDK and the tools, loaded on the first request to `/mcp`: most servers never get one,
 * and loading them takes a noticeable part of a start.
 */
let mcpModules: Promise<{ StreamableHTTPServerTransport: typeof StreamableHTTPServerTransport; createMcpServer: typeof createMcpServer }> | undefined
function loadMcp(): NonNullable<typeof mcpModules> {
  mcpModules ??= Promise.all([import('@modelcontextprotocol/sdk/server/streamableHttp.js'), import('../mcp/index.js')]).then(([sdk, mcp]) => ({
    StreamableHTTPServerTransport: sdk.StreamableHTTPServerTransport,
    createMcpServer: mcp.createMcpServer,
  }))
  return mcpModules
}

/** A `fetch` that hands each request to the app in-process, for the client the tools use. */
function injectFetch(app: FastifyInstance): typeof fetch {
  return async (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url)
    const headers: Record<string, string> = {}
    new Headers(init?.headers).forEach((value, key) => (headers[key] = value))
    const res = await app.inject({
      method: (init?.method ?? 'GET') as 'GET',
      url: url.pathname + url.search,
      headers,
      ...(typeof init?.body === 'string' ? { payload: init.body } : {}),
    })
    const answerHeaders = new Headers()
    for (const [key, value] of Object.entries(res.headers)) {
      if (Array.isArray(value)) for (const v of value) answerHeaders.append(key, String(v))
      else if (value !== undefined) answerHeaders.set(key, String(value))
    }
    const empty = res.statusCode === 204 || res.statusCode === 304 || res.rawPayload.length === 0
    return new Response(empty ? null : new Uint8Array(res.rawPayload), { status: res.statusCode, headers: answerHeaders })
  }
}
