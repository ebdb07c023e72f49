/**
 * The snapshot file format (current schema version): its types and the zod schemas that check
 * a file's shape with paths. The types are plain interfaces (so callers' own interfaces stay
 * assignable) and each schema is typed against its interface, so the two cannot drift. Only
 * the shape of the structure is checked here; whether each model definition is valid is
 * decided by the definition layer when the snapshot is loaded into a system.
 */
import { z } from 'zod'

/**
 * The schema_version this build writes and reads natively.
 *
 * @example
 * if (file.schema_version > CURRENT_SCHEMA_VERSION) refuse()
 */
export const CURRENT_SCHEMA_VERSION = 1

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
  definition: SystemDefinition
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
    definition: systemDefinitionSchema,
  },
  { error: () => 'expected a JSON object' },
)
