/**
 * The live event stream `GET /api/v3/events` (docs/events.md): Server-Sent Events that carry the
 * structure of the system and, at a fixed rate, what changed since the last frame the client got.
 *
 * The system has no change notifications, and adding them would reach into every value write.
 * Sampling instead keeps the tree untouched and bounds the cost by the rate, not by how often
 * values change: a simulation stepping at 1 kHz costs a dashboard the same as one at 1 Hz. Each
 * client is diffed against the frame it last received, so a slow client that skipped frames gets
 * one cumulative frame instead of a backlog.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ServerResponse } from 'node:http'
import { nameProblem } from '../definition/names.js'
import { typed, typedJson } from '../values/encode.js'
import { ValidationError, type ErrorDetail } from '../errors.js'
import { LOG_LEVELS, type LogEntry, type LogLevelName } from '../logs/index.js'
import type { ProtocolWriteEvent } from '../protocols/trace.js'
import type { Instance } from '../system/instance.js'
import type { System } from '../system/system.js'
import { API_VERSION, SERVER_VERSION } from '../version.js'

/** Default frame rate, in frames per second. */
export const DEFAULT_EVENTS_HZ = 10
/** Frame rates a client may ask for with `?hz=`. */
export const EVENTS_HZ_RANGE = { min: 1, max: 50 } as const
/** Most `log` events one tick sends a stream; a stream further behind gets the newest ones. */
export const MAX_LOG_EVENTS_PER_TICK = 1000

/** Options of the event stream. */
export interface EventsOptions {
  /** Milliseconds between keep-alive comments on a quiet stream (proxies drop idle connections). */
  keepaliveMs?: number
}

/** What `registerEvents` hands back: a view of the open streams. */
export interface EventStreams {
  /** Number of streams currently open. */
  readonly open: number
}

/** One attribute in a `structure` event. */
export interface StructureAttribute {
  name: string
  type: string
  unit?: string
}

/** The `structure` event: the shape of the system, sent first and after every structural change. */
export interface StructureEvent {
  server_version: string
  api_version: string
  hz: number
  /** The `?instances=` filter, or null for all instances. */
  filter: string[] | null
  models: Array<{ name: string; instances: string[] }>
  instances: Array<{ name: string; model: string; attributes: StructureAttribute[]; adapters: string[]; methods: string[] }>
  connections: Array<{ name: string; from: string; to: string }>
}

/** The changed parts of one instance in a `frame` event. */
export interface InstanceDelta {
  state?: string
  last_error?: string | null
  attributes?: Record<string, { internal_value?: unknown; external_value?: unknown }>
  /** Each adapter's stats() entries that changed (state, requests, errors and the protocol's own). */
  adapters?: Record<
    string,
    { state?: string; port?: number | null; requests?: number; errors?: number; [counter: string]: string | number | boolean | null | undefined }
  >
  /** Each scenario's entries that changed (docs/model-language.md, Scenarios); absent for an instance without scenarios. */
  scenarios?: Record<string, ScenarioDelta>
}

/** A scenario in a frame: its state (idle, active, finished), the simulated seconds since its last start, how often it started. */
export interface ScenarioDelta {
  state?: string
  elapsed?: number
  runs?: number
}

/** The `frame` event: everything that changed since the previous frame of this stream. */
export interface FrameEvent {
  /** Server wall-clock time of the sample, milliseconds since the epoch. */
  t: number
  system?: { state?: string; steps?: number; time?: number }
  instances?: Record<string, InstanceDelta>
}

/** What a stream remembers of an instance: the encoded values it last sent. */
interface InstanceMemo {
  state: string
  lastError: string | null
  attributes: Map<string, [string, string]>
  adapters: Map<string, Record<string, string | number | boolean | null>>
  scenarios: Map<string, { state: string; elapsed: number; runs: number }>
}

/** One open stream. */
interface Stream {
  res: ServerResponse
  hz: number
  filter: Set<string> | null
  signature: string
  system: { state: string; steps: number; time: number } | null
  instances: Map<string, InstanceMemo>
  blocked: boolean
  lastWrite: number
  timer: NodeJS.Timeout
  /** `?logs=<level>`: log lines at that level or above are sent; absent, none. */
  logLevel: LogLevelName | null
  /** Sequence number of the last log record this stream has looked at. */
  logSeq: number
  /** Sequence number of the last `protocol.write` event this stream has looked at (docs/traces.md). */
  writeSeq: number
}

