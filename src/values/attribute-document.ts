/**
 * The JSON document of an attribute (API.md rule 3), written from its properties with the values
 * typed (`typed(v, valueType)`: a float attribute's `30` is `30.0`), directly: a GET of an
 * attribute is what polling clients send most, and building the document's nine objects only to
 * serialize them took almost twice as long (5.5 against 3.1 us). The property names are the
 * attribute's own (no integer keys, no duplicates), an attribute has no state and no children,
 * and a value JSON leaves out (undefined) is left out here too.
 * test/unit/values/attribute-document.test.ts holds this and the generic document equal.
 */
import { DOCUMENT_KEYS } from '../tree/component.js'
import { valueJson, type ValueType } from './encode.js'
import { floatJson } from './number.js'

/** What the writer reads of an attribute. */
export interface DocumentedAttribute {
  readonly name: string
  readonly path: string
  readonly valueType: ValueType
  /** The properties in document order, `value` (the internal value again) last. */
  properties(): Record<string, unknown>
  methods(): Record<string, unknown>
}

/** Strings longer than this are encoded once per attribute document, and their documents kept as bytes (see attributeDocumentBody). */
const LONG_STRING = 4096

function isLongString(value: unknown): value is string {
  return typeof value === 'string' && value.length > LONG_STRING
}

/** The properties that hold a value of the attribute's type (written with valueJson). */
export const VALUE_PROPERTIES: ReadonlySet<string> = new Set(['internal_value', 'external_value', 'default', 'value'])

/**
 * The pieces of the last document with a long string of each attribute, and what it was made of
 * (see attributeDocumentBody). Kept beside the tree, not in it: an attribute holds its values only.
 */
const ENCODED = new WeakMap<DocumentedAttribute, { made: unknown[]; pieces: Array<Buffer | WeakRef<Buffer>> }>()

/**
 * The document of an attribute as text.
 *
 * @example
 * attributeDocumentJson(attr) // '{"name":"t","type":"float","path":"i.attributes.t","attr":{...},...}'
 */
export function attributeDocumentJson(attr: DocumentedAttribute): string {
  return writeDocument(attr, attr.properties())
}

/**
 * The document as `attributeDocumentJson` writes it: the text, or, when a value is a string
 * longer than LONG_STRING, its UTF-8 bytes in pieces to be sent one after the other, the long
 * strings encoded once and shared by every answer until the document changes. A dozen clients
 * pipelining GETs of a document of megabytes would otherwise have it encoded, and held in the
 * socket buffers, once per request: each encoding took 90 to 130 ms, most of it in turning the
 * joined text into bytes (V8 first copies the pieces it is joined from into one string).
 * In pieces, a value the internal, external and default values share is held once, not six
 * times (attr and top level), and nothing of megabytes is copied.
 *
 * What the document is made of is compared on each call (name, path, methods, every property,
 * all of them primitives), rather than a version counted by every write: nothing that changes
 * the document can be missed, and comparing a long string with the one it was made from is a
 * pointer compare, or a memory compare of a copy. The encoded strings are held by WeakRefs,
 * alive while an answer on its way out holds them: what nobody is being sent is not kept beside
 * the value it encodes.
 *
 * @example
 * const body = attributeDocumentBody(attr) // Buffers for a 1 MiB string attribute, else the text
 */
export function attributeDocumentBody(attr: DocumentedAttribute): string | Buffer[] {
  const props = attr.properties()
  if (!isLongString(props.internal_value) && !isLongString(props.external_value) && !isLongString(props.default)) return writeDocument(attr, props)
  const methods = JSON.stringify(Object.keys(attr.methods()))
  const made: unknown[] = [attr.name, attr.path, methods]
  for (const key in props) {
    const value = props[key]
    // An object may change in place: a document with one is written anew each time.
    if (value !== null && typeof value === 'object') return writeDocument(attr, props)
    made.push(key, value)
  }
  const cached = ENCODED.get(attr)
  if (cached && cached.made.length === made.length && cached.made.every((part, i) => part === made[i])) {
    const pieces = cached.pieces.map((piece) => (piece instanceof WeakRef ? piece.deref() : piece))
    if (pieces.every((piece) => piece !== undefined)) return pieces
  }
  // The long strings are left out of the text, marked by their index between NULs (JSON text
  // holds none: JSON.stringify escapes them), and encoded on their own.
  const longs: string[] = []
  const text = writeDocument(attr, props, methods, longs)
  const encodedLongs = longs.map((value) => Buffer.from(JSON.stringify(value)))
  const pieces = text.split('\0').map((part, i) => (i % 2 ? encodedLongs[Number(part)]! : Buffer.from(part)))
  ENCODED.set(attr, { made, pieces: pieces.map((piece, i) => (i % 2 ? new WeakRef(piece) : piece)) })
  return pieces
}

/**
 * Writes the document of `props`. With `longs`, a long string is not written but added to it,
 * and its index written between NULs in its place (see attributeDocumentBody).
 */
function writeDocument(
  attr: DocumentedAttribute,
  props: Record<string, unknown>,
  methods = JSON.stringify(Object.keys(attr.methods())),
  longs?: string[],
): string {
  let fields = ''
  let top = ''
  // The internal, external and default values are often equal: a long string among them (a
  // document of megabytes) is encoded once, not three times.
  let long: [string, string] | undefined
  const type = attr.valueType
  const float = type === 'float'
  // `value` is the internal value again: its text is written once.
  let internal: string | undefined
  for (const key in props) {
    const value = props[key]
    let json: string | undefined
    if (key === 'value') {
      json = internal
    } else if (typeof value === 'number' && float && VALUE_PROPERTIES.has(key)) {
      json = floatJson(value)
    } else if (isLongString(value)) {
      if (longs) {
        let index = longs.indexOf(value)
        if (index < 0) index = longs.push(value) - 1
        json = `\0${index}\0`
      } else {
        if (long?.[0] !== value) long = [value, JSON.stringify(value)]
        json = long[1]
      }
    } else {
      json = VALUE_PROPERTIES.has(key) ? valueJson(value, type) : JSON.stringify(value)
    }
    if (key === 'internal_value') internal = json
    fields += `${fields ? ',' : ''}"${key}":${json === undefined ? '{}' : `{"value":${json}}`}`
    if (json !== undefined && !DOCUMENT_KEYS.has(key)) top += `,"${key}":${json}`
  }
  return `{"name":${JSON.stringify(attr.name)},"type":${JSON.stringify(type)},"path":${JSON.stringify(attr.path)},"attr":{${fields}},"children":[],"methods":${methods}${top}}`
}

/**
 * One property of an attribute as `{"value": v}` writes it: a value property by the attribute's
 * type (`30.0` for a float), others as JSON.
 *
 * @example
 * attributePropertyJson('internal_value', 30, 'float') // '30.0'
 */
export function attributePropertyJson(name: string, value: unknown, type: ValueType): string | undefined {
  return VALUE_PROPERTIES.has(name) ? valueJson(value, type) : JSON.stringify(value)
}
