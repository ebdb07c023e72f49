import { SYSTEM, type ApiClient } from './api-client.ts'
import { h, replace, setText } from './dom.ts'
import { formatValue } from './format.ts'
import type { LiveStore } from './live-store.ts'
import type { Notices } from './notices.ts'
import { stateBadge, updateBadge } from './state-badge.ts'
import { SystemFile } from './system-file.ts'
import { TimerControls } from './timer-controls.ts'
import { busy, type View } from './view.ts'

/**
 * The system as a whole: its state, steps and simulated time, the system-wide lifecycle buttons
 * (a system start steps every instance and applies the connections after each step), and every
 * instance with its live state and last error; the timer controls (step, rate, pause); and what
 * builds the system: New model, New instance, New connection, Export system and Import system.
 *
 * @example
 * const view = new OverviewView({ api, store, notices })
 */
export class OverviewView implements View {
  readonly element: HTMLElement
  readonly #store: LiveStore
  readonly #badge: HTMLElement
  readonly #steps: HTMLElement
  readonly #time: HTMLElement
  readonly #table: HTMLElement
  readonly #rows = new Map<string, { badge: HTMLElement; error: HTMLElement }>()
  readonly #unsubscribe: Array<() => unknown>
  readonly #timer: TimerControls

  constructor(opts: { api: ApiClient; store: LiveStore; notices: Notices }) {
    const { api, store, notices } = opts
    this.#store = store
    this.#badge = stateBadge(store.system.state)
    this.#steps = h('dd', { class: 'num' }, '–')
    this.#time = h('dd', { class: 'num' }, '–')
    this.#table = h('div', { class: 'table-wrap' })
    this.#timer = new TimerControls({ api, notices })
    const io = new SystemFile({ api, notices })
    const go = (hash: string, label: string, action: string) =>
      h('button', { class: 'btn', 'data-action': action, onclick: () => (location.hash = hash) }, label)
    const button = (method: string, label: string, extra = '') =>
      h(
        'button',
        {
          class: `btn ${extra}`,
          'data-system-method': method,
          onclick: (e: Event) =>
            busy(e, async () => {
              try {
                await api.call(SYSTEM, method)
                notices.info(`System: ${method} done`)
              } catch (err) {
                notices.error(err, `System ${method} failed`)
              }
            }),
        },
        label,
      )
    this.element = h(
      'div',
      { class: 'view overview-view' },
      h(
        'section',
        { class: 'panel' },
        h(
          'header',
          { class: 'panel-header' },
          h(
            'div',
            {},
            h('h1', { class: 'view-title' }, 'System'),
            h('div', { class: 'muted' }, 'All instances, stepped together; connections are applied after every step.'),
          ),
          this.#badge,
          h(
            'div',
            { class: 'toolbar' },
            button('prepare', 'Prepare all'),
            button('run', 'Step once'),
            button('start', 'Start all', 'btn-primary'),
            button('stop', 'Stop all'),
            button('reset', 'Reset all'),
          ),
        ),
        h('dl', { class: 'facts facts-row' }, h('dt', {}, 'System steps'), this.#steps, h('dt', {}, 'Simulated time'), this.#time),
        this.#timer.element,
      ),
      h(
        'section',
        { class: 'panel build-panel', 'aria-label': 'Build' },
        h(
          'header',
          { class: 'panel-header' },
          h(
            'div',
            {},
            h('h2', { class: 'panel-title' }, 'Build'),
            h('div', { class: 'muted small' }, 'Models, instances and connections; the system as one file.'),
          ),
          h(
            'div',
            { class: 'toolbar' },
            go('#/new-model', 'New model', 'new-model'),
            go('#/new-instance', 'New instance', 'new-instance'),
            go('#/new-connection', 'New connection', 'new-connection'),
            io.exportButton,
            io.importButton,
          ),
        ),
      ),
      io.panel,
      h('section', { class: 'panel' }, h('header', { class: 'panel-header' }, h('h2', { class: 'panel-title' }, 'Instances')), this.#table),
    )
    this.#unsubscribe = [store.onStructure(() => this.#render()), store.onFrame(() => this.#update()), () => this.#timer.dispose()]
    this.#render()
  }

  get instances(): string[] {
    return []
  }

  dispose(): void {
    for (const off of this.#unsubscribe) off()
  }

  #render(): void {
    this.#rows.clear()
    const instances = [...this.#store.instances.values()]
    if (!instances.length) {
      replace(
        this.#table,
        h(
          'div',
          { class: 'empty' },
          this.#store.structure ? 'The system has no instances. Create one with New instance, import a system file, or load a snapshot.' : 'Loading…',
        ),
      )
      return
    }
    replace(
      this.#table,
      h(
        'table',
        { class: 'table' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Instance'), h('th', {}, 'Model'), h('th', {}, 'State'), h('th', {}, 'Last error'))),
        h(
          'tbody',
          {},
          instances.map((i) => {
            const badge = stateBadge(i.state)
            const error = h('td', { class: 'error-text' }, i.lastError ?? '')
            this.#rows.set(i.name, { badge, error })
            return h(
              'tr',
              {},
              h('th', { scope: 'row' }, h('a', { href: `#/instance/${encodeURIComponent(i.name)}` }, i.name)),
              h('td', { class: 'muted' }, i.model),
              h('td', {}, badge),
              error,
            )
          }),
        ),
      ),
    )
    this.#update()
  }

  #update(): void {
    const sys = this.#store.system
    updateBadge(this.#badge, sys.state)
    setText(this.#steps, formatValue(sys.steps))
    setText(this.#time, `${formatValue(sys.time)} s`)
    for (const [name, row] of this.#rows) {
      const inst = this.#store.instance(name)
      if (!inst) continue
      updateBadge(row.badge, inst.state)
      setText(row.error, inst.lastError ?? '')
    }
  }
}
