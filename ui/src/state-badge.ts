import { h, setText } from './dom.ts'

/**
 * A state label (RUNNING, PREPARED, …) coloured by state.
 *
 * @example
 * const badge = stateBadge('RUNNING')
 * updateBadge(badge, 'STOPPED')
 */
export function stateBadge(state: string): HTMLElement {
  const el = h('span', { class: 'badge' })
  updateBadge(el, state)
  return el
}

/** Changes a badge made by `stateBadge` (touches the DOM only on a change). */
export function updateBadge(el: HTMLElement, state: string): void {
  const text = state || '…'
  if (el.textContent === text) return
  setText(el, text)
  el.dataset.state = state.toLowerCase()
}
