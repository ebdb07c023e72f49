import type { HeldPort, PortHolder, ProtocolContext } from '../adapter.js'

/**
 * The shared context of the `ocpp` kind: which central-system listeners of this server hold
 * which ports, so that another kind refused one of them can say who has it, and who holds a
 * port another kind asks about.
 *
 * @example
 * const context = new OcppContext({ portHolder })
 * const release = context.hold({ transport: 'tcp', host: '127.0.0.1', port: 9000, holder: "OCPP central system 'csms.ocpp'" })
 * release()
 */
export class OcppContext implements ProtocolContext {
  readonly portHolder: PortHolder | undefined
  readonly #held = new Set<HeldPort>()

  constructor(options: { portHolder?: PortHolder | undefined } = {}) {
    this.portHolder = options.portHolder
  }

  /** Records a port held; returns what forgets it. */
  hold(port: HeldPort): () => void {
    this.#held.add(port)
    return () => void this.#held.delete(port)
  }

  heldPorts(): HeldPort[] {
    return [...this.#held]
  }

  async close(): Promise<void> {
    this.#held.clear()
  }
}
