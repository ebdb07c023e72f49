/**
 * The snapshot file format (current schema version): its types and the zod schemas that check
 * a file's shape with paths. The types are plain interfaces (so callers' own interfaces stay
 * assignable) and each schema is typed against its interface, so the two cannot drift. Only
 * the shape of the structure is checked here; whether each model definition is valid is
 * decided by the definition layer when the snapshot is loaded into a system.
 */
import { z } from 'zod'
import type { ErrorDetail } from '../errors.js'
import { isRecord } from '../definition/is-record.js'
import type { PythonValue } from '../values/number.js'

/**
 * The newest schema_version this build reads (and writes, for a snapshot with runtime state).
 * 1: structure only; 2: an optional `state` section and `automatic`. A snapshot without state
 * is still written as version 1, so older builds keep reading it.
 *
 * @example
 * if (file.schema_version > CURRENT_SCHEMA_VERSION) refuse()
 */
export const CURRENT_SCHEMA_VERSION = 2

/**
 * The schema_version of a snapshot that holds structure only.
 *
 * @example
 * const version = file.state ? CURRENT_SCHEMA_VERSION : STRUCTURE_SCHEMA_VERSION
 */
export const STRUCTURE_SCHEMA_VERSION = 1

/**
 * The `version` of the `state` section this build writes and reads: a state of a newer version
 * is refused, as a newer schema_version is.
 *
 * @example
 * const state: SnapshotState = { version: STATE_VERSION, system, instances }
 */
export const STATE_VERSION = 1

/** The lifecycle states a snapshot records. */
const LIFECYCLE = ['INITIALIZED', 'PREPARED', 'RUNNING', 'STOPPED', 'ERROR'] as const

/**
 * A timer as saved: its time, its step and whether time is pinned.
 *
 * @example
 * const timer: TimerState = { time: 12.5, dt: 0.5, pinned: false }
 */
export interface TimerState {
  time: number
  dt: number
  pinned: boolean
}

/**
 * Polling as saved: whether it is enabled, its interval, and the background runs counted
 * against `max_iterations`.
 *
 * @example
 * const polling: PollingState = { enabled: true, interval: 0.5, iterations: 0 }
 */
export interface PollingState {
  enabled: boolean
  interval: number
  iterations: number
}

/**
 * One attribute's values: the internal value, and the external (presented) one when an
 * override is set. An attribute the instance gained by a write (not declared by its model) is
 * `added`, with its type, and is created again on load.
 *
 * @example
 * const level: AttributeState = { internal: 25.0, external: 30.0 }
 */
export interface AttributeState {
  /** Python-typed (src/values/number.ts): `2.0` inside a list, dict or `any` value is a `FloatMark`, an int past 2**53 an `ExactInt`. */
  internal: PythonValue
  external?: PythonValue
  added?: boolean
  type?: string
}

/**
 * One instance at the time of the save.
 *
 * @example
 * const inst: InstanceState = { state: 'PREPARED', timer, polling, attributes: { level: { internal: 2.5 } } }
 */
export interface InstanceState {
  state: (typeof LIFECYCLE)[number]
  /** Whether it ran its own polling loop (`start` of the instance alone). */
  own_loop?: boolean
  last_error?: string | null
  timer: TimerState
  polling: PollingState
  attributes: Record<string, AttributeState>
  /** The state of its declarative behaviour (src/language/model/state.ts), when it has any. */
  behaviour?: Record<string, unknown>
  /** Its Python objects' states (`__getstate__`), as Python-typed JSON text of a list, one per object; when they were loaded. */
  python?: { states: string }
}

/**
 * The runtime state section of a snapshot (schema_version 2): the system's lifecycle state,
 * timer and polling, and every instance's.
 *
 * @example
 * const state: SnapshotState = { version: 1, system: { state: 'PREPARED', timer, polling }, instances: {} }
 */
export interface SnapshotState {
  version: number
  system: { state: (typeof LIFECYCLE)[number]; timer: TimerState; polling: PollingState }
  instances: Record<string, InstanceState>
}

/**
 * A system's structure definition as stored in a snapshot. A connection may carry more keys
 * than `from`/`to`; they are kept.
 *
 * @example
 * const def: SystemDefinition = { models: { M: {} }, instances: [{ sensor: 'M' }], connections: { c: { from: 'sensor', to: 'sensor' } } }
 */
export interface SystemDefinition {
  models: Record<string, unknown>
  /** `{"<instance>": "<model>"}`, or with parameters `{"<instance>": {"type": "<model>", "parameters": {...}}}`. */
  instances: Array<Record<string, string | { type: string; parameters?: Record<string, unknown>; init_parameters?: Record<string, unknown> }>>
  connections: Record<string, { from: string; to: string; enabled?: boolean }>
}

