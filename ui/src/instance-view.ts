import { ActionsPanel } from './actions-panel.ts'
import { AdapterPanel } from './adapter-panel.ts'
import { node, type ApiClient } from './api-client.ts'
import { confirmDialog } from './confirm-dialog.ts'
import { deleteButton } from './delete-actions.ts'
import { h, replace, setText } from './dom.ts'
import { formatValue, parseInput, PLOTTABLE_TYPES } from './format.ts'
import type { LiveAttribute, LiveStore } from './live-store.ts'
import type { Notices } from './notices.ts'
import { RegistersPanel } from './registers-panel.ts'
import { ScenariosPanel } from './scenarios-panel.ts'
import { stateBadge, updateBadge } from './state-badge.ts'
import type { TrendChart } from './trend-chart.ts'
import { busy, type View } from './view.ts'

const LIFECYCLE = ['prepare', 'run', 'start', 'stop', 'reset']

/** What the instance view needs. */
export interface InstanceViewOptions {
  api: ApiClient
  store: LiveStore
  notices: Notices
  chart: TrendChart
  name: string
}

/** The cells of one attribute row that live values update. */
interface Row {
  internal: HTMLElement
  external: HTMLElement
  plot: HTMLInputElement | null
  /** The "forced" mark and the Clear button, shown while the external value differs from the internal one. */
  forced: HTMLElement
  clear: HTMLButtonElement
}

/**
 * One instance: state and last error, lifecycle and model-method buttons, every attribute with
 * its live internal and external value (editable, pickable for the trend), polling, the scenarios
 * (start, stop, state, remaining time) and actions of a model-language model (each action can be
 * switched off), and the protocol adapters (a Modbus adapter with its faults). Every attribute
 * row has *Force value* (the attribute's `force`: the external value held, marked "forced", until Clear);
 * an instance with a Modbus adapter has a *Registers* tab with its register map. *Delete* removes
 * the instance. Values come from the event stream; writes go through the HTTP API. The actions and
 * scenarios nodes are read only when the instance document lists them, so the page asks for
 * nothing that is not there.
 *
 * @example
 * const view = new InstanceView({ api, store, notices, chart, name: 'tank_sensor' })
 * main.append(view.element)
 */
export class InstanceView implements View {
  readonly element: HTMLElement
  readonly #o: InstanceViewOptions
  readonly #rows = new Map<string, Row>()
  readonly #adapters = new Map<string, AdapterPanel>()
  readonly #unsubscribe: Array<() => unknown> = []
  #scenarios: ScenariosPanel | undefined
  #registers: RegistersPanel | undefined
  #tab: 'attributes' | 'registers' = 'attributes'
  #badge: HTMLElement | undefined
  #error: HTMLElement | undefined
  #dirty = false

