// src/protocols/ascii/hub.ts: endpoints on real loopback sockets, and the fault when a port is taken.
import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { describe, it } from 'node:test'
import { AsciiHub } from '../../../src/protocols/ascii/hub.js'
import type { LineHandler } from '../../../src/protocols/ascii/endpoint.js'
import { ConflictError } from '../../../src/errors.js'

const handler: LineHandler = {
  line: () => null,
  terminator: '\n',
  maxLineLength: 1024,
  maxConnections: 4,
  maxConnectionsPerAddress: 4,
  idleTimeoutMs: 0,
  udp: { replyLimit: 512, trusted: null, queuePerAddress: 8, queue: 64 },
  replyDelayMs: () => 0,
  dropped: () => undefined,
  oversized: () => undefined,
}

describe('ascii hub: a port that cannot be had', () => {
  it("names Mimic's own endpoint on another host, and another program otherwise", async () => {
    const hub = new AsciiHub()
    try {
      const first = await hub.open({ transport: 'tcp', host: '127.0.0.1', port: 0, owner: 'dmm.ascii', handler })
      // 0.0.0.0 takes every address, so it cannot share the port the first endpoint holds on 127.0.0.1.
      const wide = await hub.open({ transport: 'tcp', host: '0.0.0.0', port: first.port, owner: 'psu.ascii', handler }).catch((e: unknown) => e)
      assert.ok(wide instanceof ConflictError)
      assert.match(
        wide.message,
        new RegExp(`tcp port ${first.port} is already served by Mimic on 127\\.0\\.0\\.1 \\(adapter 'dmm\\.ascii'\\).*give this one another port`),
      )
      assert.deepEqual(
        wide.details.map((d) => d.path),
        ['host'],
      )

      const blocker = createServer()
      await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r))
      const taken = (blocker.address() as { port: number }).port
      try {
        const other = await hub.open({ transport: 'tcp', host: '127.0.0.1', port: taken, owner: 'psu.ascii', handler }).catch((e: unknown) => e)
        assert.ok(other instanceof ConflictError)
        assert.match(other.message, new RegExp(`tcp port 127\\.0\\.0\\.1:${taken} is already in use by another program`))
      } finally {
        blocker.close()
      }
    } finally {
      await hub.close()
    }
  })
})
