import { readFile } from 'node:fs/promises'
import { extname } from 'node:path'
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node, type YAMLError } from 'yaml'
import type { ErrorDetail } from '../errors.js'
import { duplicateKeys } from './duplicate-keys.js'
import { parseJsonKeepingFloats } from '../values/decode.js'
import { withInstanceFloats, withModelFloats, withSystemModelFloats } from '../values/definitions.js'
import { FloatMark, plainJson } from '../values/number.js'
import { isAttributeSpec } from './model-schema.js'
import { validateModel, validateSystem, type ModelCheck, type SystemDefinition } from './validate.js'
import { isRecord } from './is-record.js'

/** A definition file read from disk, with what it holds and every problem located by line:column. */
export interface LoadedDefinition {
  kind: 'system' | 'model'
  data: unknown
  details: ErrorDetail[]
}

/**
 * How definition text is read: `yaml` (also what JSON text is, as YAML is a superset of JSON) or
 * `json`, strict JSON, for a `.json` file: a trailing comma or a comment there is an error, not
 * YAML that happens to parse.
 */
export type DefinitionFormat = 'yaml' | 'json'

/** Options of {@link checkDefinitionText} and {@link parseDefinitionText}. */
export interface DefinitionTextOptions {
  /** `yaml` unless told; `loadDefinitionFile` takes `json` for a `.json` file. */
  format?: DefinitionFormat | undefined
}

/**
 * The format of a definition file by its name: `json` for `.json` (any case), else `yaml`.
 *
 * @example
 * definitionFormat('plant.json') // 'json'
 * definitionFormat('plant.yml') // 'yaml'
 */
export function definitionFormat(file: string): DefinitionFormat {
  return extname(file).toLowerCase() === '.json' ? 'json' : 'yaml'
}

/**
 * Parses YAML or JSON text. Syntax errors come back as details with line and column. The YAML
 * parser reads both formats and gives the positions problems are located by; strict JSON is first
 * parsed as JSON.
 *
 * @example
 * parseDefinitionText('models: {}\n').data // { models: {} }
 * parseDefinitionText('{"models": {},}', { format: 'json' }).details // [{ line: 1, column: 15, message: 'invalid JSON: ...' }]
 */
export function parseDefinitionText(
  text: string,
  options: DefinitionTextOptions = {},
): { data: unknown; doc: Document | null; lines: LineCounter; details: ErrorDetail[] } {
  const lines = new LineCounter()
  if (options.format === 'json') return parseJsonDefinition(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text, lines)
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false })
  if (doc.errors.length) {
    const detail = (e: YAMLError): ErrorDetail => {
      const pos = e.linePos?.[0] ?? lines.linePos(e.pos[0])
      return { path: '', message: e.message.split('\n')[0]!, line: pos.line, column: pos.col }
    }
    const repeated = doc.errors.filter((e) => e.code === 'DUPLICATE_KEY')
    // Keys given twice come back with their paths; one the walk cannot name (a key that is a
    // list or a map) keeps the parser's own words.
    const named = repeated.length ? duplicateKeys(text) : []
    const details = [...doc.errors.filter((e) => e.code !== 'DUPLICATE_KEY').map(detail), ...(named.length ? named : repeated.map(detail))]
    details.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0))
    return { data: undefined, doc: null, lines, details }
  }
  const data: unknown = doc.toJS({ maxAliasCount: 100 })
  keepModelFloats(doc, data)
  return { data, doc, lines, details: [] }
}

/**
 * Strict JSON text (a byte order mark already removed): the data as JSON.parse reads it, with the
 * integral floats of list, dict and `any` defaults kept as the YAML path keeps them
 * (`parseJsonKeepingFloats`); a syntax error, or a key given twice with two values, as one detail
 * with line and column. The YAML document of the text only locates later problems; without one
 * (valid JSON that YAML reads otherwise) they come without a position.
 */
function parseJsonDefinition(text: string, lines: LineCounter): { data: unknown; doc: Document | null; lines: LineCounter; details: ErrorDetail[] } {
  let data: unknown
  let marked: unknown
  try {
    // Parsed once, by lossless-json (src/values/decode.ts): it says where the text goes wrong in
    // every case (JSON.parse not always), refuses duplicate keys, which the YAML path refuses
    // too, and keeps `2.0` apart from `2`; `data` is its plain view.
    marked = parseJsonKeepingFloats(text, 'refuse')
    data = plainJson(marked)
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err)
    if (message.startsWith('Duplicate key')) {
      const named = duplicateKeys(text, { differing: true })
      if (named.length) return { data: undefined, doc: null, lines, details: named }
    }
    const position = /at position (\d+)$/.exec(message)
    const at = position ? jsonPosition(text, Number(position[1])) : {}
    return { data: undefined, doc: null, lines, details: [{ path: '', message: `invalid JSON: ${message.replace(/ at position \d+$/, '')}`, ...at }] }
  }
  if (marked !== data) {
    if (looksLikeModel(data)) withModelFloats(data, marked)
    else withSystemModelFloats(data, marked)
  }
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false })
  return { data, doc: doc.errors.length ? null : doc, lines, details: [] }
}

/** Line and column (from 1) of a character offset in a text. */
function jsonPosition(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset)
  return { line: before.split('\n').length, column: offset - before.lastIndexOf('\n') }
}