  constructor(opts: InstanceViewOptions) {
    this.#o = opts
    this.element = h('div', { class: 'view instance-view', 'data-instance': opts.name })
    this.#unsubscribe.push(
      opts.store.onStructure(() => this.#render()),
      opts.store.onFrame((frame) => {
        if (frame.instances?.[opts.name] && !this.#dirty) {
          this.#dirty = true
          requestAnimationFrame(() => this.#update())
        }
      }),
    )
    this.#unsubscribe.push(opts.chart.onChange(() => this.#syncPlotSwitches()))
    this.#render()
  }

  get instances(): string[] {
    return [this.#o.name]
  }

  dispose(): void {
    for (const off of this.#unsubscribe) off()
  }

  #render(): void {
    const { store, name } = this.#o
    const inst = store.instance(name)
    this.#rows.clear()
    this.#adapters.clear()
    this.#scenarios = undefined
    this.#registers = undefined
    if (!inst) {
      replace(
        this.element,
        store.structure
          ? h(
              'div',
              { class: 'panel empty-state' },
              h('h2', {}, `No instance '${name}'`),
              h('p', { class: 'muted' }, 'It was deleted or replaced (for example by loading a snapshot). Pick an instance on the left.'),
            )
          : h('div', { class: 'panel empty-state' }, 'Loading…'),
      )
      return
    }
    const path = node('instances', name)
    // The optional children (actions, scenarios) as the instance document lists them.
    const children = this.#o.api.get<{ children?: Array<{ name: string }> }>(path).then(
      (doc) => new Set((doc.children ?? []).map((c) => c.name)),
      () => new Set<string>(),
    )
    const has = (child: string): Promise<boolean> => children.then((names) => names.has(child))
    this.#scenarios = new ScenariosPanel({ api: this.#o.api, notices: this.#o.notices, instance: name, present: has('scenarios') })
    this.#badge = stateBadge(inst.state)
    this.#error = h('div', { class: 'last-error', hidden: !inst.lastError }, inst.lastError ?? '')
    const lifecycle = LIFECYCLE.filter((m) => inst.methods.includes(m)).map((m) => this.#methodButton(path, m, m === 'start' ? 'btn-primary' : ''))
    const mapped = inst.methods.filter((m) => !LIFECYCLE.includes(m))

    const adapters = [...inst.adapters.values()].map((a) => {
      const panel = new AdapterPanel({ api: this.#o.api, notices: this.#o.notices, instance: name, adapter: a })
      this.#adapters.set(a.name, panel)
      return panel.element
    })
    const modbus = [...inst.adapters.keys()].filter((a) => /^modbus_slave(_\d+)?$/.test(a))
    if (modbus.length) this.#registers = new RegistersPanel({ api: this.#o.api, notices: this.#o.notices, instance: name, adapters: modbus })
    replace(
      this.element,
      h(
        'div',
        { class: 'instance-grid' },
        h(
          'div',
          { class: 'main-column' },
          h(
            'section',
            { class: 'panel' },
            h(
              'header',
              { class: 'panel-header instance-header' },
              h(
                'div',
                {},
                h('h1', { class: 'view-title' }, name),
                h(
                  'div',
                  { class: 'muted' },
                  'model ',
                  h('a', { href: `#/model/${encodeURIComponent(inst.model)}` }, inst.model),
                  ' · ',
                  h('a', { href: `#/logs/${encodeURIComponent(name)}`, 'data-action': 'instance-logs' }, 'logs'),
                ),
              ),
              this.#badge,
              h(
                'div',
                { class: 'toolbar lifecycle' },
                lifecycle,
                deleteButton({ api: this.#o.api, notices: this.#o.notices, kind: 'instance', name, onDeleted: () => (location.hash = '#/') }),
              ),
            ),
            this.#error,
            this.#tabs(h('div', {}, this.#attributeTable(inst.attributes), this.#pollingRow(path))),
          ),
          this.#scenarios.element,
          new ActionsPanel({ api: this.#o.api, notices: this.#o.notices, instance: name, model: inst.model, present: has('actions') }).element,
        ),
        h(
          'div',
          { class: 'side-column' },
          adapters,
          mapped.length ? this.#mappedMethods(path, mapped) : null,
          !adapters.length && !mapped.length ? h('section', { class: 'panel muted' }, 'No protocol adapters and no model methods.') : null,
        ),
      ),
    )
    this.#update()
  }

  /** The attribute panel alone, or tabs Attributes and Registers for an instance with a Modbus adapter. */
  #tabs(attributes: HTMLElement): HTMLElement {
    const registers = this.#registers
    if (!registers) return attributes
    const id = `inst-${Math.random().toString(36).slice(2, 8)}`
    const panels = { attributes, registers: registers.element }
    const tabs = (['attributes', 'registers'] as const).map((key) =>
      h(
        'button',
        {
          class: 'tab',
          role: 'tab',
          id: `${id}-tab-${key}`,
          'aria-controls': `${id}-panel-${key}`,
          'data-tab': key,
          onclick: () => select(key, false),
          onkeydown: (e: Event) => {
            const k = (e as KeyboardEvent).key
            if (k === 'ArrowRight' || k === 'ArrowLeft' || k === 'Home' || k === 'End') {
              e.preventDefault()
              select(this.#tab === 'attributes' ? 'registers' : 'attributes', true)
            }
          },
        },
        key === 'attributes' ? 'Attributes' : 'Registers',
      ),
    )
    for (const key of ['attributes', 'registers'] as const) {
      const panel = panels[key]
      panel.id = `${id}-panel-${key}`
      panel.setAttribute('role', 'tabpanel')
      panel.setAttribute('aria-labelledby', `${id}-tab-${key}`)
      panel.tabIndex = 0
    }
    const select = (key: 'attributes' | 'registers', focus: boolean): void => {
      this.#tab = key
      tabs.forEach((tab, i) => {
        const on = (i === 0 ? 'attributes' : 'registers') === key
        tab.setAttribute('aria-selected', String(on))
        tab.tabIndex = on ? 0 : -1
        if (on && focus) tab.focus()
      })
      attributes.hidden = key !== 'attributes'
      registers.element.hidden = key !== 'registers'
      if (key === 'registers') this.#update()
    }
    select(this.#tab, false)
    return h('div', { class: 'tabs' }, h('div', { class: 'tablist', role: 'tablist', 'aria-label': 'Instance views' }, tabs), attributes, registers.element)
  }

  #methodButton(path: string, method: string, extra: string): HTMLButtonElement {
    const { api, notices, name } = this.#o
    return h(
      'button',
      {
        class: `btn ${extra}`,
        'data-method': method,
        onclick: (e: Event) =>
          busy(e, async () => {
            try {
              await api.call(path, method)
              notices.info(`${name}: ${method} done`)
            } catch (err) {
              notices.error(err, `${method} on ${name} failed`)
            }
          }),
      },
      method[0]!.toUpperCase() + method.slice(1),
    )
  }

  /** Model methods from the `import` block: each takes keyword arguments as a JSON object. */
  #mappedMethods(path: string, methods: string[]): HTMLElement {
    const { api, notices, name } = this.#o
    const result = h('output', { class: 'method-result muted' })
    const rows = methods.map((m) => {
      const kwargs = h('input', {
        class: 'input mono',
        placeholder: 'kwargs as JSON, e.g. {"x": 1}',
        'aria-label': `Keyword arguments of ${m}`,
        'data-kwargs': m,
      })
      const call = (e: Event) =>
        busy(e, async () => {
          let parsed: unknown = {}
          try {
            parsed = kwargs.value.trim() ? JSON.parse(kwargs.value) : {}
            if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
              throw new Error('keyword arguments must be a JSON object, e.g. {"offset": 0.5}')
          } catch (err) {
            notices.error(err, `Arguments of ${m}`)
            return
          }
          try {
            const value = await api.call(path, m, parsed as Record<string, unknown>)
            setText(result, `${m} → ${JSON.stringify(value)}`)
          } catch (err) {
            setText(result, '')
            notices.error(err, `${m} on ${name} failed`)
          }
        })
      return h('div', { class: 'method-row' }, h('button', { class: 'btn btn-small', 'data-method': m, onclick: call }, m), kwargs)
    })
    return h(
      'section',
      { class: 'panel mapped-methods' },
      h('header', { class: 'panel-header' }, h('h2', { class: 'panel-title' }, 'Model methods')),
      rows,
      result,
    )
  }

  #attributeTable(attributes: Map<string, LiveAttribute>): HTMLElement {
    const { chart, name } = this.#o
    const body = h('tbody', {})
    for (const attr of attributes.values()) {
      const internal = h('td', { class: 'num value', 'data-cell': 'internal' }, '–')
      const external = h('td', { class: 'num value', 'data-cell': 'external' }, '–')
      const plottable = PLOTTABLE_TYPES.has(attr.type)
      const plot = plottable
        ? h('input', {
            type: 'checkbox',
            class: 'switch',
            'aria-label': `Plot ${attr.name}`,
            checked: chart.has(name, attr.name),
            onchange: () => chart.toggle(name, attr.name),
          })
        : null
      const forced = h('span', { class: 'forced-tag', hidden: true }, 'forced')
      const clear = h(
        'button',
        {
          class: 'btn btn-small btn-quiet',
          hidden: true,
          'data-action': 'clear-forced',
          'aria-label': `Clear forced value of ${attr.name}`,
          onclick: (e: Event) => busy(e, () => this.#clearForced(attr)),
        },
        'Clear',
      )
      external.append(' ', forced)
      this.#rows.set(attr.name, { internal, external, plot, forced, clear })
      body.append(
        h(
          'tr',
          { 'data-attribute': attr.name },
          h('th', { scope: 'row' }, attr.name),
          h('td', { class: 'muted' }, attr.type),
          internal,
          external,
          h('td', { class: 'muted' }, attr.unit ?? ''),
          h('td', { class: 'edit-cell' }, this.#editor(attr)),
          h(
            'td',
            { class: 'force-cell' },
            h(
              'button',
              {
                class: 'btn btn-small',
                'data-action': 'force',
                title: `Force the value clients see of ${attr.name}`,
                onclick: () => void this.#force(attr),
              },
              'Force value',
            ),
            clear,
          ),
          h('td', { class: 'plot-cell' }, plot ? h('label', { class: 'switch-label' }, plot) : null),
        ),
      )
    }
    return h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'table attributes' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', {}, 'Attribute'),
            h('th', {}, 'Type'),
            h('th', { class: 'num' }, 'Internal value'),
            h('th', { class: 'num' }, 'External value'),
            h('th', {}, 'Unit'),
            h('th', {}, 'Set internal value'),
            h('th', {}, 'Forced (external) value'),
            h('th', {}, 'Plot'),
          ),
        ),
        body,
      ),
    )
  }

  #editor(attr: LiveAttribute): HTMLElement {
    const { api, notices, name } = this.#o
    const path = `${node('instances', name, 'attributes', attr.name)}/attr/internal_value`
    const input =
      attr.type === 'bool'
        ? h(
            'select',
            { class: 'input input-small', 'aria-label': `New value of ${attr.name}` },
            h('option', { value: '', disabled: true, selected: true }, 'bool'),
            h('option', { value: 'true' }, 'true'),
            h('option', { value: 'false' }, 'false'),
          )
        : h('input', {
            class: 'input input-small mono',
            'aria-label': `New value of ${attr.name}`,
            placeholder: attr.type,
            inputmode: attr.type === 'float' || attr.type === 'int' ? 'decimal' : null,
          })
    const submit = async (e: Event): Promise<void> => {
      e.preventDefault()
      let value: unknown
      try {
        value = parseInput(attr.type, input.value)
      } catch (err) {
        notices.error(err, `Value for ${name}.${attr.name}`)
        return
      }
      const button = (e.currentTarget as HTMLFormElement).querySelector('button')
      if (button) button.disabled = true
      const submitted = input.value
      try {
        await api.put(path, { value })
        // Clear only what was sent: a value typed while the request was on its way stays.
        if (input.value === submitted) input.value = ''
        notices.info(`${name}.${attr.name} = ${formatValue(value)}`)
      } catch (err) {
        notices.error(err, `Setting ${name}.${attr.name} failed`)
      } finally {
        if (button) button.disabled = false
      }
    }
    return h('form', { class: 'inline-form', onsubmit: submit }, input, h('button', { class: 'btn btn-small', type: 'submit' }, 'Set'))
  }

  #pollingRow(instancePath: string): HTMLElement {
    const { api, notices, name } = this.#o
    const path = `${instancePath}/polling`
    const interval = h('input', { class: 'input input-small mono', 'aria-label': 'Polling interval in seconds', size: 6 })
    const enabled = h('span', { class: 'muted' })
    void api.get<{ interval: number; enabled: boolean }>(path).then(
      (doc) => {
        interval.value = String(doc.interval)
        setText(enabled, doc.enabled ? '' : ' (polling disabled)')
      },
      (err: unknown) => notices.error(err, `Reading polling of ${name} failed`),
    )
    const submit = async (e: Event): Promise<void> => {
      e.preventDefault()
      try {
        await api.put(`${path}/attr/interval`, { value: parseInput('float', interval.value) })
        notices.info(`${name}: polling every ${interval.value} s`)
      } catch (err) {
        notices.error(err, `Setting the polling interval of ${name} failed`)
      }
    }
    return h(
      'form',
      { class: 'polling-row inline-form', onsubmit: submit },
      h('span', { class: 'muted' }, 'Start runs a step every'),
      interval,
      h('span', { class: 'muted' }, 's'),
      enabled,
      h('button', { class: 'btn btn-small', type: 'submit' }, 'Set'),
    )
  }

  #update(): void {
    this.#dirty = false
    const inst = this.#o.store.instance(this.#o.name)
    if (!inst) return
    if (this.#badge) updateBadge(this.#badge, inst.state)
    if (this.#error) {
      setText(this.#error, inst.lastError ? `Last error: ${inst.lastError}` : '')
      this.#error.hidden = !inst.lastError
    }
    for (const [attrName, row] of this.#rows) {
      const attr = inst.attributes.get(attrName)
      if (!attr?.known) continue
      setText(row.internal, formatValue(attr.internal))
      // The cell holds the value's text node, then the "forced" mark.
      const text = row.external.firstChild
      if (text && text.textContent !== formatValue(attr.external)) text.textContent = formatValue(attr.external)
      const isForced = JSON.stringify(attr.external) !== JSON.stringify(attr.internal)
      row.external.classList.toggle('override', isForced)
      row.external.dataset.forced = String(isForced)
      row.forced.hidden = !isForced
      row.clear.hidden = !isForced
    }
    if (this.#registers && this.#tab === 'registers') this.#registers.update(inst)
    this.#scenarios?.update(inst.scenarios)
    for (const [adapterName, panel] of this.#adapters) {
      const live = inst.adapters.get(adapterName)
      if (live) panel.update(live)
    }
  }

  /** Asks for a value and sets it as the external value (what every protocol adapter presents). */
  async #force(attr: LiveAttribute): Promise<void> {
    const { api, notices, name } = this.#o
    const input =
      attr.type === 'bool'
        ? h(
            'select',
            { class: 'input', 'aria-label': `Forced value of ${attr.name}` },
            h('option', { value: 'true' }, 'true'),
            h('option', { value: 'false' }, 'false'),
          )
        : h('input', { class: 'input mono', 'aria-label': `Forced value of ${attr.name}`, placeholder: attr.type, value: formatValue(attr.external ?? '') })
    // Enter in the field confirms, as in a form; the dialog focuses its button first, then the field takes it.
    input.addEventListener('keydown', (e) => {
      if ((e as KeyboardEvent).key === 'Enter') input.closest('dialog')?.querySelector<HTMLButtonElement>('[data-action=confirm]')?.click()
    })
    queueMicrotask(() => {
      input.focus()
      if (input instanceof HTMLInputElement) input.select()
    })
    const ok = await confirmDialog({
      title: `Force ${name}.${attr.name}`,
      body: [
        h('label', { class: 'field' }, h('span', {}, `Value clients see (${attr.type})`), input),
        h(
          'p',
          { class: 'muted small' },
          'Protocol adapters and connections present this value instead of the internal one, step after step, until Clear; the model goes on computing its own.',
        ),
      ],
      confirm: 'Force',
    })
    if (!ok) return
    let value: unknown
    try {
      value = parseInput(attr.type, input.value)
    } catch (err) {
      notices.error(err, `Value for ${name}.${attr.name}`)
      return
    }
    try {
      await api.call(node('instances', name, 'attributes', attr.name), 'force', { value })
      notices.info(`${name}.${attr.name} forced to ${formatValue(value)}`)
    } catch (err) {
      notices.error(err, `Forcing ${name}.${attr.name} failed`)
    }
  }

  /** Ends a forced value (the attribute's `release`): clients see what the model presents again. */
  async #clearForced(attr: LiveAttribute): Promise<void> {
    const { api, notices, name } = this.#o
    const path = node('instances', name, 'attributes', attr.name)
    try {
      await api.call(path, 'release')
      notices.info(`${name}.${attr.name}: forced value cleared`)
    } catch (err) {
      notices.error(err, `Clearing the forced value of ${name}.${attr.name} failed`)
    }
  }

  #syncPlotSwitches(): void {
    for (const [attrName, row] of this.#rows) if (row.plot) row.plot.checked = this.#o.chart.has(this.#o.name, attrName)
  }
}
