/**
 * Mimic's MCP server (docs/mcp.md): tools, resources and a prompt that let an AI assistant build
 * and drive simulations, over stdio (`mimic mcp`) or Streamable HTTP (`/mcp` on the server).
 *
 * @example
 * import { createMcpServer } from './mcp/index.js'
 * const server = createMcpServer({ client, allowWrite: false })
 */
export { createMcpServer, MCP_SERVER_NAME } from './server.js'
export { runStdioMcp, type StdioMcpOptions } from './stdio.js'
export { registerTools, WRITE_TOOLS, type ToolContext } from './tools.js'
export { registerResources, RESOURCE_URIS, modelLanguageText, modelJsonSchema } from './resources.js'
export { readModbus, decodeMapped, type ModbusRead, type MappingEntry, type RegisterGroup } from './modbus-client.js'
