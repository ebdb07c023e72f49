import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { parseConfig, type Config } from '../../src/config.js'
import { startMimic, type MimicServer } from '../../src/mimic.js'
import { httpRequest, type AnswerHeaders } from './http.js'

// Here too, for the tests that take everything from this module.
export { eventually } from './wait.js'
export { freePort } from './ports.js'

export const TEST_KEY = 'test-product-key'

/**
 * The `--fast-lane` setting test servers start with: `MIMIC_FAST_LANE` of this process, `on`
 * unless set. The files in test/lane-off/ set it to `off` and run an API suite again, so one
 * `npm test` checks the API both with the lane and with node:http alone.
 */
export function fastLaneSetting(): 'on' | 'off' {
  return process.env.MIMIC_FAST_LANE === 'off' ? 'off' : 'on'
}

/** The environment `parseConfig` gets in tests: none of the caller's, but the fast-lane setting. */
export function testEnv(): NodeJS.ProcessEnv {
  // MIMIC_START=0: the tests drive prepare and start themselves (test/serve-start.test.ts covers serve's default).
  return { MIMIC_FAST_LANE: fastLaneSetting(), MIMIC_START: '0' }
}

/** A response as a test looks at it. */
export interface ApiResponse<T = any> {
  status: number
  body: T
  headers: AnswerHeaders
}

export interface TestServer {
  url: string
  server: MimicServer
  /** Temp directory holding `extensions/` and `snapshots/` of this server. */
  dir: string
  extensions: string
  snapshots: string
  /** Log records the server wrote. */
  logs: Array<Record<string, unknown>>
  api<T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>
  /** POST <path>/method/<m> with kwargs; returns the response. */
  call<T = any>(path: string, method: string, kwargs?: Record<string, unknown>): Promise<ApiResponse<T>>
  close(): Promise<void>
}

/**
 * Starts a real Mimic server on 127.0.0.1 port 0 with its own temp directories, real Python
 * workers and a log captured in memory; the fast lane as `fastLaneSetting()` says unless
 * `config` sets it.
 */
export async function startTestServer(opts: { files?: Record<string, string>; config?: Partial<Record<keyof Config, unknown>> } = {}): Promise<TestServer> {
  const dir = await mkdtemp(join(tmpdir(), 'mimic-test-'))
  const extensions = join(dir, 'extensions')
  const snapshots = join(dir, 'snapshots')
  await mkdir(extensions, { recursive: true })
  for (const [name, text] of Object.entries(opts.files ?? {})) {
    await mkdir(join(extensions, name, '..'), { recursive: true })
    await writeFile(join(extensions, name), text)
  }
  const logs: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line))
      done()
    },
  })
  let server: Awaited<ReturnType<typeof startMimic>>
  try {
    const config = parseConfig(
      { port: 0, productKey: TEST_KEY, extensions: [extensions], snapshotsDir: snapshots, pythonWorkers: 2, ...opts.config },
      testEnv(),
    )
    server = await startMimic(config, { logStream: stream })
  } catch (error) {
    // A server that does not start (what some tests expect) leaves no directory behind.
    await rm(dir, { recursive: true, force: true })
    throw error
  }
  const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> => {
    const res = await httpRequest(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${TEST_KEY}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    })
    const text = res.text
    let parsed: unknown = text
    try {
      parsed = text ? JSON.parse(text) : undefined
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body: parsed, headers: res.headers }
  }
  return {
    url: server.url,
    server,
    dir,
    extensions,
    snapshots,
    logs,
    api,
    call: (path, method, kwargs = {}) => api('POST', `${path}/method/${method}`, { kwargs }),
    close: async () => {
      await server.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** Path of the example system shipped in examples/. */
export const EXAMPLE_SYSTEM = new URL('../../examples/pt100/system.yaml', import.meta.url).pathname
export const EXAMPLE_EXTENSIONS = new URL('../../examples/pt100/extensions', import.meta.url).pathname
