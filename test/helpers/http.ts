// The test helpers' HTTP client: node:http with a keep-alive agent, not the global fetch.
//
// Why by hand: fetch (undici) costs a test process about 35 ms of CPU to load and about 1 ms of
// CPU per request, against about 0.37 ms here (each with the CPU of a local node:http server that
// answers it, on this machine); over the suite's thousands of API calls, fetch took about 15 s of
// the test processes' CPU. The tests that are about what a browser or fetch sends (CORS, security
// headers, the TypeScript client) keep using fetch itself.
import { Agent, request } from 'node:http'

/** The headers of an answer, read like fetch's `Headers`: by case-insensitive name, null when absent. */
export interface AnswerHeaders {
  get(name: string): string | null
  has(name: string): boolean
}

export interface HttpAnswer {
  status: number
  headers: AnswerHeaders
  text: string
}

// Idle sockets of a keep-alive agent are unref'd, so they keep no test process alive. No limit on
// sockets per server, as fetch has none: concurrent requests reach the server at once.
const agent = new Agent({ keepAlive: true })

/**
 * One request to `url` (http only); resolves with the whole answer as text, rejects on a network
 * error, or when `timeoutMs` passes before the answer is complete.
 */
export function httpRequest(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const signal = init.timeoutMs === undefined ? undefined : AbortSignal.timeout(init.timeoutMs)
    const req = request(url, { method: init.method ?? 'GET', headers: init.headers, agent, signal }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (text += chunk))
      res.on('error', reject)
      res.on('end', () => {
        const raw = res.headers
        const get = (name: string): string | null => {
          const value = raw[name.toLowerCase()]
          return value === undefined ? null : Array.isArray(value) ? value.join(', ') : String(value)
        }
        resolve({ status: res.statusCode ?? 0, headers: { get, has: (name) => get(name) !== null }, text })
      })
    })
    req.on('error', reject)
    req.end(init.body)
  })
}
