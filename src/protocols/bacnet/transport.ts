import { createSocket, type Socket } from 'node:dgram'
import { EventEmitter } from 'node:events'
import { listenOnce } from '../adapter-kit.js'

/**
 * The UDP socket of one BACnet/IP device, in the shape @bacnet-js/client takes as its `transport`
 * option. The library's own transport binds in its constructor with SO_REUSEADDR on (two devices
 * could then share a port unnoticed) and reports a failed bind only as an event, and it names a
 * sender on 47808 by its address alone, which its client then drops when it is 127.0.0.1 (it takes
 * such datagrams for its own echoes). This one binds exclusively through `listenOnce` (so a taken
 * port is a fault that names it), always names senders `address:port`, and drops datagrams while
 * `silent()` says so (a detached adapter).
 *
 * @example
 * const transport = new DeviceTransport({ host: '127.0.0.1', port: 47808, silent: () => false })
 * const port = await transport.bind()
 * const client = new BACnetClient({ transport })
 */
export class DeviceTransport extends EventEmitter {
  readonly #socket: Socket
  readonly #host: string
  readonly #port: number
  readonly #silent: () => boolean
  #closed = false
  /** Datagrams received and dropped while silent. */
  received = 0
  dropped = 0

  constructor(options: { host: string; port: number; silent: () => boolean }) {
    super()
    this.#host = options.host
    this.#port = options.port
    this.#silent = options.silent
    this.#socket = createSocket({ type: options.host.includes(':') ? 'udp6' : 'udp4', reuseAddr: false })
    this.#socket.on('message', (message, rinfo) => {
      this.received++
      if (this.#silent()) {
        this.dropped++
        return
      }
      this.emit('message', message, `${rinfo.address}:${rinfo.port}`)
    })
  }

  /** Binds the socket; resolves with the bound port, rejects with the bind's error. */
  async bind(): Promise<number> {
    const port = await listenOnce(
      this.#socket,
      () => this.#socket.bind({ address: this.#host, port: this.#port, exclusive: true }),
      () => this.#socket.address().port,
    )
    this.#socket.on('error', (error) => this.emit('error', error))
    return port
  }

  /** Called by the client when it is made: the socket is bound already. */
  open(): void {}

  getBroadcastAddress(): string {
    return '255.255.255.255'
  }

  /** BACnet/IP's largest APDU (1476) with its BVLC and NPDU headers. */
  getMaxPayload(): number {
    return 1482
  }

  /** Sends `offset` bytes of `buffer` to `receiver` (`address:port`, or `address` for 47808). */
  send(buffer: Buffer, offset: number, receiver?: string): void {
    if (this.#closed || receiver === undefined) return
    // The library encodes into a buffer of getMaxPayload() bytes and counts on past its end when an
    // answer does not fit; this device does not segment, so the caller answers with an Abort.
    if (offset > buffer.length) throw new RangeError(`an answer of ${offset} bytes does not fit one BACnet/IP datagram (${buffer.length})`)
    const at = receiver.lastIndexOf(':')
    const address = at > 0 && !receiver.endsWith(']') ? receiver.slice(0, at) : receiver
    const port = at > 0 ? Number(receiver.slice(at + 1)) : 47808
    this.#socket.send(buffer, 0, offset, Number.isInteger(port) && port > 0 ? port : 47808, address)
  }

  close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#socket.close()
  }
}
