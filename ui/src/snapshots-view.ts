import { node, type ApiClient } from './api-client.ts'
import { confirmDialog } from './confirm-dialog.ts'
import { h, replace } from './dom.ts'
import { formatWhen } from './format.ts'
import type { LiveStore } from './live-store.ts'
import type { Notices } from './notices.ts'
import { busy, type View } from './view.ts'

/** A snapshot as the list shows it: one entry per id, from memory, from a file, or both. */
interface SnapshotEntry {
  id: string
  created_at: string
  label: string
  notes: string
  path: string
  inMemory: boolean
  /** Saved with its runtime state (`include_state`), which a load restores. */
  state?: boolean
}

interface ListResult {
  in_memory: Array<{ id: string; created_at: string; label: string; notes: string; persisted_path: string; state?: boolean }>
  files: Array<{ path: string; id: string; created_at: string; label: string; notes: string; state?: boolean }>
}

const PATH = node('snapshots')

/**
 * Snapshots of the structure: save with a label and notes, list, load (after a confirmation that
 * says what the load replaces) and delete.
 *
 * @example
 * const view = new SnapshotsView({ api, store, notices })
 */
export class SnapshotsView implements View {
  readonly element: HTMLElement
  readonly #api: ApiClient
  readonly #store: LiveStore
  readonly #notices: Notices
  readonly #list: HTMLElement

  constructor(opts: { api: ApiClient; store: LiveStore; notices: Notices }) {
    this.#api = opts.api
    this.#store = opts.store
    this.#notices = opts.notices
    this.#list = h('div', { class: 'snapshot-list' }, h('div', { class: 'empty' }, 'Loading…'))
    const label = h('input', { class: 'input', name: 'label', placeholder: 'e.g. before calibration', maxlength: 200, 'aria-label': 'Label' })
    const notes = h('textarea', { class: 'input', name: 'notes', rows: 1, placeholder: 'What this structure is for (optional)', 'aria-label': 'Notes' })
    const save = async (e: Event): Promise<void> => {
      e.preventDefault()
      const button = (e.currentTarget as HTMLFormElement).querySelector('button')
      if (button) button.disabled = true
      const sent = { label: label.value, notes: notes.value }
      try {
        const result = await this.#api.call<{ id: string; persisted_path: string }>(PATH, 'save', sent)
        // Clear only what was sent: text typed while the snapshot was being saved stays.
        if (label.value === sent.label) label.value = ''
        if (notes.value === sent.notes) notes.value = ''
        this.#notices.info(`Snapshot ${result.id} saved${result.persisted_path ? ' to disk' : ' in memory'}`)
        await this.refresh()
      } catch (err) {
        this.#notices.error(err, 'Saving the snapshot failed')
      } finally {
        if (button) button.disabled = false
      }
    }
    this.element = h(
      'div',
      { class: 'view snapshots-view' },
      h(
        'section',
        { class: 'panel' },
        h(
          'header',
          { class: 'panel-header' },
          h('h1', { class: 'view-title' }, 'Snapshots'),
          h(
            'span',
            { class: 'muted' },
            'A snapshot holds the structure — models, instances, connections — and, when saved with its runtime state, the values too.',
          ),
        ),
        h(
          'form',
          { class: 'snapshot-form', onsubmit: save },
          h('label', { class: 'field' }, h('span', {}, 'Label'), label),
          h('label', { class: 'field field-wide' }, h('span', {}, 'Notes'), notes),
          h('button', { class: 'btn btn-primary', type: 'submit', 'data-action': 'save-snapshot' }, 'Save snapshot'),
        ),
      ),
      h(
        'section',
        { class: 'panel' },
        h(
          'header',
          { class: 'panel-header' },
          h('h2', { class: 'panel-title' }, 'Saved'),
          h('button', { class: 'btn btn-small', onclick: (e: Event) => busy(e, () => this.refresh()) }, 'Refresh'),
        ),
        this.#list,
      ),
    )
    void this.refresh()
  }

  get instances(): string[] {
    return []
  }

  dispose(): void {}