/**
 * Registers `GET /api/v3/events` on the app. Authentication is the app's own Bearer check on
 * `/api/` (the dashboard reads the stream with `fetch`, which can send the header). Open streams
 * are ended when the app closes, so `app.close()` never waits on a client.
 *
 * @example
 * const streams = registerEvents(app, system)
 * // curl -N -H 'Authorization: Bearer k' 'http://127.0.0.1:8000/api/v3/events?hz=5&instances=tank_sensor'
 * streams.open // 1 while that curl runs
 */
export function registerEvents(app: FastifyInstance, system: System, opts: EventsOptions = {}): EventStreams {
  const keepaliveMs = opts.keepaliveMs ?? 15_000
  const streams = new Set<Stream>()
  const ids = new WeakMap<object, number>()
  let nextId = 1
  const idOf = (obj: object): number => {
    let id = ids.get(obj)
    if (id === undefined) ids.set(obj, (id = nextId++))
    return id
  }

  const signatureOf = (): string => {
    // Object identities catch replacements under the same name (a snapshot load, a model PUT).
    const parts: string[] = []
    for (const m of system.models.all()) parts.push(`m${m.name}#${idOf(m)}`)
    // The attributes' revision counts additions and removals: one deleted and another added is a change too.
    for (const i of system.instances.all()) parts.push(`i${i.name}#${idOf(i)}:${i.attributes.revision}`)
    for (const c of system.connections.all()) parts.push(`c${c.name}#${idOf(c)}`)
    return parts.join('|')
  }

  const close = (stream: Stream, farewell?: string): void => {
    if (!streams.delete(stream)) return
    clearInterval(stream.timer)
    if (farewell !== undefined && !stream.res.destroyed) {
      stream.res.end(`event: close\ndata: ${JSON.stringify({ reason: farewell })}\n\n`)
    } else if (!stream.res.writableEnded) {
      stream.res.end()
    }
  }

  const send = (stream: Stream, text: string): void => {
    stream.lastWrite = Date.now()
    if (!stream.res.write(text)) {
      stream.blocked = true
      stream.res.once('drain', () => (stream.blocked = false))
    }
  }

  const tick = (stream: Stream): void => {
    if (stream.blocked || stream.res.destroyed) return
    try {
      const signature = signatureOf()
      if (signature !== stream.signature) {
        stream.signature = signature
        stream.instances.clear()
        stream.system = null
        send(stream, `event: structure\ndata: ${JSON.stringify(structureOf(system, stream))}\n\n`)
      }
      const frame = diffFrame(system, stream)
      if (frame) send(stream, `event: frame\ndata: ${typedJson(frame)}\n\n`)
      const lines = stream.logLevel ? newLogLines(system, stream) : []
      if (lines.length) send(stream, lines.map((entry) => `event: log\ndata: ${JSON.stringify(entry)}\n\n`).join(''))
      const writes = newWrites(system, stream)
      if (writes.length) send(stream, writes.map((event) => `event: protocol.write\ndata: ${typedJson(event)}\n\n`).join(''))
      if (!frame && !lines.length && !writes.length && Date.now() - stream.lastWrite >= keepaliveMs) send(stream, ': keep-alive\n\n')
    } catch (err) {
      app.log.warn({ err }, 'event stream sample failed')
    }
  }

  // No HEAD twin: a HEAD request would open a stream that sends nothing.
  app.get('/api/v3/events', { exposeHeadRoute: false }, async (req: FastifyRequest, reply: FastifyReply) => {
    const { hz, filter, logLevel } = parseQuery(req.query as Record<string, unknown>)
    reply.hijack()
    const res = reply.raw
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      'x-correlation-id': req.id,
    })
    res.write('retry: 3000\n\n')
    const stream: Stream = {
      res,
      hz,
      filter,
      signature: '',
      system: null,
      instances: new Map(),
      blocked: false,
      lastWrite: Date.now(),
      timer: setInterval(() => tick(stream), Math.round(1000 / hz)),
      logLevel,
      // Live lines only: what was logged before the stream opened is in the logs nodes.
      logSeq: system.services.logs.lastSeq,
      writeSeq: system.services.protocols.traffic.lastSeq,
    }
    streams.add(stream)
    res.on('close', () => close(stream))
    tick(stream)
  })

  // preClose runs before the HTTP server stops accepting: a streaming response would otherwise
  // keep server.close() waiting for ever.
  app.addHook('preClose', async () => {
    for (const stream of [...streams]) close(stream, 'server shutting down')
  })

  return {
    get open() {
      return streams.size
    },
  }
}

