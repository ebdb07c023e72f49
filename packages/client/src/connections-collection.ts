import { KeyedCollection } from './keyed-collection.js'
import type { MimicNode } from './node.js'
import type { ConnectionDefinition } from './types.js'

/**
 * The connections (`sim.connections`): each copies one attribute's value to another.
 *
 * @example
 * await sim.connections.set('c1', { from: 's1.attributes.temperature', to: 'panel.attributes.value' })
 * await sim.connections.get('c1') // { from: 's1.attributes.temperature', to: 'panel.attributes.value' }
 */
export class ConnectionsCollection extends KeyedCollection {
  /** Creates or replaces the connection `name`. */
  async set(name: string, connection: ConnectionDefinition): Promise<void> {
    await this.upsert(name, connection)
  }

  /** The connection's `from` and `to` references. */
  async get(name: string): Promise<ConnectionDefinition> {
    const doc = await this.at(name).get()
    return { from: String(doc.attr.from?.value), to: String(doc.attr.to?.value) }
  }

  /** A handle on the connection's node; no request yet. */
  at(name: string): MimicNode {
    return this.node.node([name])
  }
}
