import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { SERVER_VERSION } from '../version.js'
import { registerResources } from './resources.js'
import { registerTools, type ToolContext } from './tools.js'

/** Name the MCP server gives itself to clients. */
export const MCP_SERVER_NAME = 'mimic'

/**
 * An MCP server with Mimic's tools, resources and prompt, driving the server `ctx.client`
 * talks to. Connect it to a transport (stdio for `mimic mcp`, Streamable HTTP for `/mcp`).
 *
 * @example
 * const server = createMcpServer({ client: connect({ address: 'http://127.0.0.1:8000', productKey }), allowWrite: true })
 * await server.connect(new StdioServerTransport())
 */
export function createMcpServer(ctx: ToolContext): McpServer {
  const server = new McpServer(
    { name: MCP_SERVER_NAME, version: SERVER_VERSION },
    {
      instructions:
        'Mimic simulates devices (sensors, drives, meters, PLC peripherals) and publishes them over Modbus, MQTT, OPC UA and SCPI text. ' +
        'Start with get_overview; read the resource mimic://docs/model-primer before writing a model (mimic://docs/model-language is the full reference); validate_model before define_model. ' +
        (ctx.allowWrite
          ? 'Writes are allowed.'
          : 'This server is read-only: tools that change the simulation are refused until it is restarted with --mcp-allow-write.'),
    },
  )
  registerTools(server, ctx)
  registerResources(server)
  return server
}
