import type { Transport } from './transport.js'
import type { DeleteResult, JsonObject, JsonValue, NodeDocument } from './types.js'

const API_ROOT = '/api/v3/system'

/**
 * Options of {@link MimicNode.call}.
 *
 * @example
 * await sim.node('instances/s1').call('calibrate', {}, { args: [0.5] })
 */
export interface CallOptions {
  /** Positional arguments, sent as `"args"` next to `"kwargs"`. */
  args?: JsonValue[]
  /** A longer (or shorter) bound than the client's default for this one call. */
  timeoutMs?: number
}

/**
 * Splits a node path (`instances/s1/timer`, with or without surrounding slashes) into names.
 *
 * @example
 * splitPath('/instances/s1/timer') // ['instances', 's1', 'timer']
 */
export function splitPath(path: string | readonly string[]): string[] {
  return typeof path === 'string' ? path.split('/').filter((segment) => segment !== '') : [...path]
}

/**
 * A handle on any component of the tree, by path. Creating one sends nothing; each method is one
 * request. The typed handles (instances, attributes, polling) extend it.
 *
 * @example
 * const timer = sim.node('instances/s1/timer')
 * await timer.set('time', 1.5)
 * const doc = await timer.get()
 */
export class MimicNode {
  /** Names from the root, e.g. `['instances', 's1', 'timer']`. */
  readonly segments: readonly string[]
  #transport: Transport

  constructor(transport: Transport, path: string | readonly string[] = []) {
    this.#transport = transport
    this.segments = Object.freeze(splitPath(path))
  }

  /** The node's path with `/` between names (`''` for the system root). */
  get path(): string {
    return this.segments.join('/')
  }

  /** The request path of this node below the server address. */
  get url(): string {
    return this.#url()
  }

  protected get transport(): Transport {
    return this.#transport
  }

  /** A handle on a descendant, by a relative path (`'attributes/temperature'`). */
  node(relative: string | readonly string[]): MimicNode {
    return new MimicNode(this.#transport, [...this.segments, ...splitPath(relative)])
  }

  /** Reads the node document. */
  async get(): Promise<NodeDocument> {
    return await this.#transport.request<NodeDocument>('GET', this.#url())
  }

  /** Names of the node's children, in the server's order. */
  async keys(): Promise<string[]> {
    return (await this.get()).children.map((child) => child.name)
  }

  /** Reads one property (`GET <node>/attr/<name>`). */
  async read<T extends JsonValue = JsonValue>(property: string): Promise<T> {
    const answer = await this.#transport.request<{ value: T }>('GET', this.#url('attr', property))
    return answer.value
  }

  /** Sets one property (`PUT <node>/attr/<name>`) and resolves to the value the server kept. */
  async set<T extends JsonValue>(property: string, value: T): Promise<T> {
    const answer = await this.#transport.request<{ value: T }>('PUT', this.#url('attr', property), { value })
    return answer.value
  }

  /** Sets several properties at once (PATCH) and resolves to the node document. */
  async update(properties: JsonObject): Promise<NodeDocument> {
    return await this.#transport.request<NodeDocument>('PATCH', this.#url(), properties)
  }

  /** Creates or replaces children, or sets properties, by key (PUT on the node). */
  async put(entries: Record<string, unknown>): Promise<NodeDocument> {
    return await this.#transport.request<NodeDocument>('PUT', this.#url(), entries)
  }

  /** Calls a public method with keyword arguments and resolves to its `result`. */
  async call<T = JsonValue>(method: string, kwargs: Record<string, unknown> = {}, options: CallOptions = {}): Promise<T> {
    const body = options.args === undefined ? { kwargs } : { kwargs, args: options.args }
    const requestOptions = options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }
    const answer = await this.#transport.request<{ result: T }>('POST', this.#url('method', method), body, requestOptions)
    return answer.result
  }

  /** Removes the component and stops everything it runs. */
  async delete(): Promise<DeleteResult> {
    return await this.#transport.request<DeleteResult>('DELETE', this.#url())
  }

  #url(...more: string[]): string {
    const names = [...this.segments, ...more]
    return names.length === 0 ? API_ROOT : `${API_ROOT}/${names.map(encodeURIComponent).join('/')}`
  }
}
