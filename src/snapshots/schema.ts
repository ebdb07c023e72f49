/**
 * The snapshot file format (current schema version): its types and the zod schemas that check
 * a file's shape with paths. The types are plain interfaces (so callers' own interfaces stay
 * assignable) and each schema is typed against its interface, so the two cannot drift. Only
 * the shape of the structure is checked here; whether each model definition is valid is
 * decided by the definition layer when the snapshot is loaded into a system.
 */
import { z } from 'zod'

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
  internal: unknown
  external?: unknown
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

const finite = z
  .number({ error: (issue) => (issue.input === undefined ? 'required' : 'expected a finite number') })
  .refine(Number.isFinite, 'expected a finite number')
const flag = z.boolean({ error: (issue) => (issue.input === undefined ? 'required' : 'expected true or false') })

const timerStateSchema = z.strictObject({
  time: finite,
  dt: finite.refine((v) => v > 0, 'expected a number > 0'),
  pinned: flag,
})

const pollingStateSchema = z.strictObject({
  enabled: flag,
  interval: finite.refine((v) => v >= 0.001, 'expected a number of seconds >= 0.001'),
  iterations: z.number().int('expected an integer').min(0, 'expected an integer >= 0'),
})

const lifecycle = z.enum(LIFECYCLE, { error: () => `expected one of ${LIFECYCLE.join(', ')}` })

const attributeStateSchema = z.strictObject(
  {
    internal: z.unknown().refine((v) => v !== undefined, 'required'),
    external: z.unknown().optional(),
    added: z.boolean().optional(),
    type: z.string().optional(),
  },
  { error: (issue) => (issue.input === undefined ? 'required' : 'expected {"internal": value} (and "external" when an override is set)') },
)

const instanceStateSchema = z.strictObject({
  state: lifecycle,
  own_loop: z.boolean().optional(),
  last_error: z.string().nullable().optional(),
  timer: timerStateSchema,
  polling: pollingStateSchema,
  attributes: z.record(z.string(), attributeStateSchema),
  behaviour: z.record(z.string(), z.unknown()).optional(),
  python: z.strictObject({ states: z.string() }).optional(),
})

/**
 * The shape of the `state` section; whether what it names exists and its values fit is checked
 * against the structure it comes with when the snapshot is loaded.
 *
 * @example
 * snapshotStateSchema.safeParse(file.state)
 */
export const snapshotStateSchema: z.ZodType<SnapshotState, unknown> = z.strictObject({
  version: z.number().int('expected an integer').min(1, 'expected an integer >= 1'),
  system: z.strictObject({ state: lifecycle, timer: timerStateSchema, polling: pollingStateSchema }),
  instances: z.record(z.string(), instanceStateSchema),
})

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
    state: snapshotStateSchema.optional(),
  },
  { error: () => 'expected a JSON object' },
)
