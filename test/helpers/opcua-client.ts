import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { eventually } from './wait.js'

/**
 * The OPC UA client of test/helpers/opcua-client.mjs in its own process, driven over its stdin:
 * `request` sends one operation and resolves with its result line; lines without an operation
 * (data changes, a lost connection) collect in `events`.
 *
 * @example
 * const client = OpcuaClientProcess.start({ pki: join(tmpdir(), 'mimic-opcua-test-client') })
 * await client.request({ op: 'connect', url: 'opc.tcp://127.0.0.1:4840/mimic' })
 * const temp = await client.request({ op: 'read', nodeId: 'ns=1;s=boiler.temp' })
 * await client.close()
 */

export const OPCUA_CLIENT = new URL('./opcua-client.mjs', import.meta.url).pathname

/** One result or event line of the client. */
export type ClientLine = Record<string, any>

export class OpcuaClientProcess {
  readonly child: ChildProcessWithoutNullStreams
  readonly events: ClientLine[] = []
  #stderr = ''
  #next = 1
  #waiting = new Map<number, (line: ClientLine) => void>()
  #exited: Promise<void>

  private constructor(child: ChildProcessWithoutNullStreams) {
    this.child = child
    child.stderr.on('data', (chunk: Buffer) => (this.#stderr = (this.#stderr + chunk.toString()).slice(-20_000)))
    const lines = createInterface({ input: child.stdout })
    lines.on('line', (text) => {
      let line: ClientLine
      try {
        line = JSON.parse(text) as ClientLine
      } catch {
        line = { event: 'text', text }
      }
      const resolve = typeof line.id === 'number' ? this.#waiting.get(line.id) : undefined
      if (resolve) {
        this.#waiting.delete(line.id)
        resolve(line)
      } else {
        this.events.push(line)
      }
    })
    this.#exited = new Promise((resolve) => child.on('exit', () => resolve()))
    // Not awaited: it resolves (never rejects) when the client exits, and answers what still waits.
    void this.#exited.then(() => {
      for (const [id, resolve] of this.#waiting) resolve({ id, ok: false, error: `client exited: ${this.#stderr.slice(-2000)}` })
      this.#waiting.clear()
    })
  }

  /** Starts the client; `pki` keeps its certificate across runs (making one takes seconds). */
  static start(opts: { pki: string }): OpcuaClientProcess {
    return new OpcuaClientProcess(spawn(process.execPath, [OPCUA_CLIENT, '--pki', opts.pki], { stdio: ['pipe', 'pipe', 'pipe'] }))
  }

  /** Runs one operation and answers its result line (`ok` false with `status` and `error` when refused). */
  request(op: Record<string, unknown>): Promise<ClientLine> {
    const id = this.#next++
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve)
      this.child.stdin.write(JSON.stringify({ ...op, id }) + '\n')
    })
  }

  /** Like `request`, but a result that is not `ok` fails the test with the client's message. */
  async ok(op: Record<string, unknown>): Promise<ClientLine> {
    const line = await this.request(op)
    if (!line.ok) throw new Error(`${String(op.op)} failed: ${line.status ?? ''} ${line.error}`)
    return line
  }

  /** The first event line that `match` accepts, waiting for it. */
  event(match: (line: ClientLine) => boolean, timeoutMs = 10_000): Promise<ClientLine> {
    return eventually(() => this.events.find(match), timeoutMs) as Promise<ClientLine>
  }

  /** Data-change values seen for one node, oldest first. */
  changes(nodeId: string): ClientLine[] {
    return this.events.filter((e) => e.event === 'change' && e.nodeId === nodeId)
  }

  /** Closes the session and ends the process (killed if it does not end within 10 s). */
  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return
    this.child.stdin.end()
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000)
    await this.#exited
    clearTimeout(timer)
  }
}

/**
 * Sockets of this network namespace whose local or remote port is `port`, from /proc/net/tcp (and
 * tcp6), without TIME_WAIT ones (the kernel's, gone by themselves): the listener and the
 * connections of a server on that port.
 *
 * @example
 * assert.deepEqual(socketsOn(4840), [])
 */
export function socketsOn(port: number): Array<{ local: number; remote: number; state: string }> {
  const TIME_WAIT = '06'
  const STATES: Record<string, string> = { '01': 'ESTABLISHED', '02': 'SYN_SENT', '08': 'CLOSE_WAIT', '0A': 'LISTEN', '04': 'FIN_WAIT1', '05': 'FIN_WAIT2' }
  const found: Array<{ local: number; remote: number; state: string }> = []
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = ''
    try {
      text = readFileSync(file, 'utf8')
    } catch {
      continue
    }
    for (const row of text.split('\n').slice(1)) {
      const fields = row.trim().split(/\s+/)
      if (fields.length < 4) continue
      const local = parseInt(fields[1]!.split(':')[1]!, 16)
      const remote = parseInt(fields[2]!.split(':')[1]!, 16)
      const state = fields[3]!
      if ((local === port || remote === port) && state !== TIME_WAIT) found.push({ local, remote, state: STATES[state] ?? state })
    }
  }
  return found
}
