import { h, type Child } from './dom.ts'

/**
 * Asks before something that cannot be undone. Resolves true when confirmed; Escape, the
 * backdrop and Cancel resolve false.
 *
 * @example
 * if (await confirmDialog({ title: 'Load snapshot?', body: 'This replaces …', confirm: 'Load' })) load()
 */
export function confirmDialog(opts: { title: string; body: Child; confirm: string; danger?: boolean }): Promise<boolean> {
  return new Promise((resolve) => {
    const dialog = h('dialog', { class: 'dialog', 'aria-label': opts.title })
    const finish = (answer: boolean): void => {
      dialog.close()
      dialog.remove()
      resolve(answer)
    }
    const ok = h('button', { class: `btn ${opts.danger ? 'btn-danger' : 'btn-primary'}`, 'data-action': 'confirm', onclick: () => finish(true) }, opts.confirm)
    dialog.append(
      h('h2', { class: 'dialog-title' }, opts.title),
      h('div', { class: 'dialog-body' }, opts.body),
      h('div', { class: 'dialog-actions' }, h('button', { class: 'btn', 'data-action': 'cancel', onclick: () => finish(false) }, 'Cancel'), ok),
    )
    dialog.addEventListener('cancel', (e) => {
      e.preventDefault()
      finish(false)
    })
    dialog.addEventListener('click', (e) => {
      if (e.target === dialog) finish(false)
    })
    document.body.append(dialog)
    dialog.showModal()
    ok.focus()
  })
}
