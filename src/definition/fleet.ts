/**
 * Fleets from a template (docs/scale-out.md): `count` instances of one model, named by a pattern
 * and given parameters that may vary with the index. Used by the `generate` method of the
 * `instances` node and by the `generate` section of a system file, which both expand a fleet
 * into ordinary instance entries.
 *
 * - `name`: a pattern with `{i}` or `{i:04}` (the index zero-padded to 4 digits; `{i:04d}` too);
 *   a name without a placeholder is a prefix: `meter` names `meter_0`, `meter_1`, ...
 * - `i` runs from `start` (default 0) to `start + count - 1`.
 * - `parameters` / `init_parameters`: per parameter a plain value (the same for every instance),
 *   `{cycle: [a, b, c]}` (the k-th instance takes element k mod 3), `{range: [first, step]}`
 *   (first + k*step; integers stay integers) or `{format: "dev_{i:04}"}` (the pattern, as for
 *   names), where k counts the generated instances from 0 whatever `start` is.
 *
 * @example
 * const checked = checkFleet({ template: 'meter', count: 3, name: 'm{i:02}', parameters: { port: { range: [5020, 1] } } })
 * fleetEntries(checked.fleet!) // [{ name: 'm00', entry: { type: 'meter', parameters: { port: 5020 } } }, ...]
 */
import type { ErrorDetail } from '../errors.js'
import { isRecord } from './is-record.js'
import { FloatMark, floatValue, plainJson } from '../values/number.js'
import { nameProblem } from './names.js'
import type { ParsedModelDefinition } from './model-schema.js'
import { checkInstance } from './parameters.js'

/** Most instances one `generate` call or one `generate` entry of a system file may make. */
export const MAX_FLEET = 100_000

/** One value of a parameter per generated instance (k counts from 0, i from `start`). */
type ValueOf = (k: number, i: number) => unknown

/** A fleet checked and ready to expand. */
export interface Fleet {
  template: string
  count: number
  start: number
  /** The name pattern as given (a prefix already turned into `<prefix>_{i}`). */
  pattern: string
  nameOf: (i: number) => string
  parameters?: Record<string, ValueOf>
  initParameters?: Record<string, ValueOf>
}

/** The keys a fleet takes. */
export const FLEET_KEYS = ['template', 'count', 'name', 'start', 'parameters', 'init_parameters'] as const

const PLACEHOLDER = /\{([^{}]*)\}/g

/**
 * A name pattern as a function of `i`, or why it is none: text with `{i}` or `{i:0N}` (`{i:0Nd}`),
 * N from 1 to 20; text without a brace is a prefix (`meter` is `meter_{i}`).
 *
 * @example
 * compilePattern('meter_{i:04}')!(7) // 'meter_0007'
 */
export function compilePattern(text: string): { pattern: string; render: (i: number) => string } | string {
  const pattern = /[{}]/.test(text) ? text : `${text}_{i}`
  const pieces: Array<string | number> = [] // literal text, or the width of an index (0: as it is)
  let last = 0
  let placeholders = 0
  for (const m of pattern.matchAll(PLACEHOLDER)) {
    const spec = /^\s*i\s*(?::\s*0(\d{1,2})d?\s*)?$/.exec(m[1]!)
    if (spec === null || (spec[1] !== undefined && (Number(spec[1]) < 1 || Number(spec[1]) > 20)))
      return `unknown placeholder '${m[0]}': use {i} or {i:04} (the index zero-padded to 4 digits)`
    pieces.push(pattern.slice(last, m.index), spec[1] === undefined ? 0 : Number(spec[1]))
    last = m.index + m[0].length
    placeholders++
  }
  const rest = pattern.slice(last)
  if (/[{}]/.test(rest) || pieces.some((p) => typeof p === 'string' && /[{}]/.test(p))) return `unbalanced brace in '${text}'`
  if (placeholders === 0) return `'${text}' has no {i}: every name of a fleet must differ`
  pieces.push(rest)
  return {
    pattern,
    render: (i) => {
      let out = ''
      for (const piece of pieces) out += typeof piece === 'string' ? piece : String(i).padStart(piece, '0')
      return out
    },
  }
}

