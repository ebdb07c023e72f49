import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort } from './ports.js'
import { eventually } from './wait.js'

/**
 * Debian's mosquitto broker and its command-line clients, driven by the tests: a broker on a free
 * port of 127.0.0.1 with its own configuration, password file and persistence in a temp directory,
 * `mosquitto_sub` as a subscriber in its own process and `mosquitto_pub` to publish, and a count
 * of this process's sockets on a port (to show that nothing is left open).
 *
 * @example
 * const broker = await Mosquitto.start({ users: { relay: 'secret' } })
 * const sub = await MosquittoSub.start(broker.port, ['site/#'])
 * await mosquittoPub(broker.port, 'site/cmd', '42', { qos: 1 })
 * await eventually(() => sub.heard.some((m) => m.payload === '42'))
 * await sub.stop()
 * await broker.close()
 */

export const MOSQUITTO = '/usr/sbin/mosquitto'
const MOSQUITTO_SUB = '/usr/bin/mosquitto_sub'
const MOSQUITTO_PUB = '/usr/bin/mosquitto_pub'
const MOSQUITTO_PASSWD = '/usr/bin/mosquitto_passwd'
const STDBUF = '/usr/bin/stdbuf'
const HOST = '127.0.0.1'

/** True when mosquitto or its clients are not installed here; under CI=true that is an error. */
export function mosquittoMissing(): boolean {
  const missing = [MOSQUITTO, MOSQUITTO_SUB, MOSQUITTO_PUB, MOSQUITTO_PASSWD].filter((path) => !existsSync(path))
  if (missing.length > 0 && process.env.CI)
    throw new Error(`${missing.join(', ')} missing: install Debian's mosquitto and mosquitto-clients to run the MQTT broker tests`)
  return missing.length > 0
}

/** A mosquitto broker of a test, which the test may stop, freeze, kill and start again on the same port. */
export class Mosquitto {
  readonly port: number
  readonly dir: string
  #child: ChildProcess | null = null
  #exited: Promise<void> = Promise.resolve()
  #log = ''

  private constructor(port: number, dir: string) {
    this.port = port
    this.dir = dir
  }

  /**
   * A broker on a free port that accepts anonymous clients and the users given (name: password).
   * Should the port be taken after all (see freePort), on another one.
   */
  static async start(opts: { users?: Record<string, string> } = {}): Promise<Mosquitto> {
    for (let attempt = 1; ; attempt++) {
      const broker = await Mosquitto.#configured(opts.users ?? {})
      try {
        await broker.up()
        return broker
      } catch (error) {
        await broker.close()
        if (attempt === 3 || !broker.log.includes('Address already in use')) throw error
      }
    }
  }

  static async #configured(users: Record<string, string>): Promise<Mosquitto> {
    const broker = new Mosquitto(await freePort(), await mkdtemp(join(tmpdir(), 'mimic-mosquitto-')))
    const config = [
      `listener ${broker.port} ${HOST}`,
      'allow_anonymous true',
      `password_file ${join(broker.dir, 'passwd')}`,
      'persistence true',
      `persistence_location ${broker.dir}/`,
      'log_dest stderr',
      'log_type error',
      'log_type warning',
      'log_type notice',
      'log_type information',
      // Run as root, mosquitto would switch to the user `mosquitto`, who may not write the temp directory.
      `user ${userInfo().username}`,
    ]
    await writeFile(join(broker.dir, 'mosquitto.conf'), `${config.join('\n')}\n`)
    await broker.setUsers(users)
    return broker
  }

  /** What the broker logged (all its runs). */
  get log(): string {
    return this.#log
  }

  get running(): boolean {
    return this.#child !== null
  }

  /** Starts the broker (again) on its port; resolves when it accepts connections. */
  async up(): Promise<void> {
    if (this.#child) throw new Error('mosquitto is already running')
    // This run's log: that it says `running` tells its own listener from another program's on the port.
    const from = this.#log.length
    const child = spawn(MOSQUITTO, ['-c', join(this.dir, 'mosquitto.conf')], { stdio: ['ignore', 'pipe', 'pipe'] })
    this.#child = child
    for (const stream of [child.stdout, child.stderr]) stream.setEncoding('utf8').on('data', (text: string) => (this.#log += text))
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()))
    void this.#exited.then(() => {
      if (this.#child === child) this.#child = null
    })
    try {
      await eventually(async () => {
        if (child.exitCode !== null) throw new Error(`mosquitto exited with ${child.exitCode}:\n${this.#log}`)
        return / running\n/.test(this.#log.slice(from)) && canConnect(this.port)
      })
    } catch (error) {
      child.kill('SIGKILL')
      throw error
    }
  }

  /** Stops the broker: SIGTERM lets it save its persistence file; SIGKILL does not (a crash). */
  async down(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const child = this.#child
    if (!child) return
    child.kill(signal)
    // A frozen broker handles SIGTERM only once it runs again.
    child.kill('SIGCONT')
    await this.#exited
    this.#child = null
  }

  /** Freezes the broker (SIGSTOP): connections stay open, nothing is read or acknowledged. */
  freeze(): void {
    this.#child?.kill('SIGSTOP')
  }

  /** Lets a frozen broker run again (SIGCONT). */
  thaw(): void {
    this.#child?.kill('SIGCONT')
  }

  /**
   * Replaces the users the broker accepts (anonymous clients stay accepted); a running broker
   * reloads the password file (SIGHUP).
   */
  async setUsers(users: Record<string, string>): Promise<void> {
    const file = join(this.dir, 'passwd')
    const next = `${file}.next`
    // The file always has a user, so the broker reads a password file of the same shape every time.
    await writeFile(next, '')
    for (const [name, password] of Object.entries({ operator: 'operator-secret', ...users })) {
      await promisify(execFile)(MOSQUITTO_PASSWD, ['-b', next, name, password])
    }
    await rename(next, file)
    this.#child?.kill('SIGHUP')
  }

  async close(): Promise<void> {
    await this.down()
    await rm(this.dir, { recursive: true, force: true })
  }
}

