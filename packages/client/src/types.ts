/**
 * Shapes of what the Mimic HTTP API v3 sends and accepts, as the client sees them. They are
 * written out here instead of imported from the server so that the client stays a standalone
 * module that can run anywhere `fetch` does.
 */

/**
 * Any value that survives a JSON round trip.
 *
 * @example
 * const value: JsonValue = { offset: 0.5, tags: ['a', 'b'], enabled: true }
 */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }

/**
 * A JSON object.
 *
 * @example
 * const kwargs: JsonObject = { offset: 0.5 }
 */
export type JsonObject = { [key: string]: JsonValue }

/**
 * Lifecycle states of instances and of the system (always upper-case on the wire).
 *
 * @example
 * const state: MimicState = await sim.instances.at('s1').state()
 */
export type MimicState = 'INITIALIZED' | 'PREPARED' | 'RUNNING' | 'STOPPED' | 'ERROR'

/**
 * What GET returns for any component: its properties under `attr` (scalars also at top level),
 * its children by name and the methods it offers.
 *
 * @example
 * const doc: NodeDocument = await sim.node('instances/s1').get()
 * doc.children.map((c) => c.name) // ['attributes', 'timer', 'polling', 'communication', 'import']
 */
export interface NodeDocument {
  name: string
  type: string
  path: string
  attr: Record<string, { value: JsonValue }>
  children: Array<{ name: string }>
  methods: string[]
  [property: string]: unknown
}

/**
 * The answer to DELETE on a component.
 *
 * @example
 * const { destroyed }: DeleteResult = await sim.instances.delete('s1')
 */
export interface DeleteResult {
  detail: string
  destroyed: boolean
  removed_from_parent: boolean
}

/**
 * One problem of a fault, located by a dotted path (e.g. `import.sensor.py.class`).
 *
 * @example
 * const first: FaultDetail = err.fault.error.details[0]
 */
export interface FaultDetail {
  path: string
  message: string
  [key: string]: unknown
}

/**
 * The fault document every failed request answers with.
 *
 * @example
 * try { await sim.models.set('bad', { attributes: 5 }) } catch (err) {
 *   if (err instanceof MimicApiError) console.log(err.fault?.error.details)
 * }
 */
export interface MimicFault {
  type: 'fault'
  event: string
  http_status: number
  action: string | null
  component: { name: string; path: string; state: string | null } | null
  correlation_id: string
  when: string
  error: { type: string; message: string; details: FaultDetail[] }
}

/**
 * What GET /health answers.
 *
 * @example
 * const { status, api_version }: HealthInfo = await sim.health()
 */
export interface HealthInfo {
  status: string
  server_version: string
  api_version: string
  [key: string]: unknown
}

/**
 * A declared attribute: a bare default value, or the default with its type and unit.
 *
 * @example
 * const spec: AttributeSpec = { default: 20.0, type: 'float', unit: 'degC' }
 */
export type AttributeSpec = JsonValue | { default?: JsonValue; type?: string; unit?: string; [key: string]: JsonValue | undefined }

/**
 * One `import` entry: a Python class bound to the model's attributes and methods.
 *
 * @example
 * const entry: ImportEntry = { class: 'Pt100Sensor', methods: { run: 'tick' } }
 */
export interface ImportEntry {
  class: string
  init?: { args?: JsonValue[]; kwargs?: JsonObject }
  attributes?: Record<string, { property: string } | { getter: string; setter?: string }>
  methods?: Record<string, string>
  [key: string]: unknown
}

/**
 * A model template as PUT to `/api/v3/system/models` (the server validates it; see API.md §5).
 *
 * @example
 * const pt100: ModelDefinition = {
 *   attributes: { temperature: { default: 20.0, type: 'float' } },
 *   import: { 'pt100.py': { class: 'Pt100Sensor', methods: { run: 'tick' } } },
 *   communication: [{ modbus_slave: { mapping: { temperature: { address: [0, 1], group: 'h_r', type: 'float' } } } }],
 * }
 */
export interface ModelDefinition {
  description?: string
  attributes?: Record<string, AttributeSpec>
  import?: Record<string, ImportEntry | ImportEntry[]>
  /** A list of single-entry maps `{<kind>: {...}}`, or one such map. */
  communication?: Array<Record<string, JsonObject>> | Record<string, JsonObject>
  [key: string]: unknown
}

/**
 * A connection between two attributes, by dotted reference.
 *
 * @example
 * await sim.connections.set('c1', { from: 's1.attributes.temperature', to: 'panel.attributes.value' })
 */
export interface ConnectionDefinition {
  from: string
  to: string
}

/**
 * An instance as a system definition lists it: the model's name, or the model with the
 * instance's parameters and attribute start values.
 *
 * @example
 * const entry: InstanceDefinition = { type: 'pt100', init_parameters: { temperature: 30.0 } }
 */
export type InstanceDefinition = string | { type: string; parameters?: JsonObject; init_parameters?: JsonObject }

/**
 * A whole system: what `sim.definition()` resolves to, what a snapshot holds and what a
 * `--system` file holds (it loads as it is).
 *
 * @example
 * const { models, instances, connections }: SystemDefinition = await sim.definition()
 */
