import { h, replace } from './dom.ts'
import type { SourceProblem } from './yaml-source.ts'

/**
 * The problems of an edited text, listed under the editor: `line:col path: message`. A problem
 * with a line is a button that puts the cursor on that line of the editor.
 *
 * @example
 * showProblems(list, problems, textarea)
 */
export function showProblems(list: HTMLElement, problems: SourceProblem[], editor?: HTMLTextAreaElement): void {
  list.hidden = !problems.length
  replace(
    list,
    problems.map((p) => {
      const where = p.line !== undefined ? `${p.line}:${p.column ?? 1}` : ''
      const text = [h('code', { class: 'problem-path' }, p.path || '(text)'), ' ', h('span', {}, p.message)]
      return h(
        'li',
        { 'data-problem-path': p.path, 'data-line': p.line ?? null },
        where && editor
          ? h('button', { type: 'button', class: 'problem-where mono', title: 'Go to this line', onclick: () => goTo(editor, p.line!, p.column ?? 1) }, where)
          : where
            ? h('span', { class: 'problem-where mono' }, where)
            : null,
        ' ',
        text,
      )
    }),
  )
}

/** Puts the cursor of `editor` at line:column and scrolls it there. */
function goTo(editor: HTMLTextAreaElement, line: number, column: number): void {
  const lines = editor.value.split('\n')
  let offset = 0
  for (let i = 0; i < line - 1 && i < lines.length; i++) offset += lines[i]!.length + 1
  offset += Math.max(0, column - 1)
  editor.focus()
  editor.setSelectionRange(offset, offset)
  const lineHeight = parseFloat(getComputedStyle(editor).lineHeight) || 18
  editor.scrollTop = Math.max(0, (line - 3) * lineHeight)
}
