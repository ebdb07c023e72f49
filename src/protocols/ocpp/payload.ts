/**
 * Payload templates of the `ocpp` bindings: a binding's `payload` is the message as JSON with
 * `#attr(x)` strings where attribute values go. Filling a template reads the attributes; reading
 * a received message against a template finds the attribute each bound field is written to.
 *
 * @example
 * fillPayload({ status: '#attr(s)', connectorId: 1 }, (a) => (a === 's' ? 'Available' : undefined)) // { status: 'Available', connectorId: 1 }
 * boundFields({ status: '#attr(s)' }, { status: 'Charging', info: 'x' }) // [{ attribute: 's', field: 'status', value: 'Charging' }]
 */
import { referencedAttribute } from '../../definition/attribute-reference.js'

/** The attribute a template value stands for (`#attr(x)`, written alone), or null. */
export function templateAttribute(value: unknown): string | null {
  if (typeof value !== 'string') return null
  const text = value.trim()
  return text.startsWith('#attr(') ? referencedAttribute(text) : null
}

/** The template with each `#attr(x)` replaced by the attribute's value (JSON-safe: a value that is not is left out). */
export function fillPayload(template: unknown, read: (attr: string) => unknown): unknown {
  const attribute = templateAttribute(template)
  if (attribute !== null) return jsonSafe(read(attribute))
  if (Array.isArray(template)) return template.map((v) => fillPayload(v, read))
  if (template !== null && typeof template === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(template)) {
      const filled = fillPayload(v, read)
      if (filled !== undefined) out[k] = filled
    }
    return out
  }
  return template
}

/** A field of a received message bound to an attribute. */
export interface BoundField {
  attribute: string
  /** Where in the message, e.g. `idTagInfo.status`. */
  field: string
  value: unknown
}

/** Every field of `message` the template binds to an attribute, in template order (absent fields are skipped). */
export function boundFields(template: unknown, message: unknown, at = ''): BoundField[] {
  const out: BoundField[] = []
  if (template === null || typeof template !== 'object' || Array.isArray(template)) return out
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return out
  for (const [key, t] of Object.entries(template)) {
    if (!Object.hasOwn(message, key)) continue
    const value = (message as Record<string, unknown>)[key]
    const field = at ? `${at}.${key}` : key
    const attribute = templateAttribute(t)
    if (attribute !== null) out.push({ attribute, field, value })
    else out.push(...boundFields(t, value, field))
  }
  return out
}

/**
 * A received value as the attribute's type takes it: numbers written as text (OCPP sends meter
 * samples as strings) become numbers for `int`/`float` attributes, numbers become text for `str`,
 * booleans 0/1 for `int`; anything else as received (the attribute's own check refuses a misfit).
 */
export function fitValue(value: unknown, type: string | undefined): unknown {
  if ((type === 'float' || type === 'int') && typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) {
    const n = Number(value)
    return type === 'int' && Number.isInteger(n) ? n : type === 'float' ? n : value
  }
  if (type === 'int' && typeof value === 'boolean') return value ? 1 : 0
  if (type === 'str' && typeof value === 'number') return String(value)
  return value
}

function jsonSafe(value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) return undefined
  if (value === undefined) return undefined
  return value
}
