/**
 * The lane's request parser: bytes in, a request or a refusal out, nothing else. It takes only
 * what it understands completely and declines the rest, which node:http then parses from the same
 * bytes (index.ts):
 *
 * - only complete requests: a request whose head or body has not fully arrived is declined;
 * - only `HTTP/1.1` with a Host header and one of the tree's five methods;
 * - only `Content-Length` bodies of JSON (no chunked transfer, no `Expect`, no `Upgrade`, no `Connection`
 *   other than keep-alive), each header the lane reads at most once, at most MAX_HEADER_LINES
 *   header lines;
 * - every header line is checked as node's parser would check it (a token, a colon, a value
 *   without control characters but tab, CRLF), so nothing the lane takes is refused by node.
 *
 * test/reliability/http-parse-differential.test.ts feeds the same bytes to this parser and to node's and
 * holds the rule: whatever the lane takes, node parses as the same request.
 */

/** The headers the lane reads (any other header is passed over). */
export interface LaneHeaders {
  host: string | undefined
  authorization: string | undefined
  'x-correlation-id': string | undefined
  'content-type': string | undefined
  'content-length': string | undefined
  connection: string | undefined
  /** A browser's request carries these (browser-guard.ts). */
  origin: string | undefined
  'sec-fetch-site': string | undefined
}

/** A request the lane parsed; `body` is the UTF-8 text. */
export interface LaneRequest {
  method: string
  url: string
  headers: LaneHeaders
  body: string
}

/** A request taken from the start of a buffer, and how many bytes it took. */
export interface ParsedRequest {
  request: LaneRequest
  length: number
}

/** Longest request head the lane reads; longer ones are node:http's (which answers 431). */
export const MAX_HEAD_BYTES = 8 * 1024
/**
 * Most header lines the lane reads. node:http keeps the first 2,000 headers of a request and
 * drops the others (`server.maxHeadersCount`), and 8 KiB hold more: past this many, a header the
 * lane reads might be one node never sees, so node:http decides.
 */
export const MAX_HEADER_LINES = 100
const HEAD_END = Buffer.from('\r\n\r\n')
const REQUEST_LINE = /^(GET|POST|PUT|PATCH|DELETE) (\/[!-~]*) HTTP\/1\.1$/
// Header lines after the request line, to the end of the head: `token ":" value`, CRLF between.
// Sticky, so it checks the head in place; unambiguous (a value holds no CR), so it runs in
// linear time.
const HEADER_LINES = /(?:[!#$%&'*+.^_`|~0-9A-Za-z-]+:[\t\x20-\x7e\x80-\xff]*(?:\r\n|$))*/y
/**
 * The headers the lane reads, by lower-case name, and those it leaves to node:http. A Map
 * rather than a computed key on the headers object: indexing with the freshly sliced name would
 * make V8 look it up in its string table on every request.
 */
const READ_HEADERS = new Map<string, keyof LaneHeaders | 'decline'>([
  ['host', 'host'],
  ['authorization', 'authorization'],
  ['x-correlation-id', 'x-correlation-id'],
  ['content-type', 'content-type'],
  ['content-length', 'content-length'],
  ['connection', 'connection'],
  ['origin', 'origin'],
  ['sec-fetch-site', 'sec-fetch-site'],
  ['transfer-encoding', 'decline'],
  ['expect', 'decline'],
  ['upgrade', 'decline'],
])
const READ_LENGTHS = new Set([...READ_HEADERS.keys()].map((name) => name.length))
const DIGITS = /^\d{1,15}$/
/** A Content-Length value as llhttp takes it: spaces or tabs before the digits, only spaces after. */
const CONTENT_LENGTH_OWS = /^[\t ]*\d+ *$/
const JSON_TYPE = /^application\/json\s*(;|$)/i
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])

