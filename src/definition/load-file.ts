import { readFile } from 'node:fs/promises'
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml'
import type { ErrorDetail } from '../errors.js'
import { FloatMark } from './json-float.js'
import { isAttributeSpec } from './model-schema.js'
import { withContainerFloats } from './typed-json.js'
import { validateModel, validateSystem, type ModelCheck, type SystemDefinition } from './validate.js'
import { isRecord } from './is-record.js'

/** A definition file read from disk, with what it holds and every problem located by line:column. */
export interface LoadedDefinition {
  kind: 'system' | 'model'
  data: unknown
  details: ErrorDetail[]
}

/**
 * Parses YAML or JSON text (YAML is a superset of JSON, so one parser serves both and gives
 * positions for both). Syntax errors come back as details with line and column.
 *
 * @example
 * parseDefinitionText('models: {}\n').data // { models: {} }
 */
export function parseDefinitionText(text: string): { data: unknown; doc: Document | null; lines: LineCounter; details: ErrorDetail[] } {
  const lines = new LineCounter()
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false })
  if (doc.errors.length) {
    const details = doc.errors.map((e) => {
      const pos = e.linePos?.[0] ?? lines.linePos(e.pos[0])
      return { path: '', message: e.message.split('\n')[0]!, line: pos.line, column: pos.col }
    })
    return { data: undefined, doc: null, lines, details }
  }
  const data: unknown = doc.toJS({ maxAliasCount: 100 })
  keepContainerFloats(doc, data)
  return { data, doc, lines, details: [] }
}

/**
 * Gives the list, dict and `any` attributes of the parsed definition (a system, or one model)
 * their defaults with each integral float written as one (`1.0`, `1e3`) a `FloatMark`
 * (json-float.ts), read from the document's scalars: `samples: [1.0, 2.5]` starts as `[1.0, 2.5]`
 * and reads back so. A default that uses an alias stays as parsed.
 */
function keepContainerFloats(doc: Document, data: unknown): void {
  const graft = (model: unknown, at: Array<string | number>): void => {
    const marked: Record<string, unknown> = {}
    const attributes = isRecord(model) && isRecord(model.attributes) ? model.attributes : {}
    for (const [name, value] of Object.entries(attributes)) {
      const spec = isAttributeSpec(value)
      const node = doc.getIn([...at, 'attributes', name, ...(spec ? ['default'] : [])], true)
      const kept = markedJs(node)
      if (kept !== undefined) marked[name] = spec ? { default: kept } : kept
    }
    withContainerFloats(model, { attributes: { ...attributes, ...marked } })
  }
  if (looksLikeModel(data)) return graft(data, [])
  if (!isRecord(data) || !isRecord(data.models)) return
  for (const [name, model] of Object.entries(data.models)) graft(model, ['models', name])
}

/** A YAML node as JavaScript with integral floats marked; undefined for what it does not read (an alias, a tag). */
function markedJs(node: unknown): unknown {
  if (isScalar(node)) {
    const value = node.value
    return typeof value === 'number' && Number.isInteger(value) && /[.eE]/.test(node.source ?? '') ? new FloatMark(value) : value
  }
  if (isSeq(node)) {
    const items = node.items.map(markedJs)
    return items.includes(undefined) ? undefined : items
  }
  if (isMap(node)) {
    const out: Record<string, unknown> = {}
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? pair.key.value : undefined
      const value = markedJs(pair.value)
      if ((typeof key !== 'string' && typeof key !== 'number') || key === '<<' || value === undefined) return undefined
      Object.defineProperty(out, String(key), { value, enumerable: true, writable: true, configurable: true })
    }
    return out
  }
  return undefined
}

/**
 * Finds where a dotted fault path (`models.pt100.import.x.py.class`) points in a YAML document.
 * Keys may contain dots (file names), so at each mapping the longest key that prefixes the rest
 * of the path wins; when the path leads to something missing, the nearest existing parent is used.
 */
export function locate(doc: Document, lines: LineCounter, path: string): { line: number; column: number } | undefined {
  let node: unknown = doc.contents
  let rest = path
  let range = (node as Node | null)?.range
  // Where the last matched key is written: a missing key is reported at its parent's key.
  let keyRange = range
  while (rest && node) {
    if (isMap(node)) {
      let best: { key: string; value: unknown; keyNode: unknown } | undefined
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key)
        if (rest === key || rest.startsWith(`${key}.`) || rest.startsWith(`${key}[`)) {
          if (!best || key.length > best.key.length) best = { key, value: pair.value, keyNode: pair.key }
        }
      }
      if (!best) {
        range = keyRange
        break
      }
      rest = rest.slice(best.key.length).replace(/^\./, '')
      const target = (best.value as Node | null) ?? (best.keyNode as Node | null)
      keyRange = (best.keyNode as Node | null)?.range ?? keyRange
      range = (rest ? target?.range : keyRange) ?? range
      node = best.value
    } else if (isSeq(node)) {
      const m = /^\[(\d+)\]\.?/.exec(rest)
      if (!m) break
      const item = node.items[Number(m[1])] as Node | undefined
      if (!item) break
      rest = rest.slice(m[0].length)
      range = item.range ?? range
      keyRange = range
      node = item
    } else break
  }
  if (!range) return undefined
  const pos = lines.linePos(range[0])
  return { line: pos.line, column: pos.col }
}

