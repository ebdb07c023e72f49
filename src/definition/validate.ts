import type { z } from 'zod'
import type { ErrorDetail } from '../errors.js'
import { nameProblem } from './names.js'
import { attributeDeclarations, formatPath, isAttributeSpec, modelDefinitionSchema, type AttributeType, type ParsedModelDefinition } from './model-schema.js'
import { isRecord } from './is-record.js'
import { issueMessage } from './zod-issue.js'
import { checkInstance } from './parameters.js'
import { checkFleet, checkFleetInstances } from './fleet.js'

/** An instance entry's value: the model's name, or the model with parameters. */
export type InstanceEntry = string | { type: string; parameters?: Record<string, unknown>; init_parameters?: Record<string, unknown> }

/** A connection as a system definition writes it. */
export interface ConnectionEntry {
  from: string
  to: string
  enabled?: boolean
}

/** A system's structure: the shape of a system file and of a snapshot's `definition`. */
export interface SystemDefinition {
  models: Record<string, unknown>
  instances: Array<Record<string, InstanceEntry>>
  connections: Record<string, ConnectionEntry>
  /**
   * Fleets (definition/fleet.ts), expanded into instances after those of `instances` when the
   * definition is loaded. A system file may have it; the definition the server writes never
   * does (it lists every instance, generated or not).
   */
  generate?: unknown[]
}

/** An instance of a validated system, its parameters resolved. */
export interface ParsedInstance {
  name: string
  model: string
  /** Given in the definition (kept to write the definition back). */
  given?: { parameters?: Record<string, unknown>; init_parameters?: Record<string, unknown> }
  parameters: Record<string, unknown>
  initValues: Record<string, unknown>
}

/** A validated system: parsed models and the instance/connection lists in order. */
export interface ParsedSystem {
  models: Map<string, { raw: unknown; parsed: ParsedModelDefinition }>
  instances: ParsedInstance[]
  connections: Array<{ name: string; from: string; to: string; enabled: boolean }>
}

/** A check of a parsed model beyond its schema (the model language's, which compiles its behaviour). */
export type ModelCheck = (model: ParsedModelDefinition) => ErrorDetail[]

/** Turns zod issues into error details, each path prefixed with `prefix`. */
export function issuesToDetails(issues: readonly z.core.$ZodIssue[], prefix: readonly PropertyKey[] = []): ErrorDetail[] {
  return issues.flatMap((issue) => {
    const at = [...prefix, ...issue.path]
    if (issue.code === 'invalid_union' && issue.errors.length) return issuesToDetails(closestBranch(issue.errors), at)
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ path: formatPath([...at, key]), message: `unknown key '${key}'` }))
    if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message)) return [{ path: formatPath(at), message: 'required' }]
    return [{ path: formatPath(at), message: issueMessage(issue) }]
  })
}

/**
 * Of the branches of a failed union, the one the input most likely meant: a branch that
 * rejects the value's type outright is the wrong one, else the branch with the fewest problems.
 * This turns zod's "Invalid input" into the specific problem (`class: required`).
 */
function closestBranch(branches: readonly (readonly z.core.$ZodIssue[])[]): readonly z.core.$ZodIssue[] {
  const score = (issues: readonly z.core.$ZodIssue[]): number =>
    issues.some((i) => i.path.length === 0 && i.code === 'invalid_type') ? Number.MAX_SAFE_INTEGER : issues.length
  return [...branches].sort((a, b) => score(a) - score(b))[0]!
}

/** The outcome of validating one model: the parsed model, or every problem found. */
export type ModelValidation =
  | { ok: true; model: ParsedModelDefinition }
  | {
      ok: false
      details: ErrorDetail[]
      /**
       * As much of the model as later checks can use (its attribute names, for connections), when
       * its attributes are usable; what failed is left out.
       */
      partial?: ParsedModelDefinition
    }

/** Sections of a model that `check` (the model language) compiles; they refer to its attributes. */
const BEHAVIOUR_KEYS = ['actions', 'distortions', 'conditions', 'if_chain', 'scenarios', 'hooks'] as const

/**
 * Validates one model definition; every problem is reported with its path inside the model.
 * Schema problems do not hide the others: `check` (the model language) also runs on the rest
 * of a model whose schema failed (see {@link usablePart}), so one answer lists them all.
 *
 * @example
 * validateModel({ attributes: { t: 0 } }) // { ok: true, model: {...} }
 */
