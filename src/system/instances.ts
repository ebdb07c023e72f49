import { ConflictError, NotFoundError, ValidationError, summarize, type ErrorDetail } from '../errors.js'
import { nameProblem } from '../definition/names.js'
import { checkInstance } from '../definition/parameters.js'
import { instanceEntry } from '../definition/validate.js'
import { attributeDeclarations, type ParsedModelDefinition } from '../definition/model-schema.js'
import { KeyedContainer } from '../tree/keyed-container.js'
import type { CallArgs, MethodHandler } from '../tree/component.js'
import { checkFleet, checkFleetInstances, MAX_FLEET } from '../definition/fleet.js'
import { Instance } from './instance.js'
import type { Model } from './models.js'
import type { System } from './system.js'
import type { BodyValues } from '../values/request.js'

/** Most names a `generate` answer lists (`first`, `last` and `created` tell the rest). */
const GENERATE_NAMES_SHOWN = 100
/** A `generate` making instances gives way to other requests after this long (ms) of making them. */
const GENERATE_SLICE_MS = 20
/** A long `generate` logs how far it is at most this often (ms). */
const GENERATE_PROGRESS_MS = 2000

/** How an instance was given: its parameters and attribute start values, resolved, and as written. */
export interface InstanceSetup {
  given?: { parameters?: Record<string, unknown>; init_parameters?: Record<string, unknown> }
  parameters: Record<string, unknown>
  initValues: Record<string, unknown>
}

/** What `Instances.check` found: setups by instance name, problems, and unknown models. */
export interface InstancesCheck {
  setups: Map<string, { model: string; setup: InstanceSetup }>
  details: ErrorDetail[]
  unknownModels: string[]
}

/**
 * The instances. `PUT` with `{"<instance>": "<model>"}` (or `{"<instance>": {"type": "<model>",
 * "parameters": {...}, "init_parameters": {...}}}`) creates instances (an instance that already
 * exists with that model and parameters is left as it is; otherwise it is rebuilt).
 */
export class Instances extends KeyedContainer<Instance> {
  readonly type = 'Instances'
  override get bodyValues(): BodyValues {
    return 'instances'
  }
  readonly #system: System

  constructor(system: System) {
    super('instances', system)
    this.#system = system
  }

