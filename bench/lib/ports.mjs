/**
 * Free loopback ports for the servers of one benchmark.
 *
 * @example
 * const port = await freePort()
 */
import { createServer } from 'node:net'

/**
 * A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it; it is released at once).
 *
 * @example
 * const [http, modbus] = [await freePort(), await freePort()]
 * @returns {Promise<number>}
 */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}
