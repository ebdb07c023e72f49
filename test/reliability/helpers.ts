/**
 * Helpers for the reliability tests: a `mimic serve` child process with its log, and what
 * /proc says about processes (children, zombies, open descriptors, resident memory).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { request as nodeRequest, type Agent } from 'node:http'
import { httpRequest } from '../helpers/http.js'
import { TEST_KEY } from '../helpers/server.js'

export const BIN = new URL('../../bin/mimic.js', import.meta.url).pathname
export const SYS = '/api/v3/system'

/** One process as /proc shows it. */
export interface ProcInfo {
  pid: number
  ppid: number
  /** One-letter state: R, S, D, Z, ... */
  state: string
  cmdline: string
}

/** Reads /proc/<pid>; undefined when the process is gone. */
export function procInfo(pid: number): ProcInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name is in parentheses and may itself contain spaces or parentheses.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim()
    return { pid, ppid: Number(rest[1]), state: rest[0]!, cmdline }
  } catch {
    return undefined
  }
}

/** Every process whose parent is `ppid`. */
export function childrenOf(ppid: number): ProcInfo[] {
  const out: ProcInfo[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const info = procInfo(Number(name))
    if (info && info.ppid === ppid) out.push(info)
  }
  return out
}

/** Python worker processes (live and zombie) that are children of `ppid`. */
export function workerProcesses(ppid: number): { live: ProcInfo[]; zombies: ProcInfo[] } {
  // A zombie has an empty cmdline: count every zombie child, since only workers are spawned.
  const children = childrenOf(ppid)
  return {
    live: children.filter((c) => c.state !== 'Z' && c.cmdline.includes('worker.py')),
    zombies: children.filter((c) => c.state === 'Z'),
  }
}

/** Open descriptors and resident memory of a process. */
export function procStats(pid: number): { fds: number; rssKb: number } {
  const fds = readdirSync(`/proc/${pid}/fd`).length
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN)
  return { fds, rssKb }
}

/** True while `pid` exists and is not a zombie. */
export function running(pid: number): boolean {
  const info = procInfo(pid)
  return info !== undefined && info.state !== 'Z'
}

export { freePort } from '../helpers/server.js'

/** A `mimic serve` child process. */
export interface ServedMimic {
  child: ChildProcess
  pid: number
  url: string
  /** JSON log records written so far (stdout). */
  logs: Array<Record<string, unknown>>
  /** Everything written to stderr. */
  stderr(): string
  /** Resolves with the exit code and signal once the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** SIGKILLs the process if it still runs. */
  kill(): void
}

/**
 * Starts `node bin/mimic.js serve` with `--port 0` and resolves once it logs its URL.
 * `wrap` prefixes the command (e.g. setpriv to drop privileges).
 */
export function serveMimic(args: string[], opts: { env?: Record<string, string>; wrap?: string[]; timeoutMs?: number } = {}): Promise<ServedMimic> {
  const command = [...(opts.wrap ?? []), process.execPath, BIN, 'serve', '--port', '0', ...args]
  const child = spawn(command[0]!, command.slice(1), {
    env: { ...process.env, MIMIC_LOG_LEVEL: 'info', MIMIC_START: '0', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const logs: Array<Record<string, unknown>> = []
  let err = ''
  let rest = ''
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }))
  })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`mimic serve did not start:\n${err}`))
    }, opts.timeoutMs ?? 20_000)
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d))
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      const lines = (rest + d).split('\n')
      rest = lines.pop() ?? ''
      for (const line of lines) {
        if (!line) continue
        let record: Record<string, unknown>
        try {
          record = JSON.parse(line) as Record<string, unknown>
        } catch {
          record = { level: 60, msg: `not JSON: ${line}` }
        }
        logs.push(record)
        const m = typeof record.msg === 'string' ? /^Mimic listening on (http:\/\/\S+)$/.exec(record.msg) : null
        if (m) {
          clearTimeout(timer)
          resolve({
            child,
            pid: child.pid!,
            url: m[1]!,
            logs,
            stderr: () => err,
            exited,
            kill: () => {
              if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
            },
          })
        }
      }
    })
    void exited.then(({ code, signal }) => {
      clearTimeout(timer)
      reject(new Error(`mimic serve exited (${code ?? signal}) before listening:\n${err}`))
    })
  })
}

/** A response as the tests look at it. */
export interface Answer {
  status: number
  body: any
}

/** One HTTP request with a JSON body; network failures reject. */
export async function request(url: string, method: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await httpRequest(url, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    timeoutMs: 30_000,
  })
  const text = res.text
  let parsed: unknown = text
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    // keep the text
  }
  return { status: res.status, body: parsed }
}

/** Waits until `check` is truthy or the time is up (the shared test helper, under this name). */
export { eventually as waitFor } from '../helpers/server.js'

/**
 * One HTTP request whose path is sent byte for byte (fetch would normalize `..` and `%2e%2e`
 * segments before sending them).
 */
export function rawRequest(
  base: string,
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string>; agent?: Agent } = {},
): Promise<Answer & { headers: Record<string, string | string[] | undefined> }> {
  const { hostname, port } = new URL(base)
  const body = opts.body === undefined ? undefined : JSON.stringify(opts.body)
  return new Promise((resolve, reject) => {
    const req = nodeRequest(
      { host: hostname, port, method, path, agent: opts.agent, headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...opts.headers } },
      (res) => {
        let text = ''
        res.setEncoding('utf8').on('data', (d: string) => (text += d))
        res.on('end', () => {
          let parsed: unknown = text
          try {
            parsed = text ? JSON.parse(text) : undefined
          } catch {
            // keep the text
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, headers: res.headers })
        })
      },
    )
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path} timed out`)))
    req.on('error', reject)
    req.end(body)
  })
}

/** The Authorization header test/helpers/server.ts servers expect. */
export const TEST_AUTH = { authorization: `Bearer ${TEST_KEY}` }