/**
 * Parses the request at the start of the buffer, or declines: incomplete, unusual or invalid
 * requests are all node:http's to answer.
 *
 * @example
 * const parsed = parseRequest(Buffer.from('GET /api/v3/system HTTP/1.1\r\nHost: x\r\n\r\n'), 1 << 20)
 * if (parsed !== 'decline') console.log(parsed.request.url, parsed.length) // '/api/v3/system' 40
 */
export function parseRequest(buffer: Buffer, bodyLimit: number): ParsedRequest | 'decline' {
  const end = buffer.indexOf(HEAD_END)
  if (end < 0 || end > MAX_HEAD_BYTES) return 'decline'
  // latin1 keeps one character per byte, so string offsets are byte offsets.
  const text = buffer.toString('latin1', 0, end)
  let lineEnd = text.indexOf('\r\n')
  if (lineEnd < 0) lineEnd = end
  const start = REQUEST_LINE.exec(text.slice(0, lineEnd))
  if (!start) return 'decline'
  // One pass checks every header line as node's parser would: a token, a colon, a value
  // without control characters (tab aside), CRLF.
  HEADER_LINES.lastIndex = Math.min(lineEnd + 2, end)
  if (!HEADER_LINES.test(text) || HEADER_LINES.lastIndex !== end) return 'decline'
  // Every field present from the start: one object shape for every request.
  const headers: LaneHeaders = {
    host: undefined,
    authorization: undefined,
    'x-correlation-id': undefined,
    'content-type': undefined,
    'content-length': undefined,
    connection: undefined,
    origin: undefined,
    'sec-fetch-site': undefined,
  }
  let lines = 0
  for (let pos = lineEnd + 2; pos < end; pos = lineEnd + 2) {
    if (++lines > MAX_HEADER_LINES) return 'decline'
    lineEnd = text.indexOf('\r\n', pos)
    if (lineEnd < 0) lineEnd = end
    const colon = text.indexOf(':', pos)
    // Only names of the lengths the lane reads are looked at: the others need no slicing.
    if (!READ_LENGTHS.has(colon - pos)) continue
    const key = READ_HEADERS.get(text.slice(pos, colon).toLowerCase())
    if (key === undefined) continue
    // node:http joins or drops repeated headers by rules of its own: a repeated one, like a
    // header the lane does not support, sends the request there.
    if (key === 'decline' || headers[key] !== undefined) return 'decline'
    headers[key] = trimSpaces(text, colon + 1, lineEnd)
    // llhttp takes spaces after a Content-Length's digits but answers 400 to a tab there: node answers it.
    if (key === 'content-length' && !CONTENT_LENGTH_OWS.test(text.slice(colon + 1, lineEnd))) return 'decline'
  }
  if (headers.host === undefined) return 'decline'
  if (headers.connection !== undefined && headers.connection.toLowerCase() !== 'keep-alive') return 'decline'
  const method = start[1]!
  const lengthHeader = headers['content-length']
  if (lengthHeader !== undefined && !DIGITS.test(lengthHeader)) return 'decline'
  const bodyLength = lengthHeader === undefined ? 0 : Number(lengthHeader)
  // fastify checks the Content-Type of every request but a GET, with a body or not.
  const contentType = headers['content-type']
  if (contentType !== undefined && method !== 'GET' && !JSON_TYPE.test(contentType)) return 'decline'
  if (bodyLength > 0 && (!BODY_METHODS.has(method) || contentType === undefined || bodyLength > bodyLimit)) return 'decline'
  const length = end + 4 + bodyLength
  if (buffer.length < length) return 'decline'
  const body = bodyLength > 0 ? buffer.toString('utf8', end + 4, length) : ''
  return { request: { method, url: start[2]!, headers, body }, length }
}

/** `text.slice(from, to)` without the spaces and tabs around it (a header value's OWS). */
function trimSpaces(text: string, from: number, to: number): string {
  while (from < to && (text.charCodeAt(from) === 32 || text.charCodeAt(from) === 9)) from++
  while (to > from && (text.charCodeAt(to - 1) === 32 || text.charCodeAt(to - 1) === 9)) to--
  return text.slice(from, to)
}
