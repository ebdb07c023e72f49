import { ApiError, node, type ApiClient } from './api-client.ts'
import { h, replace, setText } from './dom.ts'
import type { LiveScenario } from './live-store.ts'
import type { Notices } from './notices.ts'
import { busy } from './view.ts'

/** A scenario node (`instances/<i>/scenarios/<s>`) as the API answers it. */
interface ScenarioDocument {
  name: string
  state?: string
  display_name?: string
  description?: string
  elapsed?: number
  runs?: number
  duration?: number
  period?: number
  run_limit?: number
  enabled?: boolean
}

/** The cells of one scenario's row that live values update. */
interface ScenarioRow {
  doc: ScenarioDocument
  state: HTMLElement
  elapsed: HTMLElement
  remaining: HTMLElement
  runs: HTMLElement
  row: HTMLElement
}

/** Seconds as the panel shows them: whole seconds plain, others with one decimal. */
function seconds(value: number): string {
  return `${Number.isInteger(value) ? value : value.toFixed(1)} s`
}

/**
 * The scenarios of a model-language instance (docs/model-language.md, Scenarios): each with its
 * display name and description, its state (idle, active, finished), the simulated time since it
 * started and, when it has a duration, the time left, its runs (of its run limit), and Start and
 * Stop. States and times come from the event stream; the panel stays hidden for an instance
 * whose model has no scenarios.
 *
 * @example
 * const panel = new ScenariosPanel({ api, notices, instance: 'meter_1' })
 * column.append(panel.element)
 * panel.update(store.instance('meter_1')!.scenarios)
 */
export class ScenariosPanel {
  readonly element: HTMLElement
  readonly #body: HTMLElement
  readonly #rows = new Map<string, ScenarioRow>()
  #live = new Map<string, LiveScenario>()

  constructor(opts: { api: ApiClient; notices: Notices; instance: string; present?: Promise<boolean> }) {
    const { api, notices, instance } = opts
    this.#body = h('div', {}, h('div', { class: 'empty' }, 'Loading…'))
    this.element = h(
      'section',
      { class: 'panel scenarios-panel', hidden: true, 'aria-label': `Scenarios of ${instance}` },
      h(
        'header',
        { class: 'panel-header' },
        h(
          'div',
          {},
          h('h2', { class: 'panel-title' }, 'Scenarios'),
          h('div', { class: 'muted small' }, 'Start puts the device in the situation; Stop (or its duration) puts every overridden value back.'),
        ),
      ),
      this.#body,
    )
    const path = node('instances', instance, 'scenarios')
    // Asked only when the instance lists the node (`present`): a request for a node that is not
    // there would put a 404 in the server's log for every page view.
    void Promise.resolve(opts.present ?? true)
      .then((present) => (present ? api.get<{ children?: Array<{ name: string }> }>(path) : { children: [] }))
      .then(
        async (doc) => {
          const names = (doc.children ?? []).map((c) => c.name)
          if (!names.length) return this.#settle('none')
          this.element.hidden = false
          try {
            const docs = await Promise.all(names.map((n) => api.get<ScenarioDocument>(`${path}/${encodeURIComponent(n)}`)))
            replace(this.#body, this.#table(api, notices, instance, path, docs))
            this.#settle('listed')
            this.update(this.#live)
          } catch (err) {
            replace(this.#body, h('div', { class: 'empty' }, `The scenarios of ${instance} could not be read.`))
            this.#settle('failed')
            notices.error(err, `Reading the scenarios of ${instance} failed`)
          }
        },
        (err: unknown) => {
          // No scenarios node: the instance's model has no scenarios.
          if (err instanceof ApiError && err.status === 404) return this.#settle('none')
          this.element.hidden = false
          replace(this.#body, h('div', { class: 'empty' }, `The scenarios of ${instance} could not be read.`))
          this.#settle('failed')
          notices.error(err, `Reading the scenarios of ${instance} failed`)
        },
      )
  }

  /** Shows the live states, times and runs (from the event stream). */
  update(live: Map<string, LiveScenario>): void {
    this.#live = live
    for (const [name, row] of this.#rows) {
      const now = live.get(name)
      const state = now?.state ?? row.doc.state ?? ''
      const elapsed = now?.elapsed ?? row.doc.elapsed ?? 0
      const runs = now?.runs ?? row.doc.runs ?? 0
      setText(row.state, state || '…')
      row.state.dataset.state = state
      row.row.dataset.state = state
      setText(row.elapsed, state === 'idle' && runs === 0 ? '–' : seconds(elapsed))
      const duration = row.doc.duration
      setText(
        row.remaining,
        duration === undefined ? 'until stopped' : state === 'active' ? seconds(Math.max(0, duration - elapsed)) : `${seconds(duration)} when started`,
      )
      setText(row.runs, row.doc.run_limit === undefined ? String(runs) : `${runs} of ${row.doc.run_limit}`)
    }
  }

  #settle(outcome: 'none' | 'listed' | 'failed'): void {
    this.element.dataset.loaded = outcome
  }

  #table(api: ApiClient, notices: Notices, instance: string, path: string, docs: ScenarioDocument[]): HTMLElement {
    this.#rows.clear()
    const rows = docs.map((doc) => {
      const call = (method: 'start' | 'stop') => (e: Event) =>
        busy(e, async () => {
          try {
            await api.call(`${path}/${encodeURIComponent(doc.name)}`, method)
            notices.info(`${instance}: scenario ${doc.name} ${method === 'start' ? 'started' : 'stopped'}`)
          } catch (err) {
            notices.error(err, `${method === 'start' ? 'Starting' : 'Stopping'} scenario ${doc.name} of ${instance} failed`)
          }
        })
      const state = h('span', { class: 'scenario-state' })
      const elapsed = h('td', { class: 'num', 'data-cell': 'elapsed' })
      const remaining = h('td', { class: 'num', 'data-cell': 'remaining' })
      const runs = h('td', { class: 'num', 'data-cell': 'runs' })
      const repeat = doc.period === undefined ? '' : ` · every ${seconds(doc.period)}`
      const row = h(
        'tr',
        { 'data-scenario': doc.name },
        h(
          'th',
          { scope: 'row' },
          h('div', {}, doc.display_name ?? doc.name),
          doc.display_name && doc.display_name !== doc.name ? h('div', { class: 'mono muted small' }, doc.name) : null,
          doc.description || repeat || doc.enabled
            ? h('div', { class: 'muted small' }, [doc.description ?? '', repeat, doc.enabled ? ' · starts with the instance' : ''].join('').replace(/^ · /, ''))
            : null,
        ),
        h('td', { 'data-cell': 'state' }, state),
        elapsed,
        remaining,
        runs,
        h(
          'td',
          { class: 'scenario-buttons' },
          h('button', { class: 'btn btn-small', 'data-action': 'scenario-start', onclick: call('start') }, 'Start'),
          h('button', { class: 'btn btn-small', 'data-action': 'scenario-stop', onclick: call('stop') }, 'Stop'),
        ),
      )
      this.#rows.set(doc.name, { doc, state, elapsed, remaining, runs, row })
      return row
    })
    return h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'table scenarios' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', {}, 'Scenario'),
            h('th', {}, 'State'),
            h('th', { class: 'num' }, 'Elapsed'),
            h('th', { class: 'num' }, 'Remaining'),
            h('th', { class: 'num' }, 'Runs'),
            h('th', {}, ''),
          ),
        ),
        h('tbody', {}, rows),
      ),
    )
  }
}
