/** A main-area view: its element, and what to release when another view replaces it. */
export interface View {
  readonly element: HTMLElement
  dispose(): void
  /** Instances whose values the view needs from the event stream. */
  readonly instances: string[]
}

/**
 * Runs an async action with its button disabled, so a double click cannot send it twice.
 *
 * @example
 * h('button', { onclick: (e) => busy(e, () => api.call(path, 'run')) }, 'Run')
 */
export async function busy(event: Event, action: () => Promise<unknown>): Promise<void> {
  const button = event.currentTarget instanceof HTMLButtonElement ? event.currentTarget : null
  if (button) button.disabled = true
  try {
    await action()
  } finally {
    if (button) button.disabled = false
  }
}

/**
 * Runs a form's async action with its submit buttons disabled, so Enter pressed twice sends it once.
 *
 * @example
 * h('form', { onsubmit: (e) => { e.preventDefault(); void submitting(e, save) } })
 */
export async function submitting(event: Event, action: () => Promise<unknown>): Promise<void> {
  const form = event.currentTarget instanceof HTMLFormElement ? event.currentTarget : null
  const buttons = [...(form?.querySelectorAll<HTMLButtonElement>('button[type=submit]') ?? [])]
  for (const b of buttons) b.disabled = true
  try {
    await action()
  } finally {
    for (const b of buttons) b.disabled = false
  }
}