/** A parameter's value per instance, or the problem (path relative to the parameter). */
function valueGenerator(value: unknown): ValueOf | ErrorDetail {
  if (!isRecord(value) || Object.keys(value).length !== 1) return () => value
  const [kind] = Object.keys(value) as [string]
  const arg = value[kind]
  if (kind === 'cycle') {
    if (!Array.isArray(arg) || arg.length === 0) return { path: 'cycle', message: 'expected a non-empty list of values' }
    return (k) => arg[k % arg.length]
  }
  if (kind === 'range') {
    const nums = Array.isArray(arg) ? arg.map((n) => plainJson(n)) : []
    if (!Array.isArray(arg) || arg.length < 1 || arg.length > 2 || !nums.every((n) => typeof n === 'number' && Number.isFinite(n)))
      return { path: 'range', message: 'expected [first, step] (numbers; step defaults to 1)' }
    const [first, step = 1] = nums as number[]
    const float = (arg as unknown[]).some((n) => n instanceof FloatMark || (typeof n === 'number' && !Number.isInteger(n)))
    return (k) => {
      const v = first! + k * step
      return float ? floatValue(Number.isInteger(v) ? v : Number(v.toPrecision(15))) : v
    }
  }
  if (kind === 'format') {
    if (typeof arg !== 'string' || !/[{}]/.test(arg)) return { path: 'format', message: 'expected a pattern with {i}, e.g. "dev_{i:04}"' }
    const compiled = compilePattern(arg)
    if (typeof compiled === 'string') return { path: 'format', message: compiled }
    return (_k, i) => compiled.render(i)
  }
  return () => value
}

function generators(given: unknown, at: string, details: ErrorDetail[]): Record<string, ValueOf> | undefined {
  if (given === undefined || given === null) return undefined
  if (!isRecord(given)) {
    details.push({ path: at, message: 'expected a map of name -> value, {cycle: [...]}, {range: [first, step]} or {format: "..."}' })
    return undefined
  }
  const out: Record<string, ValueOf> = {}
  for (const [name, value] of Object.entries(given)) {
    const gen = valueGenerator(value)
    if (typeof gen === 'function') out[name] = gen
    else details.push({ path: `${at}.${name}.${gen.path}`, message: gen.message })
  }
  return out
}

/**
 * Checks a fleet as given (the kwargs of `generate`, a `generate` entry of a system file):
 * the fleet, or every problem with its path relative to it. The template is not looked up here.
 */
export function checkFleet(raw: unknown, options: { max?: number } = {}): { fleet?: Fleet; details: ErrorDetail[] } {
  const max = options.max ?? MAX_FLEET
  if (!isRecord(raw)) return { details: [{ path: '', message: 'expected {template, count, name, parameters}' }] }
  const details: ErrorDetail[] = []
  for (const key of Object.keys(raw)) {
    if (!(FLEET_KEYS as readonly string[]).includes(key)) details.push({ path: key, message: `unknown key '${key}' (expected ${FLEET_KEYS.join(', ')})` })
  }
  const template = raw.template
  if (typeof template !== 'string' || template === '') details.push({ path: 'template', message: 'required: the name of a model' })
  const count = plainJson(raw.count)
  if (!Number.isSafeInteger(count) || (count as number) < 1 || (count as number) > max)
    details.push({ path: 'count', message: `expected an integer from 1 to ${max}` })
  const start = plainJson(raw.start ?? 0)
  if (!Number.isSafeInteger(start) || (start as number) < 0 || (start as number) > 1e12)
    details.push({ path: 'start', message: 'expected an integer >= 0 (the first index)' })
  const nameGiven = raw.name ?? (typeof template === 'string' ? template : undefined)
  let compiled: ReturnType<typeof compilePattern> | undefined
  if (typeof nameGiven !== 'string' || nameGiven === '') details.push({ path: 'name', message: 'expected a pattern such as meter_{i:04}, or a prefix' })
  else {
    compiled = compilePattern(nameGiven)
    if (typeof compiled === 'string') details.push({ path: 'name', message: compiled })
    else if (details.length === 0) {
      // The characters around the index are the same in every name, and the longest is the last.
      const first = compiled.render(start as number)
      const last = compiled.render((start as number) + (count as number) - 1)
      const problem = nameProblem(first) ?? nameProblem(last)
      if (problem) details.push({ path: 'name', message: `'${nameProblem(first) ? first : last}': ${problem}` })
    }
  }
  const parameters = generators(raw.parameters, 'parameters', details)
  const initParameters = generators(raw.init_parameters, 'init_parameters', details)
  if (details.length || typeof compiled !== 'object') return { details }
  return {
    fleet: {
      template: template as string,
      count: count as number,
      start: start as number,
      pattern: compiled.pattern,
      nameOf: compiled.render,
      ...(parameters ? { parameters } : {}),
      ...(initParameters ? { initParameters } : {}),
    },
    details,
  }
}

