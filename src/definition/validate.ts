import type { z } from 'zod'
import type { ErrorDetail } from '../errors.js'
import { nameProblem } from './names.js'
import { attributeDeclarations, formatPath, modelDefinitionSchema, type ParsedModelDefinition } from './model-schema.js'

/** A system's structure: the shape of a system file and of a snapshot's `definition`. */
export interface SystemDefinition {
  models: Record<string, unknown>
  instances: Array<Record<string, string>>
  connections: Record<string, { from: string; to: string }>
}

/** A validated system: parsed models and the instance/connection lists in order. */
export interface ParsedSystem {
  models: Map<string, { raw: unknown; parsed: ParsedModelDefinition }>
  instances: Array<{ name: string; model: string }>
  connections: Array<{ name: string; from: string; to: string }>
}

/** Turns zod issues into error details, each path prefixed with `prefix`. */
export function issuesToDetails(issues: readonly z.core.$ZodIssue[], prefix: readonly PropertyKey[] = []): ErrorDetail[] {
  return issues.flatMap((issue) => {
    const at = [...prefix, ...issue.path]
    if (issue.code === 'invalid_union' && issue.errors.length) return issuesToDetails(closestBranch(issue.errors), at)
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ path: formatPath([...at, key]), message: `unknown key '${key}'` }))
    if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message)) return [{ path: formatPath(at), message: 'required' }]
    return [{ path: formatPath(at), message: issue.message.replace(/^Invalid input: /, '') }]
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

/**
 * Validates one model definition; every problem is reported with its path inside the model.
 *
 * @example
 * validateModel({ attributes: { t: 0 } }) // { ok: true, model: {...} }
 */
export function validateModel(raw: unknown): { ok: true; model: ParsedModelDefinition } | { ok: false; details: ErrorDetail[] } {
  const result = modelDefinitionSchema.safeParse(raw)
  if (result.success) return { ok: true, model: result.data }
  return { ok: false, details: issuesToDetails(result.error.issues) }
}

/** A reference to an attribute: `<instance>.attributes.<attribute>`. */
export interface AttributeRef {
  instance: string
  attribute: string
}

/**
 * Parses a connection end such as `sensor.attributes.temperature`.
 *
 * @example
 * parseAttributeRef('sensor.attributes.temperature') // { instance: 'sensor', attribute: 'temperature' }
 */
export function parseAttributeRef(ref: unknown): AttributeRef | string {
  if (typeof ref !== 'string') return 'must be a string like <instance>.attributes.<attribute>'
  const parts = ref.split('.')
  if (parts.length !== 3 || parts[1] !== 'attributes') return `'${ref}' must look like <instance>.attributes.<attribute>`
  return { instance: parts[0]!, attribute: parts[2]! }
}

/**
 * Validates a whole system definition (models, instances, connections) and reports every
 * problem with its path, e.g. `models.pt100.attributes.x` or `connections.c1.to`.
 *
 * @example
 * validateSystem({ models: { m: { attributes: { t: 0 } } }, instances: [{ s: 'm' }] }).ok // true
 */
