import { node, type ApiClient } from './api-client.ts'
import { confirmDialog } from './confirm-dialog.ts'
import { h } from './dom.ts'
import type { Notices } from './notices.ts'

const WHAT = {
  model: { container: 'models', body: 'Its definition is removed. A model that instances still use cannot be deleted: delete those instances first.' },
  instance: {
    container: 'instances',
    body: 'It is stopped, its protocol listeners close and its values are gone. An instance that connections use cannot be deleted: delete those connections first.',
  },
} as const

/**
 * A *Delete* button for a model or an instance: asks first, then `DELETE models/<m>` or
 * `DELETE instances/<i>`; a refusal (409 while something still uses it) is shown with the
 * server's reason. `onDeleted` runs after the server confirmed.
 *
 * @example
 * deleteButton({ api, notices, kind: 'instance', name: 'tank_1', onDeleted: () => (location.hash = '#/') })
 */
export function deleteButton(opts: { api: ApiClient; notices: Notices; kind: 'model' | 'instance'; name: string; onDeleted: () => void }): HTMLButtonElement {
  const { api, notices, kind, name } = opts
  return h(
    'button',
    {
      class: 'btn btn-quiet btn-danger-text',
      'data-action': `delete-${kind}`,
      title: `Delete ${kind} ${name}`,
      onclick: async () => {
        const ok = await confirmDialog({ title: `Delete ${kind} ${name}?`, body: h('p', {}, WHAT[kind].body), confirm: 'Delete', danger: true })
        if (!ok) return
        try {
          await api.delete(node(WHAT[kind].container, name))
          notices.info(`${kind === 'model' ? 'Model' : 'Instance'} ${name} deleted`)
          opts.onDeleted()
        } catch (err) {
          notices.error(err, `Deleting ${kind} ${name} failed`)
        }
      },
    },
    'Delete',
  )
}