export function validateModel(raw: unknown, check?: ModelCheck): ModelValidation {
  const result = modelDefinitionSchema.safeParse(raw)
  if (result.success) {
    const more = check?.(result.data) ?? []
    return more.length ? { ok: false, details: more, partial: result.data } : { ok: true, model: result.data }
  }
  const details = issuesToDetails(result.error.issues)
  const usable = usablePart(raw, result.error.issues)
  if (usable.model === undefined) return { ok: false, details: [...details, ...usable.unchecked] }
  const seen = new Set(details.map((d) => `${d.path}\0${d.message}`))
  for (const d of check?.(usable.model) ?? []) if (!seen.has(`${d.path}\0${d.message}`)) details.push(d)
  return { ok: false, details, partial: usable.model }
}

/**
 * What later checks can still use of a model its schema refused: the model without its unknown
 * keys and without each section the schema refused, an attribute whose spec was refused kept
 * by name (its default, its hooks, any type), so that references to it are not reported again.
 * When the attributes are not a map at all, nothing that refers to them can be checked: then
 * there is no model, and a problem says which sections were left unchecked.
 */
function usablePart(
  raw: unknown,
  issues: readonly z.core.$ZodIssue[],
): { model: ParsedModelDefinition; unchecked?: undefined } | { model?: undefined; unchecked: ErrorDetail[] } {
  if (!isRecord(raw)) return { unchecked: [] }
  const dropped = new Set<string>()
  const badAttributes = new Set<string>()
  let attributesUnusable = false
  for (const issue of issues) {
    const [section, attribute] = issue.path
    if (section === undefined) {
      if (issue.code === 'unrecognized_keys') for (const key of issue.keys) dropped.add(key)
    } else if (section !== 'attributes') dropped.add(String(section))
    else if (attribute === undefined) attributesUnusable = true
    else badAttributes.add(String(attribute))
  }
  if (attributesUnusable) {
    const unchecked = BEHAVIOUR_KEYS.filter((key) => raw[key] !== undefined && !dropped.has(key))
    return { unchecked: unchecked.map((key) => ({ path: key, message: 'not checked: the attributes it refers to are not a valid map of name -> value' })) }
  }
  const model: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(raw)) if (!dropped.has(key)) model[key] = value
  const attributes: Record<string, unknown> = isRecord(raw.attributes) ? { ...raw.attributes } : {}
  for (const name of badAttributes) {
    const spec = attributes[name]
    if (isAttributeSpec(spec)) {
      const hooks = (spec as { hooks?: unknown }).hooks
      attributes[name] = { default: spec.default, type: 'any', ...(isRecord(hooks) ? { hooks } : {}) }
    }
  }
  model.attributes = attributes
  if (model.import === undefined && model.python_file !== undefined) model.import = model.python_file
  delete model.python_file
  return { model: model as ParsedModelDefinition }
}

/** A reference to an attribute: `<instance>.attributes.<attribute>`. */
export interface AttributeRef {
  instance: string
  attribute: string
  /** Which value a `from` end reads: the presented one (default, and `#ext`) or the internal one (`#attr`, `#in`). */
  side: 'external' | 'internal'
}

/**
 * Parses a connection end: `sensor.attributes.temperature`, or the model language's
 * `#attr(sensor.temperature)`, `#in(...)`, `#internal(...)`, `#ext(...)`, `#external(...)`, `#out(...)`.
 *
 * @example
 * parseAttributeRef('sensor.attributes.temperature') // { instance: 'sensor', attribute: 'temperature', side: 'external' }
 * parseAttributeRef('#attr(sensor.temperature)')     // { instance: 'sensor', attribute: 'temperature', side: 'internal' }
 */