export function validateSystem(raw: unknown): { ok: true; system: ParsedSystem } | { ok: false; details: ErrorDetail[] } {
  const details: ErrorDetail[] = []
  const system: ParsedSystem = { models: new Map(), instances: [], connections: [] }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    return { ok: false, details: [{ path: '', message: 'a system definition is an object with models, instances and connections' }] }
  }
  const top = raw as Record<string, unknown>
  for (const key of Object.keys(top)) {
    if (!['models', 'instances', 'connections', 'description'].includes(key)) {
      details.push({ path: key, message: `unknown key '${key}' (expected models, instances, connections)` })
    }
  }
  const models = top.models ?? {}
  if (models === null || typeof models !== 'object' || Array.isArray(models)) {
    details.push({ path: 'models', message: 'must be a map of model name -> model definition' })
  } else {
    for (const [name, def] of Object.entries(models)) {
      const problem = nameProblem(name)
      if (problem) details.push({ path: `models.${name}`, message: problem })
      const result = validateModel(def)
      if (result.ok) system.models.set(name, { raw: def, parsed: result.model })
      else details.push(...result.details.map((d) => ({ ...d, path: joinPath(`models.${name}`, d.path) })))
    }
  }
  const instances = top.instances ?? []
  if (!Array.isArray(instances)) {
    details.push({ path: 'instances', message: 'must be a list of single-entry maps: - <instance>: <model>' })
  } else {
    const seen = new Set<string>()
    instances.forEach((entry: unknown, index) => {
      const at = `instances[${index}]`
      if (entry === null || typeof entry !== 'object' || Array.isArray(entry) || Object.keys(entry).length !== 1) {
        details.push({ path: at, message: 'must be a single-entry map: <instance>: <model>' })
        return
      }
      const [name, model] = Object.entries(entry)[0]!
      const problem = nameProblem(name)
      if (problem) details.push({ path: `${at}.${name}`, message: problem })
      else if (seen.has(name)) details.push({ path: `${at}.${name}`, message: `duplicate instance name '${name}'` })
      seen.add(name)
      if (typeof model !== 'string') details.push({ path: `${at}.${name}`, message: 'the model name must be a string' })
      else if (!(models && typeof models === 'object' && Object.hasOwn(models, model))) {
        details.push({ path: `${at}.${name}`, message: `unknown model '${model}'` })
      } else system.instances.push({ name, model })
    })
  }
  const connections = top.connections ?? {}
  if (connections === null || typeof connections !== 'object' || Array.isArray(connections)) {
    details.push({ path: 'connections', message: 'must be a map of connection name -> {from, to}' })
  } else {
    const attrsOf = (instance: string): Set<string> | undefined => {
      const inst = system.instances.find((i) => i.name === instance)
      const model = inst && system.models.get(inst.model)
      return model ? new Set(attributeDeclarations(model.parsed).map((a) => a.name)) : undefined
    }
    for (const [name, conn] of Object.entries(connections)) {
      details.push(...checkConnection(name, conn, attrsOf).map((d) => ({ ...d, path: joinPath('connections', d.path) })))
      if (!nameProblem(name) && isConnectionShape(conn)) system.connections.push({ name, from: conn.from, to: conn.to })
    }
  }
  return details.length ? { ok: false, details } : { ok: true, system }
}

function isConnectionShape(value: unknown): value is { from: string; to: string } {
  return (
    value !== null && typeof value === 'object' && typeof (value as { from?: unknown }).from === 'string' && typeof (value as { to?: unknown }).to === 'string'
  )
}

/**
 * Checks one connection against the attributes each instance has (`attrsOf` answers undefined
 * for an unknown instance). Paths are relative to the connections map: `<name>.from`.
 */
export function checkConnection(name: string, conn: unknown, attrsOf: (instance: string) => Set<string> | undefined): ErrorDetail[] {
  const details: ErrorDetail[] = []
  const problem = nameProblem(name)
  if (problem) details.push({ path: name, message: problem })
  if (conn === null || typeof conn !== 'object' || Array.isArray(conn)) {
    return [...details, { path: name, message: 'a connection is {from: <instance>.attributes.<attr>, to: <instance>.attributes.<attr>}' }]
  }
  for (const key of Object.keys(conn)) {
    if (key !== 'from' && key !== 'to') details.push({ path: `${name}.${key}`, message: `unknown key '${key}' (expected from, to)` })
  }
  const ends: Record<string, AttributeRef> = {}
  for (const end of ['from', 'to'] as const) {
    const ref = parseAttributeRef((conn as Record<string, unknown>)[end])
    if (typeof ref === 'string') {
      details.push({ path: `${name}.${end}`, message: (conn as Record<string, unknown>)[end] === undefined ? 'required' : ref })
      continue
    }
    const attrs = attrsOf(ref.instance)
    if (!attrs) details.push({ path: `${name}.${end}`, message: `unknown instance '${ref.instance}'` })
    else if (!attrs.has(ref.attribute)) details.push({ path: `${name}.${end}`, message: `instance '${ref.instance}' has no attribute '${ref.attribute}'` })
    else ends[end] = ref
  }
  if (ends.from && ends.to && ends.from.instance === ends.to.instance && ends.from.attribute === ends.to.attribute) {
    details.push({ path: `${name}.to`, message: 'a connection cannot feed an attribute into itself' })
  }
  return details
}

/** Joins a dotted prefix and a relative path (which may start with `[n]`). */
export function joinPath(prefix: string, path: string): string {
  if (!path) return prefix
  if (!prefix) return path
  return path.startsWith('[') ? `${prefix}${path}` : `${prefix}.${path}`
}
