import { spawn, spawnSync } from 'node:child_process'

/**
 * A pair of connected pseudo-terminals made by socat (Debian `socat`): what is written to one is
 * read from the other, as two serial ports joined by a null-modem cable. Both ends are raw and do
 * not echo. A missing socat is an error naming the package, never a skip.
 *
 * @example
 * const pair = await ptyPair()
 * // serve on pair.a, talk to it on pair.b
 * await pair.close()
 */
export interface PtyPair {
  /** The two devices, e.g. /dev/pts/3 and /dev/pts/4. */
  a: string
  b: string
  close: () => Promise<void>
}

/** Throws, naming the Debian package, when `command` cannot be run. */
export function requirePeer(command: string, args: string[], debianPackage: string): void {
  const result = spawnSync(command, args, { stdio: 'ignore', timeout: 10_000 })
  if (result.error !== undefined || result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed: this test needs the Debian package ${debianPackage} (apt-get install ${debianPackage})`)
  }
}

/** Starts socat and resolves once it has made both terminals. */
export async function ptyPair(): Promise<PtyPair> {
  requirePeer('socat', ['-V'], 'socat')
  const child = spawn('socat', ['-d', '-d', 'pty,raw,echo=0', 'pty,raw,echo=0'], { stdio: ['ignore', 'ignore', 'pipe'] })
  const devices: string[] = []
  let stderr = ''
  await new Promise<void>((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text
      for (const match of text.matchAll(/PTY is (\S+)/g)) devices.push(match[1]!)
      // socat names both terminals, then says it starts moving data: only then are both open.
      if (devices.length >= 2 && /starting data transfer loop/.test(stderr)) resolve()
    })
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`socat ended (${code}) before making two terminals: ${stderr}`)))
  })
  child.removeAllListeners('exit')
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return {
    a: devices[0]!,
    b: devices[1]!,
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await exited
    },
  }
}
