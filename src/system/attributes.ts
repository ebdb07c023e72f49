import { ConflictError, NotFoundError, ValidationError, summarize, type ErrorDetail } from '../errors.js'
import { ATTRIBUTE_TYPES, inferType, typeProblem, type AttributeDeclaration, type AttributeType } from '../definition/model-schema.js'
import { attributeNameProblem } from '../definition/names.js'
import { typed } from '../values/encode.js'
import { cloneJson, plainJson, type PythonValue } from '../values/number.js'
import type { AttributeState } from '../snapshots/index.js'
import { Component, noArguments, type MethodHandler, type NodeDocument } from '../tree/component.js'
import { KeyedContainer } from '../tree/keyed-container.js'
import { nameIndex, SharedNameMap, type NameIndex } from '../tree/shared-names.js'
import type { SoaColumn } from '../language/model/soa/store.js'
import { NO_LOCK, type StructureLock } from '../tree/lock.js'
import { attributeDocumentBody, attributeDocumentJson, attributePropertyJson } from '../values/attribute-document.js'
import type { BodyValues } from '../values/request.js'

/** What an attribute needs from its instance: Python writes and protocol range checks. */
export interface AttributeOwner extends Component {
  /** Writes a Python-bound attribute through its setter; resolves once the cache holds the new value. */
  writeBound(attr: string, value: unknown): Promise<void>
  /** Why a protocol mapping cannot carry `value` for `attr`, or null. */
  mappedValueProblem(attr: string, value: unknown): string | null
  /** Whether a protocol adapter may publish `attr` (when false, `mappedValueProblem` is always null). */
  mayPublish(attr: string): boolean
  /** Hears of a write of `attr` by a client (its hooks run); undefined when nothing listens. */
  attributeSet?(attr: string, side: 'internal' | 'external'): Promise<void> | undefined
}

/** How an attribute is backed by a Python object, once the instance is prepared. */
export interface AttributeBinding {
  writable: boolean
}

/** The properties a write sets the internal value through: `value` is another name of `internal_value`. */
const INTERNAL_NAMES: ReadonlySet<string> = new Set(['internal_value', 'value'])

/** What `#internal` holds while the internal value is the number of a float attribute (see `#number`). */
const NUMBER: unique symbol = Symbol('number')

/**
 * `value` as an attribute of `type` holds it: integral floats stay marked (src/values/number.ts)
 * inside a list, dict or `any` value, where the type cannot tell them from ints; elsewhere they
 * are numbers.
 */
function accepted(type: AttributeType, value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value
  return type === 'list' || type === 'dict' || type === 'any' ? value : plainJson(value)
}

/** The declared default, as an attribute of the declaration holds it (see `accepted`). */
function declaredDefault(decl: AttributeDeclaration): unknown {
  return accepted(decl.type, decl.default)
}

/** The positions of each declaration list's names, made once per list: a model's is shared by the attribute maps of its instances. */
const indexes = new WeakMap<readonly AttributeDeclaration[], NameIndex>()

/**
 * The positions of the names of `declarations` (a model's, as `attributeDeclarations` gives
 * them), one index for the same array.
 */
export function declarationIndex(declarations: readonly AttributeDeclaration[]): NameIndex {
  let index = indexes.get(declarations)
  if (index === undefined) indexes.set(declarations, (index = nameIndex(declarations.map((d) => d.name))))
  return index
}

function invalid(attr: Attribute, property: string, message: string): ValidationError {
  return new ValidationError(`Attribute '${attr.path}': ${message}`, [{ path: property, message }])
}

function readOnly(attr: Attribute): string {
  return `attribute '${attr.name}' is bound to a getter without a setter and is read-only`
}

/**
 * One attribute of an instance. `internal_value` is the model state (a Python property when
 * bound); `external_value` is a presentation override that the next `run()` clears — reading it
 * gives the override when one is set, else the internal value. `value` is the internal value
 * under the name clients of the reference product use (read and written alike); being named like
 * a document key, it appears in `attr` only (API.md rule 1: no top-level `value`).
 *
 * @example
 * await attr.setProperty('internal_value', 21.5)
 */
