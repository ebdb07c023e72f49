import { ValidationError } from '../errors.js'

/**
 * One CSV line as cells (RFC 4180 quoting: `"a, b"`, `""` for a quote inside; a quoted value does
 * not span lines); throws a ValidationError saying what is wrong, which callers give with the line. Written
 * here: register sheets and recorded series are line-oriented, and a problem must name its line,
 * which a whole-file CSV parser would not let the callers do.
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
