import { loadProtocolKinds } from '../protocols/index.js'
import { protocolNames } from './communication.js'
import { ConflictError, ValidationError, validationFailure, type ErrorDetail } from '../errors.js'
import { nameProblem } from '../definition/names.js'
import { attributeDeclarations, unservedProtocols, type ParsedModelDefinition } from '../definition/model-schema.js'
import { typedModelDefinition } from '../values/definitions.js'
import { typedJson } from '../values/encode.js'
import { cloneJson } from '../values/number.js'
import { joinPath, validateModel } from '../definition/validate.js'
import { checkInstance } from '../definition/parameters.js'
import { Component } from '../tree/component.js'
import { KeyedContainer } from '../tree/keyed-container.js'
import { mappedDefaultProblems } from './mapping-check.js'
import type { System } from './system.js'
import type { BodyValues } from '../values/request.js'

/** A model template: its definition exactly as given, and the parsed form the system uses. */
export class Model extends Component {
  readonly type = 'Model'
  override get bodyValues(): BodyValues {
    return 'model'
  }
  readonly definition: unknown
  readonly parsed: ParsedModelDefinition
  readonly #system: System

  constructor(opts: { name: string; parent: Models; definition: unknown; parsed: ParsedModelDefinition; system: System }) {
    super(opts.name, opts.parent)
    this.definition = cloneJson(opts.definition)
    this.parsed = opts.parsed
    this.#system = opts.system
  }

  override properties(): Record<string, unknown> {
    return { definition: this.definition, instances: this.#system.instancesOf(this.name).map((i) => i.name) }
  }

  /**
   * The document with the definition's float attribute defaults written as floats: a JSON body
   * has lost the `.0` of `25.0` by the time it is parsed, so it comes back from the type.
   */
  override documentJson(): string {
    const doc = this.document()
    const definition = typedModelDefinition(this.definition)
    doc.attr.definition = { value: definition }
    doc.definition = definition
    return typedJson(doc)
  }

  override propertyJson(name: string): string | undefined {
    return name === 'definition' ? typedJson(typedModelDefinition(this.definition)) : super.propertyJson(name)
  }

  /** The definition is checked when it is put (every problem with its path). */
  override propertyProblem(name: string, value: unknown): string | null {
    return name === 'definition' ? null : super.propertyProblem(name, value)
  }

  /** `PUT models/<m>` with `{"definition": {...}}` replaces the model. */
  override async setProperty(name: string, value: unknown): Promise<void> {
    if (name === 'definition') return await this.#system.models.put({ [this.name]: value })
    await super.setProperty(name, value)
  }
}

/**
 * The model templates. `PUT` with `{"<model>": <definition>}` registers or replaces models:
 * all definitions are validated first (422 listing every problem with its path), then applied.
 * Replacing a model rebuilds its instances fresh from the new definition.
 */
export class Models extends KeyedContainer<Model> {
  readonly type = 'Models'
  override get bodyValues(): BodyValues {
    return 'models'
  }
  readonly #system: System

  constructor(system: System) {
    super('models', system)
    this.#system = system
  }