export function parseAttributeRef(ref: unknown): AttributeRef | string {
  const shape = 'must look like <instance>.attributes.<attribute> or #attr(<instance>.<attribute>)'
  if (typeof ref !== 'string') return `${shape.replace('must look like', 'must be a string like')}`
  const m = /^\s*[#$](attr|in|internal|ext|external|out)\(\s*([^.()\s]+)\.([^.()\s]+)\s*\)\s*$/.exec(ref)
  if (m !== null) return { instance: m[2]!, attribute: m[3]!, side: ['attr', 'in', 'internal'].includes(m[1]!) ? 'internal' : 'external' }
  const parts = ref.split('.')
  if (parts.length !== 3 || parts[1] !== 'attributes') return `'${ref}' ${shape}`
  return { instance: parts[0]!, attribute: parts[2]!, side: 'external' }
}

/**
 * Validates a whole system definition (models, instances, connections) and reports every
 * problem with its path, e.g. `models.pt100.attributes.x` or `connections.c1.to`.
 *
 * @example
 * validateSystem({ models: { m: { attributes: { t: 0 } } }, instances: [{ s: 'm' }] }).ok // true
 */
export function validateSystem(raw: unknown, check?: ModelCheck): { ok: true; system: ParsedSystem } | { ok: false; details: ErrorDetail[] } {
  const details: ErrorDetail[] = []
  const system: ParsedSystem = { models: new Map(), instances: [], connections: [] }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    return { ok: false, details: [{ path: '', message: 'a system definition is an object with models, instances and connections' }] }
  }
  const top = raw as Record<string, unknown>
  for (const key of Object.keys(top)) {
    if (!['models', 'instances', 'connections', 'generate', 'description'].includes(key)) {
      details.push({ path: key, message: `unknown key '${key}' (expected models, instances, connections, generate)` })
    }
  }
  const models = top.models ?? {}
  // Models that failed, as far as they are usable: their instances still exist for connections.
  const partial = new Map<string, ParsedModelDefinition | undefined>()
  if (models === null || typeof models !== 'object' || Array.isArray(models)) {
    details.push({ path: 'models', message: 'must be a map of model name -> model definition' })
  } else {
    for (const [name, def] of Object.entries(models)) {
      const problem = nameProblem(name)
      if (problem) details.push({ path: `models.${name}`, message: problem })
      const result = validateModel(def, check)
      if (result.ok) system.models.set(name, { raw: def, parsed: result.model })
      else {
        details.push(...result.details.map((d) => ({ ...d, path: joinPath(`models.${name}`, d.path) })))
        partial.set(name, result.partial)
      }
    }
  }
  // Instances: a list of single-entry maps (or one map), each `<name>: <model>` or
  // `<name>: {type: <model>, parameters: {...}, init_parameters: {...}}`.
  const instances = top.instances ?? []
  const instanceEntries: Array<[string, unknown, string]> = []
  if (Array.isArray(instances)) {
    instances.forEach((entry: unknown, index) => {
      const at = `instances[${index}]`
      if (entry === null || typeof entry !== 'object' || Array.isArray(entry) || Object.keys(entry).length !== 1) {
        details.push({ path: at, message: 'must be a single-entry map: <instance>: <model>' })
        return
      }
      const [name, model] = Object.entries(entry)[0]!
      instanceEntries.push([name, model, `${at}.${name}`])
    })
  } else if (instances !== null && typeof instances === 'object') {
    for (const [name, model] of Object.entries(instances)) instanceEntries.push([name, model, `instances.${name}`])
  } else details.push({ path: 'instances', message: 'must be a list of single-entry maps: - <instance>: <model>' })
  const seen = new Set<string>()
  // Instances whose entry or model failed: they exist, so connections to them are checked only
  // against the attributes known of their model (null: none are).
  const failed = new Map<string, ParsedModelDefinition | null>()
  for (const [name, value, at] of instanceEntries) {
    const problem = nameProblem(name)
    if (problem) details.push({ path: at, message: problem })
    else if (seen.has(name)) details.push({ path: at, message: `duplicate instance name '${name}'` })
    seen.add(name)
    const entry = instanceEntry(value)
    if (typeof entry === 'string') {
      details.push({ path: at, message: entry })
      failed.set(name, null)
      continue
    }
    const model = entry.type
    if (!(models && typeof models === 'object' && Object.hasOwn(models, model))) {
      details.push({ path: at, message: `unknown model '${model}'` })
      failed.set(name, null)
      continue
    }
    const parsed = system.models.get(model)
    if (!parsed) {
      // Its own problems are reported under models.
      failed.set(name, partial.get(model) ?? null)
      continue
    }
    const checked = checkInstance(parsed.parsed, entry)
    details.push(...checked.problems.map((d) => ({ ...d, path: joinPath(at, d.path) })))
    const given =
      entry.parameters !== undefined || entry.init_parameters !== undefined
        ? { parameters: entry.parameters, init_parameters: entry.init_parameters }
        : undefined
    system.instances.push({ name, model, given, parameters: checked.parameters, initValues: checked.initValues })
  }
  // Fleets: `generate: [{template, count, name, parameters}, ...]`, instances after the declared ones.
  const fleets = top.generate ?? []
  if (!Array.isArray(fleets)) details.push({ path: 'generate', message: 'must be a list of {template, count, name, parameters}' })
  else {
    fleets.forEach((raw: unknown, index) => {
      const at = `generate[${index}]`
      const checked = checkFleet(raw)
      details.push(...checked.details.map((d) => ({ ...d, path: joinPath(at, d.path) })))
      const fleet = checked.fleet
      if (!fleet) return
      if (!(models && typeof models === 'object' && Object.hasOwn(models, fleet.template))) {
        details.push({ path: `${at}.template`, message: `unknown model '${fleet.template}'` })
        return
      }
      const parsed = system.models.get(fleet.template)
      if (!parsed) {
        for (let k = 0; k < fleet.count; k++) failed.set(fleet.nameOf(fleet.start + k), partial.get(fleet.template) ?? null)
        return
      }
      const expanded = checkFleetInstances(fleet, parsed.parsed, at, (name) => seen.has(name))
      details.push(
        ...expanded.details.map((d) =>
          d.path === `${at}.name` ? { ...d, message: d.message.replace('an instance of this name exists already', 'duplicate instance name') } : d,
        ),
      )
      for (const e of expanded.entries) {
        seen.add(e.name)
        const given = { parameters: e.entry.parameters, init_parameters: e.entry.init_parameters }
        system.instances.push({
          name: e.name,
          model: fleet.template,
          given: given.parameters !== undefined || given.init_parameters !== undefined ? given : undefined,
          parameters: e.parameters,
          initValues: e.initValues,
        })
      }
    })
  }
  // Connections: a map of name -> {from, to, enabled}, or a list of {name, from, to, enabled}.
  const connections = top.connections ?? {}
  const connectionEntries: Array<[string, unknown, string]> = []
  if (Array.isArray(connections)) {
    connections.forEach((conn: unknown, index) => {
      const named = conn !== null && typeof conn === 'object' && typeof (conn as { name?: unknown }).name === 'string'
      const name = named ? (conn as { name: string }).name : `connection_${index}`
      const rest = named ? Object.fromEntries(Object.entries(conn as object).filter(([k]) => k !== 'name')) : conn
      connectionEntries.push([name, rest, `[${index}]`])
    })
  } else if (connections !== null && typeof connections === 'object') {
    for (const [name, conn] of Object.entries(connections)) connectionEntries.push([name, conn, name])
  } else details.push({ path: 'connections', message: 'must be a map of connection name -> {from, to}, or a list of {name, from, to}' })
  const byName = new Map(system.instances.map((i) => [i.name, i]))
  const attrsOf = (instance: string): Set<string> | null | undefined => {
    const inst = byName.get(instance)
    const model = inst ? system.models.get(inst.model)?.parsed : failed.get(instance)
    if (model === undefined) return undefined
    return model === null ? null : new Set(attributeDeclarations(model).map((a) => a.name))
  }
  const names = new Set<string>()
  for (const [name, conn, at] of connectionEntries) {
    // Types are not checked here: a file written for the reference product, whose connections carry any value,
    // must load as it is. A connection that cannot carry its value says so when it runs.
    const problems = checkConnection(name, conn, attrsOf)
    details.push(...problems.map((d) => ({ ...d, path: joinPath('connections', d.path.replace(name, at)) })))
    if (names.has(name)) details.push({ path: joinPath('connections', at), message: `duplicate connection name '${name}'` })
    names.add(name)
    if (!nameProblem(name) && isConnectionShape(conn)) system.connections.push({ name, from: conn.from, to: conn.to, enabled: conn.enabled !== false })
  }
  return details.length ? { ok: false, details } : { ok: true, system }
}

