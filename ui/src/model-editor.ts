import { ApiError, node, type ApiClient } from './api-client.ts'
import { h, setText } from './dom.ts'
import type { Notices } from './notices.ts'
import { showProblems } from './source-problems.ts'
import { submitting, type View } from './view.ts'
import { YamlSource, type SourceProblem } from './yaml-source.ts'
import { toYaml } from './yaml.ts'

/** What a new model starts from: a small model in the model language that runs as it is. */
const TEMPLATE = `# A model: its attributes and what every step does with them (docs/model-language.md).
attributes:
  level: { default: 0.0, type: float, unit: "%" }
  filling: { default: true, type: bool }
actions:
  - { name: fill, function: $out(level), call: "$in(level) + 1" }
`

/**
 * The YAML editor of a model: a name and the definition (or a whole `models:` mapping), saved
 * with `PUT /api/v3/system/models`. A text that is not YAML is not sent; every problem the server
 * finds is listed under the editor with its path and the line:col where that path is in the text.
 * Route `#/new-model`, or `#/edit-model/<name>` for a registered model (its definition as YAML).
 *
 * @example
 * const view = new ModelEditor({ api, notices, name: '' })
 */
export class ModelEditor implements View {
  readonly element: HTMLElement
  readonly instances: string[] = []

  constructor(opts: { api: ApiClient; notices: Notices; name: string }) {
    const { api, notices } = opts
    const editing = opts.name !== ''
    const name = h('input', {
      class: 'input mono',
      name: 'model-name',
      'aria-label': 'Model name',
      placeholder: 'tank',
      value: opts.name,
      readonly: editing,
      required: true,
      pattern: '[A-Za-z_][A-Za-z0-9_\\-]*',
    })
    const editor = h('textarea', {
      class: 'input mono source-editor',
      name: 'model-yaml',
      'aria-label': 'Model definition (YAML)',
      spellcheck: 'false',
      rows: 22,
    })
    editor.value = editing ? '' : TEMPLATE
    // Tab indents (two spaces) instead of leaving the editor; Escape then Tab still leaves it.
    let escaped = false
    editor.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') escaped = true
      else if (e.key === 'Tab' && !e.shiftKey && !escaped) {
        e.preventDefault()
        editor.setRangeText('  ', editor.selectionStart, editor.selectionEnd, 'end')
      } else escaped = false
    })
    const status = h('span', { class: 'muted small', role: 'status' })
    const problems = h('ul', { class: 'source-problems', 'aria-label': 'Problems', hidden: true })
    const save = async (): Promise<void> => {
      setText(status, '')
      const parsed = YamlSource.parse(editor.value)
      if (parsed.problems.length) {
        showProblems(problems, parsed.problems, editor)
        setText(status, 'The text is not valid YAML: nothing was sent.')
        return
      }
      const value = parsed.value
      let body: Record<string, unknown>
      let prefix: (model: string) => string[] = () => []
      const wrapped = isObject(value) && Object.keys(value).length === 1 && isObject(value.models)
      if (wrapped) {
        body = value.models as Record<string, unknown>
        prefix = (model) => ['models', model]
      } else if (isObject(value)) {
        if (!name.value.trim()) {
          showProblems(problems, [{ path: 'name', message: 'give the model a name (or write the definition under models: <name>:)' }])
          name.focus()
          return
        }
        body = { [name.value.trim()]: value }
      } else {
        showProblems(problems, [{ path: '', message: 'a model definition is a mapping (attributes:, actions:, ...)', line: 1, column: 1 }], editor)
        return
      }
      try {
        await api.put(node('models'), body)
        showProblems(problems, [])
        const names = Object.keys(body)
        notices.info(`Model${names.length === 1 ? '' : 's'} ${names.join(', ')} saved`)
        location.hash = `#/model/${encodeURIComponent(names[0]!)}`
      } catch (err) {
        if (!(err instanceof ApiError) || !err.details.length) {
          showProblems(problems, [])
          notices.error(err, 'Saving the model failed')
          return
        }
        const model = err.fault?.component?.name ?? Object.keys(body)[0] ?? ''
        const placed: SourceProblem[] = parsed.source.place(err.details, prefix(model))
        showProblems(problems, placed, editor)
        setText(status, `${err.message.split(':')[0]}: ${placed.length} problem${placed.length === 1 ? '' : 's'}, nothing was saved.`)
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
            h('h1', { class: 'view-title' }, editing ? `Edit model ${opts.name}` : 'New model'),
            h(
              'div',
              { class: 'muted' },
              'The definition in YAML, as in a system file under ',
              h('code', {}, 'models: <name>:'),
              '. Saving a model that exists replaces it and rebuilds its instances.',
            ),
          ),
        ),
        h(
          'form',
          {
            class: 'editor-form',
            onsubmit: (e: Event) => {
              e.preventDefault()
              void submitting(e, save)
            },
          },
          h('label', { class: 'field' }, h('span', {}, 'Name'), name),
          h('label', { class: 'field' }, h('span', {}, 'Definition (YAML)'), editor),
          problems,
          h(
            'div',
            { class: 'toolbar' },
            h('button', { class: 'btn btn-primary', type: 'submit', 'data-action': 'save-model' }, 'Save model'),
            h('a', { class: 'btn btn-quiet', href: editing ? `#/model/${encodeURIComponent(opts.name)}` : '#/' }, 'Cancel'),
            status,
          ),
        ),
      ),
    )
    if (editing) {
      void api.get<{ definition?: unknown }>(node('models', opts.name)).then(
        (doc) => (editor.value = `${toYaml(doc.definition ?? {})}\n`),
        (err: unknown) => notices.error(err, `Reading model ${opts.name} failed`),
      )
    }
    queueMicrotask(() => (editing ? editor : name).focus())
  }

  dispose(): void {}
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}