/** Whether parsed data looks like a single model definition rather than a system. */
export function looksLikeModel(data: unknown): boolean {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return false
  const keys = Object.keys(data)
  return (
    !keys.some((k) => k === 'models' || k === 'instances' || k === 'connections') &&
    keys.some((k) => k === 'attributes' || k === 'import' || k === 'communication')
  )
}

/**
 * Reads and validates a system or model definition file, locating each problem in the text.
 *
 * @example
 * const { kind, details } = await loadDefinitionFile('examples/pt100/system.yaml')
 */
export async function loadDefinitionFile(file: string, check?: ModelCheck): Promise<LoadedDefinition> {
  const read = await readDefinitionText(file)
  if (read.problem) return { kind: 'system', data: undefined, details: [read.problem] }
  return checkDefinitionText(read.text, check)
}

/**
 * The text of a definition file, or why it cannot be read.
 *
 * @example
 * const { text, problem } = await readDefinitionText('system.yaml')
 */
export async function readDefinitionText(file: string): Promise<{ text: string; problem?: undefined } | { text?: undefined; problem: ErrorDetail }> {
  try {
    return { text: await readFile(file, 'utf8') }
  } catch (err) {
    return { problem: { path: '', message: `cannot read ${file}: ${(err as Error).message}` } }
  }
}

/** Validates definition text as a system (or a single model when it looks like one). */
export function checkDefinitionText(text: string, check?: ModelCheck): LoadedDefinition {
  const parsed = parseDefinitionText(text)
  if (parsed.details.length || !parsed.doc) return { kind: 'system', data: undefined, details: parsed.details }
  const data = parsed.data ?? {}
  const kind = looksLikeModel(data) ? 'model' : 'system'
  const result = kind === 'model' ? validateModel(data, check) : validateSystem(data, check)
  const details = result.ok
    ? []
    : result.details.map((d) => ({ ...d, ...(locateInExpression(parsed.doc!, parsed.lines, text, d) ?? locate(parsed.doc!, parsed.lines, d.path)) }))
  return { kind, data, details }
}

/**
 * For a problem inside an expression (`expressionLine`/`expressionColumn`, counted in the
 * expression's own text), where it is in the file: the expression's scalar gives the origin. In a
 * block scalar (`call: |`) the text starts on the next line at its indentation; a plain or quoted
 * one-line scalar starts where it is written (after the quote). Undefined when it cannot tell.
 */
function locateInExpression(doc: Document, lines: LineCounter, text: string, detail: ErrorDetail): { line: number; column: number } | undefined {
  const { expressionLine: exprLine, expressionColumn: exprColumn } = detail as ErrorDetail & { expressionLine?: number; expressionColumn?: number }
  if (exprLine === undefined || exprColumn === undefined) return undefined
  const keys = detail.path.split(/\.|(?=\[)/).map((k) => (/^\[\d+\]$/.test(k) ? Number(k.slice(1, -1)) : k))
  const node = doc.getIn(keys, true)
  if (!isScalar(node) || !node.range) return undefined
  const start = lines.linePos(node.range[0])
  if (node.type === 'BLOCK_LITERAL' || node.type === 'BLOCK_FOLDED') {
    const line = start.line + exprLine
    const content = text.split('\n')[line - 1] ?? ''
    const indent = content.length - content.trimStart().length
    return { line, column: indent + exprColumn }
  }
  if (exprLine !== 1) return { line: start.line, column: start.col }
  const quoted = node.type === 'QUOTE_DOUBLE' || node.type === 'QUOTE_SINGLE'
  return { line: start.line, column: start.col + (quoted ? 1 : 0) + exprColumn - 1 }
}

/** Normalises parsed system data (missing sections become empty). */
export function asSystemDefinition(data: unknown): SystemDefinition {
  const d = (data ?? {}) as Partial<SystemDefinition>
  return { models: d.models ?? {}, instances: d.instances ?? [], connections: d.connections ?? {} }
}
