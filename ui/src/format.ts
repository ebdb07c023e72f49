/** Attribute types a chart can plot (booleans as 0 and 1). */
export const PLOTTABLE_TYPES: ReadonlySet<string> = new Set(['float', 'int', 'bool'])

/**
 * A value as the dashboard shows it: numbers with at most 4 decimals, structures as JSON.
 *
 * @example
 * formatValue(21.456789) // "21.4568"
 */
export function formatValue(value: unknown): string {
  if (value === undefined) return '–'
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return String(value)
    return Number.isInteger(value) ? String(value) : String(Number(value.toFixed(4)))
  }
  if (typeof value === 'string') return value
  return JSON.stringify(value)
}

/**
 * The number a chart plots for a value, or null when it has none.
 *
 * @example
 * plotNumber(true) // 1
 */
export function plotNumber(value: unknown): number | null {
  if (typeof value === 'number' && Number.isFinite(value)) return value
  if (typeof value === 'boolean') return value ? 1 : 0
  return null
}

/**
 * Reads what the user typed as a value of the attribute's type; throws a readable message.
 *
 * @example
 * parseInput('float', '21.5') // 21.5
 */
export function parseInput(type: string, text: string): unknown {
  const trimmed = text.trim()
  if (trimmed === '' && type !== 'str') throw new Error('Enter a value first')
  switch (type) {
    case 'float': {
      const n = Number(trimmed)
      if (trimmed === '' || !Number.isFinite(n)) throw new Error(`'${text}' is not a number`)
      return n
    }
    case 'int': {
      const n = Number(trimmed)
      if (trimmed === '' || !Number.isSafeInteger(n)) throw new Error(`'${text}' is not an integer`)
      return n
    }
    case 'bool':
      if (/^(true|1|on)$/i.test(trimmed)) return true
      if (/^(false|0|off)$/i.test(trimmed)) return false
      throw new Error(`'${text}' is not true or false`)
    case 'str':
      return text
    default:
      try {
        return JSON.parse(trimmed)
      } catch {
        throw new Error(`'${text}' is not valid JSON (type ${type} takes a JSON value)`)
      }
  }
}

/**
 * Relative age of an ISO time for lists: "3 min ago", or the date when older than a day.
 *
 * @example
 * formatWhen('2026-01-01T00:00:00Z')
 */
export function formatWhen(iso: string): string {
  const when = Date.parse(iso)
  if (!Number.isFinite(when)) return iso
  const s = Math.round((Date.now() - when) / 1000)
  if (s < 45) return 'just now'
  if (s < 3600) return `${Math.round(s / 60)} min ago`
  if (s < 86400) return `${Math.round(s / 3600)} h ago`
  return new Date(when).toLocaleString()
}
