/**
 * The structure of a system, whole: its definition as it is now (models, instances,
 * connections), the root PUT that writes parts of it after checking them all, and the
 * replacement of all of it (a `--system` file at start-up or on `reload()`, a snapshot without
 * state), every problem found before anything changes. A snapshot with state is replaced by
 * system-saved-state.ts, with the same checks.
 */

import { loadProtocolKinds } from '../protocols/index.js'
import { protocolNames } from './communication.js'
import { resolve } from 'node:path'
import { ConflictError, NotFoundError, ValidationError, summarize, type ErrorDetail } from '../errors.js'
import { asSystemDefinition, checkDefinitionText, definitionFormat, locate, parseDefinitionText, readDefinitionText } from '../definition/load-file.js'
import { isRecord } from '../definition/is-record.js'
import { joinPath, parseAttributeRef, validateSystem, type AttributeRef, type ConnectionEntry, type SystemDefinition } from '../definition/validate.js'
import { attributeDeclarations, type AttributeDeclaration, type AttributeType, type ParsedModelDefinition } from '../definition/model-schema.js'
import type { Instance } from './instance.js'
import type { InstancesCheck } from './instances.js'
import { mappedDefaultProblems } from './mapping-check.js'
import type { System } from './system.js'

/** The structure of the system: what a snapshot holds. */
export function structureOf(system: System): SystemDefinition {
  const models: Record<string, unknown> = {}
  for (const model of system.models.all()) models[model.name] = model.definition
  const instances = [...system.instances.all()].map((i) => ({ [i.name]: i.given ? { type: i.model.name, ...i.given } : i.model.name }))
  const connections: Record<string, ConnectionEntry> = {}
  for (const conn of system.connections.all())
    connections[conn.name] = conn.enabled ? { from: conn.from, to: conn.to } : { from: conn.from, to: conn.to, enabled: false }
  return { models, instances, connections }
}

/**
 * The root PUT: `{"models": ..., "instances": ..., "connections": ...}`, each part optional. Every
 * part is checked against the system as it will be before any is written, under the structure lock.
 */
export async function putStructure(system: System, body: Record<string, unknown>): Promise<void> {
  const unknown = Object.keys(body).filter((k) => !['models', 'instances', 'connections'].includes(k))
  if (unknown.length)
    throw new NotFoundError(`The system root has no children ${unknown.map((k) => `'${k}'`).join(', ')} to write (models, instances, connections)`)
  // An empty part has nothing to write: what `GET definition` answers for a system without
  // connections (`"connections": {}`) is PUT as it is.
  const empty = (value: unknown): boolean => (isRecord(value) || Array.isArray(value)) && Object.keys(value).length === 0
  const models = body.models && !empty(body.models) ? asRecord(body.models, 'models') : undefined
  const instances = body.instances && !empty(body.instances) ? instanceRecord(body.instances) : undefined
  const connections = body.connections && !empty(body.connections) ? asRecord(body.connections, 'connections') : undefined
  await system.lock.exclusive(async () => {
    checkNamesExist(system, models, instances, connections)
    // Every part is checked against the system as it will be before anything is written: a
    // 422 (or 404) leaves the system as it was.
    const parsed = models ? await system.models.check(models, 'models') : undefined
    const modelOf = (name: string): ParsedModelDefinition | undefined => parsed?.get(name)?.parsed ?? system.models.get(name)?.parsed
    const checked = instances ? system.instances.check(instances, modelOf) : undefined
    const details = (checked?.details ?? []).map((d) => ({ ...d, path: joinPath('instances', d.path) }))
    details.push(...(checked?.unknownModels ?? []).map((m) => ({ path: `models.${m}`, message: 'not found' })))
    if (connections && details.length === 0) {
      const future = futureAttributes(system, modelOf, parsed, checked?.setups)
      const problems = system.connections.check(connections, future.names, future.type)
      details.push(...problems.map((d) => ({ ...d, path: joinPath('connections', d.path) })))
    }
    if (details.length) throw new ValidationError(`${summarize('System', details)}: nothing was written`, details)
    if (parsed) await system.models.apply(parsed)
    if (checked) await system.instances.apply(checked.setups)
    if (connections) system.connections.apply(connections)
  })
}

/**
 * The attributes each instance will have once a root PUT is applied, for checking its
 * connections: an instance the PUT makes or rebuilds (its entry changed, or its model is
 * replaced) has its model's attributes; one it leaves alone keeps its own, including any added
 * to it since it was made.
 */
