import { isDeepStrictEqual } from 'node:util'
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node } from 'yaml'
import type { ErrorDetail } from '../errors.js'
import { formatPath } from './model-schema.js'

/**
 * The keys a definition text gives twice in one map, each as a detail with the path of the key,
 * where the second one is written and where the first one was: `attributes.k__rain: key
 * 'k__rain' given twice (first at line 31); the keys of a map must be unique`.
 *
 * The YAML parser only says "Map keys must be unique" at a position, which in a long file with a
 * pasted block leaves the reader to find the path by hand. With `differing: true` only the keys
 * whose two values differ are given (what a strict JSON file is refused for: a key repeated with
 * the same value is harmless there).
 *
 * @example
 * duplicateKeys('a:\n  x: 1\n  x: 2\n')
 * // [{ path: 'a.x', message: "key 'x' given twice (first at line 2); ...", line: 3, column: 3 }]
 */
export function duplicateKeys(text: string, options: { differing?: boolean } = {}): ErrorDetail[] {
  const lines = new LineCounter()
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: false, prettyErrors: false })
  const details: ErrorDetail[] = []
  const at = (node: Node | null | undefined): { line: number; col: number } => lines.linePos(node?.range?.[0] ?? 0)
  const walk = (node: unknown, path: Array<string | number>): void => {
    if (isSeq(node)) node.items.forEach((item, i) => walk(item, [...path, i]))
    if (!isMap(node)) return
    const seen = new Map<unknown, { key: Node; value: unknown }>()
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? pair.key.value : undefined
      const first = key === undefined ? undefined : seen.get(key)
      if (first && !(options.differing && isDeepStrictEqual(plain(first.value), plain(pair.value)))) {
        const firstAt = at(first.key)
        const here = at(pair.key as Node)
        const message = `key '${String(key)}' given twice (first at line ${firstAt.line}); the keys of a map must be unique`
        details.push({ path: formatPath([...path, String(key)]), message, line: here.line, column: here.col })
      }
      if (key !== undefined) {
        seen.set(key, { key: pair.key as Node, value: pair.value })
        walk(pair.value, [...path, String(key)])
      }
    }
  }
  walk(doc.contents, [])
  return details
}

/** A node as plain data, to compare two values given under one key. */
function plain(node: unknown): unknown {
  return isScalar(node) || isSeq(node) || isMap(node) ? node.toJSON() : node
}
