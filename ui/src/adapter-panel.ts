import { node, type ApiClient } from './api-client.ts'
import { h, setText } from './dom.ts'
import { FaultsPanel, isFaultCounter } from './faults-panel.ts'
import type { LiveAdapter } from './live-store.ts'
import type { Notices } from './notices.ts'
import { stateBadge, updateBadge } from './state-badge.ts'
import { busy } from './view.ts'

/** What the panel reads from the adapter node once (and its latest exchanges when it has them). */
interface AdapterDocument {
  type?: string
  host?: string | null
  port?: number | null
  unit_id?: number
  transport?: string
  /** A serial line's settings (`modbus_slave`, `ascii` on `transport: serial`). */
  serial?: { device?: string }
  device?: string
  /** An OCPP adapter's role: a `charge_point` is a client of its central system. */
  role?: string
  endpoint?: string | null
  recent?: Array<{ at: string; client: string; command: string; reply: string | null }>
  /** Entries the adapter's traffic trace keeps (docs/traces.md); its `tail` is shown when there is no `recent`. */
  trace_size?: number
  /** Every property, objects included: a Modbus adapter's `faults` and `counters` are only here (docs/modbus-faults.md). */
  attr?: Record<string, { value?: unknown }>
}

/** Stream entries shown in their own places rather than as protocol counters. */
/** Adapter node types that are clients of a server elsewhere: they hold no port of their own. */
const CLIENT_TYPES = new Set(['MqttClient', 'ModbusMaster', 'KnxDevice'])

/**
 * What the Port row shows for an adapter that holds no port of its own: the serial line it
 * answers on, or the server it is a client of (an MQTT broker, a polled Modbus device, a KNX
 * tunnelling server, an OCPP central system). Undefined for a listener.
 *
 * @example
 * servedWhere({ type: 'ModbusSlave', transport: 'serial', serial: { device: '/dev/ttyUSB0' } }) // { term: 'Line', text: '/dev/ttyUSB0' }
 * servedWhere({ type: 'KnxDevice', host: '127.0.0.1', port: 3671 }) // { term: 'Server', text: '127.0.0.1:3671' }
 */
export function servedWhere(doc: AdapterDocument): { term: string; text: string } | undefined {
  if (doc.transport === 'serial') return { term: 'Line', text: doc.serial?.device ?? doc.device ?? 'serial line' }
  const client = CLIENT_TYPES.has(doc.type ?? '') || (doc.type === 'OcppAdapter' && doc.role === 'charge_point')
  if (!client) return undefined
  if (doc.endpoint) return { term: 'Server', text: doc.endpoint }
  return { term: 'Server', text: doc.host && doc.port != null ? `${doc.host}:${doc.port}` : 'not set' }
}

const SHOWN_APART = new Set(['name', 'state', 'port', 'requests', 'errors', 'known', 'transport', 'active_faults', 'faults_version'])
/** One entry of an adapter's traffic trace, as `tail` gives it (docs/traces.md). */
interface TraceEntry {
  seq: number
  time: string
  operation: string
  latency?: number
  error?: string
  attributes?: Record<string, unknown>
  [field: string]: unknown
}
/** Trace entries the panel shows. */
const TRACE_ROWS = 15
/** The latest exchanges are fetched at most this often while requests come in. */
const RECENT_REFRESH_MS = 1000

/**
 * One protocol adapter of an instance, whatever its kind: where it listens, its live state, its
 * request and error counters and whatever other counters the protocol reports (a text instrument's
 * queries and clients, say), the faults of a Modbus adapter (see FaultsPanel), the latest
 * commands and replies when the adapter keeps them, and
 * detach/attach (a detached adapter keeps its port open but answers nothing, so clients time out)
 * and stop/start.
 *
 * @example
 * const panel = new AdapterPanel({ api, notices, instance: 'tank_sensor', adapter: live })
 * panel.update(live)
 */
export class AdapterPanel {
  readonly element: HTMLElement
  readonly #api: ApiClient
  readonly #path: string
  readonly #badge: HTMLElement
  readonly #kind: HTMLElement
  readonly #port: HTMLElement
  readonly #portTerm: HTMLElement
  /** What the Port row shows for an adapter without a port of its own (servedWhere), once its document is read. */
  #servedAt: string | undefined
  readonly #host: HTMLElement
  readonly #unitTerm: HTMLElement
  readonly #unit: HTMLElement
  readonly #requests: HTMLElement
  readonly #errors: HTMLElement
  readonly #facts: HTMLElement
  readonly #counters = new Map<string, HTMLElement>()
  readonly #recent: HTMLElement
  #faults: FaultsPanel | null = null
  #lastStats: Record<string, string | number | boolean | null> = {}
  #hasRecent = false
  /** Shows the traffic trace's newest entries (`tail`) in the place of `recent`. */
  #hasTrace = false
  #lastRequests = -1
  #recentTimer: ReturnType<typeof setTimeout> | null = null
  #lastRecentFetch = 0

