import { ConflictError, NotFoundError, ValidationError, summarize } from '../errors.js'
import type { BodyValues } from '../values/request.js'

/** Arguments of a method call: `{"args": [...], "kwargs": {...}}` from the HTTP body. */
export interface CallArgs {
  args: unknown[]
  kwargs: Record<string, unknown>
}

/** A public method of a component. */
export type MethodHandler = (call: CallArgs) => unknown | Promise<unknown>

/** The handlers made by `noArguments`. */
const ARGUMENTLESS = new WeakSet<MethodHandler>()

/**
 * A method that takes no arguments. `Component.call` refuses a call that gives any, before the
 * method runs, with a 422 naming each (`kwargs.<name>`, `args`): a misspelt argument is an
 * error, not something silently ignored.
 *
 * @example
 * methods() { return { reset: noArguments(() => this.reset()) } }
 */
export function noArguments(handler: () => unknown): MethodHandler {
  const method: MethodHandler = () => handler()
  ARGUMENTLESS.add(method)
  return method
}

/** The 422 for arguments given to a method that takes none, or nothing when none were given. */
function refuseArguments(method: string, call: CallArgs): void {
  const details = Object.keys(call.kwargs).map((k) => ({ path: `kwargs.${k}`, message: `unknown argument (${method} takes none)` }))
  if (call.args.length) details.push({ path: 'args', message: `${method} takes no arguments` })
  if (details.length) throw new ValidationError(summarize(method, details), details)
}

/** What GET returns for a component (API.md section 3, "Node document"). */
export interface NodeDocument {
  name: string
  type: string
  path: string
  attr: Record<string, { value: unknown }>
  children: Array<{ name: string }>
  methods: string[]
  [property: string]: unknown
}

/** Keys of a node document that properties may not shadow at top level. */
export const DOCUMENT_KEYS: ReadonlySet<string> = new Set(['name', 'type', 'path', 'attr', 'children', 'methods', 'value'])

/**
 * A node of the component tree. Every part of a system (the root, models, instances,
 * attributes, timers, adapters, snapshots) is one, and the HTTP verbs map onto this interface
 * alone: read the document, read/set properties, upsert children, call methods, delete.
 *
 * @example
 * class Lamp extends Component {
 *   readonly type = 'Lamp'
 *   override properties() { return { on: this.#on } }
 * }
 */
export abstract class Component {
  readonly name: string
  parent: Component | null

  abstract readonly type: string

  constructor(name: string, parent: Component | null) {
    this.name = name
    this.parent = parent
  }

  /** Dotted path from the system root: `instances.sensor.attributes.temperature` (the root is ''). */
  get path(): string {
    if (!this.parent) return ''
    const parentPath = this.parent.path
    return parentPath ? `${parentPath}.${this.name}` : this.name
  }

  /** Upper-case state for components that have one (instances, adapters), else undefined. */
  get state(): string | undefined {
    return undefined
  }

  /** Child components in display order. */
  children(): Component[] {
    return []
  }

  /** One child by name. */
  child(name: string): Component | undefined {
    return this.children().find((c) => c.name === name)
  }

  /**
   * A child that does not exist yet but may be created by a write to it (for example
   * `PUT .../attributes/<new>/attr/internal_value`). Called only for PUT.
   */
  materialize(_name: string): Component | undefined {
    return undefined
  }

  /** Properties by name (values must be JSON-able). */
  properties(): Record<string, unknown> {
    return {}
  }

  /** Reads one property (`state` too, which the node document lists with them); unknown names are a 404. */
  getProperty(name: string): unknown {
    const props = this.properties()
    if (Object.hasOwn(props, name)) return props[name]
    const state = this.state
    if (name === 'state' && state !== undefined) return state
    const names = [...(state === undefined || Object.hasOwn(props, 'state') ? [] : ['state']), ...Object.keys(props)]
    throw new NotFoundError(`Component '${this.displayPath}' has no property '${name}' (properties: ${names.join(', ') || 'none'})`)
  }

  /**
   * One property as JSON text (undefined when its value is undefined): what `GET .../attr/<name>`
   * answers inside `{"value": ...}`. Components whose values carry a type JSON cannot tell (a
   * float attribute's `30.0`) write them here.
   */
  propertyJson(name: string): string | undefined {
    return JSON.stringify(this.getProperty(name))
  }

  /** Sets one property; the default refuses every name (read-only component). */
  async setProperty(name: string, _value: unknown): Promise<void> {
    if (Object.hasOwn(this.properties(), name) || (name === 'state' && this.state !== undefined))
      throw new ValidationError(`Property '${name}' of '${this.displayPath}' is read-only`, [{ path: name, message: 'read-only' }])
    throw new NotFoundError(`Component '${this.displayPath}' has no property '${name}'`)
  }

