import { node, type ApiClient } from './api-client.ts'
import { h, setText } from './dom.ts'
import type { LiveAdapter } from './live-store.ts'
import type { Notices } from './notices.ts'
import { stateBadge, updateBadge } from './state-badge.ts'
import { busy } from './view.ts'

/**
 * One protocol adapter of an instance (a Modbus slave): where it listens, its live state and
 * request/error counters, and detach/attach (a detached slave keeps its port open but answers
 * nothing, so clients time out) and stop/start.
 *
 * @example
 * const panel = new AdapterPanel({ api, notices, instance: 'tank_sensor', adapter: live })
 * panel.update(live)
 */
export class AdapterPanel {
  readonly element: HTMLElement
  readonly #badge: HTMLElement
  readonly #port: HTMLElement
  readonly #host: HTMLElement
  readonly #unit: HTMLElement
  readonly #requests: HTMLElement
  readonly #errors: HTMLElement

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
    this.#host = h('dd', {}, '–')
    this.#port = h('dd', { class: 'num' }, '–')
    this.#unit = h('dd', { class: 'num' }, '–')
    this.#requests = h('dd', { class: 'num', 'data-counter': 'requests' }, '0')
    this.#errors = h('dd', { class: 'num', 'data-counter': 'errors' }, '0')
    this.element = h(
      'section',
      { class: 'panel adapter-panel', 'data-adapter': adapter.name },
      h(
        'header',
        { class: 'panel-header' },
        h('div', {}, h('h2', { class: 'panel-title' }, adapter.name), h('div', { class: 'muted small' }, 'Modbus TCP slave')),
        h('div', { class: 'toolbar' }, this.#badge),
      ),
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'Host'),
        this.#host,
        h('dt', {}, 'Port'),
        this.#port,
        h('dt', {}, 'Unit id'),
        this.#unit,
        h('dt', {}, 'Requests'),
        this.#requests,
        h('dt', {}, 'Errors'),
        this.#errors,
      ),
      h(
        'div',
        { class: 'toolbar' },
        h('button', { class: 'btn btn-small', 'data-action': 'detach', title: 'Keep the port open but answer nothing', onclick: method('detach') }, 'Detach'),
        h('button', { class: 'btn btn-small', 'data-action': 'attach', onclick: method('attach') }, 'Attach'),
        h('button', { class: 'btn btn-small', 'data-action': 'adapter-stop', onclick: method('stop') }, 'Stop'),
        h('button', { class: 'btn btn-small', 'data-action': 'adapter-start', onclick: method('start') }, 'Start'),
      ),
    )
    this.update(adapter)
    void api.get<{ host?: string; port?: number | null; unit_id?: number }>(path).then(
      (doc) => {
        setText(this.#host, doc.host ?? '–')
        setText(this.#unit, doc.unit_id === undefined ? '–' : String(doc.unit_id))
        if (!adapter.known) setText(this.#port, doc.port == null ? 'not listening' : String(doc.port))
      },
      (err: unknown) => notices.error(err, `Reading ${instance}.${adapter.name} failed`),
    )
  }

  update(adapter: LiveAdapter): void {
    if (!adapter.known) return
    updateBadge(this.#badge, adapter.state)
    setText(this.#port, adapter.port === null ? 'not listening' : String(adapter.port))
    setText(this.#requests, String(adapter.requests))
    setText(this.#errors, String(adapter.errors))
    this.#errors.classList.toggle('warn', adapter.errors > 0)
  }
}