/**
 * A parsed snapshot file of the current schema version.
 *
 * @example
 * const file: SnapshotFile = snapshotFileSchema.parse(raw)
 */
export interface SnapshotFile {
  schema_version: number
  id: string
  created_at: string
  label: string
  notes: string
  server_version: string
  /** Written by the server itself (on shutdown); retention deletes only these. */
  automatic?: boolean
  definition: SystemDefinition
  state?: SnapshotState
}

/** "required" for a missing key reads better than "expected string, received undefined". */
function text(expected = 'a string'): z.ZodString {
  return z.string({
    error: (issue) => (issue.input === undefined ? 'required' : `expected ${expected}`),
  })
}

const instanceSpecSchema = z.strictObject({
  type: text('the model name (a string)'),
  parameters: z.record(z.string(), z.unknown()).optional(),
  init_parameters: z.record(z.string(), z.unknown()).optional(),
})

const instanceEntrySchema = z
  .record(text('the model name (a string)'), z.union([text('the model name (a string)'), instanceSpecSchema]), {
    error: (issue) => (issue.input === undefined ? 'required' : 'expected a single-entry map {"<instance>": "<model>"}'),
  })
  .refine((entry) => Object.keys(entry).length === 1, {
    message: 'expected exactly one entry {"<instance>": "<model>"}',
  })

const connectionSchema = z.looseObject(
  { from: text('an instance name (a string)'), to: text('an instance name (a string)') },
  { error: (issue) => (issue.input === undefined ? 'required' : 'expected {"from": "...", "to": "..."}') },
)

/**
 * The structure of a system: model templates, instance -> model, connections. Extra keys
 * inside a connection are kept, so a snapshot never silently drops what it was given.
 *
 * @example
 * systemDefinitionSchema.parse({ models: { M: {} }, instances: [{ sensor: 'M' }], connections: {} })
 */
export const systemDefinitionSchema: z.ZodType<SystemDefinition> = z.object(
  {
    models: z.record(z.string(), z.unknown(), {
      error: (issue) => (issue.input === undefined ? 'required' : 'expected a map of model name -> definition'),
    }),
    instances: z.array(instanceEntrySchema, {
      error: (issue) => (issue.input === undefined ? 'required' : 'expected a list of {"<instance>": "<model>"}'),
    }),
    connections: z.record(z.string(), connectionSchema, {
      error: (issue) => (issue.input === undefined ? 'required' : 'expected a map of connection name -> {"from", "to"}'),
    }),
  },
  { error: (issue) => (issue.input === undefined ? 'required' : 'expected an object {models, instances, connections}') },
)

/**
 * The problems of a `state` section's shape, each with its path (`state.instances.a.timer.dt`);
 * whether what it names exists and its values fit is checked against the structure it comes
 * with when the snapshot is loaded. Written by hand rather than with zod: a state of 10,000
 * instances is checked in milliseconds instead of a second.
 *
 * @example
 * stateShapeProblems(file.state) // [] when the shape is right
 */
export function stateShapeProblems(state: unknown, path = 'state'): ErrorDetail[] {
  const problems: ErrorDetail[] = []
  const root = fields(state, path, problems, { version: 'required', system: 'required', instances: 'required' })
  if (root === undefined) return problems
  if (!Number.isInteger(root.version) || (root.version as number) < 1) problems.push({ path: `${path}.version`, message: 'expected an integer >= 1' })
  const system = fields(root.system, `${path}.system`, problems, { state: 'required', timer: 'required', polling: 'required' })
  if (system !== undefined) {
    lifecycle(system.state, `${path}.system.state`, problems)
    timer(system.timer, `${path}.system.timer`, problems)
    polling(system.polling, `${path}.system.polling`, problems)
  }
  if (!isRecord(root.instances)) problems.push({ path: `${path}.instances`, message: 'expected an object of instance name -> state' })
  else for (const [name, value] of Object.entries(root.instances)) instance(value, `${path}.instances.${name}`, problems)
  return problems
}

const INSTANCE_FIELDS = {
  state: 'required',
  own_loop: 'optional',
  last_error: 'optional',
  timer: 'required',
  polling: 'required',
  attributes: 'required',
  behaviour: 'optional',
  python: 'optional',
} as const

