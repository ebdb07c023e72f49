/** Flow mappings and sequences (`{ a: 1, b: 2 }`) are used for flat values up to this length. */
const FLOW_WIDTH = 96
/** Words YAML reads as something other than a string when left unquoted. */
const RESERVED = /^(true|false|yes|no|on|off|y|n|null|~)$/i

/**
 * Writes a JSON-like value as block YAML, the way model files are usually written: flat mappings
 * and lists that fit on a line in flow style, strings unquoted where YAML reads them back as the
 * same string and double-quoted (JSON escapes, valid YAML) everywhere else.
 *
 * @example
 * toYaml({ actions: [{ name: 'level', function: '$out(level_pct)', call: '$in(level_pct) + 1' }] })
 * // actions:
 * //   - { name: level, function: $out(level_pct), call: $in(level_pct) + 1 }
 */
export function toYaml(value: unknown): string {
  return isNested(value) ? block(value, '') : scalar(value, false)
}

function block(value: object, pad: string): string {
  const lines: string[] = []
  if (Array.isArray(value)) {
    for (const item of value) {
      if (!isNested(item)) lines.push(`${pad}- ${scalar(item, false)}`)
      else {
        const flat = flow(item)
        // The item's own lines are indented past the dash; its first line goes after it.
        lines.push(flat !== null ? `${pad}- ${flat}` : `${pad}- ${block(item, `${pad}  `).slice(pad.length + 2)}`)
      }
    }
  } else {
    for (const [key, item] of Object.entries(value)) {
      const name = scalar(key, false)
      // A key with nothing after it is null, as in a model's `- else:`.
      if (item === null) lines.push(`${pad}${name}:`)
      else if (!isNested(item)) lines.push(`${pad}${name}: ${scalar(item, false)}`)
      else {
        const flat = flow(item)
        lines.push(flat !== null ? `${pad}${name}: ${flat}` : `${pad}${name}:\n${block(item, `${pad}  `)}`)
      }
    }
  }
  return lines.join('\n')
}

/** The value on one line (`{ a: 1 }`, `[x, y]`, `[]`), or null when it is nested or too long. */
function flow(value: object): string | null {
  const entries = Array.isArray(value) ? value.map((v) => ['', v] as const) : Object.entries(value)
  if (entries.some(([, v]) => isNested(v))) return null
  const parts = entries.map(([k, v]) => (Array.isArray(value) ? scalar(v, true) : `${scalar(k, true)}: ${scalar(v, true)}`))
  const text = Array.isArray(value) ? `[${parts.join(', ')}]` : parts.length ? `{ ${parts.join(', ')} }` : '{}'
  return text.length <= FLOW_WIDTH ? text : null
}

/** A non-empty mapping or list (empty ones are written inline as `{}` and `[]`). */
function isNested(value: unknown): value is object {
  if (value === null || typeof value !== 'object') return false
  return Array.isArray(value) ? value.length > 0 : Object.keys(value).length > 0
}

function scalar(value: unknown, inFlow: boolean): string {
  if (value === null || value === undefined) return 'null'
  if (Array.isArray(value)) return '[]'
  if (typeof value === 'object') return '{}'
  if (typeof value !== 'string') return typeof value === 'number' && !Number.isFinite(value) ? JSON.stringify(String(value)) : String(value)
  return plain(value, inFlow) ? value : JSON.stringify(value)
}

/** Whether YAML reads the string back unchanged without quotes. */
function plain(text: string, inFlow: boolean): boolean {
  if (!/^[A-Za-z_$(]/.test(text) || text !== text.trim() || RESERVED.test(text)) return false
  if (/[\n\t"]|: |:$| #/.test(text)) return false
  return !inFlow || !/[,[\]{}]/.test(text)
}
