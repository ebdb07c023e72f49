import type { RefusedValues } from './refused-values.js'
import type { Steppable } from './steppable.js'

/**
 * What a system step needs from the system: its instances, the connections applied after every
 * step, the system timer and the refused values of its instances. The tree's System provides it.
 *
 * @example
 * const engine = new Engine({ system, python, logger, polling })  // system: SteppedSystem<Instance>
 */
export interface SteppedSystem<I extends Steppable> {
  readonly instances: { all(): Iterable<I> }
  readonly connections: {
    /** How many there are: any connection makes every step depend on the server. */
    readonly size: number
    /** Copies every `from` value to its `to` attribute; a failing connection records its error. */
    propagate(): Promise<void>
  }
  readonly timer: { advance(dt?: number): void }
  /** The values its instances' Python objects hold that their attributes refused; its instances and steps share it. */
  readonly refused: RefusedValues
}
