import { createSocket } from 'node:dgram'
import { connect, type Socket } from 'node:net'

/**
 * A text-line client over TCP, as an instrument's raw-socket client works: write bytes, read reply
 * lines. Lines are cut at `\n` and keep any `\r` before it, so tests can check terminators.
 *
 * @example
 * const c = await LineClient.connect(5025)
 * c.send('*IDN?\n')
 * const [idn] = await c.lines(1)
 */
export class LineClient {
  readonly socket: Socket
  #buffer = ''
  #closed = false
  #wake: (() => void) | null = null

  private constructor(socket: Socket) {
    this.socket = socket
    socket.setEncoding('utf8')
    socket.on('data', (text: string) => {
      this.#buffer += text
      this.#wake?.()
    })
    socket.on('close', () => {
      this.#closed = true
      this.#wake?.()
    })
    socket.on('error', () => {})
  }

  static connect(port: number, host = '127.0.0.1'): Promise<LineClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host, noDelay: true })
      socket.once('connect', () => resolve(new LineClient(socket)))
      socket.once('error', reject)
    })
  }

  get closed(): boolean {
    return this.#closed
  }

  send(text: string | Buffer): void {
    this.socket.write(text)
  }

  /** Sends one command line ending in `\n` and reads the one reply line. */
  async query(command: string): Promise<string> {
    this.send(`${command}\n`)
    return (await this.lines(1))[0]!
  }

  /** The next `n` lines (without `\n`); rejects when they do not come within `timeoutMs`. */
  async lines(n: number, timeoutMs = 5000): Promise<string[]> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const parts = this.#buffer.split('\n')
      if (parts.length - 1 >= n) {
        const out = parts.slice(0, n)
        this.#buffer = parts.slice(n).join('\n')
        return out
      }
      if (this.#closed) throw new Error(`connection closed after ${parts.length - 1} of ${n} lines`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`no ${n} lines within ${timeoutMs} ms (have ${JSON.stringify(this.#buffer.slice(0, 200))})`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.#wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      this.#wake = null
    }
  }

  /** Whatever arrived and was not read as lines yet. */
  get pending(): string {
    return this.#buffer
  }

  /** Resolves once the server closed the connection (rejects after `timeoutMs`). */
  async closedByServer(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!this.#closed) {
      if (Date.now() > deadline) throw new Error('the server did not close the connection')
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50)
        this.#wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  }

  close(): void {
    this.socket.destroy()
  }
}

/**
 * Sends one datagram and waits for the reply datagram.
 *
 * @example
 * await udpQuery(port, '*IDN?\n') // 'Mimic,...\n'
 */
export function udpQuery(port: number, text: string, timeoutMs = 3000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4')
    const timer = setTimeout(() => {
      socket.close()
      reject(new Error(`no UDP reply within ${timeoutMs} ms`))
    }, timeoutMs)
    socket.once('message', (message) => {
      clearTimeout(timer)
      socket.close()
      resolve(message.toString('utf8'))
    })
    socket.send(text, port, '127.0.0.1')
  })
}
