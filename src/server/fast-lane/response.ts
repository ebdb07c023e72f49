import { STATUS_CODES } from 'node:http'

/** The answer to a request the lane took: always JSON. */
export interface LaneResponse {
  status: number
  /** Header lines before content-type and content-length, each `name: value\r\n`, as they go on the wire. */
  headers: string
  /** The JSON text, or its UTF-8 bytes in pieces (a large document kept encoded: tree-routes.ts JsonText). */
  body: string | readonly Buffer[]
}

let dateSecond = -1
let dateText = ''

/** The HTTP date, formatted once per second as node:http does. */
function httpDate(): string {
  const now = Date.now()
  const second = Math.floor(now / 1000)
  if (second !== dateSecond) {
    dateSecond = second
    dateText = new Date(now).toUTCString()
  }
  return dateText
}

/**
 * The response as node:http writes fastify's replies: the same headers, in the same order, so a
 * client cannot tell which path answered.
 *
 * @example
 * socket.write(serializeResponse({ status: 200, headers: 'x-correlation-id: abc\r\n', body: '{"value":1}' }, server.keepAliveTimeout))
 */
export function serializeResponse(response: LaneResponse & { body: string }, keepAliveTimeout: number): string {
  return responseHead(response, Buffer.byteLength(response.body), keepAliveTimeout) + response.body
}

/**
 * The status line and headers of a response whose body is `bodyBytes` long, up to the blank line:
 * a body in bytes goes to the socket after it as it is (see serializeResponse).
 *
 * @example
 * socket.write(responseHead(response, body.length, server.keepAliveTimeout)); socket.write(body)
 */
export function responseHead(response: LaneResponse, bodyBytes: number, keepAliveTimeout: number): string {
  return (
    `HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? 'unknown'}\r\n${response.headers}` +
    `content-type: application/json; charset=utf-8\r\ncontent-length: ${bodyBytes}\r\n` +
    `Date: ${httpDate()}\r\nConnection: keep-alive\r\nKeep-Alive: timeout=${Math.floor(keepAliveTimeout / 1000)}\r\n\r\n`
  )
}