  override async put(body: Record<string, unknown>): Promise<void> {
    await this.#system.exclusive(async () => {
      const parsed = await this.check(body)
      await this.apply(parsed)
    })
  }

  /**
   * Validates model definitions against names, schemas and the connections that use them. The
   * fault's message starts with the first invalid model and its first problem
   * (`Model 'x' schema validation failed: attributes.y: expected a number`); its details list
   * every problem of every model. A body of one model has paths inside it; with `at` (a root
   * PUT's `models`), every path starts with `at` and the model's name.
   */
  async check(body: Record<string, unknown>, at?: string): Promise<Map<string, { raw: unknown; parsed: ParsedModelDefinition }>> {
    const names = Object.keys(body)
    // The defaults are checked against each mapping by the protocol's own code (mapping-check.ts).
    await loadProtocolKinds(protocolNames(Object.values(body)))
    const single = names.length === 1 && at === undefined
    const problems = new Map<string, ErrorDetail[]>()
    const parsed = new Map<string, { raw: unknown; parsed: ParsedModelDefinition }>()
    if (names.length === 0) throw new ValidationError('Nothing to do: PUT {"<model>": <definition>}', [{ path: '', message: 'empty body' }])
    for (const name of names) {
      const result = this.#checkOne(name, body[name])
      if (result.ok) parsed.set(name, { raw: body[name], parsed: result.model })
      else problems.set(name, result.details)
    }
    const [first] = problems
    if (first) {
      const [name, own] = first
      const others = [...problems.keys()].slice(1)
      const also = others.length ? `; also invalid: ${others.map((m) => `'${m}'`).join(', ')}` : ''
      const details = [...problems].flatMap(([model, list]) => list.map((d) => ({ ...d, path: joinPath(at ?? '', joinPath(single ? '' : model, d.path)) })))
      const err = new ValidationError(`${validationFailure(`Model '${name}'`, own)}${also}`, details)
      if (single) err.component = { name, path: `models.${name}`, state: null }
      throw err
    }
    return parsed
  }

  /** The problems of one model definition, with paths inside the definition. */
  #checkOne(name: string, definition: unknown): { ok: true; model: ParsedModelDefinition } | { ok: false; details: ErrorDetail[] } {
    const problem = nameProblem(name)
    if (problem) return { ok: false, details: [{ path: '', message: problem }] }
    const result = validateModel(definition, this.#system.behaviourProblems)
    if (!result.ok) return { ok: false, details: result.details }
    const unmappable = mappedDefaultProblems(result.model)
    if (unmappable.length) return { ok: false, details: unmappable }
    const unserved = this.strictProtocolProblems(result.model)
    if (unserved.length) return { ok: false, details: unserved }
    const details: ErrorDetail[] = []
    const attrs = new Set(attributeDeclarations(result.model).map((a) => a.name))
    for (const conn of this.#system.connections.all()) {
      for (const end of [conn.fromRef, conn.toRef]) {
        const inst = this.#system.instances.get(end.instance)
        if (inst?.model.name === name && !attrs.has(end.attribute)) {
          details.push({
            path: `attributes.${end.attribute}`,
            message: `removed, but connection '${conn.name}' uses ${end.instance}.attributes.${end.attribute}`,
          })
        }
      }
    }
    for (const inst of this.#system.instancesOf(name)) {
      const problems = checkInstance(result.model, inst.given ?? {}).problems
      for (const p of problems) details.push({ path: 'meta_parameters', message: `instance '${inst.name}': ${p.path}: ${p.message}` })
    }
    return details.length ? { ok: false, details } : { ok: true, model: result.model }
  }

  /** Installs checked models; instances of a replaced model are rebuilt. */
  async apply(models: Map<string, { raw: unknown; parsed: ParsedModelDefinition }>): Promise<void> {
    for (const [name, { raw, parsed }] of models) {
      this.warnUnserved(name, parsed)
      const model = new Model({ name, parent: this, definition: raw, parsed, system: this.#system })
      const replaced = this.items.has(name)
      this.items.set(name, model)
      if (replaced) await this.#system.instances.rebuild(name)
    }
  }

  /**
   * With `--strict-protocols`, each protocol of the model that Mimic does not serve, as a problem
   * at its path (`communication[1].matter`); without it, none (the model runs without them).
   */
  strictProtocolProblems(parsed: ParsedModelDefinition): ErrorDetail[] {
    if (!this.#system.services.strictProtocols) return []
    return unservedProtocols(parsed).map((u) => ({
      path: u.path,
      message: `Mimic does not serve the ${u.kind} protocol, and the server runs with --strict-protocols (MIMIC_STRICT_PROTOCOLS), which refuses such models`,
    }))
  }

  /** Says once per definition that a model declares protocols Mimic does not serve, and runs without them. */
  warnUnserved(name: string, parsed: ParsedModelDefinition): void {
    const unserved = unservedProtocols(parsed)
    if (unserved.length === 0) return
    this.#system.services.logger.warn(
      { model: name, unserved: unserved.map((u) => u.path) },
      `model '${name}' declares ${unserved.map((u) => u.kind).join(', ')}, which Mimic does not serve: it runs without ${unserved.length === 1 ? 'it' : 'them'}`,
    )
  }

  /** Adds a model that is already validated (system load), without rebuilding anything. */
  install(name: string, raw: unknown, parsed: ParsedModelDefinition): void {
    this.warnUnserved(name, parsed)
    this.items.set(name, new Model({ name, parent: this, definition: raw, parsed, system: this.#system }))
  }

  /** A validated model not yet installed (a snapshot load with state builds the new system beside the old one). */
  stage(name: string, raw: unknown, parsed: ParsedModelDefinition): Model {
    return new Model({ name, parent: this, definition: raw, parsed, system: this.#system })
  }

  /** Installs a model made by `stage`. */
  adopt(model: Model): void {
    this.items.set(model.name, model)
  }

  clear(): void {
    this.items.clear()
  }

  override async deleteChild(name: string): Promise<void> {
    await this.#system.exclusive(async () => {
      if (!this.items.has(name)) throw this.#system.notFound('models', name)
      const users = this.#system.instancesOf(name).map((i) => i.name)
      if (users.length) {
        throw new ConflictError(
          `Model '${name}' is used by instance${users.length === 1 ? '' : 's'} ${users.join(', ')}: delete them first`,
          users.map((u) => ({ path: `instances.${u}`, message: `uses model '${name}'` })),
        )
      }
      this.items.delete(name)
    })
  }
}