export class Attribute extends Component {
  // Thousands of instances have an attribute object for each attribute of their model, so each
  // field counts (bench/ANALYSIS.md, benchmark 7's memory): what the model declares is one shared
  // declaration, `type` is a getter, the owner is the parent's, and the class has no private
  // methods (V8 gives each object of a class with private methods a field for the class's brand),
  // only private fields and the module's functions above.
  get type(): string {
    return 'Attribute'
  }
  override get bodyValues(): BodyValues {
    return 'values'
  }
  /** The declaration: value type, default, unit, description (shared by the instances of a model until `adopt`). */
  #decl: AttributeDeclaration
  /** The internal value, unless it is the number of a float attribute: then this is NUMBER and `#number` holds it. */
  #internal: unknown
  /**
   * The internal value of a float attribute. A field that only ever holds numbers is updated in
   * place by V8, so a step writing new floats allocates nothing; in `#internal` each new float
   * would be a new heap object, and with thousands of instances stepping that garbage dominated
   * the step (bench/profile/declarative-step.mjs).
   */
  #number = 0.5
  /**
   * With the fused step (language/model/soa/): the column of the model's struct of arrays that
   * holds this float attribute's number, in row `#row`, in place of `#number`.
   */
  #column: SoaColumn | undefined
  #row = 0
  #override: { value: unknown } | undefined
  /** A forced external value (`force`): what clients see until `release`, whatever the steps compute. */
  #forced: { value: unknown } | undefined
  /** A held override's value while a step runs: what `setComputed` keeps (language/model/behaviour.ts). */
  #pinned: { value: unknown } | undefined
  #binding: AttributeBinding | undefined

  /** `decl` is kept, not copied: the instances of a model share their model's declarations. */
  constructor(parent: Attributes, decl: AttributeDeclaration) {
    super(decl.name, parent)
    this.#decl = decl
    this.#internal = undefined
    this.store(cloneJson(declaredDefault(decl)))
  }

  get valueType(): AttributeType {
    return this.#decl.type
  }

  get unit(): string | undefined {
    return this.#decl.unit
  }

  get description(): string | undefined {
    return this.#decl.description
  }

  /** The instance this attribute is part of (its container's owner). */
  get owner(): AttributeOwner {
    return (this.parent as Attributes).owner
  }

  /** `value` as this attribute holds it (see `accepted`): a snapshot's `2.0` of a `float` attribute is the number 2. */
  held(value: unknown): unknown {
    return accepted(this.valueType, value)
  }