/** An instance entry of a fleet, as a system definition writes one. */
export interface FleetEntry {
  name: string
  entry: { type: string; parameters?: Record<string, unknown>; init_parameters?: Record<string, unknown> }
}

/** The instance entries of a fleet, in index order. */
export function fleetEntries(fleet: Fleet): FleetEntry[] {
  const out: FleetEntry[] = new Array(fleet.count)
  const values = (gens: Record<string, ValueOf>, k: number, i: number): Record<string, unknown> => {
    const v: Record<string, unknown> = {}
    for (const [name, gen] of Object.entries(gens)) v[name] = gen(k, i)
    return v
  }
  for (let k = 0; k < fleet.count; k++) {
    const i = fleet.start + k
    const entry: FleetEntry['entry'] = { type: fleet.template }
    if (fleet.parameters) entry.parameters = values(fleet.parameters, k, i)
    if (fleet.initParameters) entry.init_parameters = values(fleet.initParameters, k, i)
    out[k] = { name: fleet.nameOf(i), entry }
  }
  return out
}

/** A generated instance checked against its model: its entry and its resolved parameters and start values. */
export interface CheckedFleetEntry extends FleetEntry {
  parameters: Record<string, unknown>
  initValues: Record<string, unknown>
}

/**
 * Expands a fleet and checks each instance against its model (`checkInstance`). The same problem
 * of many instances (a `cycle` value of the wrong type hits every third one) is reported once,
 * with the first instance it hits and how many more: `at.parameters.port: ... (meter_0003 and 332 more)`.
 * `taken` names instances that exist already: each is a problem too (nothing is replaced).
 */
export function checkFleetInstances(
  fleet: Fleet,
  model: ParsedModelDefinition,
  at: string,
  taken: (name: string) => boolean,
): { entries: CheckedFleetEntry[]; details: ErrorDetail[] } {
  const seen = new Map<string, { detail: ErrorDetail; first: string; more: number }>()
  const note = (detail: ErrorDetail, name: string): void => {
    const key = `${detail.path}\0${detail.message}`
    const known = seen.get(key)
    if (known) known.more++
    else seen.set(key, { detail, first: name, more: 0 })
  }
  const entries: CheckedFleetEntry[] = []
  for (const { name, entry } of fleetEntries(fleet)) {
    if (taken(name)) note({ path: joinPath(at, 'name'), message: 'an instance of this name exists already' }, name)
    const checked = checkInstance(model, entry)
    for (const d of checked.problems) note({ path: joinPath(at, d.path), message: d.message }, name)
    entries.push({ name, entry, parameters: checked.parameters, initValues: checked.initValues })
  }
  const details = [...seen.values()].map(({ detail, first, more }) => ({
    ...detail,
    message: `${detail.message} (${first}${more ? ` and ${more} more` : ''})`,
  }))
  return { entries, details }
}

function joinPath(prefix: string, path: string): string {
  return !prefix ? path : !path ? prefix : `${prefix}.${path}`
}
