/**
 * A JSON text that carries Python values, parsed once: the value as parsed keeping Python's
 * numbers (decode.ts), and its plain view (`plainJson`) for everything that is not a Python value
 * there (an envelope, a schema-checked definition). Which parts of a write body are Python values
 * depends on what is written; each node of the tree says so with its `bodyValues`, read by
 * `bodyFor`.
 */
import { isRecord } from '../definition/is-record.js'
import { mayHoldFloats, parseJsonKeepingFloats } from './decode.js'
import { withInstanceFloats, withModelFloats, withSystemModelFloats } from './definitions.js'
import { plainJson } from './number.js'

/**
 * Where a write body to a node holds Python values whose numbers keep their type:
 *
 * - `none`: nowhere, the body is read plain;
 * - `values`: everywhere, the body is attribute values (`{"value": v}`, `{"<attr>": v}`);
 * - `model`: a model definition under `definition` or `value` (`withModelFloats`);
 * - `models`: a map of model definitions;
 * - `instances`: instance entries, in their `parameters` (`withInstanceFloats`);
 * - `system`: a system definition (models and instances).
 */
export type BodyValues = 'none' | 'values' | 'model' | 'models' | 'instances' | 'system'

/** The value each plain view was made from, where the two differ (see `parseValueText`). */
const MARKED = new WeakMap<object, unknown>()

/**
 * Parses JSON text once and answers its plain view; the value with its marks stays reachable
 * from it through `markedOf`. A text without a number JSON.parse cannot keep is parsed by
 * JSON.parse, and both views are that one value. Throws JSON.parse's SyntaxError for bad text.
 *
 * @example
 * const body = parseValueText('{"value": [2.0]}') // { value: [2] }
 * markedOf(body) // { value: [FloatMark(2)] }
 */
export function parseValueText(text: string): unknown {
  // Without a number JSON.parse cannot keep, its value is both views (and nothing recursive
  // walks it here: a body nested thousands deep is refused by its reader, not by the stack).
  if (!mayHoldFloats(text)) return JSON.parse(text)
  let marked: unknown
  try {
    marked = parseJsonKeepingFloats(text)
  } catch (err) {
    // JSON.parse's message (with its position) is the one clients read, whichever parser ran;
    // text too deep for the recursive parser is read plain, for its reader to refuse.
    const plain: unknown = JSON.parse(text)
    if (err instanceof RangeError) return plain
    throw err
  }
  let plain: unknown
  try {
    plain = plainJson(marked)
  } catch (err) {
    if (err instanceof RangeError) return JSON.parse(text)
    throw err
  }
  if (plain !== marked) MARKED.set(plain as object, marked)
  return plain
}

/**
 * The value a plain view from `parseValueText` was made from, with its marks: the view itself
 * when its text held none.
 */
export function markedOf(plain: unknown): unknown {
  return plain !== null && typeof plain === 'object' ? (MARKED.get(plain) ?? plain) : plain
}

/**
 * The body a node takes for a write: the plain view with the Python values of `where` taken from
 * the marked value. `values` is the marked value itself; a definition keeps its plain numbers
 * where a schema reads them and marks where no type is declared (definitions.ts).
 *
 * @example
 * bodyFor(parseValueText('{"value": [2.0]}'), 'values') // { value: [FloatMark(2)] }
 */
export function bodyFor(plain: unknown, where: BodyValues): unknown {
  if (where === 'none') return plain
  const marked = markedOf(plain)
  if (marked === plain) return plain
  switch (where) {
    case 'values':
      return marked
    case 'models':
      withSystemModelFloats({ models: plain }, { models: marked })
      break
    case 'instances':
      withInstanceFloats(plain, marked)
      break
    case 'system':
      withSystemModelFloats(plain, marked)
      break
    case 'model':
      if (isRecord(plain) && isRecord(marked)) for (const key of ['definition', 'value']) withModelFloats(plain[key], marked[key])
      break
  }
  return plain
}
