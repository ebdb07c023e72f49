import { MimicNode } from './node.js'
import type { Transport } from './transport.js'
import type { DeleteResult, NodeDocument } from './types.js'

/**
 * What the `models`, `instances` and `connections` collections share: listing keys, checking
 * for one, deleting one, and upserting by key.
 *
 * @example
 * await sim.instances.keys()        // ['s1', 'panel']
 * await sim.instances.has('s1')     // true
 * await sim.instances.delete('s1')
 */
export class KeyedCollection {
  /** The collection's own node (`models`, `instances`, `connections`). */
  readonly node: MimicNode
  #transport: Transport

  constructor(transport: Transport, name: string) {
    this.#transport = transport
    this.node = new MimicNode(transport, [name])
  }

  protected get transport(): Transport {
    return this.#transport
  }

  /** Names of the entries, in the server's order. */
  async keys(): Promise<string[]> {
    return await this.node.keys()
  }

  /** Whether an entry of this name exists. */
  async has(name: string): Promise<boolean> {
    return (await this.keys()).includes(name)
  }

  /** Removes an entry (404 MimicApiError when there is none; 409 for a model still in use). */
  async delete(name: string): Promise<DeleteResult> {
    return await this.node.node([name]).delete()
  }

  protected async upsert(name: string, value: unknown): Promise<NodeDocument> {
    return await this.node.put({ [name]: value })
  }
}
