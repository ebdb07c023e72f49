import { stringify } from 'yaml'
import { ApiError, SYSTEM, type ApiClient } from './api-client.ts'
import { confirmDialog } from './confirm-dialog.ts'
import { h, setText } from './dom.ts'
import type { Notices } from './notices.ts'
import { showProblems } from './source-problems.ts'
import { YamlSource, type SourceProblem } from './yaml-source.ts'

/** The parts of a system definition (docs/api.md, the root's `definition`). */
interface SystemDefinition {
  models?: Record<string, unknown>
  instances?: unknown
  connections?: Record<string, unknown>
}

/**
 * *Export system* and *Import system* of the system page. Export downloads the current structure
 * (`GET /api/v3/system/definition`) as a YAML system file, the file `mimic serve --system` loads.
 * Import reads a system file (YAML or JSON, or a snapshot file, whose `definition` is used),
 * shows what it holds and any problem in it before anything is sent, and then PUTs it on the root
 * (`{"models", "instances", "connections"}`), which the server checks as a whole: any problem
 * is listed with its path and line:col in the file, and nothing changes. What the file names
 * replaces what has the same name; the rest of the system stays.
 *
 * @example
 * const io = new SystemFile({ api, notices })
 * toolbar.append(io.exportButton, io.importButton); page.append(io.panel)
 */
export class SystemFile {
  readonly exportButton: HTMLButtonElement
  readonly importButton: HTMLButtonElement
  /** Where the problems of the last import show (hidden until an import has something to say). */
  readonly panel: HTMLElement
  readonly #api: ApiClient
  readonly #notices: Notices
  readonly #input: HTMLInputElement
  readonly #title: HTMLElement
  readonly #problems: HTMLElement

  constructor(opts: { api: ApiClient; notices: Notices }) {
    this.#api = opts.api
    this.#notices = opts.notices
    this.exportButton = h('button', { class: 'btn', 'data-action': 'export-system', onclick: () => void this.#export() }, 'Export system')
    this.#input = h('input', { type: 'file', accept: '.yaml,.yml,.json,application/json,text/yaml', hidden: true, 'aria-label': 'System file to import' })
    this.#input.addEventListener('change', () => {
      const file = this.#input.files?.[0]
      this.#input.value = ''
      if (file) void this.importFile(file)
    })
    this.importButton = h('button', { class: 'btn', 'data-action': 'import-system', onclick: () => this.#input.click() }, 'Import system')
    this.#title = h('h2', { class: 'panel-title' })
    this.#problems = h('ul', { class: 'source-problems', 'aria-label': 'Problems of the imported file', hidden: true })
    this.panel = h(
      'section',
      { class: 'panel import-panel', hidden: true, 'aria-label': 'Import' },
      h(
        'header',
        { class: 'panel-header' },
        this.#title,
        h('button', { class: 'btn btn-small btn-quiet', 'aria-label': 'Close import problems', onclick: () => (this.panel.hidden = true) }, 'Close'),
      ),
      this.#problems,
      this.#input,
    )
  }

  async #export(): Promise<void> {
    try {
      const { value } = await this.#api.get<{ value: SystemDefinition }>(`${SYSTEM}/definition`)
      const text = `# Mimic system exported ${new Date().toISOString()}\n${stringify(value)}`
      const link = h('a', { href: URL.createObjectURL(new Blob([text], { type: 'text/yaml' })), download: 'system.yaml', hidden: true })
      document.body.append(link)
      link.click()
      link.remove()
      window.setTimeout(() => URL.revokeObjectURL(link.href), 10_000)
      this.#notices.info('System exported as system.yaml')
    } catch (err) {
      this.#notices.error(err, 'Exporting the system failed')
    }
  }

  /** Checks a system file, shows what it holds, and imports it when the user confirms. */
  async importFile(file: File): Promise<void> {
    const text = await file.text()
    const parsed = YamlSource.parse(text)
    let definition: SystemDefinition | undefined
    let prefix: string[] = []
    const problems: SourceProblem[] = [...parsed.problems]
    if (!problems.length) {
      const value = parsed.value as Record<string, unknown> | null
      if (isObject(value) && isObject(value.definition) && !('models' in value)) {
        definition = value.definition as SystemDefinition
        prefix = ['definition']
      } else if (isObject(value)) definition = value as SystemDefinition
      const unknown = definition ? Object.keys(definition).filter((k) => !['models', 'instances', 'connections'].includes(k)) : []
      if (!definition || !(definition.models || definition.instances || definition.connections))
        problems.push({ path: '', message: 'not a system file: expected models:, instances: and connections: at the top', line: 1, column: 1 })
      for (const k of unknown) problems.push({ path: k, message: `unknown key '${k}' (a system file has models, instances and connections)` })
      if (definition?.models !== undefined && !isObject(definition.models))
        problems.push({ path: 'models', message: 'expected a mapping of model names to definitions' })
      if (definition?.connections !== undefined && !isObject(definition.connections))
        problems.push({ path: 'connections', message: 'expected a mapping of connection names to {from, to}' })
    }
    if (problems.length) return this.#show(file.name, parsed.source.place(problems, prefix))
    const models = Object.keys(definition!.models ?? {})
    const instances = instanceNames(definition!.instances)
    const connections = Object.keys(definition!.connections ?? {})
    const ok = await confirmDialog({
      title: `Import ${file.name}?`,
      body: [
        h(
          'ul',
          {},
          h('li', {}, `${count(models.length, 'model')}${models.length ? `: ${models.join(', ')}` : ''}`),
          h('li', {}, `${count(instances.length, 'instance')}${instances.length ? `: ${instances.join(', ')}` : ''}`),
          h('li', {}, `${count(connections.length, 'connection')}${connections.length ? `: ${connections.join(', ')}` : ''}`),
        ),
        h(
          'p',
          { class: 'muted small' },
          'Each replaces what has the same name; the rest of the system stays. The server checks the whole file first: if anything is wrong, nothing changes.',
        ),
      ],
      confirm: 'Import',
    })
    if (!ok) return
    try {
      const body: Record<string, unknown> = {}
      for (const key of ['models', 'instances', 'connections'] as const)
        if (definition![key] !== undefined && definition![key] !== null) body[key] = definition![key]
      await this.#api.put(SYSTEM, body)
      this.panel.hidden = true
      this.#notices.info(
        `Imported ${file.name}: ${count(models.length, 'model')}, ${count(instances.length, 'instance')}, ${count(connections.length, 'connection')}`,
      )
    } catch (err) {
      if (err instanceof ApiError && err.details.length) this.#show(file.name, parsed.source.place(err.details, prefix), err.message)
      else this.#notices.error(err, `Importing ${file.name} failed`)
    }
  }

  #show(file: string, problems: SourceProblem[], message?: string): void {
    setText(this.#title, `${file} was not imported: ${count(problems.length, 'problem')}, nothing changed${message ? ` (${message.split('\n')[0]})` : ''}`)
    showProblems(this.#problems, problems)
    this.panel.hidden = false
    this.panel.scrollIntoView({ block: 'nearest' })
  }
}

function instanceNames(instances: unknown): string[] {
  if (Array.isArray(instances)) return instances.flatMap((entry) => (isObject(entry) ? Object.keys(entry) : []))
  return isObject(instances) ? Object.keys(instances) : []
}

function count(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}