/** An instance entry's value as `{type, parameters, init_parameters}`, or why it is none. */
function instanceEntry(value: unknown): { type: string; parameters?: Record<string, unknown>; init_parameters?: Record<string, unknown> } | string {
  if (typeof value === 'string') return { type: value }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'the value is the name of a model, or {type: <model>, parameters: {...}}'
  const entry = value as Record<string, unknown>
  for (const key of Object.keys(entry)) {
    if (!['type', 'model', 'parameters', 'init_parameters'].includes(key)) return `unknown key '${key}' (expected type, parameters, init_parameters)`
  }
  const type = entry.type ?? entry.model
  if (typeof type !== 'string') return 'type: required, the name of a model'
  for (const key of ['parameters', 'init_parameters'] as const) {
    const v = entry[key]
    if (v !== undefined && (v === null || typeof v !== 'object' || Array.isArray(v))) return `${key}: expected a map of name -> value`
  }
  return {
    type,
    parameters: entry.parameters as Record<string, unknown> | undefined,
    init_parameters: entry.init_parameters as Record<string, unknown> | undefined,
  }
}

export { instanceEntry }

function isConnectionShape(value: unknown): value is { from: string; to: string; enabled?: boolean } {
  return (
    value !== null && typeof value === 'object' && typeof (value as { from?: unknown }).from === 'string' && typeof (value as { to?: unknown }).to === 'string'
  )
}

