import { ApiClient, ApiError, SYSTEM } from './api-client.ts'
import { h, setText } from './dom.ts'

/**
 * Asks for the server's product key and checks it with one request before handing it on.
 * The key is never stored here; the caller keeps it for the browser session only.
 *
 * @example
 * document.body.append(loginView({ onKey: (key) => start(key) }).element)
 */
export function loginView(opts: { onKey: (key: string) => void; message?: string }): { element: HTMLElement } {
  const input = h('input', {
    class: 'input',
    type: 'password',
    name: 'product-key',
    autocomplete: 'current-password',
    placeholder: 'Product key',
    'aria-label': 'Product key',
    required: false,
  })
  const error = h('div', { class: 'login-error', role: 'alert' }, opts.message ?? '')
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault()
    const button = (e.currentTarget as HTMLFormElement).querySelector('button')
    if (button) button.disabled = true
    setText(error, '')
    const key = input.value.trim()
    try {
      await new ApiClient(key).get(SYSTEM)
      opts.onKey(key)
    } catch (err) {
      const status = err instanceof ApiError ? err.status : 0
      setText(
        error,
        status === 401 ? 'The server refused this key. Use the key the server was started with (--product-key or MIMIC_PRODUCT_KEY).' : (err as Error).message,
      )
      input.select()
    } finally {
      if (button) button.disabled = false
    }
  }
  const element = h(
    'div',
    { class: 'login' },
    h(
      'form',
      { class: 'login-card panel', onsubmit: submit },
      h('div', { class: 'brand brand-large' }, h('span', { class: 'brand-mark' }), 'Mimic'),
      h('p', { class: 'muted' }, 'Device-simulation dashboard. Enter the product key of this server.'),
      input,
      h('button', { class: 'btn btn-primary', type: 'submit', 'data-action': 'login' }, 'Connect'),
      error,
      h('p', { class: 'muted small' }, 'The key is kept for this browser tab only and sent to this server alone.'),
    ),
  )
  queueMicrotask(() => input.focus())
  return { element }
}
