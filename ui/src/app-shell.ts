import { ApiClient } from './api-client.ts'
import { ConnectionsView } from './connections-view.ts'
import { DetailView } from './detail-view.ts'
import { h, replace, setText } from './dom.ts'
import { LiveStream, type StreamStatus } from './event-stream.ts'
import { InstanceForm } from './instance-form.ts'
import { InstanceView } from './instance-view.ts'
import { LiveStore } from './live-store.ts'
import { LogsView } from './logs-view.ts'
import { ModelEditor } from './model-editor.ts'
import type { Notices } from './notices.ts'
import { OverviewView } from './overview-view.ts'
import { SnapshotsView } from './snapshots-view.ts'
import { stateBadge, updateBadge } from './state-badge.ts'
import { TreeView } from './tree-view.ts'
import { TrendChart } from './trend-chart.ts'
import type { View } from './view.ts'

/** What the shell needs from the page. */
export interface AppShellOptions {
  key: string
  notices: Notices
  /** The server refused the key (or the user asked to change it). */
  onSignOut: (message?: string) => void
  /** The server has no product key: nothing to change, so no *Change key* button. */
  open?: boolean
}

/**
 * The signed-in page: header with the system's live state, the tree on the left, the current
 * view (chosen by the URL hash) and the trend below it. It owns the one event stream and asks
 * it for values of exactly the instances the view and the trend show.
 *
 * @example
 * const shell = new AppShell({ key, notices, onSignOut })
 * document.body.append(shell.element)
 */
export class AppShell {
  readonly element: HTMLElement
  readonly #api: ApiClient
  readonly #store = new LiveStore()
  readonly #notices: Notices
  readonly #stream: LiveStream
  readonly #chart: TrendChart
  readonly #tree: TreeView
  readonly #main: HTMLElement
  readonly #live: HTMLElement
  readonly #systemBadge: HTMLElement
  readonly #steps: HTMLElement
  readonly #version: HTMLElement
  readonly #onHash = (): void => this.#route()
  #view: View | undefined

  constructor(opts: AppShellOptions) {
    this.#api = new ApiClient(opts.key)
    this.#notices = opts.notices
    this.#chart = new TrendChart(this.#store)
    this.#tree = new TreeView(this.#store)
    this.#main = h('div', { class: 'view-slot' })
    this.#live = h('span', { class: 'live', 'data-status': 'connecting' }, 'connecting…')
    this.#systemBadge = stateBadge('')
    this.#steps = h('span', { class: 'num muted' })
    this.#version = h('span', { class: 'muted small' })
    this.element = h(
      'div',
      { class: 'shell' },
      h(
        'header',
        { class: 'topbar' },
        h('a', { class: 'brand', href: '#/' }, h('span', { class: 'brand-mark' }), 'Mimic'),
        this.#version,
        h('div', { class: 'topbar-system' }, h('span', { class: 'muted small' }, 'System'), this.#systemBadge, this.#steps),
        h(
          'div',
          { class: 'topbar-right' },
          this.#live,
          opts.open ? null : h('button', { class: 'btn btn-small btn-quiet', 'data-action': 'sign-out', onclick: () => opts.onSignOut() }, 'Change key'),
        ),
      ),
      this.#tree.element,
      h('main', { class: 'main' }, this.#main, this.#chart.element),
    )

    this.#stream = new LiveStream(this.#api, {
      structure: (event) => {
        setText(this.#version, `server ${event.server_version} · API ${event.api_version}`)
        this.#store.applyStructure(event)
      },
      frame: (frame) => {
        this.#store.applyFrame(frame)
        updateBadge(this.#systemBadge, this.#store.system.state)
        setText(this.#steps, `step ${this.#store.system.steps}`)
      },
      status: (status, detail) => this.#status(status, detail),
      refused: (err) => {
        if (err.status === 401) opts.onSignOut('The server no longer accepts this key. Enter it again.')
        else this.#notices.error(err, 'Live updates refused')
      },
    })
    this.#chart.onChange(() => this.#subscribe())
    window.addEventListener('hashchange', this.#onHash)
    this.#route()
  }

  /** Stops the stream and listeners (sign-out). */
  dispose(): void {
    window.removeEventListener('hashchange', this.#onHash)
    this.#view?.dispose()
    this.#stream.close()
  }

  #status(status: StreamStatus, detail?: string): void {
    this.#live.dataset.status = status
    const text = { connecting: 'connecting…', live: 'live', reconnecting: 'reconnecting…', stopped: 'offline' }[status]
    setText(this.#live, text)
    this.#live.title = detail ?? ''
  }

  #route(): void {
    const hash = location.hash || '#/'
    const [, kind = '', raw = ''] = /^#\/([a-z-]*)\/?(.*)$/.exec(hash) ?? []
    let name = ''
    try {
      name = decodeURIComponent(raw)
    } catch {
      name = raw
    }
    this.#view?.dispose()
    const common = { api: this.#api, store: this.#store, notices: this.#notices }
    switch (kind) {
      case 'instance':
        this.#view = new InstanceView({ ...common, chart: this.#chart, name })
        break
      case 'model':
      case 'connection':
        this.#view = new DetailView({ ...common, kind, name })
        break
      case 'new-model':
      case 'edit-model':
        this.#view = new ModelEditor({ ...common, name: kind === 'edit-model' ? name : '' })
        break
      case 'new-instance':
        this.#view = new InstanceForm({ ...common, model: name })
        break
      case 'connections':
      case 'new-connection':
        this.#view = new ConnectionsView({ ...common, open: kind === 'new-connection' })
        break
      case 'snapshots':
        this.#view = new SnapshotsView(common)
        break
      case 'logs':
        this.#view = new LogsView({ ...common, instance: name })
        break
      default:
        this.#view = new OverviewView(common)
    }
    replace(this.#main, this.#view.element)
    this.#tree.select(kind === 'logs' ? '#/logs' : kind === 'new-connection' ? '#/connections' : kind ? hash : '#/')
    this.#subscribe()
  }

  /** Asks the stream for the values of the instances on screen (states of all always come). */
  #subscribe(): void {
    const wanted = new Set([...(this.#view?.instances ?? []), ...this.#chart.instances])
    this.#stream.connect([...wanted])
  }
}