/** The log records a stream has not seen yet, at its level, of its instances; moves its mark on. */
function newLogLines(system: System, stream: Stream): LogEntry[] {
  const buffer = system.services.logs
  if (buffer.lastSeq === stream.logSeq) return []
  let lines = buffer.query({ afterSeq: stream.logSeq, minLevel: stream.logLevel ?? undefined })
  stream.logSeq = buffer.lastSeq
  const filter = stream.filter
  if (filter) lines = lines.filter((entry) => entry.instance !== undefined && filter.has(entry.instance))
  return lines.length > MAX_LOG_EVENTS_PER_TICK ? lines.slice(-MAX_LOG_EVENTS_PER_TICK) : lines
}

/** The `protocol.write` events a stream has not sent yet, of its instances; moves its mark on. */
function newWrites(system: System, stream: Stream): ProtocolWriteEvent[] {
  const journal = system.services.protocols.traffic
  if (journal.lastSeq === stream.writeSeq) return []
  const events = journal.after(stream.writeSeq, MAX_LOG_EVENTS_PER_TICK)
  stream.writeSeq = journal.lastSeq
  const filter = stream.filter
  return filter ? events.filter((event) => filter.has(event.instance)) : events
}

function parseQuery(query: Record<string, unknown>): { hz: number; filter: Set<string> | null; logLevel: LogLevelName | null } {
  const details: ErrorDetail[] = []
  let hz = DEFAULT_EVENTS_HZ
  if (query.hz !== undefined) {
    hz = Number(query.hz)
    if (typeof query.hz !== 'string' || !Number.isInteger(hz) || hz < EVENTS_HZ_RANGE.min || hz > EVENTS_HZ_RANGE.max) {
      details.push({ path: 'query.hz', message: `expected an integer from ${EVENTS_HZ_RANGE.min} to ${EVENTS_HZ_RANGE.max} (frames per second)` })
    }
  }
  let filter: Set<string> | null = null
  if (query.instances !== undefined) {
    if (typeof query.instances !== 'string') details.push({ path: 'query.instances', message: 'give the parameter once: instances=a,b' })
    else {
      filter = new Set(
        query.instances
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      )
      for (const name of filter) {
        const problem = nameProblem(name)
        if (problem) details.push({ path: 'query.instances', message: problem })
      }
    }
  }
  let logLevel: LogLevelName | null = null
  if (query.logs !== undefined) {
    if (typeof query.logs === 'string' && Object.hasOwn(LOG_LEVELS, query.logs)) logLevel = query.logs as LogLevelName
    else details.push({ path: 'query.logs', message: `expected one of ${Object.keys(LOG_LEVELS).join(', ')} (the lowest level of log lines to send)` })
  }
  if (details.length) throw new ValidationError(`Event stream: ${details.map((d) => d.message).join('; ')}`, details)
  return { hz, filter, logLevel }
}

function structureOf(system: System, stream: Stream): StructureEvent {
  return {
    server_version: SERVER_VERSION,
    api_version: API_VERSION,
    hz: stream.hz,
    filter: stream.filter ? [...stream.filter] : null,
    models: [...system.models.all()].map((m) => ({ name: m.name, instances: system.instancesOf(m.name).map((i) => i.name) })),
    instances: [...system.instances.all()].map((i) => ({
      name: i.name,
      model: i.model.name,
      attributes: [...i.attributes.all()].map((a) =>
        a.unit === undefined ? { name: a.name, type: a.valueType } : { name: a.name, type: a.valueType, unit: a.unit },
      ),
      adapters: i.communication.children().map((c) => c.name),
      methods: Object.keys(i.methods()),
    })),
    connections: [...system.connections.all()].map((c) => ({ name: c.name, from: c.from, to: c.to })),
  }
}

