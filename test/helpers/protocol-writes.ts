import { get as httpGet, type ClientRequest, type IncomingMessage } from 'node:http'
import assert from 'node:assert/strict'
import { SseParser } from '../../ui/src/sse-parser.ts'
import { TEST_KEY, type TestServer } from './server.js'
import { eventually } from './wait.js'

/**
 * The `protocol.write` events (docs/traces.md) of one instance, as a client of the server's event
 * stream (`/api/v3/events`) receives them: opened before a test's client writes, it holds every
 * such event in the order the server numbered them.
 *
 * @example
 * const writes = await ProtocolWrites.open(t.url, 'panel_1')
 * // ... a client writes twice, the second write setting `siren` ...
 * await writes.until((e) => e.attributes?.siren === 1) // the last write's event: every earlier one came before it
 * assert.equal(writes.events.length, 2)
 * writes.close()
 */
export class ProtocolWrites {
  /** The events of the instance so far, oldest first. */
  readonly events: Array<Record<string, any>> = []
  readonly #request: ClientRequest

  private constructor(request: ClientRequest) {
    this.#request = request
  }

  /** Opens the stream; resolves once its first event came (the server then counts writes for it). */
  static async open(url: string, instance: string): Promise<ProtocolWrites> {
    let started = false
    let writes: ProtocolWrites | undefined
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const request = httpGet(`${url}/api/v3/events?hz=20&instances=${instance}`, { agent: false, headers: { authorization: `Bearer ${TEST_KEY}` } }, resolve)
      request.once('error', reject)
      writes = new ProtocolWrites(request)
    })
    if (res.statusCode !== 200) throw new Error(`GET /api/v3/events answered ${res.statusCode}`)
    const parser = new SseParser()
    res.setEncoding('utf8')
    res.on('error', () => {})
    res.on('data', (chunk: string) => {
      for (const e of parser.push(chunk)) {
        started = true
        if (e.event !== 'protocol.write') continue
        const event = JSON.parse(e.data) as Record<string, any>
        if (event.instance === instance) writes!.events.push(event)
      }
    })
    await eventually(() => started)
    return writes!
  }

  /** The first event `check` accepts, once it came. */
  until(check: (event: Record<string, any>) => boolean): Promise<Record<string, any>> {
    return eventually(() => this.events.find(check))
  }

  close(): void {
    this.#request.destroy()
  }
}

/**
 * An adapter's trace entries as `tail` answers them (docs/traces.md), oldest first; `kwargs` are
 * its filters. A fault is an assertion error with its body.
 *
 * @example
 * const writes = await traceTail(t, `${SYS}/instances/ahu/communication/bacnet`, { operation: 'write' })
 */
export async function traceTail(t: Pick<TestServer, 'call'>, adapterNode: string, kwargs: Record<string, unknown> = {}): Promise<Array<Record<string, any>>> {
  const res = await t.call(adapterNode, 'tail', kwargs)
  assert.equal(res.status, 200, JSON.stringify(res.body))
  return (res.body as { result: Array<Record<string, any>> }).result
}
