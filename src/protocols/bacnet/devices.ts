import type { Logger } from 'pino'
import type { HeldPort, PortHolder, ProtocolContext } from '../adapter.js'

/**
 * The BACnet devices of one server (one per `bacnet` adapter, each on its own UDP port): what
 * they hold, so that a port clash names the device that has the port, and so that `GET /health`
 * lists them.
 *
 * @example
 * const devices = new BacnetDevices({ logger })
 * devices.hold('panel.bacnet', { host: '127.0.0.1', port: 47808, device: 3010 })
 * devices.heldPorts() // [{ transport: 'udp', host: '127.0.0.1', port: 47808, holder: "BACnet device 3010 of adapter 'panel.bacnet'" }]
 */
export class BacnetDevices implements ProtocolContext {
  readonly logger: Logger
  readonly portHolder: PortHolder | undefined
  readonly #held = new Map<string, { host: string; port: number; device: number }>()

  constructor(options: { logger: Logger; portHolder?: PortHolder | undefined }) {
    this.logger = options.logger
    this.portHolder = options.portHolder
  }

  hold(adapter: string, where: { host: string; port: number; device: number }): void {
    this.#held.set(adapter, where)
  }

  release(adapter: string): void {
    this.#held.delete(adapter)
  }

  /** The held port `port` of another adapter of this kind, or the listener of another kind that holds it. */
  holderOf(adapter: string, port: number): HeldPort | undefined {
    return this.heldPorts().find((p) => p.port === port && !p.holder.endsWith(`'${adapter}'`)) ?? this.portHolder?.('udp', port)
  }

  heldPorts(): HeldPort[] {
    return [...this.#held].map(([adapter, { host, port, device }]) => ({
      transport: 'udp' as const,
      host,
      port,
      holder: `BACnet device ${device} of adapter '${adapter}'`,
    }))
  }

  /** Each adapter closes its own socket when it stops; nothing is shared. */
  async close(): Promise<void> {
    this.#held.clear()
  }
}
