/**
 * The model language's reference forms (`$in(a)`, `#ext(a)`, `$attr(timer.time)`, `$(path)`,
 * `$param(p)`, ...) are not Python: `$` is no Python character and `#` starts a comment. So
 * before the Python grammar sees an expression, this small lexer, which knows only those forms and
 * Python's string literals (to leave their text alone), swaps each for a placeholder name the
 * compiler maps back. Everything else is left to the real Python grammar.
 *
 * @example
 * const { text, references } = replaceReferences('$in(v) * #ext(i)')
 * // text: '__mimic_ref_0 * __mimic_ref_1', references[1]: { kind: 'external', target: 'i', ... }
 */

/** What a reference reads. */
export type ReferenceKind = 'internal' | 'external' | 'output' | 'property' | 'lookup' | 'param' | 'timer'

/**
 * A reference found in an expression. `lookup` is `$(path)` (a path naming nothing gives None),
 * `property` is `$attr(path)`; a bare attribute name is an `internal` reference with `bare: true`.
 */
export interface Reference {
  kind: ReferenceKind
  /** The name or path inside the parentheses, trimmed (`..enable`, `~.timer.default_step`). */
  target: string
  /** The reference as written. */
  text: string
  bare?: boolean
}

/** The prefix of placeholder names; names starting with `_` are refused in user text, so no clash. */
export const PLACEHOLDER_PREFIX = '__mimic_ref_'

const FORMS: ReadonlyArray<readonly [string, ReferenceKind]> = [
  ['$param(', 'param'],
  ['$attr(', 'property'],
  ['$ext(', 'external'],
  ['$out(', 'output'],
  ['$in(', 'internal'],
  ['$(', 'lookup'],
  ['#external(', 'external'],
  ['#internal(', 'internal'],
  ['#attr(', 'internal'],
  ['#ext(', 'external'],
  ['#out(', 'external'],
  ['#in(', 'internal'],
]

/** One swap, to map positions in the rewritten text back to the source. */
interface Swap {
  from: number
  to: number
  sourceFrom: number
  sourceTo: number
}

/** The rewritten text, its references and a map from its offsets back to the source's. */
export interface ReplacedReferences {
  text: string
  references: Reference[]
  /** Offset in `text` -> offset in the source. */
  sourceOffset(offset: number): number
  /** A placeholder name -> its reference. */
  byPlaceholder: ReadonlyMap<string, Reference>
  /** Problems (an unclosed reference) as [source offset, message]. */
  problems: Array<[number, string]>
}

const STRING_START = /^([rRbBuUfF]{0,2})('''|"""|'|")/

/**
 * Replaces the reference forms in `source` by placeholder names.
 *
 * @example
 * replaceReferences('max(0, $in(level))').text // 'max(0, __mimic_ref_0)'
 */
export function replaceReferences(source: string): ReplacedReferences {
  const references: Reference[] = []
  const byText = new Map<string, number>()
  const byPlaceholder = new Map<string, Reference>()
  const swaps: Swap[] = []
  const problems: Array<[number, string]> = []
  let out = ''
  let i = 0
  /** Replaces the reference that starts at `i`, if one does; false when none does. */
  const reference = (): boolean => {
    const form = FORMS.find(([prefix]) => source.startsWith(prefix, i))
    if (form === undefined) return false
    const [prefix, kind] = form
    const close = source.indexOf(')', i + prefix.length)
    if (close < 0) {
      problems.push([i, `unclosed reference ${prefix}...`])
      out += source.slice(i)
      i = source.length
      return true
    }
    const text = source.slice(i, close + 1)
    const target = source.slice(i + prefix.length, close).trim()
    const key = `${kind}\u0000${target}`
    let index = byText.get(key)
    if (index === undefined) {
      index = references.length
      byText.set(key, index)
      references.push({ kind, target, text })
    }
    const name = PLACEHOLDER_PREFIX + index
    byPlaceholder.set(name, references[index] as Reference)
    swaps.push({ from: out.length, to: out.length + name.length, sourceFrom: i, sourceTo: close + 1 })
    out += name
    i = close + 1
    return true
  }
  while (i < source.length) {
    const ch = source[i] ?? ''
    // A Python string literal: copied as is. In an f-string, references in its replacement fields
    // (`{$in(x)}`) are replaced and the rest is copied; its closing quote ends it, as in Python
    // 3.11, where a replacement field cannot hold the f-string's own quote.
    if (/[rRbBuUfF'"]/.test(ch) && (i === 0 || !/\w/.test(source[i - 1] ?? ''))) {
      const m = STRING_START.exec(source.slice(i, i + 5))
      if (m !== null) {
        const quote = m[2] ?? "'"
        const raw = /[rR]/.test(m[1] ?? '')
        const formatted = /[fF]/.test(m[1] ?? '')
        out += source.slice(i, i + m[0].length)
        i += m[0].length
        let depth = 0
        while (i < source.length && !source.startsWith(quote, i)) {
          const c = source[i] ?? ''
          if (formatted && depth > 0 && (c === '$' || c === '#') && reference()) continue
          if (formatted) {
            if ((c === '{' || c === '}') && source[i + 1] === c && depth === 0) {
              out += c + c
              i += 2
              continue
            }
            if (c === '{') depth++
            else if (c === '}' && depth > 0) depth--
          }
          const step = !raw && c === '\\' ? 2 : 1
          out += source.slice(i, i + step)
          i += step
        }
        out += source.slice(i, i + quote.length)
        i += quote.length
        continue
      }
    }
    if ((ch === '$' || ch === '#') && reference()) continue
    out += ch
    i++
  }
  const sourceOffset = (offset: number): number => {
    let delta = 0
    for (const s of swaps) {
      if (offset < s.from) break
      if (offset < s.to) return s.sourceFrom
      delta = s.sourceTo - s.to
    }
    return offset + delta
  }
  return { text: out, references, sourceOffset, byPlaceholder, problems }
}