function instance(value: unknown, path: string, problems: ErrorDetail[]): void {
  const f = fields(value, path, problems, INSTANCE_FIELDS)
  if (f === undefined) return
  lifecycle(f.state, `${path}.state`, problems)
  if (f.own_loop !== undefined && typeof f.own_loop !== 'boolean') problems.push({ path: `${path}.own_loop`, message: 'expected true or false' })
  if (f.last_error !== undefined && f.last_error !== null && typeof f.last_error !== 'string')
    problems.push({ path: `${path}.last_error`, message: 'expected a string or null' })
  timer(f.timer, `${path}.timer`, problems)
  polling(f.polling, `${path}.polling`, problems)
  if (!isRecord(f.attributes)) problems.push({ path: `${path}.attributes`, message: 'expected an object of attribute name -> {"internal": value}' })
  else {
    for (const [name, attr] of Object.entries(f.attributes)) {
      const a = fields(attr, `${path}.attributes.${name}`, problems, { internal: 'required', external: 'optional', added: 'optional', type: 'optional' })
      if (a === undefined) continue
      if (a.added !== undefined && typeof a.added !== 'boolean') problems.push({ path: `${path}.attributes.${name}.added`, message: 'expected true or false' })
      if (a.type !== undefined && typeof a.type !== 'string') problems.push({ path: `${path}.attributes.${name}.type`, message: 'expected a string' })
    }
  }
  if (f.behaviour !== undefined && !isRecord(f.behaviour)) problems.push({ path: `${path}.behaviour`, message: 'expected an object' })
  if (f.python !== undefined) {
    const py = fields(f.python, `${path}.python`, problems, { states: 'required' })
    if (py !== undefined && typeof py.states !== 'string')
      problems.push({ path: `${path}.python.states`, message: 'expected a string (Python-typed JSON text)' })
  }
}

function timer(value: unknown, path: string, problems: ErrorDetail[]): void {
  const f = fields(value, path, problems, { time: 'required', dt: 'required', pinned: 'required' })
  if (f === undefined) return
  finite(f.time, `${path}.time`, problems)
  if (finite(f.dt, `${path}.dt`, problems) && (f.dt as number) <= 0) problems.push({ path: `${path}.dt`, message: 'expected a number > 0' })
  if (typeof f.pinned !== 'boolean') problems.push({ path: `${path}.pinned`, message: 'expected true or false' })
}

function polling(value: unknown, path: string, problems: ErrorDetail[]): void {
  const f = fields(value, path, problems, { enabled: 'required', interval: 'required', iterations: 'required' })
  if (f === undefined) return
  if (typeof f.enabled !== 'boolean') problems.push({ path: `${path}.enabled`, message: 'expected true or false' })
  if (finite(f.interval, `${path}.interval`, problems) && (f.interval as number) < 0.001)
    problems.push({ path: `${path}.interval`, message: 'expected a number of seconds >= 0.001' })
  if (!Number.isSafeInteger(f.iterations) || (f.iterations as number) < 0) problems.push({ path: `${path}.iterations`, message: 'expected an integer >= 0' })
}

function lifecycle(value: unknown, path: string, problems: ErrorDetail[]): void {
  if (!(LIFECYCLE as readonly unknown[]).includes(value)) problems.push({ path, message: `expected one of ${LIFECYCLE.join(', ')}` })
}

function finite(value: unknown, path: string, problems: ErrorDetail[]): boolean {
  if (typeof value === 'number' && Number.isFinite(value)) return true
  problems.push({ path, message: 'expected a finite number' })
  return false
}

/** An object's fields when it is one with no unknown keys and every required key; else the problems. */
function fields<K extends string>(
  value: unknown,
  path: string,
  problems: ErrorDetail[],
  known: Record<K, 'required' | 'optional'>,
): Record<K, unknown> | undefined {
  if (!isRecord(value)) {
    problems.push({ path, message: value === undefined ? 'required' : 'expected an object' })
    return undefined
  }
  const before = problems.length
  for (const key of Object.keys(value)) if (!Object.hasOwn(known, key)) problems.push({ path: `${path}.${key}`, message: 'unknown key' })
  for (const [key, need] of Object.entries(known))
    if (need === 'required' && value[key] === undefined) problems.push({ path: `${path}.${key}`, message: 'required' })
  return problems.length === before ? (value as Record<K, unknown>) : undefined
}

/**
 * A snapshot file of the current schema version. `label`, `notes` and `server_version`
 * default to "" so hand-written files stay loadable.
 *
 * @example
 * snapshotFileSchema.safeParse(JSON.parse(text))
 */
export const snapshotFileSchema: z.ZodType<SnapshotFile, unknown> = z.object(
  {
    schema_version: z.literal(CURRENT_SCHEMA_VERSION),
    id: text().min(1, 'must not be empty'),
    created_at: text('an ISO 8601 timestamp').refine((value) => !Number.isNaN(Date.parse(value)), {
      message: 'expected an ISO 8601 timestamp',
    }),
    label: text().default(''),
    notes: text().default(''),
    server_version: text().default(''),
    automatic: z.boolean().optional(),
    definition: systemDefinitionSchema,
    // Checked by stateShapeProblems (parse-snapshot.ts).
    state: z.custom<SnapshotState>(() => true).optional(),
  },
  { error: () => 'expected a JSON object' },
)