  async refresh(): Promise<void> {
    let result: ListResult
    try {
      result = await this.#api.call<ListResult>(PATH, 'list')
    } catch (err) {
      replace(this.#list, h('div', { class: 'empty' }, 'The list could not be read.'))
      this.#notices.error(err, 'Listing snapshots failed')
      return
    }
    const byId = new Map<string, SnapshotEntry>()
    for (const s of result.in_memory)
      byId.set(s.id, { id: s.id, created_at: s.created_at, label: s.label, notes: s.notes, path: s.persisted_path, inMemory: true, state: s.state === true })
    for (const f of result.files) {
      const known = byId.get(f.id)
      if (known) known.path ||= f.path
      else byId.set(f.id, { id: f.id, created_at: f.created_at, label: f.label, notes: f.notes, path: f.path, inMemory: false, state: f.state === true })
    }
    const entries = [...byId.values()].sort((a, b) => b.created_at.localeCompare(a.created_at))
    if (!entries.length) {
      replace(this.#list, h('div', { class: 'empty' }, 'No snapshots yet. Save one above.'))
      return
    }
    replace(
      this.#list,
      h(
        'table',
        { class: 'table' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Label'), h('th', {}, 'Saved'), h('th', {}, 'Notes'), h('th', {}, 'Where'), h('th', {}))),
        h(
          'tbody',
          {},
          entries.map((s) =>
            h(
              'tr',
              { 'data-snapshot': s.id },
              h('th', { scope: 'row' }, s.label || h('span', { class: 'muted' }, '(no label)'), h('div', { class: 'muted mono small' }, s.id)),
              h('td', { title: s.created_at }, formatWhen(s.created_at)),
              h('td', { class: 'notes' }, s.notes),
              h('td', { class: 'muted small', title: s.path }, [s.inMemory ? 'memory' : null, s.path ? 'file' : null].filter(Boolean).join(' + ')),
              h(
                'td',
                { class: 'row-actions' },
                h('button', { class: 'btn btn-small', 'data-action': 'load-snapshot', onclick: (e: Event) => busy(e, () => this.#load(s)) }, 'Load'),
                h(
                  'button',
                  { class: 'btn btn-small btn-quiet', 'data-action': 'delete-snapshot', onclick: (e: Event) => busy(e, () => this.#delete(s)) },
                  'Delete',
                ),
              ),
            ),
          ),
        ),
      ),
    )
  }

  /** The selector a method takes: the id, or the file when the snapshot is not held in memory. */
  #selector(s: SnapshotEntry): Record<string, string> {
    return s.inMemory || !s.path ? { id: s.id } : { path: s.path }
  }

  async #load(s: SnapshotEntry): Promise<void> {
    const current = this.#store.structure
    const count = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`
    const ok = await confirmDialog({
      title: `Load snapshot “${s.label || s.id}”?`,
      confirm: 'Replace and load',
      danger: true,
      body: [
        h('p', {}, 'Loading replaces the whole active system:'),
        h(
          'ul',
          {},
          h(
            'li',
            {},
            `${count(current?.models.length ?? 0, 'model')}, ${count(current?.instances.length ?? 0, 'instance')} and ${count(current?.connections.length ?? 0, 'connection')} now active are removed`,
            current?.instances.length ? h('span', { class: 'muted' }, ` (${current.instances.map((i) => i.name).join(', ')})`) : null,
            '.',
          ),
          h('li', {}, 'Running instances are stopped; every loaded instance starts fresh (INITIALIZED).'),
          h(
            'li',
            {},
            s.state
              ? 'Runtime values are restored as they were saved (a snapshot with state).'
              : 'Runtime values are not restored: this snapshot holds the structure only.',
          ),
        ),
        h('p', { class: 'muted small' }, `Snapshot ${s.id}, saved ${new Date(s.created_at).toLocaleString()}.`),
      ],
    })
    if (!ok) return
    try {
      const result = await this.#api.call<{ models: number; instances: number; connections: number }>(PATH, 'load', this.#selector(s))
      this.#notices.info(
        `Loaded ${s.label || s.id}: ${count(result.models, 'model')}, ${count(result.instances, 'instance')}, ${count(result.connections, 'connection')}`,
      )
    } catch (err) {
      this.#notices.error(err, `Loading snapshot ${s.label || s.id} failed (the active system was left as it was)`)
    }
  }

  async #delete(s: SnapshotEntry): Promise<void> {
    const ok = await confirmDialog({
      title: `Delete snapshot “${s.label || s.id}”?`,
      confirm: 'Delete',
      danger: true,
      body: h('p', {}, `The snapshot is removed${s.path ? ` including its file ${s.path}` : ' from memory'}. The active system is not changed.`),
    })
    if (!ok) return
    try {
      await this.#api.call(PATH, 'delete', this.#selector(s))
      this.#notices.info(`Snapshot ${s.label || s.id} deleted`)
    } catch (err) {
      this.#notices.error(err, 'Deleting the snapshot failed')
    }
    await this.refresh()
  }
}
