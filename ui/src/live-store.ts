import type { FrameEvent, StructureAttribute, StructureEvent } from './live-types.ts'

/** The live view of one attribute. */
export interface LiveAttribute extends StructureAttribute {
  internal: unknown
  external: unknown
  /** Whether a value has arrived (the stream sends values only for instances it was asked for). */
  known: boolean
}

/** The live view of one protocol adapter. */
export interface LiveAdapter {
  name: string
  state: string
  port: number | null
  requests: number
  errors: number
  /** Every stats() entry the stream sent, the protocol's own counters included (e.g. MQTT `connection`, `published`). */
  stats: Record<string, string | number | boolean | null>
  known: boolean
}

/** The live view of one scenario: `idle`, `active` or `finished`, its own elapsed time, its runs. */
export interface LiveScenario {
  state: string
  elapsed: number
  runs: number
}

/** The live view of one instance. */
export interface LiveInstance {
  name: string
  model: string
  state: string
  lastError: string | null
  methods: string[]
  attributes: Map<string, LiveAttribute>
  adapters: Map<string, LiveAdapter>
  /** The model's scenarios, as frames report them (empty for a model without scenarios). */
  scenarios: Map<string, LiveScenario>
}

type Listener<T> = (value: T) => void

/**
 * What the dashboard knows of the system right now: the last `structure` event with every frame
 * since merged in. Views read it and subscribe to hear of changes.
 *
 * @example
 * store.onFrame((frame) => console.log(store.instance('tank_sensor')?.attributes.get('temperature')?.internal))
 */
export class LiveStore {
  structure: StructureEvent | null = null
  system = { state: '', steps: 0, time: 0 }
  readonly instances = new Map<string, LiveInstance>()
  readonly #structureListeners = new Set<Listener<StructureEvent>>()
  readonly #frameListeners = new Set<Listener<FrameEvent>>()

  instance(name: string): LiveInstance | undefined {
    return this.instances.get(name)
  }

  applyStructure(event: StructureEvent): void {
    const previous = new Map(this.instances)
    this.structure = event
    this.instances.clear()
    for (const inst of event.instances) {
      const old = previous.get(inst.name)
      const attributes = new Map<string, LiveAttribute>()
      for (const a of inst.attributes) attributes.set(a.name, { ...a, internal: undefined, external: undefined, known: false })
      const adapters = new Map<string, LiveAdapter>()
      for (const name of inst.adapters) adapters.set(name, { name, state: '', port: null, requests: 0, errors: 0, stats: {}, known: false })
      this.instances.set(inst.name, {
        name: inst.name,
        model: inst.model,
        state: old?.state ?? '',
        lastError: old?.lastError ?? null,
        methods: inst.methods,
        attributes,
        adapters,
        scenarios: new Map(),
      })
    }
    for (const listener of this.#structureListeners) listener(event)
  }

  applyFrame(frame: FrameEvent): void {
    if (frame.system) Object.assign(this.system, frame.system)
    for (const [name, delta] of Object.entries(frame.instances ?? {})) {
      const inst = this.instances.get(name)
      if (!inst) continue
      if (delta.state !== undefined) inst.state = delta.state
      if (delta.last_error !== undefined) inst.lastError = delta.last_error
      for (const [attrName, values] of Object.entries(delta.attributes ?? {})) {
        const attr = inst.attributes.get(attrName)
        if (!attr) continue
        if ('internal_value' in values) attr.internal = values.internal_value
        if ('external_value' in values) attr.external = values.external_value
        attr.known = true
      }
      for (const [adapterName, values] of Object.entries(delta.adapters ?? {})) {
        const adapter = inst.adapters.get(adapterName)
        if (!adapter) continue
        for (const [key, value] of Object.entries(values)) if (value !== undefined) adapter.stats[key] = value
        Object.assign(adapter, { state: values.state ?? adapter.state, port: values.port !== undefined ? values.port : adapter.port }, { known: true })
        if (typeof values.requests === 'number') adapter.requests = values.requests
        if (typeof values.errors === 'number') adapter.errors = values.errors
      }
      for (const [scenarioName, values] of Object.entries(delta.scenarios ?? {})) {
        const scenario = inst.scenarios.get(scenarioName) ?? { state: '', elapsed: 0, runs: 0 }
        if (values.state !== undefined) scenario.state = values.state
        if (values.elapsed !== undefined) scenario.elapsed = values.elapsed
        if (values.runs !== undefined) scenario.runs = values.runs
        inst.scenarios.set(scenarioName, scenario)
      }
    }
    for (const listener of this.#frameListeners) listener(frame)
  }

  /** Subscribes to structure events; returns the unsubscribe function. */
  onStructure(listener: Listener<StructureEvent>): () => void {
    this.#structureListeners.add(listener)
    return () => this.#structureListeners.delete(listener)
  }

  /** Subscribes to frames (after they are merged); returns the unsubscribe function. */
  onFrame(listener: Listener<FrameEvent>): () => void {
    this.#frameListeners.add(listener)
    return () => this.#frameListeners.delete(listener)
  }
}