/** The frame for `stream`, or undefined when nothing changed; updates the stream's memory. */
function diffFrame(system: System, stream: Stream): FrameEvent | undefined {
  const frame: FrameEvent = { t: Date.now() }
  let changed = false
  const sys = { state: system.state, steps: Number(system.properties().steps), time: system.timer.time }
  const prevSys = stream.system
  if (!prevSys || prevSys.state !== sys.state || prevSys.steps !== sys.steps || prevSys.time !== sys.time) {
    frame.system = {}
    if (!prevSys || prevSys.state !== sys.state) frame.system.state = sys.state
    if (!prevSys || prevSys.steps !== sys.steps) frame.system.steps = sys.steps
    if (!prevSys || prevSys.time !== sys.time) frame.system.time = sys.time
    stream.system = sys
    changed = true
  }
  const instances: Record<string, InstanceDelta> = {}
  for (const instance of system.instances.all()) {
    const withValues = stream.filter === null || stream.filter.has(instance.name)
    const delta = diffInstance(instance, stream, withValues)
    if (delta) {
      instances[instance.name] = delta
      changed = true
    }
  }
  if (Object.keys(instances).length) frame.instances = instances
  return changed ? frame : undefined
}

function diffInstance(instance: Instance, stream: Stream, withValues: boolean): InstanceDelta | undefined {
  let memo = stream.instances.get(instance.name)
  const fresh = memo === undefined
  memo ??= { state: '', lastError: null, attributes: new Map(), adapters: new Map(), scenarios: new Map() }
  stream.instances.set(instance.name, memo)
  const delta: InstanceDelta = {}
  let changed = false
  if (fresh || memo.state !== instance.state) {
    delta.state = memo.state = instance.state
    changed = true
  }
  if (fresh || memo.lastError !== instance.lastError) {
    delta.last_error = memo.lastError = instance.lastError
    changed = true
  }
  if (!withValues) return changed ? delta : undefined

  for (const attr of instance.attributes.all()) {
    const internal = encode(attr.internalValue)
    const external = encode(attr.externalValue)
    const prev = memo.attributes.get(attr.name)
    if (prev && prev[0] === internal && prev[1] === external) continue
    const entry: { internal_value?: unknown; external_value?: unknown } = {}
    // Marked with the attribute's type: a float's 30 goes out as 30.0 (typedJson in tick).
    if (!prev || prev[0] !== internal) entry.internal_value = typed(attr.internalValue, attr.valueType)
    if (!prev || prev[1] !== external) entry.external_value = typed(attr.externalValue, attr.valueType)
    memo.attributes.set(attr.name, [internal, external])
    ;(delta.attributes ??= {})[attr.name] = entry
    changed = true
  }
  for (const node of instance.communication.adapters()) {
    const now = node.adapter.stats()
    const prev = memo.adapters.get(node.name)
    let entry: NonNullable<InstanceDelta['adapters']>[string] | undefined
    for (const [key, value] of Object.entries(now)) {
      if (prev && prev[key] === value) continue
      ;(entry ??= {})[key] = value
    }
    if (!entry) continue
    memo.adapters.set(node.name, now)
    ;(delta.adapters ??= {})[node.name] = entry
    changed = true
  }
  for (const node of instance.scenariosNode?.children() ?? []) {
    const props = node.properties()
    const now = { state: String(node.state), elapsed: Number(props.elapsed), runs: Number(props.runs) }
    const prev = memo.scenarios.get(node.name)
    const entry: ScenarioDelta = {}
    if (!prev || prev.state !== now.state) entry.state = now.state
    if (!prev || prev.elapsed !== now.elapsed) entry.elapsed = now.elapsed
    if (!prev || prev.runs !== now.runs) entry.runs = now.runs
    if (!Object.keys(entry).length) continue
    memo.scenarios.set(node.name, now)
    ;(delta.scenarios ??= {})[node.name] = entry
    changed = true
  }
  return changed ? delta : undefined
}

/** A comparable form of a value: primitives as themselves (-0 apart from 0: a float writes -0.0), structured values as JSON. */
function encode(value: unknown): string {
  if (value === 0 && 1 / value < 0) return 'p-0'
  if (value === null || typeof value !== 'object') return typeof value === 'string' ? `s${value}` : `p${String(value)}`
  return `j${typedJson(value)}`
}
