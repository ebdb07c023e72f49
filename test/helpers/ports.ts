import { createServer } from 'node:net'

/** freePort's ports: blocks of 256 from 20000, below the ephemeral range (32768). */
const FIRST_PORT = 20_000
const BLOCK = 256
const BLOCKS = Math.floor((32_768 - FIRST_PORT) / BLOCK)
/** This process's block, and where in it the next port is: a random start, so two processes sharing a block rarely meet. */
const ownBlock = FIRST_PORT + (process.pid % BLOCKS) * BLOCK
let nextInBlock = Math.floor(Math.random() * BLOCK)

/**
 * A TCP port on 127.0.0.1 for a server that must be told its port before it opens it: an external
 * broker, a port two instances share, a port a test closes and opens again, a port a test asserts
 * a setting carries. Everywhere else a test gives port 0 and reads the port the server reports
 * (the adapter node's `port`, the log's URL), which nobody can take meanwhile.
 *
 * Not a port-0 number: those come from the ephemeral range (32768-60999 on Linux), where the kernel
 * also takes every port-0 listener's and every outgoing connection's local port, so one read off a
 * closed socket may be handed out again before the server binds it, here or in the test file
 * running beside this one. These come from below that range, from a block of 256 of this process
 * (by pid), in turn, and only if binding one succeeds now.
 */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < BLOCK; tries++) {
    const port = ownBlock + (nextInBlock++ % BLOCK)
    if (await canListen(port)) return port
  }
  throw new Error(`no free port in this process's block ${ownBlock}-${ownBlock + BLOCK - 1}`)
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)))
  })
}
