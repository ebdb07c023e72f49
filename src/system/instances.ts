import { ConflictError, NotFoundError, ValidationError, summarize, type ErrorDetail } from '../errors.js'
import { nameProblem } from '../definition/names.js'
import { checkInstance } from '../definition/parameters.js'
import { instanceEntry } from '../definition/validate.js'
import { KeyedContainer } from '../tree/keyed-container.js'
import { Instance } from './instance.js'
import type { Model } from './models.js'
import type { System } from './system.js'

/** How an instance was given: its parameters and attribute start values, resolved, and as written. */
export interface InstanceSetup {
  given?: { parameters?: Record<string, unknown>; init_parameters?: Record<string, unknown> }
  parameters: Record<string, unknown>
  initValues: Record<string, unknown>
}

/**
 * The instances. `PUT` with `{"<instance>": "<model>"}` (or `{"<instance>": {"type": "<model>",
 * "parameters": {...}, "init_parameters": {...}}}`) creates instances (an instance that already
 * exists with that model and parameters is left as it is; otherwise it is rebuilt).
 */
export class Instances extends KeyedContainer<Instance> {
  readonly type = 'Instances'
  readonly #system: System

  constructor(system: System) {
    super('instances', system)
    this.#system = system
  }

  override async put(body: Record<string, unknown>): Promise<void> {
    await this.#system.exclusive(async () => {
      const details: ErrorDetail[] = []
      const unknownModels: string[] = []
      const setups = new Map<string, { model: string; setup: InstanceSetup }>()
      for (const [name, value] of Object.entries(body)) {
        const problem = nameProblem(name)
        const entry = instanceEntry(value)
        const model = typeof entry === 'string' ? undefined : entry.type
        if (problem) details.push({ path: name, message: problem })
        else if (typeof entry === 'string') details.push({ path: name, message: entry })
        else if (!this.#system.models.get(entry.type)) unknownModels.push(entry.type)
        else {
          const checked = checkInstance(this.#system.models.get(entry.type)!.parsed, entry)
          details.push(...checked.problems.map((d) => ({ ...d, path: `${name}.${d.path}` })))
          const given =
            entry.parameters !== undefined || entry.init_parameters !== undefined
              ? { parameters: entry.parameters, init_parameters: entry.init_parameters }
              : undefined
          setups.set(name, { model: entry.type, setup: { given, parameters: checked.parameters, initValues: checked.initValues } })
        }
        if (model !== undefined && !problem && this.#system.models.get(model)) {
          const existing = this.items.get(name)
          if (existing && existing.model.name !== model) {
            const attrs = this.#system.models.get(model)!.attributeNames()
            for (const conn of this.#system.connections.all()) {
              for (const end of [conn.fromRef, conn.toRef]) {
                if (end.instance === name && !attrs.has(end.attribute))
                  details.push({ path: name, message: `model '${model}' has no attribute '${end.attribute}' used by connection '${conn.name}'` })
              }
            }
          }
        }
      }
      if (Object.keys(body).length === 0) details.push({ path: '', message: 'empty body: PUT {"<instance>": "<model>"}' })
      if (details.length) throw new ValidationError(summarize('Instances', details), details)
      if (unknownModels.length) {
        throw new NotFoundError(
          `Unknown model${unknownModels.length === 1 ? '' : 's'} ${unknownModels.map((m) => `'${m}'`).join(', ')} (models: ${[...this.#system.models.all()].map((m) => m.name).join(', ') || 'none'})`,
          unknownModels.map((m) => ({ path: `models.${m}`, message: 'not found' })),
        )
      }
      for (const [name, { model, setup }] of setups) {
        const existing = this.items.get(name)
        if (existing?.model.name === model && JSON.stringify(existing.given) === JSON.stringify(setup.given)) continue
        if (existing) await existing.destroy()
        this.add(name, model, setup)
      }
    })
  }

  /** Creates an instance of an existing model (the caller checked both names and the setup). */
  add(name: string, model: string, setup?: InstanceSetup): Instance {
    const instance = new Instance({
      name,
      parent: this,
      model: this.#system.models.get(model)!,
      services: this.#system.services,
      refused: this.#system.refused,
      exclusive: (fn) => this.#system.exclusive(fn),
      given: setup?.given,
      parameters: setup?.parameters,
      initValues: setup?.initValues,
    })
    this.items.set(name, instance)
    return instance
  }

  /**
   * An instance of a staged model, not yet in the tree: it starts nothing until adopted and
   * resumed (a snapshot load with state builds and checks the new system beside the old one).
   */
  stage(name: string, model: Model, setup?: InstanceSetup): Instance {
    return new Instance({
      name,
      parent: this,
      model,
      services: this.#system.services,
      refused: this.#system.refused,
      exclusive: (fn) => this.#system.exclusive(fn),
      given: setup?.given,
      parameters: setup?.parameters,
      initValues: setup?.initValues,
    })
  }

  /** Puts an instance made by `stage` into the tree. */
  adopt(instance: Instance): void {
    this.items.set(instance.name, instance)
  }

  /** Rebuilds every instance of `model` fresh (after the model was replaced). */
  async rebuild(model: string): Promise<void> {
    for (const instance of [...this.items.values()]) {
      if (instance.model.name !== model) continue
      await instance.destroy()
      const checked = checkInstance(this.#system.models.get(model)!.parsed, instance.given ?? {})
      this.add(instance.name, model, { given: instance.given, parameters: checked.parameters, initValues: checked.initValues })
    }
  }

  /** Destroys every instance (system load, shutdown). */
  async clear(): Promise<void> {
    for (const instance of this.items.values()) await instance.destroy()
    this.items.clear()
  }

  override async deleteChild(name: string): Promise<void> {
    await this.#system.exclusive(async () => {
      const instance = this.items.get(name)
      if (!instance) throw this.#system.notFound('instances', name)
      const users = [...this.#system.connections.all()].filter((c) => c.fromRef.instance === name || c.toRef.instance === name).map((c) => c.name)
      if (users.length) {
        throw new ConflictError(
          `Instance '${name}' is wired by connection${users.length === 1 ? '' : 's'} ${users.join(', ')}: delete them first`,
          users.map((c) => ({ path: `connections.${c}`, message: `uses instance '${name}'` })),
        )
      }
      this.items.delete(name)
      await instance.destroy()
    })
  }
}