  /**
   * PUT on the node: by default every key sets a property. Containers override this to create
   * or replace children. All keys are checked before any is applied where the container can.
   */
  async put(body: Record<string, unknown>): Promise<void> {
    const props = this.properties()
    const unknown = Object.keys(body).filter((k) => !Object.hasOwn(props, k))
    if (unknown.length) {
      throw new NotFoundError(
        `Component '${this.displayPath}' has no propert${unknown.length === 1 ? 'y' : 'ies'} ${unknown.map((k) => `'${k}'`).join(', ')}`,
        unknown.map((k) => ({ path: k, message: 'unknown property' })),
      )
    }
    // Several properties are all checked before any is set, so a refused one leaves the others as they were.
    const entries = Object.entries(body)
    if (entries.length > 1) {
      const details = entries.flatMap(([key, value]) => {
        const problem = this.propertyProblem(key, value)
        return problem === null ? [] : [{ path: key, message: problem }]
      })
      if (details.length) throw new ValidationError(summarize(`Properties of '${this.displayPath}'`, details), details)
    }
    for (const [key, value] of entries) await this.setProperty(key, value)
  }

  /**
   * Why `setProperty(name, value)` would refuse the value, found without setting anything; null
   * when it would not, or when only trying tells. The default: a property of this node is
   * read-only, as the default `setProperty` says.
   */
  propertyProblem(name: string, _value: unknown): string | null {
    return Object.hasOwn(this.properties(), name) || (name === 'state' && this.state !== undefined) ? 'read-only' : null
  }

  /** PATCH: set properties only. */
  async patch(props: Record<string, unknown>): Promise<void> {
    await Component.prototype.put.call(this, props)
  }

  /** Public methods by name. */
  methods(): Record<string, MethodHandler> {
    return {}
  }

  /**
   * Where a write body (PUT, PATCH) to this node holds Python values whose numbers keep their
   * type (`2.0` a float, src/values/request.ts): `none` for a node whose body is plain JSON.
   */
  get bodyValues(): BodyValues {
    return 'none'
  }

  /**
   * Whether a call of `method` takes its arguments with integral floats kept as floats
   * (`FloatMark`, src/values/number.ts): true for methods whose arguments reach Python,
   * which tells `2.0` from `2`. Built-in methods take plain JSON.
   */
  keepsFloatsIn(_method: string): boolean {
    return false
  }

  /** Calls a public method; unknown names are a 404. */
  async call(method: string, call: CallArgs): Promise<unknown> {
    const methods = this.methods()
    const handler = Object.hasOwn(methods, method) ? methods[method] : undefined
    if (!handler) {
      throw new NotFoundError(`Component '${this.displayPath}' has no method '${method}' (methods: ${Object.keys(methods).join(', ') || 'none'})`)
    }
    if (ARGUMENTLESS.has(handler)) refuseArguments(method, call)
    return await handler(call)
  }

  /** DELETE on a child of this component; containers that allow it override. */
  async deleteChild(name: string): Promise<void> {
    throw new ConflictError(`Component '${joinDisplay(this.displayPath, name)}' cannot be deleted`)
  }

  /** Releases whatever the component runs (loops, Python objects, listeners). */
  async destroy(): Promise<void> {
    for (const child of this.children()) await child.destroy()
  }

  /** The node document of API.md section 3. */
  document(): NodeDocument {
    const props = this.properties()
    const state = this.state
    // A plain object, not Object.create(null): V8 keeps prototype-less objects in dictionary
    // mode, and JSON.stringify of those is the slow path of every GET. Property names come from
    // the code (properties()), never from users, so none of them is `__proto__`.
    const attr: Record<string, { value: unknown }> = {}
    const doc: NodeDocument = { name: this.name, type: this.type, path: this.path, attr, children: [], methods: [] }
    if (state !== undefined) {
      doc.state = state
      attr.state = { value: state }
    }
    for (const [key, value] of Object.entries(props)) {
      attr[key] = { value }
      if (!DOCUMENT_KEYS.has(key)) doc[key] = value
    }
    doc.children = this.children().map((c) => ({ name: c.name }))
    doc.methods = Object.keys(this.methods())
    return doc
  }

  /** The node document as JSON text: `JSON.stringify(this.document())`, or the same bytes built faster. */
  documentJson(): string {
    return JSON.stringify(this.document())
  }

  /** The path as shown in messages: the root is called `system`. */
  get displayPath(): string {
    return this.path || 'system'
  }

  /** Fault `component` block for errors about this node. */
  faultInfo(): { name: string; path: string; state: string | null } {
    return { name: this.name, path: this.path, state: this.state ?? null }
  }
}

function joinDisplay(parent: string, name: string): string {
  return parent === 'system' ? name : `${parent}.${name}`
}
