import { h, replace } from './dom.ts'
import type { LiveStore } from './live-store.ts'
import { stateBadge, updateBadge } from './state-badge.ts'

/**
 * The side bar: the system tree (instances with their live state, models, connections) and the
 * links to the overview and snapshots. Entries are links to hash routes (`#/instance/<name>`).
 *
 * @example
 * const tree = new TreeView(store)
 * tree.select('#/instance/tank_sensor')
 */
export class TreeView {
  readonly element: HTMLElement
  readonly #store: LiveStore
  readonly #body: HTMLElement
  readonly #badges = new Map<string, HTMLElement>()
  #current = ''

  constructor(store: LiveStore) {
    this.#store = store
    this.#body = h('div', { class: 'tree-body' })
    this.element = h('nav', { class: 'sidebar', 'aria-label': 'System tree' }, this.#body)
    store.onStructure(() => this.#render())
    store.onFrame((frame) => {
      for (const [name, delta] of Object.entries(frame.instances ?? {})) {
        const badge = this.#badges.get(name)
        if (badge && delta.state !== undefined) updateBadge(badge, delta.state)
      }
    })
    this.#render()
  }

  /** Marks the entry of the current route. */
  select(route: string): void {
    this.#current = route
    for (const link of this.#body.querySelectorAll<HTMLAnchorElement>('a[href]')) link.classList.toggle('selected', link.getAttribute('href') === route)
  }

  #render(): void {
    const s = this.#store.structure
    this.#badges.clear()
    const link = (href: string, ...content: Array<Node | string>): HTMLElement => h('a', { href, class: 'tree-item' }, ...content)
    const section = (title: string, count: number | null, items: HTMLElement[], emptyText: string): HTMLElement =>
      h(
        'section',
        { class: 'tree-section' },
        h('h3', { class: 'tree-heading' }, title, count === null ? null : h('span', { class: 'count' }, String(count))),
        items.length ? h('div', { class: 'tree-list' }, items) : h('div', { class: 'tree-empty' }, emptyText),
      )
    const instances = (s?.instances ?? []).map((i) => {
      const badge = stateBadge(this.#store.instance(i.name)?.state ?? '')
      this.#badges.set(i.name, badge)
      return link(`#/instance/${encodeURIComponent(i.name)}`, h('span', { class: 'tree-name' }, i.name), h('span', { class: 'tree-sub' }, i.model), badge)
    })
    const models = (s?.models ?? []).map((m) =>
      link(
        `#/model/${encodeURIComponent(m.name)}`,
        h('span', { class: 'tree-name' }, m.name),
        h('span', { class: 'tree-sub' }, `${m.instances.length} instance${m.instances.length === 1 ? '' : 's'}`),
      ),
    )
    const connections = (s?.connections ?? []).map((c) =>
      link(
        `#/connection/${encodeURIComponent(c.name)}`,
        h('span', { class: 'tree-name' }, c.name),
        h('span', { class: 'tree-sub' }, `${c.from.replace('.attributes.', '.')} → ${c.to.replace('.attributes.', '.')}`),
      ),
    )
    replace(
      this.#body,
      h(
        'div',
        { class: 'tree-section tree-top' },
        link('#/', h('span', { class: 'tree-name' }, 'Overview')),
        link('#/connections', h('span', { class: 'tree-name' }, 'Connections')),
        link('#/snapshots', h('span', { class: 'tree-name' }, 'Snapshots')),
        link('#/logs', h('span', { class: 'tree-name' }, 'Logs')),
      ),
      section('Instances', s ? s.instances.length : null, instances, s ? 'No instances' : 'Loading…'),
      section('Models', s ? s.models.length : null, models, s ? 'No models' : 'Loading…'),
      section('Connections', s ? s.connections.length : null, connections, s ? 'No connections' : 'Loading…'),
    )
    this.select(this.#current)
  }
}
