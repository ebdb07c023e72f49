import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { InternalError } from '../../../src/errors.js'
import type { Operation } from '../../../src/python/messages.js'
import { DEFAULT_MAX_VALUE_BYTES, FrameDecoder, MAX_FRAME_BYTES, encodeFrame, encodeFrames, frameLimit, requestText } from '../../../src/python/protocol.js'
import { workerEnvironment } from '../../../src/python/worker-process.js'

describe('frames', () => {
  it('reassembles frames split at every byte and several frames in one chunk', () => {
    const messages = [{ id: 1, op: 'call', text: 'grüße ✓' }, { id: 2, ok: true, values: { t: 1.5 } }, { op: 'log' }]
    const bytes = Buffer.concat(messages.map(encodeFrame))
    const decoder = new FrameDecoder()
    const decoded = []
    for (let i = 0; i < bytes.length; i++) decoded.push(...decoder.push(bytes.subarray(i, i + 1)))
    assert.deepEqual(decoded, messages)
    assert.deepEqual(new FrameDecoder().push(bytes), messages)
  })

  it('reads whole frames in place and keeps a partial one for the next chunk, cut anywhere', () => {
    const messages = Array.from({ length: 6 }, (_, i) => ({ id: i, ok: true, result: null, values: { t: 20.5 + i, name: 'grüße ✓'.repeat(i) } }))
    const bytes = Buffer.concat(messages.map(encodeFrame))
    // Two cuts: chunks of whole frames and a frame's head, its body or its header split between them.
    for (let a = 0; a < bytes.length; a += 7)
      for (let b = a; b <= bytes.length; b += 13) {
        const decoder = new FrameDecoder()
        const decoded = [...decoder.push(bytes.subarray(0, a)), ...decoder.push(bytes.subarray(a, b)), ...decoder.push(bytes.subarray(b))]
        assert.deepEqual(decoded, messages, `cut at ${a} and ${b}`)
      }
  })

  it('frames requests with their id and op first, several in one buffer, as encodeFrame would one by one', () => {
    const requests: Array<[Operation, Record<string, unknown>]> = [
      ['call', { instance: 'sensor', method: 'run', kwargs: { note: 'grüße ✓' } }],
      ['ping', {}],
      ['unload', { instance: 'a' }],
    ]
    const texts = requests.map(([op, fields], i) => requestText(i + 1, op, fields))
    assert.equal(texts[1], '{"id":2,"op":"ping"}')
    assert.ok(texts[0]!.startsWith('{"id":1,"op":"call","instance":"sensor"'))
    const expected = requests.map(([op, fields], i) => ({ id: i + 1, op, ...fields }))
    assert.deepEqual(encodeFrames(texts), Buffer.concat(expected.map(encodeFrame)))
    assert.deepEqual(new FrameDecoder().push(encodeFrames(texts)), expected)
    assert.deepEqual(encodeFrames([texts[2]!]), encodeFrame(expected[2]))
  })

  it('handles a large frame arriving in uneven chunks', () => {
    const big = { id: 9, result: 'x'.repeat(5_000_000) }
    const bytes = encodeFrame(big)
    const decoder = new FrameDecoder()
    const out = []
    for (let offset = 0; offset < bytes.length; offset += 65_537) out.push(...decoder.push(bytes.subarray(offset, offset + 65_537)))
    assert.equal(out.length, 1)
    assert.equal((out[0]!.result as string).length, 5_000_000)
  })

  it('rejects bodies that are not JSON objects', () => {
    const body = Buffer.from('[1,2]')
    const frame = Buffer.concat([Buffer.from([0, 0, 0, body.length]), body])
    assert.throws(() => new FrameDecoder().push(frame), InternalError)
    const junk = Buffer.concat([Buffer.from([0, 0, 0, 3]), Buffer.from('{x:')])
    assert.throws(() => new FrameDecoder().push(junk), /not JSON/)
  })
})

describe('the size of what a worker sends', () => {
  it('a frame larger than the limit of --max-value-bytes is refused from its header, before its body is read', () => {
    const limit = frameLimit(DEFAULT_MAX_VALUE_BYTES)
    assert.equal(limit, 17 * 1024 * 1024, 'four values at the limit and 1 MiB, as python/mimic_sdk/limits.py says')
    assert.equal(frameLimit(1 << 30), MAX_FRAME_BYTES, 'never more than the protocol takes')
    const header = Buffer.alloc(4)
    header.writeUInt32BE(limit + 1)
    assert.throws(
      () => new FrameDecoder(limit).push(header),
      (err: unknown) => err instanceof InternalError && /--max-value-bytes/.test(err.message),
    )
    const frame = encodeFrame({ id: 1, ok: true, result: 'x'.repeat(100) })
    assert.equal(new FrameDecoder(frame.length).push(frame).length, 1, 'a frame at the limit is taken')
  })

  it('a worker starts without the product key in its environment', () => {
    const env = { PATH: '/usr/bin', MIMIC_PRODUCT_KEY: 'k', MIMIC_PRODUCT_KEY_FILE: '/run/key', MIMIC_PORT: '8080' }
    assert.deepEqual(workerEnvironment(env), { PATH: '/usr/bin', MIMIC_PORT: '8080' })
  })
})
