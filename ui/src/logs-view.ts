import { node, type ApiClient } from './api-client.ts'
import { h, replace, setText } from './dom.ts'
import type { LiveStore } from './live-store.ts'
import type { Notices } from './notices.ts'
import { busy, type View } from './view.ts'

/** One record as a `logs` node's `tail` answers it (docs/logs.md). */
interface LogEntry {
  seq: number
  time: string
  level: string
  msg: string
  instance?: string
  correlation_id?: string
  [field: string]: unknown
}

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const

/** Records kept on the page; older ones are dropped from the top as new ones come. */
const MAX_ROWS = 2000
/** How often follow mode asks for new records. */
const FOLLOW_MS = 1000

/** Fields shown by name and place, not again in the details column. */
const SHOWN = new Set(['seq', 'time', 'level', 'msg', 'instance', 'correlation_id', 'worker', 'worker_pid', 'component', 'event', 'action'])

/**
 * The Logs panel: the server's recent log records (all, or one instance's), filtered by level and
 * text, with follow mode (new records appended every second, scrolled into view) and Clear (empties
 * the view of that `logs` node on the server). Route `#/logs` or `#/logs/<instance>`.
 *
 * @example
 * const view = new LogsView({ api, store, notices, instance: 'tank_sensor' })
 */
export class LogsView implements View {
  readonly element: HTMLElement
  readonly instances: string[] = []
  readonly #api: ApiClient
  readonly #notices: Notices
  readonly #rows: HTMLElement
  readonly #count: HTMLElement
  readonly #level: HTMLSelectElement
  readonly #contains: HTMLInputElement
  readonly #follow: HTMLInputElement
  readonly #path: string
  #cursor = 0
  #timer: number | undefined
  #disposed = false
  #loading: Promise<void> | undefined