  get internalValue(): unknown {
    if (this.#internal !== NUMBER) return this.#internal
    const column = this.#column
    return column === undefined ? this.#number : column.values[this.#row]
  }

  /** Keeps `value` as the internal value (a TypeScript-private method, not `#`: see the class's first comment). */
  private store(value: unknown): void {
    const column = this.#column
    const wasNumber = this.#internal === NUMBER
    if (typeof value === 'number' && this.valueType === 'float') {
      if (column === undefined) this.#number = value
      else {
        column.values[this.#row] = value
        if (!wasNumber) column.store.countHold(this.#row, -1)
      }
      this.#internal = NUMBER
    } else {
      if (column !== undefined && wasNumber) column.store.countHold(this.#row, 1)
      this.#internal = value
    }
  }

  /**
   * Keeps the number of this float attribute in `column` at `row` from now on (the fused step's
   * struct of arrays), or again in the attribute itself with undefined (its instance is gone).
   */
  attachColumn(column: SoaColumn | undefined, row: number): void {
    const value = this.internalValue
    const isNumber = this.#internal === NUMBER
    if (this.#column !== undefined && !isNumber) this.#column.store.countHold(this.#row, -1)
    this.#column = column
    this.#row = row
    if (!isNumber) {
      if (column !== undefined) column.store.countHold(row, 1)
    } else if (column !== undefined) column.values[row] = value as number
    else this.#number = value as number
  }

  get externalValue(): unknown {
    return this.#forced ? this.#forced.value : this.#override ? this.#override.value : this.internalValue
  }

  /** Whether a forced value stands (see `force`). */
  get forced(): boolean {
    return this.#forced !== undefined
  }

  /**
   * Forces the external value: every protocol adapter, connection and reader of `external_value`
   * sees `value` until `release()` (or a reset), while the model goes on computing its internal
   * value. A written `external_value` lasts until the next step; a forced one stays, as a PLC
   * engineer forces an input.
   */
  force(value: unknown): void {
    value = this.held(value)
    const problem = this.valueProblem(value)
    if (problem) throw invalid(this, 'value', problem)
    this.#forced = { value: cloneJson(value) }
    void this.owner.attributeSet?.(this.name, 'external')?.catch(() => {})
  }

  /** Ends a forced value: clients see the external value the model presents again. */
  release(): void {
    this.#forced = undefined
  }

  override methods(): Record<string, MethodHandler> {
    return {
      force: (call) => {
        const given = Object.hasOwn(call.kwargs, 'value') ? call.kwargs.value : call.args[0]
        if (given === undefined && call.args.length === 0)
          throw new ValidationError(`Attribute '${this.path}': force needs the value clients are to see`, [{ path: 'kwargs.value', message: 'required' }])
        this.force(given)
        return true
      },
      release: noArguments(() => (this.release(), true)),
    }
  }

  get bound(): boolean {
    return this.#binding !== undefined
  }

  get writable(): boolean {
    return this.#binding ? this.#binding.writable : true
  }

  /** Marks the attribute as backed by Python (or not, with undefined). */
  bind(binding: AttributeBinding | undefined): void {
    this.#binding = binding
  }

  /**
   * Takes a value reported by Python (the object's own state). Python holds what it holds, but
   * this attribute keeps its type: an int or a bool into a `float` is taken as a float, a bool
   * into an `int` as 0 or 1 (Python's bool is an int), None is taken as null, and a value of
   * another type is not taken;
   * the problem is answered so the caller can fault the step or call that produced it.
   */
  setCached(value: unknown): string | null {
    const type = this.valueType
    if (typeof value === 'number' && type === 'float') {
      this.store(value)
      return null
    }
    let taken = this.held(value)
    if (typeof taken === 'boolean' && (type === 'float' || type === 'int')) taken = taken ? 1 : 0
    // A float attribute takes what Python computes, NaN and infinities included (a faulty sensor),
    // and any attribute takes None, Python's "no value yet".
    const problem = taken === null || (type === 'float' && typeof taken === 'number') ? null : typeProblem(type, taken)
    if (problem !== null) return `attribute '${this.name}' (${type}): ${problem}`
    this.store(taken)
    return null
  }

  /** The presentation override, if one is set (declarative behaviour reads and restores it). */
  get presented(): { value: unknown } | undefined {
    return this.#override
  }

  /** Sets the model state to a value computed by declarative behaviour, already of this attribute's type. */
  setComputed(value: unknown): void {
    this.store(this.#pinned === undefined ? value : this.#pinned.value)
  }

  /** Pins the internal value while a step runs (or lets go, with undefined); see HostAttribute.pin. */
  pin(pinned: { value: unknown } | undefined): void {
    this.#pinned = pinned
    if (pinned !== undefined) this.store(pinned.value)
  }

  /** Sets (or ends, with undefined) the presentation override from declarative behaviour. */
  setPresented(value: { value: unknown } | undefined): void {
    this.#override = value
    if (value) (this.parent as Attributes).noteOverride(this)
  }

  /** Why a protocol mapping cannot carry `value` for this attribute, or null. */
  mappingProblem(value: unknown): string | null {
    return this.owner.mappedValueProblem(this.name, value)
  }

  /** Whether an adapter may publish it: declarative writes skip `mappingProblem` when not. */
  get mapped(): boolean {
    return this.owner.mayPublish(this.name)
  }

  /** Why `value` may not be written to this attribute, or null. */
  valueProblem(value: unknown): string | null {
    return typeProblem(this.valueType, value) ?? this.owner.mappedValueProblem(this.name, value)
  }

  /** Sets the model state, through the Python setter when bound (`property`: the name it was written as, for faults). */
  async setInternal(value: unknown, property = 'internal_value'): Promise<void> {
    value = this.held(value)
    const problem = this.valueProblem(value)
    if (problem) throw invalid(this, property, problem)
    if (this.#binding) {
      if (!this.#binding.writable) throw invalid(this, property, readOnly(this))
      await this.owner.writeBound(this.name, value)
    } else this.store(cloneJson(value))
    const hooks = this.owner.attributeSet?.(this.name, 'internal')
    if (hooks) await hooks
  }

  /** Sets the presented value until the next run. */
  setExternal(value: unknown): void {
    value = this.held(value)
    const problem = this.valueProblem(value)
    if (problem) throw invalid(this, 'external_value', problem)
    this.#override = { value: cloneJson(value) }
    ;(this.parent as Attributes).noteOverride(this)
    void this.owner.attributeSet?.(this.name, 'external')?.catch(() => {})
  }

  clearOverride(): void {
    this.#override = undefined
  }

  /** Back to the declared default (declarative attributes only; Python owns bound ones). */
  resetValue(): void {
    this.#override = undefined
    this.#forced = undefined
    if (!this.#binding) this.store(cloneJson(declaredDefault(this.#decl)))
  }

  /** Turns a detached attribute created by a write into a declared one of the value's type. */
  adopt(value: unknown): void {
    const type = inferType(value)
    this.#decl = { name: this.name, type, default: cloneJson(accepted(type, value)) }
  }

  override properties(): Record<string, unknown> {
    const props: Record<string, unknown> = {
      internal_value: this.internalValue,
      external_value: this.externalValue,
      type: this.valueType,
    }
    if (this.unit !== undefined) props.unit = this.unit
    if (this.description !== undefined) props.description = this.description
    props.default = declaredDefault(this.#decl)
    props.bound = this.bound
    props.writable = this.writable
    if (this.#forced) props.forced = true
    props.value = props.internal_value
    return props
  }

  /** API.md rule 3: an attribute document's top-level `type` is the value type (`float`, ...). */
  override document(): NodeDocument {
    const doc = super.document()
    doc.type = this.valueType
    return doc
  }

  /** The document with its values typed (a float attribute's `30` is `30.0`), written by src/values/attribute-document.ts. */
  override documentJson(): string {
    return attributeDocumentJson(this)
  }

  /**
   * The document as `documentJson` writes it, or, with a string longer than 4 KiB among its
   * values, its UTF-8 bytes in pieces shared by every answer until it changes
   * (src/values/attribute-document.ts `attributeDocumentBody`).
   *
   * @example
   * const body = attr.documentBody() // Buffers for a 1 MiB string attribute, else the text
   */
  documentBody(): string | Buffer[] {
    return attributeDocumentBody(this)
  }

  /** A value property as its type writes it (`{"value": 30.0}` for a float), others as JSON. */
  override propertyJson(name: string): string | undefined {
    return attributePropertyJson(name, this.getProperty(name), this.valueType)
  }

  override propertyProblem(name: string, value: unknown): string | null {
    if (!INTERNAL_NAMES.has(name) && name !== 'external_value') return super.propertyProblem(name, value)
    const problem = this.valueProblem(this.held(value))
    if (problem !== null || name === 'external_value' || !this.#binding || this.#binding.writable) return problem
    return readOnly(this)
  }

  override async setProperty(name: string, value: unknown): Promise<void> {
    if (INTERNAL_NAMES.has(name)) return await this.setInternal(value, name)
    if (name === 'external_value') return this.setExternal(value)
    await super.setProperty(name, plainJson(value))
  }
}

/**
 * The attributes of an instance. `PUT` with `{"<attr>": value}` sets internal values and
 * creates attributes that do not exist yet; every value is checked before any is written.
 */
export class Attributes extends KeyedContainer<Attribute> {
  readonly type = 'Attributes'
  override get bodyValues(): BodyValues {
    return 'values'
  }
  /**
   * Attributes presenting an override until the next run; undefined when none does, as in most
   * steps: then a step's check is one field, not a Set's size (10,000 instances a step).
   */
  #overridden: Set<Attribute> | undefined
  /**
   * Names the instance gained by a write rather than from its model (the others, declared, it
   * cannot lose); undefined while there is none, as for nearly every instance (a Set per instance
   * of its declared names was 0.7 KiB of each of 10,000 instances).
   */
  #added: Set<string> | undefined
  #revision = 0
  /**
   * `__timer`, the instance time as a read-only attribute, when the owner has a time (see
   * TimerAttribute): the time until the attribute is first listed or read, then the attribute.
   */
  #timer: TimerAttribute | (() => number) | undefined
  /** The structure lock a DELETE runs under (given by the instance). */
  readonly #lock: StructureLock
  /** The connections that wire one of these attributes (their names). */
  readonly #wiredBy: (attribute: string) => string[]

  /**
   * `names`: the positions of the declarations' names, shared by the instances of a model (see
   * SharedNameMap); without it, these declarations' own.
   */
  constructor(
    owner: AttributeOwner,
    declarations: readonly AttributeDeclaration[],
    opts: { time?: () => number; lock?: StructureLock; wiredBy?: (attribute: string) => string[]; names?: NameIndex } = {},
  ) {
    super('attributes', owner, new SharedNameMap(opts.names ?? nameIndex(declarations.map((d) => d.name))))
    this.#lock = opts.lock ?? NO_LOCK
    this.#wiredBy = opts.wiredBy ?? (() => [])
    for (const decl of declarations) this.items.set(decl.name, new Attribute(this, decl))
    if (opts.time !== undefined && !this.items.has(TIMER_ATTRIBUTE)) this.#timer = opts.time
  }

  /** The instance these are the attributes of. */
  get owner(): AttributeOwner {
    return this.parent as AttributeOwner
  }

  /** The `__timer` attribute, made the first time it is listed or read: most instances' never is. */
  #timerAttribute(): TimerAttribute | undefined {
    const timer = this.#timer
    if (typeof timer !== 'function') return timer
    return (this.#timer = new TimerAttribute(this, timer))
  }

  /** The attributes, with `__timer` last (listed and read; the values, snapshots and behaviour use `all()`, which leaves it out). */
  override children(): Component[] {
    const list: Component[] = super.children()
    const timer = this.#timerAttribute()
    if (timer) list.push(timer)
    return list
  }

  override child(name: string): Component | undefined {
    return this.items.get(name) ?? (name === TIMER_ATTRIBUTE ? this.#timerAttribute() : undefined)
  }

  /** Counts additions and removals of attributes, so watchers see a changed set of the same size. */
  get revision(): number {
    return this.#revision
  }

  /** Whether `name` was added to this instance by a write rather than declared by its model. */
  isInstanceLevel(name: string): boolean {
    return this.#added?.has(name) === true && this.items.has(name)
  }

  #attach(attr: Attribute): void {
    ;(this.#added ??= new Set()).add(attr.name)
    this.items.set(attr.name, attr)
    this.#revision++
  }

  /** Ends every presentation override: what a run does. */
  /** Notes that `attr` presents an override until the next step. */
  noteOverride(attr: Attribute): void {
    if (this.#overridden === undefined) {
      this.#overridden = new Set()
      this.onOverride?.(this)
    }
    this.#overridden.add(attr)
  }

  /** Hears of the first override since the last `clearOverrides` (engine/fused-steps.ts sets it while the instance steps in its model's loop). */
  onOverride: ((attributes: { clearOverrides(): void }) => void) | undefined = undefined

  clearOverrides(): void {
    const overridden = this.#overridden
    if (overridden === undefined) return
    this.#overridden = undefined
    for (const attr of overridden) attr.clearOverride()
  }

  /** Attributes have no properties of their own: a `count` would read like an attribute. */
  override properties(): Record<string, unknown> {
    return {}
  }

  /** `PUT .../attributes/<new>/attr/internal_value` creates the attribute on its first write. */
  override materialize(name: string): Component | undefined {
    // A write would create it, so a name no attribute may have is the writer's error (422), not a 404.
    const problem = attributeNameProblem(name)
    if (problem) throw new ValidationError(`Attribute name is not valid: ${problem}`, [{ path: name, message: problem }])
    return new PendingAttribute(this, name, (attr) => this.#attach(attr))
  }

  override async put(body: Record<string, unknown>): Promise<void> {
    const details: ErrorDetail[] = []
    for (const [name, value] of Object.entries(body)) {
      const existing = this.items.get(name)
      if (existing === undefined && this.#timer && name === TIMER_ATTRIBUTE) {
        details.push({ path: name, message: TIMER_READ_ONLY })
        continue
      }
      const problem = existing
        ? (existing.valueProblem(value) ?? (existing.writable ? null : 'read-only (getter without setter)'))
        : (attributeNameProblem(name) ?? (value === undefined ? 'a value is required' : null))
      if (problem) details.push({ path: name, message: problem })
    }
    if (details.length) throw new ValidationError(summarize(`Attributes of '${this.parent?.path}'`, details), details)
    for (const [name, value] of Object.entries(body)) {
      const existing = this.items.get(name)
      if (existing) await existing.setInternal(value)
      else {
        this.#attach(new Attribute(this, { name, default: value, type: inferType(value) }))
      }
    }
  }

  override async patch(): Promise<void> {
    throw new NotFoundError(`Component '${this.path}' has no properties; PUT {"<attribute>": value} to set attributes`)
  }

  /**
   * Every attribute's values for a snapshot with state: the internal value, the external one
   * when an override is set, and for an attribute the instance gained by a write its type. With
   * `marked`, a float attribute's values are marked to be written as floats (`25.0`).
   */
  saveState(marked: boolean): Record<string, AttributeState> {
    const out: Record<string, AttributeState> = {}
    for (const [name, attr] of this.items) {
      const type = attr.valueType
      // An attribute holds Python values only (typeProblem): the cast names what it holds.
      const value = (v: unknown): PythonValue => (v !== null && typeof v === 'object' ? cloneJson(v) : marked ? typed(v, type) : v) as PythonValue
      const entry: AttributeState = { internal: value(attr.internalValue) }
      const presented = attr.presented
      if (presented !== undefined) entry.external = value(presented.value)
      if (this.#added?.has(name) === true) Object.assign(entry, { added: true, type })
      out[name] = entry
    }
    return out
  }

  /**
   * The problems of saved attribute values for this instance (each with its path under `path`):
   * an attribute it does not have, a value its type or a protocol mapping cannot take. Creates the
   * attributes marked `added` that it lacks.
   */
  checkState(saved: Record<string, AttributeState>, path: string): ErrorDetail[] {
    const problems: ErrorDetail[] = []
    for (const [name, entry] of Object.entries(saved)) {
      const at = `${path}.${name}`
      let attr = this.items.get(name)
      if (attr === undefined && entry.added === true) {
        const type = entry.type as AttributeType
        const nameIssue = attributeNameProblem(name)
        if (nameIssue) problems.push({ path: at, message: nameIssue })
        else if (!(ATTRIBUTE_TYPES as readonly string[]).includes(type))
          problems.push({ path: `${at}.type`, message: `expected one of ${ATTRIBUTE_TYPES.join(', ')}` })
        else this.#attach((attr = new Attribute(this, { name, default: cloneJson(entry.internal), type })))
      }
      if (attr === undefined) {
        const model = this.owner.properties().model
        problems.push({
          path: at,
          message: `instance '${this.owner.name}'${typeof model === 'string' ? ` (model '${model}')` : ''} has no attribute '${name}'`,
        })
        continue
      }
      const internal = attr.valueProblem(entry.internal)
      if (internal) problems.push({ path: `${at}.internal`, message: internal })
      if (Object.hasOwn(entry, 'external')) {
        const external = attr.valueProblem(entry.external)
        if (external) problems.push({ path: `${at}.external`, message: external })
      }
    }
    return problems
  }

  /**
   * Takes saved values checked by `checkState`: internal values and overrides, without hooks or
   * Python setters. Copied, so a snapshot's data is never shared with the running system.
   */
  restoreState(saved: Record<string, AttributeState>): void {
    for (const [name, entry] of Object.entries(saved)) {
      const attr = this.items.get(name)
      if (attr === undefined) continue
      attr.setCached(cloneJson(entry.internal))
      attr.setPresented(Object.hasOwn(entry, 'external') ? { value: attr.held(cloneJson(entry.external)) } : undefined)
    }
  }

  /**
   * DELETE of an attribute: one the instance gained by a write (PUT) goes; one its model declares
   * stays (409), as does one a connection uses. Runs under the structure lock, as connection
   * changes do.
   */
  override async deleteChild(name: string): Promise<void> {
    await this.#lock.exclusive(async () => {
      const attr = this.items.get(name)
      const where = this.parent?.path ?? ''
      if (!attr) throw new NotFoundError(`Component '${where}.attributes.${name}' not found`, [{ path: `${where}.attributes.${name}`, message: 'not found' }])
      const instance = this.owner.name
      if (this.#added?.has(name) !== true) {
        const model = this.owner.properties().model
        throw new ConflictError(
          `Attribute '${name}' of instance '${instance}' is declared by its model${typeof model === 'string' ? ` '${model}'` : ''} and cannot be removed from an instance: ` +
            "every instance has all of its model's attributes, which the model's behaviour, Python bindings and protocol mappings rely on. " +
            'Remove the attribute from the model definition, or delete the instance; only attributes added to an instance with PUT can be deleted.',
          [{ path: `${where}.attributes.${name}`, message: 'declared by the model' }],
        )
      }
      const users = this.#wiredBy(name)
      if (users.length) {
        throw new ConflictError(
          `Attribute '${name}' of instance '${instance}' is wired by connection${users.length === 1 ? '' : 's'} ${users.join(', ')}: delete them first`,
          users.map((c) => ({ path: `connections.${c}`, message: `uses ${instance}.attributes.${name}` })),
        )
      }
      this.items.delete(name)
      this.#added?.delete(name)
      this.#overridden?.delete(attr)
      this.#revision++
    })
  }
}

/** An attribute that exists only once a write to it succeeds. */
class PendingAttribute extends Attribute {
  /** Nothing to force before the attribute exists. */
  override methods(): Record<string, MethodHandler> {
    return {}
  }

  readonly #attach: (attr: Attribute) => void

  constructor(parent: Attributes, name: string, attach: (attr: Attribute) => void) {
    super(parent, { name, default: null, type: 'any' })
    this.#attach = attach
  }

  override propertyProblem(name: string, value: unknown): string | null {
    return INTERNAL_NAMES.has(name) || name === 'external_value' ? typeProblem('any', value) : null
  }

  override async setProperty(name: string, value: unknown): Promise<void> {
    if (!INTERNAL_NAMES.has(name) && name !== 'external_value') throw new NotFoundError(`Attribute '${this.path}' does not exist`)
    const problem = typeProblem('any', value)
    if (problem) throw new ValidationError(`Attribute '${this.path}': ${problem}`, [{ path: name, message: problem }])
    this.adopt(value)
    await super.setProperty(name, value)
    this.#attach(this)
  }
}

/** The reserved attribute every instance has: its time. */
const TIMER_ATTRIBUTE = '__timer'
const TIMER_DECLARATION: AttributeDeclaration = {
  name: TIMER_ATTRIBUTE,
  default: 0.0,
  type: 'float',
  unit: 's',
  description: 'the instance time (timer.time), read-only',
}
const TIMER_READ_ONLY = "read-only: '__timer' is the instance time (timer.time); set the timer's time to move it"

/**
 * `__timer`, the reference product's reserved attribute: the instance time (`timer.time`) as a
 * read-only float attribute, listed with the others. Expressions read it as `__timer`,
 * `$in(__timer)`, `#attr(__timer)`, ...; a write from a client is a 422 naming it (an action
 * writing it pins the timer instead, MODEL_LANGUAGE.md section 2).
 */
class TimerAttribute extends Attribute {
  /** The instance's time is read-only: it cannot be forced either. */
  override methods(): Record<string, MethodHandler> {
    return {}
  }

  readonly #time: () => number

  constructor(parent: Attributes, time: () => number) {
    super(parent, TIMER_DECLARATION)
    this.#time = time
  }

  override get internalValue(): unknown {
    return this.#time()
  }

  override get externalValue(): unknown {
    return this.#time()
  }

  override get writable(): boolean {
    return false
  }

  override propertyProblem(name: string, value: unknown): string | null {
    return INTERNAL_NAMES.has(name) || name === 'external_value' ? TIMER_READ_ONLY : super.propertyProblem(name, value)
  }

  override async setProperty(name: string, value: unknown): Promise<void> {
    if (INTERNAL_NAMES.has(name) || name === 'external_value')
      throw new ValidationError(`Attribute '${this.path}' is ${TIMER_READ_ONLY}`, [{ path: `${this.path}.${name}`, message: TIMER_READ_ONLY }])
    await super.setProperty(name, value)
  }
}
