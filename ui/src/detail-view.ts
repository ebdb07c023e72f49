import { node, type ApiClient } from './api-client.ts'
import { deleteConnection } from './connections-view.ts'
import { deleteButton } from './delete-actions.ts'
import { h, replace } from './dom.ts'
import type { Notices } from './notices.ts'
import type { View } from './view.ts'
import { toYaml } from './yaml.ts'

/** The parts of a model definition that make up its behaviour in the model language. */
const BEHAVIOUR_KEYS = ['actions', 'conditions', 'if_chain']

/**
 * A model (with Edit, New instance of it and Delete; its instances, its actions, conditions and if chain as written, and its whole
 * definition as it was given) or a connection (its two ends,
 * transfer count and last error, and Delete), read from the tree.
 *
 * @example
 * new DetailView({ api, notices, kind: 'model', name: 'PT100' })
 */
export class DetailView implements View {
  readonly element: HTMLElement

  constructor(opts: { api: ApiClient; notices: Notices; kind: 'model' | 'connection'; name: string }) {
    const { api, notices, kind, name } = opts
    const body = h('div', {}, h('div', { class: 'empty' }, 'Loading…'))
    this.element = h(
      'div',
      { class: 'view detail-view' },
      h(
        'section',
        { class: 'panel' },
        h(
          'header',
          { class: 'panel-header' },
          h('div', {}, h('h1', { class: 'view-title' }, name), h('div', { class: 'muted' }, kind === 'model' ? 'model' : 'connection')),
          h(
            'div',
            { class: 'toolbar' },
            kind === 'model'
              ? [
                  h('a', { class: 'btn', href: `#/edit-model/${encodeURIComponent(name)}`, 'data-action': 'edit-model' }, 'Edit'),
                  h('a', { class: 'btn', href: `#/new-instance/${encodeURIComponent(name)}`, 'data-action': 'new-instance-of' }, 'New instance of it'),
                  deleteButton({ api, notices, kind: 'model', name, onDeleted: () => (location.hash = '#/') }),
                ]
              : h(
                  'button',
                  {
                    class: 'btn btn-quiet btn-danger-text',
                    'data-action': 'delete-connection',
                    onclick: async () => {
                      if (await deleteConnection(api, notices, name)) location.hash = '#/connections'
                    },
                  },
                  'Delete',
                ),
          ),
        ),
        body,
      ),
    )
    const path = node(kind === 'model' ? 'models' : 'connections', name)
    void api.get<Record<string, unknown>>(path).then(
      (doc) => replace(body, kind === 'model' ? modelBody(doc) : connectionBody(doc)),
      (err: unknown) => {
        replace(body, h('div', { class: 'empty' }, `${kind === 'model' ? 'Model' : 'Connection'} '${name}' could not be read.`))
        notices.error(err, `Reading ${kind} ${name} failed`)
      },
    )
  }

  get instances(): string[] {
    return []
  }

  dispose(): void {}
}

function modelBody(doc: Record<string, unknown>): HTMLElement {
  const instances = Array.isArray(doc.instances) ? (doc.instances as string[]) : []
  return h(
    'div',
    {},
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'Instances'),
      h(
        'dd',
        {},
        instances.length
          ? instances.map((i, k) => [k ? ', ' : '', h('a', { href: `#/instance/${encodeURIComponent(i)}` }, i)])
          : h('span', { class: 'muted' }, 'none'),
      ),
    ),
    behaviour(doc.definition),
    h('h3', { class: 'sub-heading' }, 'Definition'),
    h('pre', { class: 'code' }, JSON.stringify(doc.definition, null, 2)),
  )
}

/** The model's `actions`, `conditions` and `if_chain` as YAML, in the order a step runs them. */
function behaviour(definition: unknown): HTMLElement | null {
  if (definition === null || typeof definition !== 'object') return null
  const parts = Object.fromEntries(BEHAVIOUR_KEYS.filter((k) => k in definition).map((k) => [k, (definition as Record<string, unknown>)[k]]))
  if (!Object.keys(parts).length) return null
  return h(
    'div',
    { class: 'model-behaviour' },
    h('h3', { class: 'sub-heading' }, 'Actions as written'),
    h(
      'p',
      { class: 'muted small' },
      'Each instance runs these every step, in this order; an instance page lists them with where each is in the model (',
      h('code', {}, 'actions[2]'),
      ', ',
      h('code', {}, 'conditions[0].actions[0]'),
      ') and can switch one off.',
    ),
    h('pre', { class: 'code', 'data-block': 'model-actions' }, toYaml(parts)),
  )
}

function connectionBody(doc: Record<string, unknown>): HTMLElement {
  return h(
    'dl',
    { class: 'facts' },
    h('dt', {}, 'From'),
    h('dd', { class: 'mono' }, String(doc.from)),
    h('dt', {}, 'To'),
    h('dd', { class: 'mono' }, String(doc.to)),
    h('dt', {}, 'Transfers'),
    h('dd', { class: 'num' }, String(doc.transfers ?? 0)),
    h('dt', {}, 'Last error'),
    h('dd', { class: doc.last_error ? 'error-text' : 'muted' }, String(doc.last_error ?? 'none')),
  )
}
