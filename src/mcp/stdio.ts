import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { connect } from '../client/index.js'
import { createMcpServer } from './server.js'

/** What `mimic mcp` needs. */
export interface StdioMcpOptions {
  /** Address of the running Mimic server. */
  url: string
  productKey?: string | undefined
  /** Let the assistant change the simulation (`--mcp-allow-write`). */
  allowWrite: boolean
}

/**
 * `mimic mcp`: an MCP server on stdin/stdout, a thin process that drives a running Mimic server
 * through the TypeScript client. Resolves when the client closes the connection.
 *
 * @example
 * await runStdioMcp({ url: 'http://127.0.0.1:8000', productKey: process.env.MIMIC_PRODUCT_KEY, allowWrite: false })
 */
export async function runStdioMcp(options: StdioMcpOptions): Promise<void> {
  const client = connect({ address: options.url, productKey: options.productKey })
  const server = createMcpServer({ client, allowWrite: options.allowWrite })
  const transport = new StdioServerTransport()
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve()
    process.stdin.once('end', () => resolve())
  })
  await server.connect(transport)
  await closed
  await server.close()
}
