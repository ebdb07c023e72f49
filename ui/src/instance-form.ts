import { ApiError, node, type ApiClient } from './api-client.ts'
import { h, replace, setText } from './dom.ts'
import type { LiveStore } from './live-store.ts'
import type { Notices } from './notices.ts'
import { showProblems } from './source-problems.ts'
import { submitting, type View } from './view.ts'

/** One entry of a model's `meta_parameters`. */
interface MetaParameter {
  type?: string
  default?: unknown
  required?: boolean
  description?: string
}

/**
 * New instance: a name, a model picked from those registered, and a field for each of the
 * model's `meta_parameters` (its default as the placeholder; an empty field keeps the default).
 * Creates it with `PUT /api/v3/system/instances` (`{"<name>": {"type", "parameters"}}`); the
 * server's problems are listed with their paths. Route `#/new-instance` (`#/new-instance/<model>`
 * picks the model).
 *
 * @example
 * new InstanceForm({ api, store, notices, model: 'tank' })
 */
export class InstanceForm implements View {
  readonly element: HTMLElement
  readonly instances: string[] = []
  readonly #off: () => unknown

  constructor(opts: { api: ApiClient; store: LiveStore; notices: Notices; model: string }) {
    const { api, store, notices } = opts
    const name = h('input', { class: 'input mono', name: 'instance-name', 'aria-label': 'Instance name', required: true, placeholder: 'tank_1' })
    const model = h('select', { class: 'input', name: 'model', 'aria-label': 'Model', required: true })
    const params = h('div', { class: 'param-fields' })
    const problems = h('ul', { class: 'source-problems', 'aria-label': 'Problems', hidden: true })
    const status = h('span', { class: 'muted small', role: 'status' })
    let meta: Record<string, MetaParameter> = {}
    const fillModels = (): void => {
      const chosen = model.value || opts.model
      const models = store.structure?.models ?? []
      replace(
        model,
        h('option', { value: '', disabled: true, selected: !chosen }, models.length ? 'Pick a model' : 'No models: create one first'),
        models.map((m) => h('option', { value: m.name, selected: m.name === chosen }, m.name)),
      )
    }
    const showParams = async (): Promise<void> => {
      meta = {}
      replace(params)
      if (!model.value) return
      try {
        const doc = await api.get<{ definition?: { meta_parameters?: Record<string, MetaParameter> } }>(node('models', model.value))
        meta = doc.definition?.meta_parameters ?? {}
      } catch (err) {
        notices.error(err, `Reading model ${model.value} failed`)
        return
      }
      const names = Object.keys(meta)
      replace(
        params,
        names.length
          ? names.map((p) => {
              const m = meta[p]!
              return h(
                'label',
                { class: 'field' },
                h('span', {}, p, m.required ? ' (required)' : '', m.type ? h('span', { class: 'muted' }, ` ${m.type}`) : null),
                h('input', {
                  class: 'input mono',
                  name: `param-${p}`,
                  'data-param': p,
                  'aria-label': `Parameter ${p}`,
                  placeholder: m.default === undefined ? '' : JSON.stringify(m.default),
                  required: m.required === true,
                }),
                m.description ? h('span', { class: 'muted small' }, m.description) : null,
              )
            })
          : h('p', { class: 'muted' }, 'This model has no parameters.'),
      )
    }
    model.addEventListener('change', () => void showParams())
    const create = async (): Promise<void> => {
      setText(status, '')
      const parameters: Record<string, unknown> = {}
      const local: Array<{ path: string; message: string }> = []
      for (const input of params.querySelectorAll<HTMLInputElement>('input[data-param]')) {
        const p = input.dataset.param!
        if (input.value.trim() === '') continue
        try {
          parameters[p] = parseParameter(input.value, meta[p]?.type)
        } catch (err) {
          local.push({ path: `${name.value}.parameters.${p}`, message: (err as Error).message })
        }
      }
      if (local.length) return showProblems(problems, local)
      const instance = name.value.trim()
      const body = { [instance]: Object.keys(parameters).length ? { type: model.value, parameters } : model.value }
      try {
        await api.put(node('instances'), body)
        showProblems(problems, [])
        notices.info(`Instance ${instance} created from ${model.value}`)
        location.hash = `#/instance/${encodeURIComponent(instance)}`
      } catch (err) {
        if (err instanceof ApiError && err.details.length) {
          showProblems(problems, err.details)
          setText(status, 'Nothing was created.')
        } else notices.error(err, `Creating instance ${instance} failed`)
      }
    }
    this.element = h(
      'div',
      { class: 'view editor-view' },
      h(
        'section',
        { class: 'panel' },
        h(
          'header',
          { class: 'panel-header' },
          h(
            'div',
            {},
            h('h1', { class: 'view-title' }, 'New instance'),
            h('div', { class: 'muted' }, 'An instance of a registered model, with its parameters.'),
          ),
        ),
        h(
          'form',
          {
            class: 'editor-form',
            onsubmit: (e: Event) => {
              e.preventDefault()
              void submitting(e, create)
            },
          },
          h(
            'div',
            { class: 'form-row' },
            h('label', { class: 'field' }, h('span', {}, 'Name'), name),
            h('label', { class: 'field' }, h('span', {}, 'Model'), model),
          ),
          params,
          problems,
          h(
            'div',
            { class: 'toolbar' },
            h('button', { class: 'btn btn-primary', type: 'submit', 'data-action': 'create-instance' }, 'Create instance'),
            h('a', { class: 'btn btn-quiet', href: '#/' }, 'Cancel'),
            status,
          ),
        ),
      ),
    )
    fillModels()
    void showParams()
    this.#off = store.onStructure(() => {
      const before = model.value
      fillModels()
      if (model.value !== before) void showParams()
    })
    queueMicrotask(() => name.focus())
  }

  dispose(): void {
    this.#off()
  }
}

/** A parameter typed into a field: numbers and bools by the declared type, else JSON when it reads as JSON, else text. */
function parseParameter(text: string, type: string | undefined): unknown {
  const t = text.trim()
  if (type === 'str' || type === 'string') return text
  if (type === 'int' || type === 'float') {
    const n = Number(t)
    if (t === '' || !Number.isFinite(n)) throw new Error(`expected a number, got '${text}'`)
    if (type === 'int' && !Number.isInteger(n)) throw new Error(`expected a whole number, got '${text}'`)
    return n
  }
  if (type === 'bool') {
    if (t === 'true' || t === 'false') return t === 'true'
    throw new Error(`expected true or false, got '${text}'`)
  }
  try {
    return JSON.parse(t)
  } catch {
    return text
  }
}