  override async put(body: Record<string, unknown>): Promise<void> {
    await this.#system.exclusive(async () => {
      const checked = this.check(body, (name) => this.#system.models.get(name)?.parsed)
      if (checked.details.length) throw new ValidationError(summarize('Instances', checked.details), checked.details)
      if (checked.unknownModels.length) {
        throw new NotFoundError(
          `Unknown model${checked.unknownModels.length === 1 ? '' : 's'} ${checked.unknownModels.map((m) => `'${m}'`).join(', ')} (models: ${[...this.#system.models.all()].map((m) => m.name).join(', ') || 'none'})`,
          checked.unknownModels.map((m) => ({ path: `models.${m}`, message: 'not found' })),
        )
      }
      await this.apply(checked.setups)
    })
  }

  /**
   * Checks the entries of a PUT against the models there will be (`modelOf`: a root PUT checks
   * them against the models of its own body too): the setups to apply, the problems (paths
   * inside the body) and the models named that do not exist. Changes nothing.
   */
  check(body: Record<string, unknown>, modelOf: (model: string) => ParsedModelDefinition | undefined): InstancesCheck {
    const details: ErrorDetail[] = []
    const unknownModels: string[] = []
    const setups = new Map<string, { model: string; setup: InstanceSetup }>()
    for (const [name, value] of Object.entries(body)) {
      const problem = nameProblem(name)
      const entry = instanceEntry(value)
      if (problem) details.push({ path: name, message: problem })
      else if (typeof entry === 'string') details.push({ path: name, message: entry })
      else {
        const parsed = modelOf(entry.type)
        if (!parsed) {
          unknownModels.push(entry.type)
          continue
        }
        const checked = checkInstance(parsed, entry)
        details.push(...checked.problems.map((d) => ({ ...d, path: `${name}.${d.path}` })))
        const given =
          entry.parameters !== undefined || entry.init_parameters !== undefined
            ? { parameters: entry.parameters, init_parameters: entry.init_parameters }
            : undefined
        setups.set(name, { model: entry.type, setup: { given, parameters: checked.parameters, initValues: checked.initValues } })
        const existing = this.items.get(name)
        if (existing && existing.model.name !== entry.type) {
          const attrs = new Set(attributeDeclarations(parsed).map((a) => a.name))
          for (const conn of this.#system.connections.all()) {
            for (const end of [conn.fromRef, conn.toRef]) {
              if (end.instance === name && !attrs.has(end.attribute))
                details.push({ path: name, message: `model '${entry.type}' has no attribute '${end.attribute}' used by connection '${conn.name}'` })
            }
          }
        }
      }
    }
    if (Object.keys(body).length === 0) details.push({ path: '', message: 'empty body: PUT {"<instance>": "<model>"}' })
    return { setups, details, unknownModels }
  }

  /** Whether applying `setup` to the instance `name` rebuilds it (a new one, or another model or parameters). */
  rebuilds(name: string, { model, setup }: { model: string; setup: InstanceSetup }): boolean {
    const existing = this.items.get(name)
    return !(existing?.model.name === model && JSON.stringify(existing.given) === JSON.stringify(setup.given))
  }

  /**
   * Creates or rebuilds the instances `check` accepted; one that would stay as it is is left
   * alone, and so is one another shard owns (docs/scale-out.md).
   */
  async apply(setups: InstancesCheck['setups']): Promise<void> {
    let elsewhere = 0
    for (const [name, entry] of setups) {
      if (!this.#system.owns(name)) {
        elsewhere++
        continue
      }
      if (!this.rebuilds(name, entry)) continue
      await this.items.get(name)?.destroy()
      this.add(name, entry.model, entry.setup)
    }
    if (elsewhere) this.#system.logShardSkips(elsewhere, 'instances')
  }

  override methods(): Record<string, MethodHandler> {
    return { generate: (call) => this.generate(call) }
  }

  /**
   * `generate(template, count, name, start, parameters, init_parameters)`: `count` instances of
   * the model `template` at once (definition/fleet.ts, docs/scale-out.md). All or nothing: a bad
   * argument, an unknown template, a name that exists already or parameters the model refuses
   * are a 422 listing each problem with its path (`kwargs.parameters.port`), and nothing is
   * made. On a shard only the instances it owns are made (`skipped` counts the others). Answers
   * how many were made, the first and last name and at most 100 names.
   *
   * @example
   * await instances.call('generate', { args: [], kwargs: { template: 'meter', count: 1000, name: 'meter_{i:04}', parameters: { port: { range: [5020, 1] } } } })
   * // { created: 1000, first: 'meter_0000', last: 'meter_0999', names: [...100 names], truncated: true }
   */
  async generate(call: CallArgs): Promise<Record<string, unknown>> {
    const details: ErrorDetail[] = call.args.length ? [{ path: 'args', message: 'generate takes keyword arguments only (kwargs)' }] : []
    const checked = checkFleet(call.kwargs, { max: MAX_FLEET })
    details.push(...checked.details.map((d) => ({ ...d, path: d.path ? `kwargs.${d.path}` : 'kwargs' })))
    const fleet = checked.fleet
    if (!fleet || details.length) throw new ValidationError(`${summarize('generate', details)}: nothing was created`, details)
    return await this.#system.exclusive(async () => {
      const model = this.#system.models.get(fleet.template)
      if (!model) {
        const known = [...this.#system.models.all()].map((m) => m.name).join(', ') || 'none'
        const problem = [{ path: 'kwargs.template', message: `unknown model '${fleet.template}' (models: ${known})` }]
        throw new ValidationError(`${summarize('generate', problem)}: nothing was created`, problem)
      }
      const expanded = checkFleetInstances(fleet, model.parsed, 'kwargs', (name) => this.items.has(name))
      const problems = expanded.details
      if (problems.length) throw new ValidationError(`${summarize('generate', problems)}: nothing was created`, problems)
      const names: string[] = []
      let skipped = 0
      // Made in slices: the system's lock is held throughout (no step, load or other change runs
      // meanwhile), but every GENERATE_SLICE_MS the event loop turns, so that reads, /health and
      // signals are answered while a fleet of 100,000 is made. The instances made so far are
      // visible to those reads; a long generate logs its progress.
      const started = performance.now()
      let sliceStart = started
      let reported = started
      for (const e of expanded.entries) {
        if (!this.#system.owns(e.name)) {
          skipped++
          continue
        }
        const given =
          e.entry.parameters !== undefined || e.entry.init_parameters !== undefined
            ? { parameters: e.entry.parameters, init_parameters: e.entry.init_parameters }
            : undefined
        this.add(e.name, fleet.template, { given, parameters: e.parameters, initValues: e.initValues })
        names.push(e.name)
        if (performance.now() - sliceStart < GENERATE_SLICE_MS) continue
        await new Promise((resolve) => setImmediate(resolve))
        sliceStart = performance.now()
        if (sliceStart - reported >= GENERATE_PROGRESS_MS) {
          reported = sliceStart
          // Done counts the entries another shard owns too, so that it reaches the fleet's size.
          const done = names.length + skipped
          this.#system.services.logger.info(
            { template: fleet.template, created: names.length, done, of: expanded.entries.length },
            `generating instances of '${fleet.template}': ${done} of ${expanded.entries.length} done`,
          )
        }
      }
      this.#system.services.logger.info(
        { template: fleet.template, created: names.length, ...(this.#system.shard ? { skipped, shard: this.#system.shardText } : {}) },
        `generated ${names.length} instance${names.length === 1 ? '' : 's'} of '${fleet.template}'`,
      )
      return {
        created: names.length,
        ...(this.#system.shard ? { skipped, shard: this.#system.shardText } : {}),
        first: names[0] ?? null,
        last: names.at(-1) ?? null,
        names: names.slice(0, GENERATE_NAMES_SHOWN),
        ...(names.length > GENERATE_NAMES_SHOWN ? { truncated: true } : {}),
      }
    })
  }

  /** The connections that wire an attribute of an instance: one function for every instance. */
  readonly #wiredBy = (instance: string, attribute: string): string[] => this.#system.connections.wiring(instance, attribute)

  /** Creates an instance of an existing model (the caller checked both names and the setup). */
  add(name: string, model: string, setup?: InstanceSetup): Instance {
    const instance = new Instance({
      name,
      parent: this,
      model: this.#system.models.get(model)!,
      services: this.#system.services,
      refused: this.#system.refused,
      lock: this.#system.lock,
      wiredBy: this.#wiredBy,
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
      lock: this.#system.lock,
      wiredBy: this.#wiredBy,
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