function futureAttributes(
  system: System,
  modelOf: (name: string) => ParsedModelDefinition | undefined,
  replaced: ReadonlyMap<string, unknown> | undefined,
  setups: InstancesCheck['setups'] | undefined,
): { names: (instance: string) => Set<string> | undefined; type: (ref: AttributeRef) => AttributeType | undefined } {
  const declared = (instance: string): readonly AttributeDeclaration[] | Instance | undefined => {
    const setup = setups?.get(instance)
    const existing = system.instances.get(instance)
    const model = setup?.model ?? existing?.model.name
    if (model === undefined) return undefined
    const rebuilt = (setup !== undefined && system.instances.rebuilds(instance, setup)) || replaced?.has(model) === true
    return rebuilt || !existing ? attributeDeclarations(modelOf(model)!) : existing
  }
  // Array.isArray does not narrow a readonly array out of a union.
  const isList = (future: readonly AttributeDeclaration[] | Instance): future is readonly AttributeDeclaration[] => Array.isArray(future)
  return {
    names: (instance) => {
      const future = declared(instance)
      if (future === undefined) return undefined
      return new Set(isList(future) ? future.map((a) => a.name) : [...future.attributes.all()].map((a) => a.name))
    },
    type: (ref) => {
      const future = declared(ref.instance)
      if (future === undefined) return undefined
      return isList(future) ? future.find((a) => a.name === ref.attribute)?.type : future.attributes.get(ref.attribute)?.valueType
    },
  }
}

/**
 * A root PUT writes its three parts one after the other: what would fail a later one for lack
 * of a model or an instance (in the system or in the body) is found before the first, so
 * nothing is half-written.
 */
function checkNamesExist(
  system: System,
  models: Record<string, unknown> | undefined,
  instances: Record<string, unknown> | undefined,
  connections: Record<string, unknown> | undefined,
): void {
  const modelNames = new Set([...system.models.all()].map((m) => m.name).concat(Object.keys(models ?? {})))
  const unknownModels = [
    ...new Set(
      Object.values(instances ?? {})
        .map((entry) => (typeof entry === 'string' ? entry : isRecord(entry) ? (entry.type ?? entry.model) : undefined))
        .filter((model): model is string => typeof model === 'string' && !modelNames.has(model)),
    ),
  ]
  if (unknownModels.length) {
    throw new NotFoundError(
      `Unknown model${unknownModels.length === 1 ? '' : 's'} ${unknownModels.map((m) => `'${m}'`).join(', ')}: nothing was written`,
      unknownModels.map((m) => ({ path: `models.${m}`, message: 'not found' })),
    )
  }
  const instanceNames = new Set([...system.instances.all()].map((i) => i.name).concat(Object.keys(instances ?? {})))
  const missing: ErrorDetail[] = []
  for (const [name, conn] of Object.entries(connections ?? {})) {
    for (const end of ['from', 'to'] as const) {
      const ref = isRecord(conn) ? parseAttributeRef(conn[end]) : undefined
      if (ref !== undefined && typeof ref !== 'string' && !instanceNames.has(ref.instance))
        missing.push({ path: `connections.${name}.${end}`, message: `unknown instance '${ref.instance}'` })
    }
  }
  if (missing.length) throw new ValidationError(`${summarize('Connections', missing)}: nothing was written`, missing)
}

/**
 * Replaces the whole structure in place (snapshot load, `--system` at start-up). Everything is
 * validated before anything changes; on any problem the system is left exactly as it was.
 * The caller holds the structure lock. `at` is where the definition sits in its document
 * (`definition` in a snapshot), put before the path of each problem.
 */
export async function replaceStructure(
  system: System,
  definition: unknown,
  subject = 'System definition',
  at = '',
): Promise<{ models: number; instances: number; connections: number }> {
  const result = await validatedDefinition(system, definition, subject, at)
  await system.lifecycle.halt()
  await system.instances.clear()
  system.connections.clear()
  system.models.clear()
  for (const [name, model] of result.system.models) system.models.install(name, model.raw, model.parsed)
  const instances = ownInstances(system, result.system.instances, subject)
  for (const inst of instances) system.instances.add(inst.name, inst.model, inst)
  const connections = result.system.connections.filter((c) => system.keepsConnection(c.name, c.from, c.to))
  for (const conn of connections) system.connections.add(conn.name, conn.from, conn.to, conn.enabled)
  system.timer.reset()
  system.lifecycle.restarted()
  return { models: result.system.models.size, instances: instances.length, connections: connections.length }
}

/** The instances of a definition this server keeps (on a shard, those it owns; the others are logged as a count). */
export function ownInstances<T extends { name: string }>(system: System, instances: T[], subject: string): T[] {
  if (!system.shard) return instances
  const own = instances.filter((i) => system.owns(i.name))
  if (own.length < instances.length) system.logShardSkips(instances.length - own.length, subject)
  return own
}

/**
 * A system definition validated, or a 422 listing every problem (nothing changes), each path
 * prefixed with `at`, where the definition sits in its document.
 */
