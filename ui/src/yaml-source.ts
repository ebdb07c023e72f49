import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document } from 'yaml'

/** A problem of an edited text, located by its path in the value and, when found, line and column. */
export interface SourceProblem {
  path: string
  message: string
  line?: number
  column?: number
}

/** A YAML (or JSON) text parsed, with its syntax problems located. */
export interface ParsedSource {
  value: unknown
  problems: SourceProblem[]
  source: YamlSource
}

/**
 * A YAML text and where each part of its value is, so that a problem the server reports by path
 * (`attributes.level.default`, `actions[0].function`, `instances.f1.parameters.k`) can be shown
 * at its line and column. The server checks JSON bodies and knows nothing of the text the user
 * typed, so the mapping back to lines is made here, from the same YAML library the server reads
 * system files with.
 *
 * @example
 * const { value, problems, source } = YamlSource.parse('attributes:\n  x: { default: a }\n')
 * source.locate('attributes.x.default') // { line: 2, column: 17 }
 */
export class YamlSource {
  readonly #doc: Document.Parsed
  readonly #lines: LineCounter

  private constructor(doc: Document.Parsed, lines: LineCounter) {
    this.#doc = doc
    this.#lines = lines
  }

  static parse(text: string): ParsedSource {
    const lines = new LineCounter()
    const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true })
    const source = new YamlSource(doc, lines)
    const problems: SourceProblem[] = doc.errors.map((e) => {
      const at = lines.linePos(e.pos[0])
      return { path: '', message: e.message.split('\n')[0] ?? e.message, line: at.line, column: at.col }
    })
    let value: unknown = undefined
    if (!problems.length) {
      try {
        value = doc.toJS({ maxAliasCount: 100 })
      } catch (err) {
        problems.push({ path: '', message: (err as Error).message })
      }
    }
    return { value, problems, source }
  }

  /**
   * Line and column (1-based) of the value at `path` under `prefix`, or of the deepest part of it
   * that exists; undefined when not even the first name is in the text.
   */
  locate(path: string, prefix: string[] = []): { line: number; column: number } | undefined {
    let current: unknown = this.#doc.contents
    let found: unknown = undefined
    const segments = [...prefix, ...splitPath(path)]
    let i = 0
    while (i < segments.length && current) {
      const step = descend(current, segments, i)
      if (!step) break
      current = step.node
      found = step.at
      i = step.next
    }
    const range = (found as { range?: [number, number, number] } | undefined)?.range
    if (!range) return undefined
    const at = this.#lines.linePos(range[0])
    return { line: at.line, column: at.col }
  }

  /** Each problem with its line and column added where the text has its path. */
  place(problems: Array<{ path: string; message: string; line?: number; column?: number }>, prefix: string[] = []): SourceProblem[] {
    return problems.map((p) => {
      if (p.line !== undefined) return { ...p }
      const at = this.locate(p.path, prefix) ?? (prefix.length ? this.locate(p.path) : undefined)
      return at ? { ...p, line: at.line, column: at.column } : { ...p }
    })
  }
}

/** `a.b[2].c` → ['a', 'b', '2', 'c']. */
function splitPath(path: string): string[] {
  const out: string[] = []
  for (const part of path.split('.')) {
    const m = /^([^[]*)((?:\[\d+\])*)$/.exec(part)
    if (!m) {
      out.push(part)
      continue
    }
    if (m[1]) out.push(m[1])
    for (const index of m[2]!.matchAll(/\[(\d+)\]/g)) out.push(index[1]!)
  }
  return out.filter((s) => s !== '')
}

/**
 * One step down from `node` along `segments[i..]`: a map key may itself hold dots (an import key
 * `extensions/x.py`), so the longest run of segments that names a key wins; in a list, a number is
 * an index and a name picks the entry that is a one-key map with that key (a system file's
 * `instances: [{name: model}]`).
 */
function descend(node: unknown, segments: string[], i: number): { node: unknown; at: unknown; next: number } | undefined {
  if (isMap(node)) {
    for (let k = segments.length; k > i; k--) {
      const key = segments.slice(i, k).join('.')
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === key)
      if (pair) return { node: pair.value, at: pair.value ?? pair.key, next: k }
    }
    return undefined
  }
  if (isSeq(node)) {
    const segment = segments[i]!
    if (/^\d+$/.test(segment)) {
      const item = node.items[Number(segment)]
      return item ? { node: item, at: item, next: i + 1 } : undefined
    }
    for (const item of node.items) {
      if (!isMap(item)) continue
      const pair = item.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === segment)
      if (pair) return { node: pair.value, at: pair.value ?? pair.key, next: i + 1 }
    }
  }
  return undefined
}
