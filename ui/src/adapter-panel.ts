import { node, type ApiClient } from './api-client.ts'
import { h, setText } from './dom.ts'
import type { LiveAdapter } from './live-store.ts'
import type { Notices } from './notices.ts'
import { stateBadge, updateBadge } from './state-badge.ts'
import { busy } from './view.ts'

/** What the panel calls each kind of adapter (the node's `type`); another type is shown as it is. */
const KIND_TITLES: Record<string, string> = {
  ModbusSlave: 'Modbus TCP slave',
  MqttClient: 'MQTT client',
  OpcuaServer: 'OPC UA server',
}

/** What detach does, per kind, for the button's tooltip. */
const DETACH_HINTS: Record<string, string> = {
  ModbusSlave: 'Keep the port open but answer nothing',
  MqttClient: 'Drop the link to the broker without a goodbye (the broker sends the last will)',
  OpcuaServer: 'Answer BadNoCommunication to every read, write and call of this instance',
}

/** Settings shown once from the node document, when the adapter has them. */
const SETTING_FACTS: Array<[key: string, label: string]> = [
  ['host', 'Host'],
  ['unit_id', 'Unit id'],
  ['broker', 'Broker'],
  ['topic_prefix', 'Topic prefix'],
  ['namespace', 'Namespace'],
  ['security', 'Security'],
]

/** Stats entries with rows of their own at the top, or not shown as extra counters. */
const FIXED_STATS = new Set(['state', 'port', 'requests', 'errors', 'broker'])

/**
 * One protocol adapter of an instance, of any kind: where it listens or connects, its live state
 * and counters (requests and errors, then every counter of the protocol's own as the event stream
 * sends it: an MQTT client's connection and published/received/refused, an OPC UA server's
 * endpoint and sessions), and detach/attach and stop/start.
 *
 * @example
 * const panel = new AdapterPanel({ api, notices, instance: 'tank_sensor', adapter: live })
 * panel.update(live)
 */
export class AdapterPanel {
  readonly element: HTMLElement
  readonly #badge: HTMLElement
  readonly #port: HTMLElement
  readonly #requests: HTMLElement
  readonly #errors: HTMLElement
  readonly #subtitle: HTMLElement
  readonly #detach: HTMLButtonElement
  readonly #facts: HTMLElement
  readonly #settingRows: HTMLElement
  readonly #counterRows = new Map<string, HTMLElement>()

  constructor(opts: { api: ApiClient; notices: Notices; instance: string; adapter: LiveAdapter }) {
    const { api, notices, instance, adapter } = opts
    const path = node('instances', instance, 'communication', adapter.name)
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
    this.#subtitle = h('div', { class: 'muted small' }, 'Protocol adapter')
    this.#port = h('dd', { class: 'num' }, '–')
    this.#requests = h('dd', { class: 'num', 'data-counter': 'requests' }, '0')
    this.#errors = h('dd', { class: 'num', 'data-counter': 'errors' }, '0')
    this.#settingRows = h('div', { class: 'facts-group' })
    this.#detach = h('button', { class: 'btn btn-small', 'data-action': 'detach', title: 'Stop answering', onclick: method('detach') }, 'Detach')
    this.#facts = h(
      'dl',
      { class: 'facts' },
      this.#settingRows,
      h('dt', {}, 'Port'),
      this.#port,
      h('dt', {}, 'Requests'),
      this.#requests,
      h('dt', {}, 'Errors'),
      this.#errors,
    )
    this.element = h(
      'section',
      { class: 'panel adapter-panel', 'data-adapter': adapter.name },
      h(
        'header',
        { class: 'panel-header' },
        h('div', {}, h('h2', { class: 'panel-title' }, adapter.name), this.#subtitle),
        h('div', { class: 'toolbar' }, this.#badge),
      ),
      this.#facts,
      h(
        'div',
        { class: 'toolbar' },
        this.#detach,
        h('button', { class: 'btn btn-small', 'data-action': 'attach', onclick: method('attach') }, 'Attach'),
        h('button', { class: 'btn btn-small', 'data-action': 'adapter-stop', onclick: method('stop') }, 'Stop'),
        h('button', { class: 'btn btn-small', 'data-action': 'adapter-start', onclick: method('start') }, 'Start'),
      ),
    )
    this.update(adapter)
    void api.get<Record<string, unknown> & { type?: string; port?: number | null }>(path).then(
      (doc) => {
        const type = doc.type ?? ''
        setText(this.#subtitle, KIND_TITLES[type] ?? type)
        this.#detach.title = DETACH_HINTS[type] ?? 'Stop answering'
        for (const [key, label] of SETTING_FACTS) {
          const value = doc[key]
          if (value === undefined || value === null || value === '' || typeof value === 'object') continue
          this.#settingRows.append(h('dt', {}, label), h('dd', { 'data-setting': key }, String(value)))
        }
        if (!adapter.known) setText(this.#port, doc.port == null ? 'not listening' : String(doc.port))
      },
      (err: unknown) => notices.error(err, `Reading ${instance}.${adapter.name} failed`),
    )
  }

  update(adapter: LiveAdapter): void {
    if (!adapter.known) return
    updateBadge(this.#badge, adapter.state)
    setText(this.#port, adapter.port === null || adapter.port === undefined ? 'not listening' : String(adapter.port))
    setText(this.#requests, String(adapter.requests))
    setText(this.#errors, String(adapter.errors))
    this.#errors.classList.toggle('warn', adapter.errors > 0)
    for (const [key, value] of Object.entries(adapter.stats)) {
      if (FIXED_STATS.has(key)) continue
      let cell = this.#counterRows.get(key)
      if (!cell) {
        cell = h('dd', { class: typeof value === 'number' ? 'num' : '', 'data-counter': key }, '')
        this.#counterRows.set(key, cell)
        this.#facts.append(h('dt', {}, label(key)), cell)
      }
      setText(cell, value === null ? '–' : String(value))
      if (key === 'refused') cell.classList.toggle('warn', typeof value === 'number' && value > 0)
      if (key === 'connection') cell.classList.toggle('warn', value !== 'connected')
    }
  }
}

/** `published_total` -> 'Published total'. */
function label(key: string): string {
  const words = key.replace(/_/g, ' ')
  return words.charAt(0).toUpperCase() + words.slice(1)
}
