import { ConflictError, NotFoundError, ValidationError, summarize, type ErrorDetail } from '../errors.js'
import { nameProblem } from '../definition/names.js'
import { KeyedContainer } from '../tree/keyed-container.js'
import { Instance } from './instance.js'
import type { System } from './system.js'

/**
 * The instances. `PUT` with `{"<instance>": "<model>"}` creates instances (an instance that
 * already exists with that model is left as it is; with another model it is rebuilt).
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
      for (const [name, model] of Object.entries(body)) {
        const problem = nameProblem(name)
        if (problem) details.push({ path: name, message: problem })
        else if (typeof model !== 'string') details.push({ path: name, message: 'the value is the name of a model (a string)' })
        else if (!this.#system.models.get(model)) unknownModels.push(model)
        else {
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
      for (const [name, model] of Object.entries(body) as [string, string][]) {
        const existing = this.items.get(name)
        if (existing?.model.name === model) continue
        if (existing) await existing.destroy()
        this.add(name, model)
      }
    })
  }

  /** Creates an instance of an existing model (the caller checked both names). */
  add(name: string, model: string): Instance {
    const instance = new Instance({
      name,
      parent: this,
      model: this.#system.models.get(model)!,
      services: this.#system.services,
      exclusive: (fn) => this.#system.exclusive(fn),
    })
    this.items.set(name, instance)
    return instance
  }

  /** Rebuilds every instance of `model` fresh (after the model was replaced). */
  async rebuild(model: string): Promise<void> {
    for (const instance of [...this.items.values()]) {
      if (instance.model.name !== model) continue
      await instance.destroy()
      this.add(instance.name, model)
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
