import { MimicNode } from './node.js'

/**
 * The `polling` node of the system or of an instance. Background polling is what `start()` runs;
 * disabling it keeps `start()` from looping, so a script can step the simulation itself.
 *
 * @example
 * await sim.instances.at('s1').polling.disable()
 * await sim.instances.at('s1').polling.enabled() // false
 */
export class PollingHandle extends MimicNode {
  /** Turns background polling on. */
  async enable(): Promise<boolean> {
    return await this.call<boolean>('enable')
  }

  /** Turns background polling off. */
  async disable(): Promise<boolean> {
    return await this.call<boolean>('disable')
  }

  /** Whether background polling is on. */
  async enabled(): Promise<boolean> {
    return await this.read<boolean>('enabled')
  }
}
