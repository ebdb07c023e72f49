/** Attributes and event handlers of an element built with `h`. */
export type Props = Record<string, string | number | boolean | null | undefined | EventListener>

/** A child of an element: nodes, text, or nothing (skipped), possibly nested. */
export type Child = Node | string | number | null | undefined | false | Child[]

/**
 * Builds a DOM element. `on<event>` props become listeners, `class` and data-/aria- attributes
 * are set as attributes, boolean `true` sets an empty attribute and false/null leave it out.
 * Text children are inserted as text, never parsed as HTML, so server values cannot inject markup.
 *
 * @example
 * h('button', { class: 'btn', onclick: () => run() }, 'Run')
 */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag)
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value)
    else if (key === 'value' && 'value' in el) (el as HTMLInputElement).value = String(value)
    else el.setAttribute(key, value === true ? '' : String(value))
  }
  append(el, children)
  return el
}

/**
 * Appends children (flattening arrays, skipping empty ones).
 *
 * @example
 * append(list, items.map((i) => h('li', {}, i)))
 */
export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    if (Array.isArray(child)) append(parent, child)
    else parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)))
  }
}

/**
 * Replaces all children of `parent`.
 *
 * @example
 * replace(main, h('p', {}, 'Loading…'))
 */
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild)
  append(parent, children)
}

/**
 * Sets an element's text only when it differs: live updates touch the DOM only for real changes.
 *
 * @example
 * setText(cell, '21.5')
 */
export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text
}
