/*
 * The events of `GET /api/v3/events` as the dashboard receives them (docs/events.md). They are
 * the wire contract, kept apart from the server's code: the dashboard knows only HTTP.
 */

/** An attribute as the `structure` event lists it. */
export interface StructureAttribute {
  name: string
  type: string
  unit?: string
}

/** The `structure` event. */
export interface StructureEvent {
  server_version: string
  api_version: string
  hz: number
  filter: string[] | null
  models: Array<{ name: string; instances: string[] }>
  instances: Array<{ name: string; model: string; attributes: StructureAttribute[]; adapters: string[]; methods: string[] }>
  connections: Array<{ name: string; from: string; to: string }>
}

/** Changed values of one attribute. */
export interface AttributeDelta {
  internal_value?: unknown
  external_value?: unknown
}

/** Changed values of one protocol adapter: state, requests, errors and the protocol's own counters. */
export interface AdapterDelta {
  state?: string
  port?: number | null
  requests?: number
  errors?: number
  /** The protocol's own counters (e.g. `queries`, `clients`). */
  [counter: string]: string | number | boolean | null | undefined
}

/** Changed values of one scenario. */
export interface ScenarioDelta {
  state?: string
  elapsed?: number
  runs?: number
}

/** Changed parts of one instance. */
export interface InstanceDelta {
  state?: string
  last_error?: string | null
  attributes?: Record<string, AttributeDelta>
  adapters?: Record<string, AdapterDelta>
  /** Only for an instance whose model has scenarios. */
  scenarios?: Record<string, ScenarioDelta>
}

/** The `frame` event. */
export interface FrameEvent {
  t: number
  system?: { state?: string; steps?: number; time?: number }
  instances?: Record<string, InstanceDelta>
}
