import { parseJsonKeepingFloats } from '../../values/decode.js'
import { typedJson, valueJson } from '../../values/encode.js'
import { FloatMark, unmarked } from '../../values/number.js'
import type { AttributeType } from '../../definition/model-schema.js'
import { templateValuePath, type MqttBinding } from '../../definition/mqtt-schema.js'

/**
 * Payloads of the `mqtt` adapter: a value as the text a binding publishes (`raw` or `json`,
 * optionally inside a `template`), and back from a received payload to a value that fits the
 * attribute's type. Nothing here touches the network.
 *
 * @example
 * formatPayload(binding, 21.5, { instance: 'boiler', topic: 'plant/temp' }) // '21.5'
 * const codec = PayloadReader.for(binding)
 * codec.read('21.5', 'float') // { value: 21.5 }
 */

/** What a template may name besides `{{value}}`. */
export interface TemplateFields {
  instance: string
  topic: string
}

/**
 * The payload a binding publishes for `value`, an attribute's of `type`. As JSON, a float
 * attribute's value is written as a float (`2.0`), as are the integral floats of a list or dict.
 *
 * @example
 * formatPayload({ ...binding, format: 'json', template: '{"v": {{value}}}' }, 2, fields, 'int') // '{"v": 2}'
 * formatPayload({ ...binding, format: 'json' }, 2, fields, 'float') // '2.0'
 */
export function formatPayload(binding: MqttBinding, value: unknown, fields: TemplateFields, type: AttributeType = 'any'): string {
  const text = valueText(binding, value, type)
  return binding.template === undefined ? text : fillTemplate(binding, binding.template, text, fields)
}

/** The value as a binding writes it: JSON or raw text. */
function valueText(binding: MqttBinding, value: unknown, type: AttributeType): string {
  return binding.format === 'json' ? (valueJson(value, type) ?? 'null') : rawText(value)
}

/** The template with its placeholders replaced, one after the other (the definition of a template's result). */
function fillTemplate(binding: MqttBinding, template: string, text: string, fields: TemplateFields): string {
  let out = template
  if (binding.format === 'json') out = out.replaceAll('"{{value}}"', text)
  return out
    .replaceAll('{{value}}', text)
    .replaceAll('{{timestamp}}', isoNow())
    .replaceAll('{{attribute}}', binding.attribute)
    .replaceAll('{{instance}}', fields.instance)
    .replaceAll('{{topic}}', fields.topic)
}

let isoAt = NaN
let isoText = ''

/**
 * `new Date().toISOString()`, made once per millisecond: the adapters of a server publish many
 * messages within one millisecond, and formatting the date took a tenth of a publication.
 *
 * @example
 * isoNow() // '2026-11-29T07:30:00.123Z'
 */
export function isoNow(): string {
  const now = Date.now()
  if (now !== isoAt) {
    isoAt = now
    isoText = new Date(now).toISOString()
  }
  return isoText
}

