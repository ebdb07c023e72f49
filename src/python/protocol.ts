/**
 * The framing shared with `python/mimic_sdk/protocol.py`: each message is a 4-byte big-endian
 * length followed by that many bytes of UTF-8 JSON. What the messages hold: `messages.ts`.
 *
 * @example
 * const decoder = new FrameDecoder()
 * const [message] = decoder.push(encodeFrame({ id: 1, op: 'ping' }))
 */
import { mayHoldFloats, parseJsonKeepingFloats } from '../values/decode.js'
import { typedJson } from '../values/encode.js'
import { FloatMark, plainJson, unmarked } from '../values/number.js'
import { InternalError } from '../errors.js'
import type { Operation } from './messages.js'
import { isRecord } from '../definition/is-record.js'

/**
 * Frames larger than this can only come from a broken peer.
 *
 * @example
 * if (length > MAX_FRAME_BYTES) throw new InternalError('frame too large')
 */
export const MAX_FRAME_BYTES = 256 * 1024 * 1024

/**
 * The default of `--max-value-bytes`: the largest value (as JSON) a worker sends.
 *
 * @example
 * new PythonPool({ ...options, maxValueBytes: DEFAULT_MAX_VALUE_BYTES })
 */
export const DEFAULT_MAX_VALUE_BYTES = 4 * 1024 * 1024

/**
 * The largest frame a worker may send when its values are limited to `maxValueBytes`: four
 * values at the limit plus 1 MiB for the rest of the message (ids, names, packed numbers), as
 * `frame_limit` of python/mimic_sdk/limits.py computes it; never more than MAX_FRAME_BYTES. The
 * worker refuses a larger answer itself; a frame beyond it can only come from a broken worker
 * (or user code writing to the protocol pipe), and is refused before it is read.
 *
 * @example
 * frameLimit(4 * 1024 * 1024) // 17 MiB
 */
export function frameLimit(maxValueBytes: number): number {
  return Math.min(MAX_FRAME_BYTES, 4 * maxValueBytes + 1024 * 1024)
}

/**
 * A decoded frame: one JSON object, not yet known to be an answer or an event (`messages.ts`
 * types both).
 *
 * @example
 * const m: WireMessage = { op: 'log', instance: 'sensor', stream: 'stdout', level: 'info', text: 'hi\n' }
 */
export type WireMessage = Record<string, unknown>

/**
 * Serialises one message as a frame.
 *
 * @example
 * socket.write(encodeFrame({ id: 7, op: 'call', instance: 'sensor', method: 'run' }))
 */
export function encodeFrame(message: unknown): Buffer {
  return encodeFrames([JSON.stringify(message)])
}

/**
 * The JSON text of a request, its `id` and `op` first: the same as
 * `JSON.stringify({ id, op, ...fields })` without building a second object, which on the hot
 * path of every call costs more than the JSON itself (V8 defines the spread's properties one by
 * one on a fresh shape each time).
 *
 * @example
 * requestText(7, 'unload', { instance: 'sensor' }) // '{"id":7,"op":"unload","instance":"sensor"}'
 */
export function requestText(id: number, op: Operation, fields: object): string {
  // typedJson: an integral float inside a list or dict value (src/values/number.ts) reaches Python as a float.
  const body = typedJson(fields)
  const head = `{"id":${id},"op":"${op}"`
  return body === '{}' ? `${head}}` : `${head},${body.slice(1)}`
}

/**
 * Frames several JSON texts into one buffer, for one write.
 *
 * @example
 * pipe.write(encodeFrames([requestText(1, 'ping', {}), requestText(2, 'ping', {})]))
 */
export function encodeFrames(texts: string[]): Buffer {
  let total = 0
  for (const text of texts) total += 4 + Buffer.byteLength(text, 'utf8')
  const frames = Buffer.allocUnsafe(total)
  let at = 0
  for (const text of texts) {
    // The text is written first and its length, known then, in front of it.
    const length = frames.write(text, at + 4, 'utf8')
    frames.writeUInt32BE(length, at)
    at += 4 + length
  }
  return frames
}

/**
 * A message whose text may hold an integral float (`2.0`) or an int past 2**53, parsed once
 * (src/values/decode.ts) as JSON.parse would, but for the
 * values Python computed: in the attribute values it carries (`values`, `attributes`, the values
 * of `changes`, a `set`'s `results[i].values`) and in a method's `result` an integral float stays
 * a `FloatMark` (src/values/number.ts), so a Python object's `[2.0]` reads back `[2.0]`.
 * An attribute value that is a float itself comes as its number (its attribute's type says what
 * it is); everything else of the message is plain.
 *
 * @example
 * keepingValueFloats('{"id":1,"ok":true,"result":2.0,"values":{"t":2.0,"xs":[2.0]}}')
 * // { id: 1, ok: true, result: FloatMark(2), values: { t: 2, xs: [FloatMark(2)] } }
 */