export async function validatedDefinition(
  system: System,
  definition: unknown,
  subject: string,
  at = '',
): Promise<Extract<ReturnType<typeof validateSystem>, { ok: true }>> {
  const result = validateSystem(definition, system.behaviourProblems)
  const placed = (details: ErrorDetail[]): ErrorDetail[] => (at ? details.map((d) => ({ ...d, path: joinPath(at, d.path) })) : details)
  if (!result.ok) {
    const details = placed(result.details)
    throw new ValidationError(summarize(subject, details), details)
  }
  // The defaults are checked against each mapping by the protocol's own code (mapping-check.ts).
  await loadProtocolKinds(protocolNames([...result.system.models.values()].map((m) => m.parsed)))
  const unmappable = placed(
    [...result.system.models].flatMap(([name, model]) =>
      [...mappedDefaultProblems(model.parsed), ...system.models.strictProtocolProblems(model.parsed)].map((d) => ({ ...d, path: `models.${name}.${d.path}` })),
    ),
  )
  if (unmappable.length) throw new ValidationError(summarize(subject, unmappable), unmappable)
  return result
}

/**
 * `reload()`: reads the `--system` file again and replaces the whole structure with it, as a
 * snapshot load does. A file that cannot be read or is invalid is a 422 listing every problem
 * with its path and line:column, and the system stays as it was; a server started without
 * `--system` has no file to read (409).
 */
export async function reloadSystemFile(system: System): Promise<{ file: string; loaded: true; models: number; instances: number; connections: number }> {
  const given = system.services.systemFile
  if (!given)
    throw new ConflictError(
      'Nothing to reload: the server was started without --system (MIMIC_SYSTEM), so there is no system file to read again. Load a snapshot, or PUT models, instances and connections, instead.',
    )
  const file = resolve(given)
  return await system.lock.exclusive(async () => {
    const subject = `System file ${file}`
    const text = await readDefinitionText(file)
    if (text.problem) throw new ValidationError(`${subject} cannot be read: ${text.problem.message}`, [text.problem])
    const format = definitionFormat(file)
    const loaded = checkDefinitionText(text.text, system.behaviourProblems, { format })
    if (loaded.details.length) throw new ValidationError(summarize(`${subject} is invalid`, withPositions(loaded.details)), loaded.details)
    if (loaded.kind === 'model')
      throw new ValidationError(`${subject} holds a single model, not a system (models, instances, connections)`, [
        { path: '', message: 'expected a system definition with models, instances, connections' },
      ])
    const counts = await replaceStructure(system, asSystemDefinition(loaded.data), subject).catch((err: unknown) => {
      // Problems found past the schema (a default a register cannot carry) are located in the file too.
      if (!(err instanceof ValidationError)) throw err
      const parsed = parseDefinitionText(text.text, { format })
      const located = parsed.doc ? err.details.map((d) => ({ ...d, ...locate(parsed.doc!, parsed.lines, d.path) })) : err.details
      throw new ValidationError(summarize(`${subject} is invalid`, withPositions(located)), located)
    })
    system.services.logger.info({ file, ...counts }, 'system file reloaded')
    return { file, loaded: true as const, ...counts }
  })
}

/** Problems with their place in the file first: `12:5 models.m.attributes.t: ...`. */
function withPositions(details: ErrorDetail[]): ErrorDetail[] {
  return details.map((d) => (d.line ? { ...d, path: `${d.line}:${d.column} ${d.path || '(root)'}` } : d))
}

/**
 * The instances of a root PUT: a map `{"<instance>": entry}`, or the list of single-entry maps a
 * system definition (and `GET definition`) writes, so a definition read back can be PUT as it is.
 */
function instanceRecord(value: unknown): Record<string, unknown> {
  if (!Array.isArray(value)) return asRecord(value, 'instances')
  const out: Record<string, unknown> = {}
  const details: ErrorDetail[] = []
  value.forEach((entry: unknown, index) => {
    const keys = isRecord(entry) ? Object.keys(entry) : []
    if (keys.length !== 1) details.push({ path: `instances[${index}]`, message: 'expected a single-entry map: {"<instance>": "<model>"}' })
    else if (Object.hasOwn(out, keys[0]!)) details.push({ path: `instances[${index}]`, message: `instance '${keys[0]}' is listed twice` })
    else Object.defineProperty(out, keys[0]!, { value: (entry as Record<string, unknown>)[keys[0]!], enumerable: true, writable: true, configurable: true })
  })
  if (details.length) throw new ValidationError(summarize('instances', details), details)
  return out
}

function asRecord(value: unknown, path: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ValidationError(`'${path}' must be an object`, [{ path, message: 'expected an object' }])
  }
  return value as Record<string, unknown>
}