/** Text that replaces a placeholder without side effects: not empty, no brace, no `$` pattern of String.replaceAll. */
function plainText(text: string): boolean {
  return text.length > 0 && !/[{}]|\$[$&`']/.test(text)
}

const VALUE = 0
const TIMESTAMP = 1

/**
 * A binding's payloads, its template split once at its placeholders (the instance, topic and
 * attribute filled in), so that a publication joins a few strings instead of six passes of
 * `replaceAll` over the template. The result is formatPayload's, character for character: the
 * split is used only where the passes one after the other cannot differ from one pass (the
 * template's text between placeholders has no `{{`, and what replaces a placeholder is
 * `plainText`, so no replacement can make a placeholder or take a `$` pattern); otherwise, and
 * for a value whose text is not plain, formatPayload does the work.
 *
 * @example
 * const payloads = PayloadFormat.for({ ...binding, format: 'json', template: '{"v": {{value}}}' }, fields)
 * payloads.format(2, 'float') // '{"v": 2.0}'
 */
export class PayloadFormat {
  readonly #binding: MqttBinding
  readonly #fields: TemplateFields
  /** Text, VALUE or TIMESTAMP, in order; null when the template is not split (see the class comment). */
  readonly #parts: Array<string | typeof VALUE | typeof TIMESTAMP> | null

  private constructor(binding: MqttBinding, fields: TemplateFields) {
    this.#binding = binding
    this.#fields = fields
    this.#parts = binding.template === undefined ? null : splitTemplate(binding, binding.template, fields)
  }

  static for(binding: MqttBinding, fields: TemplateFields): PayloadFormat {
    return new PayloadFormat(binding, fields)
  }

  /** The payload for `value`, an attribute's of `type` (see formatPayload). */
  format(value: unknown, type: AttributeType = 'any'): string {
    const binding = this.#binding
    const text = valueText(binding, value, type)
    if (binding.template === undefined) return text
    const parts = this.#parts
    if (parts === null || !plainText(text)) return fillTemplate(binding, binding.template, text, this.#fields)
    let out = ''
    for (const part of parts) out += part === VALUE ? text : part === TIMESTAMP ? isoNow() : part
    return out
  }
}

/** The template's parts (see PayloadFormat), or null when they might not give fillTemplate's result. */
function splitTemplate(binding: MqttBinding, template: string, fields: TemplateFields): Array<string | typeof VALUE | typeof TIMESTAMP> | null {
  const statics: Record<string, string> = { attribute: binding.attribute, instance: fields.instance, topic: fields.topic }
  if (!Object.values(statics).every(plainText)) return null
  const placeholders =
    binding.format === 'json' ? /"\{\{value\}\}"|\{\{(value|timestamp|attribute|instance|topic)\}\}/g : /\{\{(value|timestamp|attribute|instance|topic)\}\}/g
  const parts: Array<string | typeof VALUE | typeof TIMESTAMP> = []
  let at = 0
  for (const match of template.matchAll(placeholders)) {
    const literal = template.slice(at, match.index)
    if (literal.includes('{{')) return null
    const name = match[1] ?? 'value'
    parts.push(literal, name === 'value' ? VALUE : name === 'timestamp' ? TIMESTAMP : statics[name]!)
    at = match.index + match[0].length
  }
  const tail = template.slice(at)
  if (tail.includes('{{')) return null
  parts.push(tail)
  // Neighbouring texts joined once here.
  const joined: typeof parts = []
  for (const part of parts) {
    const last = joined.at(-1)
    if (typeof part === 'string' && typeof last === 'string') joined[joined.length - 1] = last + part
    else joined.push(part)
  }
  return joined.filter((part) => part !== '')
}

/**
 * A value as the text a `raw` binding publishes: strings as they are, numbers and booleans as
 * JSON writes them, lists and dicts as JSON (their integral floats as `2.0`).
 *
 * @example
 * rawText(true) // 'true'
 */
export function rawText(value: unknown): string {
  if (typeof value === 'string') return value
  return (value !== null && typeof value === 'object' ? typedJson(value) : JSON.stringify(value)) ?? ''
}

/** Why a value cannot be published, or null. */
export function publishProblem(value: unknown): string | null {
  if (value === undefined) return 'no value'
  if (typeof value === 'number' && !Number.isFinite(value)) return `${value} cannot be published (not a finite number)`
  return null
}

/** A received payload turned into a value, or the reason it cannot be. */
export type ReadResult = { value: unknown } | { problem: string }

/**
 * Reads received payloads for one binding: finds the value in them (the template's `{{value}}`
 * position, or the whole payload) and converts it to the attribute's type.
 *
 * @example
 * PayloadReader.for({ ...binding, format: 'raw', template: 'T={{value}}C' }).read('T=21.5C', 'float') // { value: 21.5 }
 */
export class PayloadReader {
  readonly #format: 'raw' | 'json'
  readonly #path: Array<string | number> | null
  readonly #pattern: RegExp | null

  private constructor(binding: MqttBinding) {
    this.#format = binding.format
    this.#path = binding.template !== undefined && binding.format === 'json' ? templateValuePath(binding.template) : null
    this.#pattern = binding.template !== undefined && binding.format === 'raw' ? templatePattern(binding.template) : null
  }

  static for(binding: MqttBinding): PayloadReader {
    return new PayloadReader(binding)
  }

  /** The value in `payload` for an attribute of type `type`, or why there is none. */
  read(payload: string, type: string): ReadResult {
    if (this.#format === 'json') {
      let doc: unknown
      try {
        doc = parseJsonKeepingFloats(payload)
      } catch {
        return { problem: 'the payload is not JSON' }
      }
      if (this.#path !== null) {
        for (const key of this.#path) {
          if (doc === null || typeof doc !== 'object' || doc instanceof FloatMark || !Object.hasOwn(doc, key))
            return { problem: `the payload has no value at ${this.#path.join('.')}` }
          doc = (doc as Record<string | number, unknown>)[key]
        }
      }
      return fitJson(doc, type)
    }
    let text = payload
    if (this.#pattern !== null) {
      const match = this.#pattern.exec(payload)
      if (!match) return { problem: 'the payload does not match the template' }
      text = match[1]!
    }
    return fitText(text, type)
  }
}