export function keepingValueFloats(text: string): unknown {
  const marked = parseJsonKeepingFloats(text)
  const plain = plainJson(marked)
  if (plain === marked || !isRecord(marked) || !isRecord(plain)) return plain
  for (const key of ['values', 'attributes']) if (Object.hasOwn(marked, key)) plain[key] = nestedMarks(marked[key])
  // A method's result keeps its floats, itself included: `return 2.0` answers {"result": 2.0}.
  if (Object.hasOwn(marked, 'result')) plain['result'] = marked['result']
  if (Array.isArray(marked['changes'])) plain['changes'] = marked['changes'].map(unmarked)
  const results = marked['results']
  // A `set` answer's results are objects; a step answer's are flat pairs of slot and method result.
  if (Array.isArray(results) && results.every(isRecord)) {
    plain['results'] = results.map((r) => (Object.hasOwn(r, 'values') ? { ...(plainJson(r) as object), values: nestedMarks(r['values']) } : plainJson(r)))
  }
  return plain
}

/**
 * Attribute name -> value with the marks inside lists and dicts kept, and a value that is itself
 * a float given as its number: its attribute's type says what it is. An int past 2**53 stays an
 * `ExactInt`: an `any` attribute holds it exactly, a typed one reads its number.
 */
function nestedMarks(values: unknown): unknown {
  return isRecord(values) ? Object.fromEntries(Object.entries(values).map(([name, value]) => [name, value instanceof FloatMark ? value.value : value])) : values
}

/** The message of the frame body at `bytes[start, end)`: a JSON object, its values' floats kept. */
function decodeMessage(bytes: Buffer, start: number, end: number): WireMessage {
  let message: unknown
  try {
    const text = bytes.toString('utf8', start, end)
    message = mayHoldFloats(text) ? keepingValueFloats(text) : JSON.parse(text)
  } catch (err) {
    throw new InternalError(`Python worker sent a frame that is not JSON: ${(err as Error).message}`)
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message)) {
    throw new InternalError('Python worker sent a frame that is not a JSON object')
  }
  return message as WireMessage
}

/**
 * Reassembles frames from stream chunks of any size (partial headers, partial bodies, several
 * frames in one chunk) without copying more than once per frame.
 *
 * @example
 * stream.on('data', (chunk: Buffer) => { for (const m of decoder.push(chunk)) handle(m) })
 */
export class FrameDecoder {
  #chunks: Buffer[] = []
  #buffered = 0
  #need = -1
  readonly #limit: number

  /** `limit`: the largest frame taken (MAX_FRAME_BYTES by default, see {@link frameLimit}). */
  constructor(limit: number = MAX_FRAME_BYTES) {
    this.#limit = Math.min(limit, MAX_FRAME_BYTES)
  }

  /** Adds a chunk and returns every message completed by it, in order. */
  push(chunk: Buffer): WireMessage[] {
    const messages: WireMessage[] = []
    // Most chunks hold whole frames (the worker writes a batch of answers at once): read them in
    // place, without a Buffer view per header and per body, and keep only a partial frame's bytes.
    let at = 0
    if (this.#buffered === 0 && this.#need < 0) {
      while (chunk.length - at >= 4) {
        const length = this.#checked(chunk.readUInt32BE(at))
        if (chunk.length - at - 4 < length) break
        messages.push(decodeMessage(chunk, at + 4, at + 4 + length))
        at += 4 + length
      }
      if (at === chunk.length) return messages
    }
    const rest = at === 0 ? chunk : chunk.subarray(at)
    this.#chunks.push(rest)
    this.#buffered += rest.length
    for (;;) {
      if (this.#need < 0) {
        if (this.#buffered < 4) break
        this.#need = this.#checked(this.#take(4).readUInt32BE(0))
      }
      if (this.#buffered < this.#need) break
      const body = this.#take(this.#need)
      this.#need = -1
      messages.push(decodeMessage(body, 0, body.length))
    }
    return messages
  }

  /** A frame's length, refused when over the limit. */
  #checked(length: number): number {
    if (length > this.#limit) {
      throw new InternalError(
        `Python worker sent a frame of ${length} bytes, more than the ${this.#limit} it may (from --max-value-bytes, MIMIC_MAX_VALUE_BYTES)`,
      )
    }
    return length
  }

  #take(n: number): Buffer {
    const first = this.#chunks[0]!
    this.#buffered -= n
    if (first.length >= n) {
      if (first.length === n) this.#chunks.shift()
      else this.#chunks[0] = first.subarray(n)
      return first.subarray(0, n)
    }
    const out = Buffer.allocUnsafe(n)
    let offset = 0
    while (offset < n) {
      const chunk = this.#chunks[0]!
      const count = Math.min(chunk.length, n - offset)
      chunk.copy(out, offset, 0, count)
      if (count === chunk.length) this.#chunks.shift()
      else this.#chunks[0] = chunk.subarray(count)
      offset += count
    }
    return out
  }
}
