import { ValidationError } from '../errors.js'

/**
 * One CSV line as cells (RFC 4180 quoting: `"a, b"`, `""` for a quote inside; a quoted value does
 * not span lines). Written here: the sheets and recordings are line-oriented, and problems must
 * name their line, which the callers do.
 *
 * @example
 * csvLine('a,"b, c",d') // ['a', 'b, c', 'd']
 */
export function csvLine(text: string, separator: ',' | ';' = ','): string[] {
  const cells: string[] = []
  let i = 0
  for (;;) {
    if (text[i] === '"') {
      let value = ''
      i++
      for (;;) {
        const q = text.indexOf('"', i)
        if (q < 0) throw new ValidationError('a quoted value is not closed on its line')
        value += text.slice(i, q)
        if (text[q + 1] === '"') {
          value += '"'
          i = q + 2
          continue
        }
        i = q + 1
        break
      }
      cells.push(value)
      if (i >= text.length) return cells
      if (text[i] !== separator) throw new ValidationError(`a quoted value must be followed by '${separator}' (cell ${cells.length})`)
      i++
    } else {
      const next = text.indexOf(separator, i)
      if (next < 0) {
        cells.push(text.slice(i))
        return cells
      }
      cells.push(text.slice(i, next))
      i = next + 1
    }
  }
}

/**
 * A value as a CSV cell: quoted when it holds the separator, a quote or a line break.
 *
 * @example
 * csvCell('a, b') // '"a, b"'
 */
export function csvCell(value: unknown): string {
  const text =
    typeof value === 'string' ? value : value === undefined || value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value)
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}