  constructor(opts: { api: ApiClient; notices: Notices; instance: string; adapter: LiveAdapter }) {
    const { api, notices, instance, adapter } = opts
    this.#api = api
    const path = (this.#path = node('instances', instance, 'communication', adapter.name))
    const method = (m: string) => (e: Event) =>
      busy(e, async () => {
        try {
          await api.call(path, m)
          notices.info(`${instance}.${adapter.name}: ${m} done`)
        } catch (err) {
          notices.error(err, `${m} on ${instance}.${adapter.name} failed`)
        }
      })
    this.#badge = stateBadge(adapter.state)
    this.#kind = h('div', { class: 'muted small' }, 'Protocol adapter')
    this.#host = h('dd', {}, '–')
    this.#port = h('dd', { class: 'num' }, '–')
    this.#portTerm = h('dt', {}, 'Port')
    this.#unitTerm = h('dt', { hidden: true }, 'Unit id')
    this.#unit = h('dd', { class: 'num', hidden: true }, '–')
    this.#requests = h('dd', { class: 'num', 'data-counter': 'requests' }, '0')
    this.#errors = h('dd', { class: 'num', 'data-counter': 'errors' }, '0')
    this.#facts = h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'Host'),
      this.#host,
      this.#portTerm,
      this.#port,
      this.#unitTerm,
      this.#unit,
      h('dt', {}, 'Requests'),
      this.#requests,
      h('dt', {}, 'Errors'),
      this.#errors,
    )
    this.#recent = h('div', { class: 'table-wrap adapter-recent', hidden: true })
    this.element = h(
      'section',
      { class: 'panel adapter-panel', 'data-adapter': adapter.name },
      h(
        'header',
        { class: 'panel-header' },
        h('div', {}, h('h2', { class: 'panel-title' }, adapter.name), this.#kind),
        h('div', { class: 'toolbar' }, this.#badge),
      ),
      this.#facts,
      h(
        'div',
        { class: 'toolbar' },
        h('button', { class: 'btn btn-small', 'data-action': 'detach', title: 'Keep the port open but answer nothing', onclick: method('detach') }, 'Detach'),
        h('button', { class: 'btn btn-small', 'data-action': 'attach', onclick: method('attach') }, 'Attach'),
        h('button', { class: 'btn btn-small', 'data-action': 'adapter-stop', onclick: method('stop') }, 'Stop'),
        h('button', { class: 'btn btn-small', 'data-action': 'adapter-start', onclick: method('start') }, 'Start'),
      ),
      this.#recent,
    )
    this.update(adapter)
    void api.get<AdapterDocument>(path).then(
      (doc) => {
        setText(this.#kind, [doc.type ?? 'Protocol adapter', doc.transport?.toUpperCase()].filter(Boolean).join(' · '))
        setText(this.#host, doc.host ?? '–')
        if (doc.unit_id !== undefined) {
          this.#unitTerm.hidden = false
          this.#unit.hidden = false
          setText(this.#unit, String(doc.unit_id))
        }
        const where = servedWhere(doc)
        if (where) {
          setText(this.#portTerm, where.term)
          this.#servedAt = where.text
          setText(this.#port, where.text)
        } else if (!adapter.known) setText(this.#port, doc.port == null ? 'not listening' : String(doc.port))
        const faults = doc.attr?.faults?.value
        if (faults !== null && typeof faults === 'object' && !Array.isArray(faults)) {
          const counters = (doc.attr?.counters?.value ?? {}) as Record<string, unknown>
          this.#faults = new FaultsPanel({ api, notices, instance, adapter: adapter.name, path, faults: faults as Record<string, unknown>, counters })
          this.#faults.update(this.#lastStats)
          this.#recent.before(this.#faults.element)
        }
        if (Array.isArray(doc.recent)) {
          this.#hasRecent = true
          this.#recent.hidden = false
          this.#showRecent(doc.recent)
        } else if (typeof doc.trace_size === 'number' && doc.trace_size > 0) {
          this.#hasTrace = true
          this.#recent.hidden = false
          this.#showTrace([])
          this.#scheduleRecent()
        }
      },
      (err: unknown) => notices.error(err, `Reading ${instance}.${adapter.name} failed`),
    )
  }

  update(adapter: LiveAdapter): void {
    if (!adapter.known) return
    this.#lastStats = adapter.stats
    this.#faults?.update(adapter.stats)
    updateBadge(this.#badge, adapter.state)
    setText(this.#port, this.#servedAt ?? (adapter.port === null ? 'not listening' : String(adapter.port)))
    setText(this.#requests, String(adapter.requests))
    setText(this.#errors, String(adapter.errors))
    this.#errors.classList.toggle('warn', adapter.errors > 0)
    for (const [key, value] of Object.entries(adapter.stats)) {
      if (SHOWN_APART.has(key) || isFaultCounter(key) || typeof value === 'object') continue
      let cell = this.#counters.get(key)
      if (cell === undefined) {
        cell = h('dd', { class: typeof value === 'number' ? 'num' : '', 'data-counter': key })
        this.#counters.set(key, cell)
        this.#facts.append(
          h(
            'dt',
            {},
            key.replaceAll('_', ' ').replace(/^./, (c) => c.toUpperCase()),
          ),
          cell,
        )
      }
      setText(cell, String(value))
    }
    if ((this.#hasRecent || this.#hasTrace) && adapter.requests !== this.#lastRequests) {
      this.#lastRequests = adapter.requests
      this.#scheduleRecent()
    }
  }

  /** Fetches the latest exchanges, at most once a second however fast requests come. */
  #scheduleRecent(): void {
    if (this.#recentTimer !== null) return
    const wait = Math.max(0, this.#lastRecentFetch + RECENT_REFRESH_MS - Date.now())
    this.#recentTimer = setTimeout(() => {
      this.#lastRecentFetch = Date.now()
      if (this.#hasTrace) {
        void this.#api.call<TraceEntry[]>(this.#path, 'tail', { limit: TRACE_ROWS }).then(
          (entries) => {
            this.#recentTimer = null
            this.#showTrace(entries)
          },
          () => (this.#recentTimer = null),
        )
        return
      }
      void this.#api.get<AdapterDocument>(this.#path).then(
        (doc) => {
          this.#recentTimer = null
          if (Array.isArray(doc.recent)) this.#showRecent(doc.recent)
        },
        () => (this.#recentTimer = null),
      )
    }, wait)
  }

  /** The trace's newest entries, newest first: time, operation, and what else the protocol gave (Modbus function, address, values). */
  #showTrace(entries: TraceEntry[]): void {
    const rows = [...entries].reverse().map((e) => {
      const { seq: _seq, time, operation, latency, error, attributes, ...rest } = e
      const detail = Object.entries(rest)
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
        .join(' ')
      return h(
        'tr',
        {},
        h('td', { class: 'muted small' }, time.slice(11, 23)),
        h('td', {}, operation),
        h('td', {}, h('code', {}, detail), attributes ? h('div', { class: 'muted small' }, `set ${JSON.stringify(attributes)}`) : ''),
        h('td', { class: error ? 'warn' : 'muted small' }, error ?? (typeof latency === 'number' ? `${(latency * 1000).toFixed(2)} ms` : '')),
      )
    })
    this.#recent.replaceChildren(
      h(
        'table',
        { class: 'table', 'data-trace': '' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Time'), h('th', {}, 'Operation'), h('th', {}, 'Request'), h('th', {}, 'Answer'))),
        h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No traffic yet.'))),
      ),
    )
  }

  #showRecent(recent: NonNullable<AdapterDocument['recent']>): void {
    const rows = [...recent]
      .reverse()
      .map((e) =>
        h(
          'tr',
          {},
          h('td', { class: 'muted small' }, e.at.slice(11, 23)),
          h('td', { class: 'muted small' }, e.client),
          h('td', {}, h('code', {}, e.command)),
          h('td', {}, e.reply === null ? h('span', { class: 'muted' }, '(no reply)') : h('code', {}, e.reply)),
        ),
      )
    this.#recent.replaceChildren(
      h(
        'table',
        { class: 'table' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Time'), h('th', {}, 'Client'), h('th', {}, 'Command'), h('th', {}, 'Reply'))),
        h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No commands yet.'))),
      ),
    )
  }
}
