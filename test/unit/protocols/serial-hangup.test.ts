import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { openSerialLine, type SerialLineError } from '../../../src/protocols/serial/port.js'
import { ptyPair } from '../../helpers/pty.js'

const SETTINGS = { baudrate: 9600, bytesize: 8, parity: 'none', stopbits: 1 } as const

/** Opens a line on one end of a fresh pty pair; resolves with what onLost said, or null when the pair is closed and nothing was said in time. */
async function lostAfterHangup(pauseMs: number): Promise<string | null> {
  const pair = await ptyPair()
  let report: (message: string) => void = () => {}
  const lost = new Promise<string>((resolve) => (report = resolve))
  const line = await openSerialLine({ ...SETTINGS, device: pair.a }, { onData: () => {}, onLost: (error: SerialLineError) => report(error.message) })
  try {
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs))
    await pair.close()
    // Far longer than a hang-up takes to show; a line that misses it never reports at all.
    return await Promise.race([lost, new Promise<null>((resolve) => setTimeout(() => resolve(null), 5000).unref())])
  } finally {
    await line.close()
  }
}

describe('a serial line whose other end hangs up', () => {
  // socat ending closes the pty's master: every read of the slave gives 0 bytes from then on. When
  // the hang-up wins the race with the read's poll, @serialport/bindings-cpp alone read again
  // forever (most rounds of this test, before hangup-binding.ts).
  it('reports the line lost, naming the device, whether it hangs up at once or after a while', async () => {
    for (const pauseMs of [0, 0, 0, 0, 0, 0, 20, 50, 200]) {
      const message = await lostAfterHangup(pauseMs)
      assert.ok(message !== null, `no loss reported for a line hung up ${pauseMs} ms after it opened`)
      assert.match(message, /^serial device \/dev\/pts\/\d+: closed: /)
    }
  })
})
