import { ApiError, node, type ApiClient } from './api-client.ts'
import { h, replace, setText } from './dom.ts'
import type { Notices } from './notices.ts'

/** An action node of an instance (`instances/<i>/actions/<name>`) as the API answers it. */
interface ActionDocument {
  name: string
  kind: string
  enabled: boolean
  targets: string[]
  model_path: string
  description?: string
}

/**
 * The actions of a model-language instance, in model order: name and description, kind, the
 * references each writes, where it is in the model, and a switch for its `enabled` property. A
 * disabled action is skipped by every step until it is enabled again. The panel stays hidden for
 * an instance without actions (a Python-backed model, say).
 *
 * @example
 * const panel = new ActionsPanel({ api, notices, instance: 'tank_1', model: 'tank' })
 * column.append(panel.element)
 */
export class ActionsPanel {
  readonly element: HTMLElement
  readonly #body: HTMLElement
  readonly #count: HTMLElement

  constructor(opts: { api: ApiClient; notices: Notices; instance: string; model: string; present?: Promise<boolean> }) {
    const { api, notices, instance, model } = opts
    this.#body = h('div', {}, h('div', { class: 'empty' }, 'Loading…'))
    this.#count = h('span', { class: 'muted small' })
    this.element = h(
      'section',
      { class: 'panel actions-panel', hidden: true, 'aria-label': `Actions of ${instance}` },
      h(
        'header',
        { class: 'panel-header' },
        h(
          'div',
          {},
          h('h2', { class: 'panel-title' }, 'Actions ', this.#count),
          h('div', { class: 'muted small' }, 'Run in this order every step; a disabled action is skipped.'),
        ),
        h('a', { class: 'header-link small', href: `#/model/${encodeURIComponent(model)}`, 'data-action': 'model-actions' }, 'as written in the model'),
      ),
      this.#body,
    )
    const path = node('instances', instance, 'actions')
    // Asked only when the instance lists the node (`present`): a request for a node that is not
    // there would put a 404 in the server's log for every page view.
    void Promise.resolve(opts.present ?? true)
      .then((present) => (present ? api.get<{ children?: Array<{ name: string }> }>(path) : { children: [] }))
      .then(
        async (doc) => {
          const names = (doc.children ?? []).map((c) => c.name)
          if (!names.length) return this.#settle('none')
          this.element.hidden = false
          setText(this.#count, `(${names.length})`)
          try {
            const actions = await Promise.all(names.map((n) => api.get<ActionDocument>(`${path}/${encodeURIComponent(n)}`)))
            replace(this.#body, this.#table(api, notices, instance, path, actions))
            this.#settle('listed')
          } catch (err) {
            replace(this.#body, h('div', { class: 'empty' }, `The actions of ${instance} could not be read.`))
            this.#settle('failed')
            notices.error(err, `Reading the actions of ${instance} failed`)
          }
        },
        (err: unknown) => {
          // No actions node: the instance's model has no actions. Anything else is worth a message.
          if (err instanceof ApiError && err.status === 404) return this.#settle('none')
          this.element.hidden = false
          replace(this.#body, h('div', { class: 'empty' }, `The actions of ${instance} could not be read.`))
          this.#settle('failed')
          notices.error(err, `Reading the actions of ${instance} failed`)
        },
      )
  }

  /** Marks the panel as loaded (`data-loaded`: none, listed or failed). */
  #settle(outcome: 'none' | 'listed' | 'failed'): void {
    this.element.dataset.loaded = outcome
  }

  #table(api: ApiClient, notices: Notices, instance: string, path: string, actions: ActionDocument[]): HTMLElement {
    const rows = actions.map((action) => {
      const state = h('span', { class: 'switch-state muted small' })
      const row = h(
        'tr',
        { 'data-action-name': action.name },
        h(
          'th',
          { scope: 'row' },
          h('div', { class: 'mono' }, action.name),
          action.description ? h('div', { class: 'muted small action-description' }, action.description) : null,
        ),
        h('td', { 'data-cell': 'kind' }, h('span', { class: 'kind-tag' }, action.kind)),
        h(
          'td',
          { 'data-cell': 'targets' },
          action.targets.length ? action.targets.map((t, i) => [i ? ' ' : '', h('code', { class: 'target' }, t)]) : h('span', { class: 'muted' }, 'none'),
        ),
        h('td', { 'data-cell': 'model-path' }, h('code', { class: 'muted' }, action.model_path)),
      )
      const show = (enabled: boolean): void => {
        toggle.checked = enabled
        setText(state, enabled ? 'on' : 'off')
        row.classList.toggle('action-disabled', !enabled)
      }
      const toggle = h('input', {
        type: 'checkbox',
        class: 'switch',
        'aria-label': `Action ${action.name} enabled`,
        onchange: async () => {
          const wanted = toggle.checked
          toggle.disabled = true
          try {
            const answer = await api.put<{ value?: unknown }>(`${path}/${encodeURIComponent(action.name)}/attr/enabled`, { value: wanted })
            const enabled = typeof answer?.value === 'boolean' ? answer.value : wanted
            show(enabled)
            notices.info(`${instance}: action ${action.name} ${enabled ? 'enabled' : 'disabled'}`)
          } catch (err) {
            show(!wanted)
            notices.error(err, `${wanted ? 'Enabling' : 'Disabling'} action ${action.name} of ${instance} failed`)
          } finally {
            toggle.disabled = false
          }
        },
      })
      row.append(h('td', { class: 'enabled-cell' }, h('label', { class: 'switch-label' }, toggle, state)))
      show(action.enabled)
      return row
    })
    return h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'table actions' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Action'), h('th', {}, 'Kind'), h('th', {}, 'Targets'), h('th', {}, 'In the model'), h('th', {}, 'Enabled'))),
        h('tbody', {}, rows),
      ),
    )
  }
}
