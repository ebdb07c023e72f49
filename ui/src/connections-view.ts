import { ApiError, node, type ApiClient } from './api-client.ts'
import { confirmDialog } from './confirm-dialog.ts'
import { h, replace, setText } from './dom.ts'
import type { LiveStore } from './live-store.ts'
import type { Notices } from './notices.ts'
import { showProblems } from './source-problems.ts'
import { submitting, type View } from './view.ts'

/** A connection node as the API answers it (docs/api.md, Connections). */
interface ConnectionDocument {
  name: string
  from: string
  to: string
  enabled?: boolean
  transfers?: number
  last_error?: string | null
}

/** How often the transfer counts are read again while the page is open. */
const REFRESH_MS = 2000

/**
 * Every connection with its two ends, the values it carried so far, its last error, an *Enabled*
 * switch (`PUT connections/<c>/attr/enabled`) and *Delete*; *New connection* wires a source
 * attribute to a target attribute, both picked from lists of every instance's attributes
 * (`PUT connections {"<name>": {"from", "to"}}`). Route `#/connections` (`#/new-connection` opens
 * the form).
 *
 * @example
 * new ConnectionsView({ api, store, notices, open: true })
 */
export class ConnectionsView implements View {
  readonly element: HTMLElement
  readonly instances: string[] = []
  readonly #api: ApiClient
  readonly #store: LiveStore
  readonly #notices: Notices
  readonly #body: HTMLElement
  readonly #form: HTMLFormElement
  readonly #from: HTMLSelectElement
  readonly #to: HTMLSelectElement
  readonly #off: () => unknown
  readonly #cells = new Map<string, { transfers: HTMLElement; error: HTMLElement; toggle: HTMLInputElement }>()
  #timer: number | undefined
  #disposed = false