/**
 * Gives the parsed definition (a system, or one model) the integral floats written as one (`1.0`,
 * `1e3`) as `FloatMark`s (src/values/number.ts) where `withModelFloats` takes them, read from the
 * document's scalars: the defaults of list, dict and `any` attributes (`samples: [1.0, 2.5]`
 * starts as `[1.0, 2.5]` and reads back so), the behaviour sections, the hooks of attributes and
 * meta parameter defaults (`value: 2.0` is a float to an expression), and the `parameters` an
 * instance gives. A part written with a merge key (`<<`) stays as parsed.
 */
function keepModelFloats(doc: Document, data: unknown): void {
  const graft = (model: unknown, at: Array<string | number>): void => {
    if (!isRecord(model)) return
    const kept = (...path: Array<string | number>): unknown => markedJs(doc.getIn([...at, ...path], true), doc)
    const marked: Record<string, unknown> = {}
    const attributes = isRecord(model.attributes) ? model.attributes : {}
    for (const [name, value] of Object.entries(attributes)) {
      const spec = isAttributeSpec(value)
      const given = spec ? kept('attributes', name, 'default') : kept('attributes', name)
      if (spec) marked[name] = { default: given ?? value.default, ...(Object.hasOwn(value, 'hooks') ? { hooks: kept('attributes', name, 'hooks') } : {}) }
      else if (given !== undefined) marked[name] = given
    }
    const sections = Object.fromEntries(
      ['actions', 'distortions', 'conditions', 'if_chain', 'scenarios', 'hooks', 'meta_parameters'].map((key) => [key, kept(key)]),
    )
    withModelFloats(model, { ...sections, attributes: { ...attributes, ...marked } })
  }
  if (looksLikeModel(data)) return graft(data, [])
  if (!isRecord(data)) return
  if (isRecord(data.models)) for (const [name, model] of Object.entries(data.models)) graft(model, ['models', name])
  if (data.instances !== undefined) withInstanceFloats(data.instances, markedJs(doc.getIn(['instances'], true), doc))
}

/**
 * A YAML node as JavaScript with integral floats marked; undefined for what it does not read (a
 * merge key, a key that is not a string or a number). Aliases are followed, as `toJS` follows
 * them, within a budget of alias expansions per document part: past it (a document that expands
 * aliases of aliases) the part stays as parsed.
 */
function markedJs(node: unknown, doc: Document, budget = { aliases: 1000 }): unknown {
  if (node === null) return null
  if (isAlias(node)) return --budget.aliases < 0 ? undefined : markedJs(node.resolve(doc), doc, budget)
  if (isScalar(node)) {
    const value = node.value
    return typeof value === 'number' && Number.isInteger(value) && FLOAT_TEXT.test(node.source ?? '') ? new FloatMark(value) : value
  }
  if (isSeq(node)) {
    const items = node.items.map((item) => markedJs(item, doc, budget))
    return items.includes(undefined) ? undefined : items
  }
  if (isMap(node)) {
    const out: Record<string, unknown> = {}
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? pair.key.value : undefined
      const value = markedJs(pair.value, doc, budget)
      if ((typeof key !== 'string' && typeof key !== 'number') || key === '<<' || value === undefined) return undefined
      Object.defineProperty(out, String(key), { value, enumerable: true, writable: true, configurable: true })
    }
    return out
  }
  return undefined
}

/** How a YAML float is written: with a point or an exponent (`2.0`, `1e3`), not in hex (`0x1E`). */
const FLOAT_TEXT = /^[-+]?(\d+\.\d*|\.\d+|\d+(?=[eE]))([eE][-+]?\d+)?$/

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
    !keys.some((k) => k === 'models' || k === 'instances' || k === 'connections' || k === 'generate') &&
    keys.some((k) => k === 'attributes' || k === 'import' || k === 'communication')
  )
}

/**
 * Reads and validates a system or model definition file, locating each problem in the text. A
 * `.json` file is read as strict JSON, any other as YAML.
 *
 * @example
 * const { kind, details } = await loadDefinitionFile('examples/pt100/system.yaml')
 */
export async function loadDefinitionFile(file: string, check?: ModelCheck): Promise<LoadedDefinition> {
  const read = await readDefinitionText(file)
  if (read.problem) return { kind: 'system', data: undefined, details: [read.problem] }
  return checkDefinitionText(read.text, check, { format: definitionFormat(file) })
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

/**
 * Validates definition text as a system (or a single model when it looks like one); YAML unless
 * `options.format` says `json`.
 *
 * @example
 * checkDefinitionText('{"models": {}}', undefined, { format: 'json' }).details // []
 */
export function checkDefinitionText(text: string, check?: ModelCheck, options: DefinitionTextOptions = {}): LoadedDefinition {
  const parsed = parseDefinitionText(text, options)
  if (parsed.details.length) return { kind: 'system', data: undefined, details: parsed.details }
  const data = parsed.data ?? {}
  const kind = looksLikeModel(data) ? 'model' : 'system'
  const result = kind === 'model' ? validateModel(data, check) : validateSystem(data, check)
  const doc = parsed.doc
  const details = result.ok
    ? []
    : result.details.map((d) => (doc ? { ...d, ...(locateInExpression(doc, parsed.lines, text, d) ?? locate(doc, parsed.lines, d.path)) } : d))
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
  return {
    models: d.models ?? {},
    instances: d.instances ?? [],
    connections: d.connections ?? {},
    ...(d.generate !== undefined ? { generate: d.generate } : {}),
  }
}