/** A regular expression for a raw template: `{{value}}` is captured, other placeholders match anything. */
function templatePattern(template: string): RegExp {
  const parts = template.split(/(\{\{(?:value|timestamp|attribute|instance|topic)\}\})/)
  let seenValue = false
  const source = parts
    .map((part) => {
      if (part === '{{value}}' && !seenValue) {
        seenValue = true
        return '([\\s\\S]*?)'
      }
      if (/^\{\{\w+\}\}$/.test(part)) return '[\\s\\S]*?'
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    })
    .join('')
  return new RegExp(`^${source}$`)
}

const TRUE = new Set(['true', '1', 'on', 'yes'])
const FALSE = new Set(['false', '0', 'off', 'no'])

/**
 * Raw text as a value of `type`.
 *
 * @example
 * fitText(' 42 ', 'int') // { value: 42 }
 * fitText('4.2', 'int')  // { problem: "'4.2' is not an integer (int)" }
 */
export function fitText(text: string, type: string): ReadResult {
  const trimmed = text.trim()
  switch (type) {
    case 'float': {
      const value = trimmed === '' ? NaN : Number(trimmed)
      return Number.isFinite(value) ? { value } : { problem: `${quote(text)} is not a finite number (float)` }
    }
    case 'int': {
      const value = /^[+-]?\d+$/.test(trimmed) ? Number(trimmed) : NaN
      return Number.isSafeInteger(value) ? { value } : { problem: `${quote(text)} is not an integer (int)` }
    }
    case 'bool': {
      const lower = trimmed.toLowerCase()
      if (TRUE.has(lower)) return { value: true }
      if (FALSE.has(lower)) return { value: false }
      return { problem: `${quote(text)} is not a bool (true/false, 1/0, on/off, yes/no)` }
    }
    case 'str':
      return { value: text }
    case 'list':
    case 'dict': {
      let value: unknown
      try {
        value = parseJsonKeepingFloats(text)
      } catch {
        return { problem: `${quote(text)} is not JSON (${type})` }
      }
      return fitJson(value, type)
    }
    default:
      try {
        return { value: parseJsonKeepingFloats(text) }
      } catch {
        return { value: text }
      }
  }
}

/**
 * A JSON value checked against `type` (a whole number fits a float; nothing is coerced otherwise).
 * Integral floats (`FloatMark`, src/values/number.ts) stay marked in a list, dict or `any` value.
 *
 * @example
 * fitJson('21', 'float') // { problem: 'expected a number (float), got a string' }
 */
export function fitJson(value: unknown, type: string): ReadResult {
  if (type !== 'list' && type !== 'dict' && type !== 'any') value = unmarked(value)
  const got =
    value === null
      ? 'null'
      : Array.isArray(value)
        ? 'a list'
        : value instanceof FloatMark
          ? 'a number'
          : typeof value === 'object'
            ? 'an object'
            : `a ${typeof value}`
  switch (type) {
    case 'float':
      return typeof value === 'number' && Number.isFinite(value) ? { value } : { problem: `expected a number (float), got ${got}` }
    case 'int':
      return Number.isSafeInteger(value) ? { value } : { problem: `expected an integer (int), got ${typeof value === 'number' ? value : got}` }
    case 'bool':
      return typeof value === 'boolean' ? { value } : { problem: `expected true or false (bool), got ${got}` }
    case 'str':
      return typeof value === 'string' ? { value } : { problem: `expected a string (str), got ${got}` }
    case 'list':
      return Array.isArray(value) ? { value } : { problem: `expected a list, got ${got}` }
    case 'dict':
      return got === 'an object' ? { value } : { problem: `expected an object (dict), got ${got}` }
    default:
      return value === undefined ? { problem: 'no value' } : { value }
  }
}

function quote(text: string): string {
  const short = text.length > 40 ? `${text.slice(0, 40)}...` : text
  return JSON.stringify(short)
}

/**
 * Whether a topic matches a subscription filter (`+` one level, `#` the rest).
 *
 * @example
 * topicMatches('plant/+/temp', 'plant/boiler/temp') // true
 */
export function topicMatches(filter: string, topic: string): boolean {
  if (filter === topic) return true
  const f = filter.split('/')
  const t = topic.split('/')
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '#') return i > 0 || !topic.startsWith('$')
    if (i >= t.length) return false
    if (f[i] === '+') {
      if (i === 0 && topic.startsWith('$')) return false
      continue
    }
    if (f[i] !== t[i]) return false
  }
  return f.length === t.length
}