  constructor(opts: { api: ApiClient; store: LiveStore; notices: Notices; instance: string }) {
    this.#api = opts.api
    this.#notices = opts.notices
    this.#path = opts.instance ? node('instances', opts.instance, 'logs') : node('logs')
    const scope = h(
      'select',
      {
        class: 'input',
        name: 'instance',
        'aria-label': 'Instance',
        onchange: (e: Event) =>
          (location.hash = (e.currentTarget as HTMLSelectElement).value
            ? `#/logs/${encodeURIComponent((e.currentTarget as HTMLSelectElement).value)}`
            : '#/logs'),
      },
      h('option', { value: '' }, 'All records'),
      (opts.store.structure?.instances ?? []).map((i) => h('option', { value: i.name, selected: i.name === opts.instance }, i.name)),
    )
    if (opts.instance && !(opts.store.structure?.instances ?? []).some((i) => i.name === opts.instance)) {
      scope.append(h('option', { value: opts.instance, selected: true }, opts.instance))
    }
    this.#level = h(
      'select',
      { class: 'input', name: 'level', 'aria-label': 'Lowest level', onchange: () => void this.reload() },
      LEVELS.map((l) => h('option', { value: l, selected: l === 'info' }, l)),
    )
    this.#contains = h('input', { class: 'input', name: 'contains', placeholder: 'text or correlation id', 'aria-label': 'Contains' })
    this.#contains.addEventListener('change', () => void this.reload())
    this.#follow = h('input', { type: 'checkbox', name: 'follow', checked: true, onchange: () => this.#schedule() })
    this.#rows = h('tbody', {})
    this.#count = h('span', { class: 'muted small' })
    this.element = h(
      'div',
      { class: 'view logs-view' },
      h(
        'section',
        { class: 'panel' },
        h(
          'header',
          { class: 'panel-header' },
          h('h1', { class: 'view-title' }, opts.instance ? `Logs of ${opts.instance}` : 'Logs'),
          h('span', { class: 'muted' }, 'Recent log records of the server: Python output, faults with their correlation ids, warnings.'),
        ),
        h(
          'div',
          { class: 'logs-controls' },
          h('label', { class: 'field' }, h('span', {}, 'Scope'), scope),
          h('label', { class: 'field' }, h('span', {}, 'Level'), this.#level),
          h('label', { class: 'field field-wide' }, h('span', {}, 'Contains'), this.#contains),
          h('label', { class: 'check' }, this.#follow, ' Follow'),
          h('button', { class: 'btn', 'data-action': 'reload-logs', onclick: (e: Event) => busy(e, () => this.reload()) }, 'Reload'),
          h('button', { class: 'btn btn-quiet', 'data-action': 'clear-logs', onclick: (e: Event) => busy(e, () => this.#clear()) }, 'Clear'),
          this.#count,
        ),
        h(
          'div',
          { class: 'logs-scroll' },
          h(
            'table',
            { class: 'table logs-table' },
            h('thead', {}, h('tr', {}, h('th', {}, 'Time'), h('th', {}, 'Level'), h('th', {}, 'Instance'), h('th', {}, 'Message'), h('th', {}, 'Details'))),
            this.#rows,
          ),
        ),
      ),
    )
    void this.reload()
  }

  dispose(): void {
    this.#disposed = true
    window.clearTimeout(this.#timer)
  }

  /** Loads the newest records that match the filters again. */
  async reload(): Promise<void> {
    this.#cursor = 0
    replace(this.#rows)
    await this.#fetch(200)
  }

  async #fetch(limit: number): Promise<void> {
    // One request at a time: a reload while following waits for the poll in flight.
    while (this.#loading) await this.#loading
    const task = (async () => {
      const kwargs: Record<string, unknown> = { limit, level: this.#level.value }
      if (this.#contains.value.trim()) kwargs.contains = this.#contains.value.trim()
      if (this.#cursor > 0) kwargs.since = this.#cursor
      try {
        const entries = await this.#api.call<LogEntry[]>(this.#path, 'tail', kwargs)
        if (this.#disposed) return
        this.#append(entries)
      } catch (err) {
        this.#notices.error(err, 'Reading the logs failed')
        this.#follow.checked = false
      }
    })()
    this.#loading = task
    try {
      await task
    } finally {
      this.#loading = undefined
      this.#schedule()
    }
  }

  #append(entries: LogEntry[]): void {
    if (entries.length) this.#cursor = entries[entries.length - 1]!.seq
    const scroller = this.#rows.closest('.logs-scroll')
    const atBottom = !scroller || scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 40
    if (entries.length) this.#rows.querySelector('.empty-row')?.remove()
    for (const entry of entries) this.#rows.append(row(entry))
    while (this.#rows.childElementCount > MAX_ROWS) this.#rows.firstElementChild?.remove()
    const shown = this.#rows.querySelectorAll('.log-row').length
    setText(this.#count, `${shown} record${shown === 1 ? '' : 's'}`)
    if (shown === 0 && !this.#rows.querySelector('.empty-row')) {
      this.#rows.append(h('tr', { class: 'empty-row' }, h('td', { colspan: 5, class: 'empty' }, 'No records match')))
    }
    if (entries.length && atBottom && this.#follow.checked && scroller) scroller.scrollTop = scroller.scrollHeight
  }

  #schedule(): void {
    window.clearTimeout(this.#timer)
    if (this.#disposed || !this.#follow.checked) return
    this.#timer = window.setTimeout(() => void this.#fetch(1000), FOLLOW_MS)
  }

  async #clear(): Promise<void> {
    try {
      const { cleared } = await this.#api.call<{ cleared: number }>(this.#path, 'clear')
      this.#notices.info(`Cleared ${cleared} record${cleared === 1 ? '' : 's'} from this view`)
      await this.reload()
    } catch (err) {
      this.#notices.error(err, 'Clearing the logs failed')
    }
  }
}

function row(entry: LogEntry): HTMLElement {
  const details = Object.entries(entry)
    .filter(([key, value]) => !SHOWN.has(key) && value !== undefined)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
  if (entry.correlation_id) details.unshift(`correlation id ${entry.correlation_id}`)
  return h(
    'tr',
    { class: `log-row log-${entry.level}`, 'data-seq': entry.seq },
    h('td', { class: 'num small' }, entry.time.replace('T', ' ').replace('Z', '')),
    h('td', {}, h('span', { class: `log-level log-level-${entry.level}` }, entry.level)),
    h('td', {}, entry.instance ?? ''),
    h('td', { class: 'log-msg' }, entry.msg),
    h('td', { class: 'log-details small muted' }, details.join('  ')),
  )
}