/**
 * Checks one connection against the attributes each instance has (`attrsOf` answers undefined
 * for an unknown instance, null for an instance whose attributes are not known because its
 * definition failed). Paths are relative to the connections map: `<name>.from`.
 */
export function checkConnection(name: string, conn: unknown, attrsOf: (instance: string) => Set<string> | null | undefined): ErrorDetail[] {
  const details: ErrorDetail[] = []
  const problem = nameProblem(name)
  if (problem) details.push({ path: name, message: problem })
  if (conn === null || typeof conn !== 'object' || Array.isArray(conn)) {
    return [...details, { path: name, message: 'a connection is {from: <instance>.attributes.<attr>, to: <instance>.attributes.<attr>}' }]
  }
  for (const key of Object.keys(conn)) {
    if (key !== 'from' && key !== 'to' && key !== 'enabled')
      details.push({ path: `${name}.${key}`, message: `unknown key '${key}' (expected from, to, enabled)` })
  }
  const enabled = (conn as { enabled?: unknown }).enabled
  if (enabled !== undefined && typeof enabled !== 'boolean') details.push({ path: `${name}.enabled`, message: 'expected true or false' })
  const ends: Record<string, AttributeRef> = {}
  for (const end of ['from', 'to'] as const) {
    const ref = parseAttributeRef((conn as Record<string, unknown>)[end])
    if (typeof ref === 'string') {
      details.push({ path: `${name}.${end}`, message: (conn as Record<string, unknown>)[end] === undefined ? 'required' : ref })
      continue
    }
    const attrs = attrsOf(ref.instance)
    if (attrs === undefined) details.push({ path: `${name}.${end}`, message: `unknown instance '${ref.instance}'` })
    else if (attrs === null) continue
    else if (!attrs.has(ref.attribute)) details.push({ path: `${name}.${end}`, message: `instance '${ref.instance}' has no attribute '${ref.attribute}'` })
    else ends[end] = ref
  }
  if (ends.from && ends.to && ends.from.instance === ends.to.instance && ends.from.attribute === ends.to.attribute) {
    details.push({ path: `${name}.to`, message: 'a connection cannot feed an attribute into itself' })
  }
  return details
}

/**
 * Why a connection from `from` to `to` can never carry a value (no value fits both attribute
 * types: a `str` into a `float`), or null; `typeOf` gives an end's type, undefined when unknown.
 *
 * @example
 * connectionTypeProblem('a.attributes.s', 'b.attributes.v', typeOf) // "'b.attributes.v' is float and 'a.attributes.s' is str: ..."
 */
export function connectionTypeProblem(from: string, to: string, typeOf: (ref: AttributeRef) => AttributeType | undefined): string | null {
  const [fromRef, toRef] = [parseAttributeRef(from), parseAttributeRef(to)]
  if (typeof fromRef === 'string' || typeof toRef === 'string') return null
  const [a, b] = [typeOf(fromRef), typeOf(toRef)]
  if (a === undefined || b === undefined || typesMeet(a, b)) return null
  return `'${to}' is ${b} and '${from}' is ${a}: no value of one fits the other`
}

/** Whether some value fits attribute types `a` and `b` both (an int and a float meet in 2). */
function typesMeet(a: AttributeType, b: AttributeType): boolean {
  const numeric = (t: AttributeType): boolean => t === 'int' || t === 'float'
  return a === b || a === 'any' || b === 'any' || (numeric(a) && numeric(b))
}

/** Joins a dotted prefix and a relative path (which may start with `[n]`). */
export function joinPath(prefix: string, path: string): string {
  if (!path) return prefix
  if (!prefix) return path
  return path.startsWith('[') ? `${prefix}${path}` : `${prefix}.${path}`
}