/** Who a command-line client connects as: `-u`, `-P` and `-i` of mosquitto_sub and mosquitto_pub. */
export interface MosquittoLogin {
  username?: string
  password?: string
  clientId?: string
}

function loginArgs(login: MosquittoLogin): string[] {
  const args: string[] = []
  if (login.username !== undefined) args.push('-u', login.username)
  if (login.password !== undefined) args.push('-P', login.password)
  if (login.clientId !== undefined) args.push('-i', login.clientId)
  return args
}

/** A message as mosquitto_sub printed it. */
export interface HeardMessage {
  topic: string
  payload: string
  qos: number
  retain: boolean
}

/** `mosquitto_sub` in its own process, recording every message it prints. */
export class MosquittoSub {
  readonly heard: HeardMessage[] = []
  readonly #child: ChildProcess
  readonly #exited: Promise<void>
  #output = ''

  private constructor(child: ChildProcess) {
    this.#child = child
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()))
  }

  /**
   * Subscribes to `filters` (QoS 1 unless told) and resolves once the broker acknowledged the
   * subscription, so whatever is published afterwards reaches it.
   */
  static async start(port: number, filters: string[], opts: { qos?: 0 | 1 | 2 } & MosquittoLogin = {}): Promise<MosquittoSub> {
    const args = ['-h', HOST, '-p', String(port), '-q', String(opts.qos ?? 1), '-d', '-F', 'MSG %r %q %t %p', ...loginArgs(opts)]
    for (const filter of filters) args.push('-t', filter)
    // mosquitto_sub flushes its output after each message only: line buffering shows the SUBACK at once.
    const sub = new MosquittoSub(spawn(STDBUF, ['-oL', MOSQUITTO_SUB, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }))
    let pending = ''
    sub.#child.stdout!.setEncoding('utf8').on('data', (text: string) => {
      sub.#output += text
      pending += text
      const lines = pending.split('\n')
      pending = lines.pop()!
      for (const line of lines) {
        const match = /^MSG (\d) (\d) (\S+) (.*)$/.exec(line)
        if (match) sub.heard.push({ retain: match[1] === '1', qos: Number(match[2]), topic: match[3]!, payload: match[4]! })
      }
    })
    sub.#child.stderr!.setEncoding('utf8').on('data', (text: string) => (sub.#output += text))
    try {
      await eventually(() => {
        if (sub.#child.exitCode !== null) throw new Error(`mosquitto_sub exited with ${sub.#child.exitCode}:\n${sub.#output}`)
        return sub.#output.includes('received SUBACK')
      })
    } catch (error) {
      await sub.stop()
      throw error
    }
    return sub
  }

  /** Whether the process still runs (it keeps its connection while the broker does). */
  get running(): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null
  }

  /** The payloads heard on `topic`, in order. */
  payloads(topic: string): string[] {
    return this.heard.filter((m) => m.topic === topic).map((m) => m.payload)
  }

  async stop(): Promise<void> {
    if (this.running) this.#child.kill('SIGTERM')
    await this.#exited
  }
}

/** Publishes one message with `mosquitto_pub`; resolves when it is sent (for QoS 1, acknowledged). */
export async function mosquittoPub(
  port: number,
  topic: string,
  payload: string,
  opts: { qos?: 0 | 1 | 2; retain?: boolean } & MosquittoLogin = {},
): Promise<void> {
  const args = ['-h', HOST, '-p', String(port), '-t', topic, '-m', payload, '-q', String(opts.qos ?? 0), ...loginArgs(opts)]
  if (opts.retain) args.push('-r')
  await promisify(execFile)(MOSQUITTO_PUB, args, { timeout: 10_000 })
}

/**
 * Runs `mosquitto_pub` with `args` (after host and port) and answers its exit code and output
 * instead of throwing: not 0 when the broker refused the client or its message.
 *
 * @example
 * const { code } = await mosquittoPubRaw(port, ['-t', 'a/b', '-m', '1']) // code 5: not authorized
 */
export async function mosquittoPubRaw(port: number, args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(MOSQUITTO_PUB, ['-h', HOST, '-p', String(port), ...args], { timeout: 10_000 })
    return { code: 0, output: stdout + stderr }
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string }
    return { code: typeof failed.code === 'number' ? failed.code : -1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` }
  }
}

/**
 * How many TCP sockets of this process have `port` at one end (a client's connection to a broker
 * on that port, or the broker's side of one), listening sockets left out. Linux only.
 *
 * @example
 * socketsOnPort(broker.port) // 1 while one adapter is connected to an outside broker
 */
export function socketsOnPort(port: number): number {
  const inodes = new Set<string>()
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`)
      const match = /^socket:\[(\d+)\]$/.exec(target)
      if (match) inodes.add(match[1]!)
    } catch {
      // closed between listing and reading
    }
  }
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0')
  let count = 0
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    let text: string
    try {
      text = readFileSync(table, 'utf8')
    } catch {
      continue
    }
    for (const row of text.split('\n').slice(1)) {
      const fields = row.trim().split(/\s+/)
      if (fields.length < 10) continue
      const [local, remote, state, inode] = [fields[1]!, fields[2]!, fields[3]!, fields[9]!]
      const LISTEN = '0A'
      if (state === LISTEN || !inodes.has(inode)) continue
      if (local.endsWith(`:${hexPort}`) || remote.endsWith(`:${hexPort}`)) count++
    }
  }
  return count
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, HOST)
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}
