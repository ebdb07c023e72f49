import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { connect } from 'node:net'
import { promisify } from 'node:util'
import { freePort } from './ports.js'
import { eventually } from './wait.js'

/**
 * Debian's knxd as a KNXnet/IP tunnelling server on loopback (a bus of its own, `dummy:`, no
 * routing: nothing leaves the machine), and its knxtool writing, reading and listening to group
 * addresses through knxd's own TCP port.
 *
 * @example
 * const knxd = await Knxd.start()
 * await knxd.tool('groupswrite', '1/1/14', '1')
 * const listener = knxd.listen() // groupsocketlisten
 * await knxd.close()
 */

const KNXD = '/usr/bin/knxd'
const KNXTOOL = '/usr/bin/knxtool'
const STDBUF = '/usr/bin/stdbuf'

/** Fails with the packages to install when knxd or knxtool is missing (CI installs them). */
export function requireKnxd(): void {
  const missing = [KNXD, KNXTOOL].filter((path) => !existsSync(path))
  if (missing.length > 0) throw new Error(`${missing.join(', ')} missing: install Debian's knxd and knxd-tools to run the KNX tests`)
}

/** A knxd process: its KNXnet/IP tunnelling port (UDP) and its knxtool port (TCP). */
export class Knxd {
  readonly #child: ChildProcess
  readonly udpPort: number
  readonly tcpPort: number
  #output = ''
  readonly #listeners = new Set<ChildProcess>()

  private constructor(child: ChildProcess, udpPort: number, tcpPort: number) {
    this.#child = child
    this.udpPort = udpPort
    this.tcpPort = tcpPort
    child.stdout?.on('data', (chunk) => (this.#output += chunk))
    child.stderr?.on('data', (chunk) => (this.#output += chunk))
  }

  static async start(): Promise<Knxd> {
    requireKnxd()
    const udpPort = await freePort()
    const tcpPort = await freePort()
    // -e: knxd's own address; -E: the addresses of tunnel clients; -T with -S: a tunnelling
    // server (no -R: no routing, so nothing is sent to the multicast group); -i: knxtool's port.
    const child = spawn(KNXD, ['-e', '0.0.1', '-E', '0.0.2:8', '-f', '3', '-T', `-S224.0.23.12:${udpPort}`, `-i${tcpPort}`, '-b', 'dummy:'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const knxd = new Knxd(child, udpPort, tcpPort)
    await eventually(
      () =>
        new Promise<true | undefined>((resolve) => {
          if (child.exitCode !== null) throw new Error(`knxd exited: ${knxd.#output}`)
          const socket = connect(tcpPort, '127.0.0.1')
          socket.once('connect', () => {
            socket.destroy()
            resolve(true)
          })
          socket.once('error', () => resolve(undefined))
        }),
    )
    return knxd
  }

  get url(): string {
    return `ip:127.0.0.1:${this.tcpPort}`
  }

  /** Runs a knxtool applet against this knxd; its standard output. */
  async tool(applet: string, ...args: string[]): Promise<string> {
    const { stdout } = await promisify(execFile)(KNXTOOL, [applet, this.url, ...args], { timeout: 10_000 })
    return stdout
  }

  /** `knxtool groupsocketlisten`: every group telegram of the bus, one line each (`Write from 0.0.2 to 1/1/17: 01`). */
  async listen(): Promise<{ lines: string[]; stop(): void }> {
    const child = spawn(STDBUF, ['-oL', KNXTOOL, 'groupsocketlisten', this.url], { stdio: ['ignore', 'pipe', 'pipe'] })
    this.#listeners.add(child)
    const lines: string[] = []
    let rest = ''
    child.stdout.on('data', (chunk: Buffer) => {
      rest += chunk.toString('latin1')
      const parts = rest.split('\n')
      rest = parts.pop()!
      lines.push(...parts.filter(Boolean))
    })
    // Listening once it hears a write to an address no test binds (31/7/255).
    await eventually(async () => {
      await this.tool('groupswrite', '31/7/255', '1')
      return lines.some((l) => l.includes('31/7/255')) || undefined
    })
    return {
      lines,
      stop: () => {
        child.kill('SIGTERM')
        this.#listeners.delete(child)
      },
    }
  }

  async close(): Promise<void> {
    for (const child of this.#listeners) child.kill('SIGTERM')
    this.#listeners.clear()
    if (this.#child.exitCode !== null) return
    const exited = new Promise((resolve) => this.#child.once('exit', resolve))
    this.#child.kill('SIGTERM')
    await exited
  }
}
