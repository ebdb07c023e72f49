import { ApiError, type ApiClient } from './api-client.ts'
import { h, replace, setText } from './dom.ts'
import type { Notices } from './notices.ts'
import { busy } from './view.ts'

/**
 * The counters of what the faults did (docs/modbus-faults.md, Counters), in the order the node
 * lists them: one per fault of the server's fault registry, each named `fault_...`.
 */
export function faultCounters(counters: Record<string, unknown>): string[] {
  return Object.keys(counters).filter(isFaultCounter)
}

/** Whether a counter of an adapter counts what its faults did. */
export function isFaultCounter(key: string): boolean {
  return key.startsWith('fault_')
}

const EXAMPLE = '{"exception": {"code": 6, "functions": [3]}, "clear_after": {"requests": 2}}'

/**
 * The faults of a Modbus adapter (docs/modbus-faults.md): the faults in force as JSON, an editor
 * that replaces them (a refused value shows the server's problems with their paths, and the
 * faults in force stay), Clear, and the fault counters. The counters and the faults in force
 * follow the event stream (`active_faults`, `faults_version`); the panel reads the `faults`
 * property again whenever the version moves (a script, a scenario or `clear_after` changes faults
 * too, also a detail of a fault already in force).
 *
 * @example
 * const faults = new FaultsPanel({ api, notices, instance: 'plc', adapter: 'modbus_slave', path, faults: doc.faults, counters: doc.counters })
 * faults.update(live.stats)
 */
export class FaultsPanel {
  readonly element: HTMLElement
  readonly #api: ApiClient
  readonly #path: string
  readonly #current: HTMLElement
  readonly #editor: HTMLTextAreaElement
  readonly #problems: HTMLElement
  readonly #counters = new Map<string, HTMLElement>()
  #version: number | undefined

  constructor(opts: {
    api: ApiClient
    notices: Notices
    instance: string
    adapter: string
    path: string
    faults: Record<string, unknown>
    counters: Record<string, unknown>
  }) {
    const { api, notices, instance, adapter } = opts
    this.#api = api
    this.#path = `${opts.path}/attr/faults`
    this.#current = h('pre', { class: 'faults-current mono small', 'data-cell': 'faults' })
    this.#editor = h('textarea', {
      class: 'input mono faults-editor',
      rows: 3,
      'aria-label': `New faults of ${instance}.${adapter}`,
      placeholder: EXAMPLE,
      spellcheck: false,
    })
    this.#problems = h('ul', { class: 'fault-problems', hidden: true, role: 'alert' })
    const counters = h('dl', { class: 'facts fault-counters' })
    for (const key of faultCounters(opts.counters)) {
      const cell = h('dd', { class: 'num', 'data-counter': key }, String(opts.counters[key] ?? 0))
      this.#counters.set(key, cell)
      counters.append(h('dt', {}, key.replace(/^fault_/, '').replaceAll('_', ' ')), cell)
    }
    const put = async (value: Record<string, unknown>, done: string, failed: string): Promise<boolean> => {
      try {
        const answer = await api.put<{ value?: Record<string, unknown> }>(this.#path, { value })
        this.#show(answer?.value ?? value)
        this.#showProblems([])
        notices.info(done)
        return true
      } catch (err) {
        if (err instanceof ApiError && err.status === 422) {
          this.#showProblems(err.details.length ? err.details : [{ path: '', message: err.message }])
        } else notices.error(err, failed)
        return false
      }
    }
    const set = (e: Event) =>
      busy(e, async () => {
        let value: unknown
        try {
          value = JSON.parse(this.#editor.value.trim() || '{}')
        } catch (err) {
          return this.#showProblems([{ path: '', message: `not JSON: ${(err as Error).message}` }])
        }
        if (value === null || typeof value !== 'object' || Array.isArray(value)) {
          return this.#showProblems([{ path: '', message: `the faults are a JSON object, e.g. ${EXAMPLE}` }])
        }
        await put(value as Record<string, unknown>, `${instance}.${adapter}: faults set`, `Setting the faults of ${instance}.${adapter} failed`)
      })
    const clear = (e: Event) =>
      busy(e, async () => {
        await put({}, `${instance}.${adapter}: faults cleared`, `Clearing the faults of ${instance}.${adapter} failed`)
      })
    this.element = h(
      'div',
      { class: 'faults-panel', 'data-faults': adapter },
      h('h3', { class: 'sub-heading' }, 'Faults'),
      h('div', { class: 'muted small' }, 'Misbehave on purpose: late answers, exceptions, silence, corrupt or split frames, dropped connections.'),
      this.#current,
      this.#editor,
      this.#problems,
      h(
        'div',
        { class: 'toolbar' },
        h('button', { class: 'btn btn-small btn-primary', 'data-action': 'faults-set', onclick: set }, 'Set faults'),
        h('button', { class: 'btn btn-small', 'data-action': 'faults-clear', onclick: clear }, 'Clear'),
        h(
          'button',
          {
            class: 'btn btn-small',
            'data-action': 'faults-edit',
            onclick: () => (this.#editor.value = this.#current.textContent === '{}' ? '' : (this.#current.textContent ?? '')),
          },
          'Edit current',
        ),
      ),
      counters,
    )
    this.#show(opts.faults)
  }

  /** Follows the stream's `faults_version` and `fault_*` counters. */
  update(stats: Record<string, string | number | boolean | null>): void {
    for (const [key, cell] of this.#counters) if (typeof stats[key] === 'number') setText(cell, String(stats[key]))
    const version = stats.faults_version
    if (typeof version !== 'number' || version === this.#version) return
    const first = this.#version === undefined
    this.#version = version
    // The first value only confirms what the panel read; later ones mean the faults changed.
    if (!first)
      void this.#api.get<{ value?: Record<string, unknown> }>(this.#path).then(
        (doc) => this.#show(doc?.value ?? {}),
        () => {},
      )
  }

  #show(faults: Record<string, unknown>): void {
    setText(this.#current, JSON.stringify(faults, null, 1).replace(/\n\s*/g, ' '))
    this.#current.dataset.active = String(Object.keys(faults).length > 0)
  }

  #showProblems(problems: Array<{ path: string; message: string }>): void {
    this.#problems.hidden = problems.length === 0
    replace(
      this.#problems,
      problems.map((p) => h('li', {}, p.path ? h('code', { class: 'problem-path' }, p.path) : null, p.path ? ': ' : '', p.message)),
    )
  }
}