export interface SystemDefinition {
  models: Record<string, ModelDefinition>
  /** A list of single-entry maps `{<instance>: <entry>}`, in creation order. */
  instances: Array<Record<string, InstanceDefinition>>
  connections: Record<string, ConnectionDefinition & { enabled?: boolean }>
}

/**
 * What `sim.reload()` resolves to: the `--system` file read again and the counts of the
 * structure now active.
 *
 * @example
 * const { file, instances }: ReloadResult = await sim.reload()
 */
export interface ReloadResult {
  file: string
  loaded: boolean
  models: number
  instances: number
  connections: number
}

/**
 * Options of `snapshots.save()`: nothing (in memory, plus a file in durable mode), a `path`, or a
 * `directory` with a `name`; `label` and `notes` are stored with the snapshot. `include_state`
 * saves the runtime state too (attribute values, timers, scenarios, action and Python object
 * state), which a load then restores.
 *
 * @example
 * await sim.snapshots.save({ label: 'before', notes: 'two sensors' })
 * await sim.snapshots.save({ label: 'half-way', include_state: true })
 */
export interface SnapshotSaveOptions {
  label?: string
  notes?: string
  path?: string
  directory?: string
  name?: string
  include_state?: boolean
}

/**
 * What `snapshots.save()` resolves to; `persisted_path` is `""` when the server keeps snapshots in
 * memory only.
 *
 * @example
 * const { id, persisted_path }: SnapshotSaveResult = await sim.snapshots.save()
 */
export interface SnapshotSaveResult {
  id: string
  in_memory: boolean
  persisted_path: string
  created_at: string
  label: string
  notes: string
  /** Present (true) when the snapshot holds runtime state. */
  state?: true
  /** Present (true) when the server saved it by itself (on shutdown). */
  automatic?: true
}

/**
 * A snapshot held in the server's memory.
 *
 * @example
 * const [latest]: SnapshotInMemory[] = (await sim.snapshots.list()).in_memory
 */
export interface SnapshotInMemory {
  id: string
  created_at: string
  label: string
  notes: string
  persisted_path: string
  state?: true
  automatic?: true
}

/**
 * A snapshot file found in the snapshots directory.
 *
 * @example
 * const paths = (await sim.snapshots.list()).files.map((f: SnapshotFile) => f.path)
 */
export interface SnapshotFile {
  path: string
  id: string
  created_at: string
  label: string
  notes: string
  schema_version: number
  /** Present (true) when the file holds runtime state. */
  state?: true
  /** Present (true) when the server saved it by itself; only these are deleted by retention. */
  automatic?: true
}

/**
 * What `snapshots.list()` resolves to.
 *
 * @example
 * const { in_memory, files }: SnapshotList = await sim.snapshots.list()
 */
export interface SnapshotList {
  in_memory: SnapshotInMemory[]
  files: SnapshotFile[]
}

/**
 * Which snapshot `load()` or `delete()` acts on: by id, or by file path (relative paths are
 * relative to the server's snapshots directory).
 *
 * @example
 * const target: SnapshotTarget = { id: saved.id }
 */
export type SnapshotTarget = { id: string; path?: never } | { path: string; id?: never }

/**
 * What `snapshots.load()` resolves to: counts of the structure now active.
 *
 * @example
 * const { models, instances }: SnapshotLoadResult = await sim.snapshots.load({ id })
 */
export interface SnapshotLoadResult {
  id: string
  loaded: boolean
  models: number
  instances: number
  connections: number
  /** Present (true) when the snapshot's runtime state was restored too. */
  state?: true
}

/**
 * What `snapshots.persistAllInMemory()` resolves to.
 *
 * @example
 * const { persisted }: SnapshotPersistResult = await sim.snapshots.persistAllInMemory()
 */
export interface SnapshotPersistResult {
  persisted: Array<{ id: string; path: string }>
}

/**
 * What `snapshots.delete()` resolves to.
 *
 * @example
 * const { deleted }: SnapshotDeleteResult = await sim.snapshots.delete({ id })
 */
export interface SnapshotDeleteResult {
  id: string
  deleted: boolean
}

/**
 * Log levels, from the least to the most severe.
 *
 * @example
 * const level: LogLevel = 'warn'
 */
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal'

/**
 * One log record from a `logs` node: sequence number, time (ISO 8601 UTC), level, message and
 * the record's own fields (`instance`, `correlation_id`, `stream` for Python output, ...).
 *
 * @example
 * const [last]: LogEntry[] = await sim.logs.tail({ limit: 1 })
 */
export interface LogEntry {
  seq: number
  time: string
  level: LogLevel
  msg: string
  instance?: string
  correlation_id?: string
  [field: string]: JsonValue | undefined
}

/**
 * Filters of `logs.tail()`.
 *
 * @example
 * await sim.logs.tail({ limit: 50, level: 'warn', since: '5m', contains: 'pump' })
 */
export interface TailOptions {
  /** At most this many records, the newest (default 100). */
  limit?: number
  /** Only records at this level or above. */
  level?: LogLevel
  /** A `seq` (records after it), an ISO 8601 time (at or after it) or a duration back from now (`30s`, `5m`, `2h`). */
  since?: number | string
  /** Only records whose message or a field holds this text (case-insensitive). */
  contains?: string
}