  constructor(opts: { api: ApiClient; store: LiveStore; notices: Notices; open: boolean }) {
    this.#api = opts.api
    this.#store = opts.store
    this.#notices = opts.notices
    this.#body = h('div', { class: 'table-wrap' }, h('div', { class: 'empty' }, 'Loading…'))
    const name = h('input', { class: 'input mono', name: 'connection-name', 'aria-label': 'Connection name', required: true, placeholder: 'c1' })
    this.#from = h('select', { class: 'input mono', name: 'from', 'aria-label': 'Source attribute', required: true })
    this.#to = h('select', { class: 'input mono', name: 'to', 'aria-label': 'Target attribute', required: true })
    const problems = h('ul', { class: 'source-problems', 'aria-label': 'Problems', hidden: true })
    const create = async (): Promise<void> => {
      const conn = name.value.trim()
      try {
        await this.#api.put(node('connections'), { [conn]: { from: this.#from.value, to: this.#to.value } })
        showProblems(problems, [])
        this.#notices.info(`Connection ${conn} created: ${this.#from.value} → ${this.#to.value}`)
        name.value = ''
        await this.#load()
      } catch (err) {
        if (err instanceof ApiError && err.details.length) showProblems(problems, err.details)
        else this.#notices.error(err, `Creating connection ${conn} failed`)
      }
    }
    this.#form = h(
      'form',
      {
        class: 'connection-form',
        hidden: !opts.open,
        'aria-label': 'New connection',
        onsubmit: (e: Event) => {
          e.preventDefault()
          void submitting(e, create)
        },
      },
      h('label', { class: 'field' }, h('span', {}, 'Name'), name),
      h('label', { class: 'field' }, h('span', {}, 'From (source)'), this.#from),
      h('label', { class: 'field' }, h('span', {}, 'To (target)'), this.#to),
      h('button', { class: 'btn btn-primary', type: 'submit', 'data-action': 'create-connection' }, 'Create connection'),
      problems,
    )
    this.element = h(
      'div',
      { class: 'view connections-view' },
      h(
        'section',
        { class: 'panel' },
        h(
          'header',
          { class: 'panel-header' },
          h(
            'div',
            {},
            h('h1', { class: 'view-title' }, 'Connections'),
            h('div', { class: 'muted' }, 'After every system step each enabled connection copies its source value to its target.'),
          ),
          h(
            'div',
            { class: 'toolbar' },
            h(
              'button',
              {
                class: 'btn',
                'data-action': 'new-connection',
                onclick: () => {
                  this.#form.hidden = false
                  name.focus()
                },
              },
              'New connection',
            ),
          ),
        ),
        this.#form,
        this.#body,
      ),
    )
    this.#fillAttributes()
    this.#off = this.#store.onStructure(() => {
      this.#fillAttributes()
      void this.#load()
    })
    void this.#load()
    if (opts.open) queueMicrotask(() => name.focus())
  }

  dispose(): void {
    this.#disposed = true
    window.clearTimeout(this.#timer)
    this.#off()
  }

  #fillAttributes(): void {
    const refs = (this.#store.structure?.instances ?? []).flatMap((i) =>
      i.attributes.map((a) => ({ ref: `${i.name}.attributes.${a.name}`, label: `${i.name}.${a.name}`, type: a.type })),
    )
    for (const select of [this.#from, this.#to]) {
      const chosen = select.value
      replace(
        select,
        h('option', { value: '', disabled: true, selected: !chosen }, refs.length ? 'Pick an attribute' : 'No instances'),
        refs.map((r) => h('option', { value: r.ref, selected: r.ref === chosen }, `${r.label} (${r.type})`)),
      )
    }
  }

  async #load(): Promise<void> {
    window.clearTimeout(this.#timer)
    const names = (this.#store.structure?.connections ?? []).map((c) => c.name)
    try {
      const docs = await Promise.all(names.map((n) => this.#api.get<ConnectionDocument>(node('connections', n))))
      if (this.#disposed) return
      const same = docs.length === this.#cells.size && docs.every((d) => this.#cells.has(d.name))
      if (same) for (const d of docs) this.#update(d)
      else this.#render(docs)
    } catch (err) {
      // A connection deleted meanwhile: the structure event that follows loads the list again.
      if (!(err instanceof ApiError && err.status === 404)) this.#notices.error(err, 'Reading the connections failed')
    }
    if (!this.#disposed) this.#timer = window.setTimeout(() => void this.#load(), REFRESH_MS)
  }

  #render(docs: ConnectionDocument[]): void {
    this.#cells.clear()
    if (!docs.length) {
      replace(this.#body, h('div', { class: 'empty' }, this.#store.structure ? 'No connections yet.' : 'Loading…'))
      return
    }
    const rows = docs.map((d) => {
      const transfers = h('td', { class: 'num', 'data-cell': 'transfers' })
      const error = h('td', { class: 'error-text', 'data-cell': 'last-error' })
      const state = h('span', { class: 'switch-state muted small' })
      const toggle = h('input', {
        type: 'checkbox',
        role: 'switch',
        class: 'switch',
        'aria-label': 'Enabled',
        onchange: async () => {
          const wanted = toggle.checked
          toggle.disabled = true
          try {
            await this.#api.put(`${node('connections', d.name)}/attr/enabled`, { value: wanted })
            this.#notices.info(`Connection ${d.name} ${wanted ? 'enabled' : 'disabled'}`)
            setText(state, wanted ? 'on' : 'off')
          } catch (err) {
            toggle.checked = !wanted
            this.#notices.error(err, `${wanted ? 'Enabling' : 'Disabling'} connection ${d.name} failed`)
          } finally {
            toggle.disabled = false
          }
        },
      })
      this.#cells.set(d.name, { transfers, error, toggle })
      const row = h(
        'tr',
        { 'data-connection': d.name },
        h('th', { scope: 'row' }, h('a', { href: `#/connection/${encodeURIComponent(d.name)}` }, d.name)),
        h('td', { class: 'mono' }, d.from),
        h('td', { class: 'mono' }, d.to),
        transfers,
        error,
        h('td', { class: 'enabled-cell' }, h('label', { class: 'switch-label' }, toggle, state)),
        h(
          'td',
          { class: 'row-actions' },
          h(
            'button',
            {
              class: 'btn btn-small btn-quiet',
              'aria-label': 'Delete',
              title: `Delete connection ${d.name}`,
              onclick: () => void deleteConnection(this.#api, this.#notices, d.name),
            },
            'Delete',
          ),
        ),
      )
      this.#update(d)
      setText(state, d.enabled === false ? 'off' : 'on')
      return row
    })
    replace(
      this.#body,
      h(
        'table',
        { class: 'table connections' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', {}, 'Connection'),
            h('th', {}, 'From'),
            h('th', {}, 'To'),
            h('th', { class: 'num' }, 'Transfers'),
            h('th', {}, 'Last error'),
            h('th', {}, 'Enabled'),
            h('th', {}, ''),
          ),
        ),
        h('tbody', {}, rows),
      ),
    )
  }

  #update(d: ConnectionDocument): void {
    const cells = this.#cells.get(d.name)
    if (!cells) return
    setText(cells.transfers, String(d.transfers ?? 0))
    setText(cells.error, d.last_error ?? '')
    if (!cells.toggle.disabled) cells.toggle.checked = d.enabled !== false
  }
}

/**
 * Asks, then deletes a connection (`DELETE connections/<c>`).
 *
 * @example
 * await deleteConnection(api, notices, 'c1')
 */
export async function deleteConnection(api: ApiClient, notices: Notices, name: string): Promise<boolean> {
  const ok = await confirmDialog({
    title: `Delete connection ${name}?`,
    body: h('p', {}, 'The two attributes stay as they are; values stop flowing between them.'),
    confirm: 'Delete',
    danger: true,
  })
  if (!ok) return false
  try {
    await api.delete(node('connections', name))
    notices.info(`Connection ${name} deleted`)
    return true
  } catch (err) {
    notices.error(err, `Deleting connection ${name} failed`)
    return false
  }
}
