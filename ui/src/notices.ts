import { ApiError } from './api-client.ts'
import { append, h } from './dom.ts'

const INFO_MS = 4000
const MAX_NOTICES = 6

/**
 * Messages in the corner of the page: errors stay until dismissed and show the fault's details
 * (every problem with its path, the status, the component and the correlation id), so a refused
 * request is never a silent or blank page. Short confirmations fade on their own.
 *
 * @example
 * notices.error(err, 'Setting temperature failed')
 * notices.info('Snapshot saved')
 */
export class Notices {
  readonly element: HTMLElement

  constructor() {
    this.element = h('div', { class: 'notices', role: 'region', 'aria-live': 'polite', 'aria-label': 'Messages' })
  }

  info(message: string): void {
    // One confirmation at a time: a row of "done" cards would bury the errors that matter.
    for (const old of this.element.querySelectorAll('.notice-info')) old.remove()
    const card = h('div', { class: 'notice notice-info', role: 'status' }, h('div', { class: 'notice-message' }, message))
    this.#add(card)
    window.setTimeout(() => card.remove(), INFO_MS)
  }

  /** Shows an error; `context` says what the user was doing. */
  error(err: unknown, context?: string): void {
    const card = h('div', { class: 'notice notice-error', role: 'alert' })
    const close = h('button', { class: 'notice-close', title: 'Dismiss', 'aria-label': 'Dismiss', onclick: () => card.remove() }, '×')
    const title = context ?? 'Request failed'
    if (err instanceof ApiError) {
      const fault = err.fault
      const status = err.status ? `${err.status}${fault ? ` ${fault.error.type}` : ''}` : 'No connection'
      const where = fault?.component?.path ? ` · ${fault.action} ${fault.component.path}` : ''
      append(card, [
        close,
        h('div', { class: 'notice-title' }, title),
        h('div', { class: 'notice-meta' }, `${status}${where}`),
        h('div', { class: 'notice-message' }, err.message),
        err.details.length
          ? h(
              'ul',
              { class: 'notice-details' },
              err.details.map((d) =>
                h(
                  'li',
                  {},
                  d.path ? h('code', {}, d.path + (d.line ? ` (${d.line}:${d.column ?? 0})` : '')) : null,
                  d.path ? ' ' : null,
                  h('span', { class: 'detail-text' }, d.message),
                ),
              ),
            )
          : null,
        fault ? h('div', { class: 'notice-meta' }, `correlation id ${fault.correlation_id}`) : h('div', { class: 'notice-meta' }, err.request),
      ])
    } else {
      card.append(close, h('div', { class: 'notice-title' }, title), h('div', { class: 'notice-message' }, err instanceof Error ? err.message : String(err)))
    }
    this.#add(card)
  }

  #add(card: HTMLElement): void {
    this.element.prepend(card)
    while (this.element.children.length > MAX_NOTICES) this.element.lastElementChild?.remove()
  }
}
