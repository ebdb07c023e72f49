/**
 * Command patterns: `MEAS:VOLT?`, `SOUR:VOLT {value}`, `APPL {volts},{amps}`, `SYSTem:ERRor[:NEXT]?`.
 * A pattern without placeholders, short forms or optional parts is an exact command, found in a
 * map; any other is a regular expression tried in turn. Matching ignores case unless the adapter is
 * `case_sensitive`, treats any run of white space as one, lets a comma have white space around it,
 * and accepts a leading `:` (the SCPI root). In the header (the text before the first space), a word
 * written in mixed case follows SCPI's long and short forms (`MEASure` matches `MEAS` and
 * `MEASURE`) and `[...]` is optional; both only when matching ignores case.
 *
 * @example
 * const p = compilePattern('SOUR:VOLT {value}', { caseSensitive: false })
 * matchPattern(p, 'sour:volt 5.0') // { value: '5.0' }
 */

/** A compiled pattern. */
export interface CompiledPattern {
  /** The pattern as written. */
  readonly source: string
  /** The lookup key of an exact command (see commandKey), or null when `regex` decides. */
  readonly exact: string | null
  readonly regex: RegExp | null
  /** Placeholder names in order: the regex's groups. */
  readonly captures: readonly string[]
}

/** Options of compilation: whether case matters. */
export interface PatternOptions {
  caseSensitive: boolean
}

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g
const MIXED_WORD = /^([A-Z*]+)([a-z]+)$/

/**
 * Compiles one pattern (see the module comment).
 *
 * @example
 * compilePattern('*IDN?', { caseSensitive: false }).exact // '*IDN?'
 */
export function compilePattern(pattern: string, options: PatternOptions): CompiledPattern {
  const source = pattern
  const text = pattern.trim().replace(/^:/, '')
  const captures: string[] = []
  const pieces: string[] = []
  let last = 0
  let header = true
  let plain = true
  const literal = (chunk: string) => {
    let out = ''
    // The literal braces {{ and }} stand for one brace each.
    const parts = chunk.replaceAll('{{', '\0').replaceAll('}}', '\x01')
    const headerEnd = header ? parts.search(/\s/) : 0
    const inHeader = headerEnd === -1 ? parts : parts.slice(0, headerEnd)
    const rest = headerEnd === -1 ? '' : parts.slice(headerEnd)
    if (inHeader !== '') {
      const { regex, plain: simple } = headerRegex(inHeader, options)
      out += regex
      if (!simple) plain = false
    }
    if (headerEnd !== -1) header = false
    out += rest
      .split(/(\s*,\s*|\s+)/)
      .map((part) => (/^\s*,\s*$/.test(part) ? '\\s*,\\s*' : /^\s+$/.test(part) ? '\\s+' : escape(part)))
      .join('')
    return out.replaceAll('\0', '\\{').replaceAll('\x01', '\\}')
  }
  for (const match of text.replaceAll('{{', '\0\0').replaceAll('}}', '\x01\x01').matchAll(PLACEHOLDER)) {
    pieces.push(literal(text.slice(last, match.index)))
    captures.push(match[1]!)
    pieces.push('(.+?)')
    header = false
    plain = false
    last = match.index + match[0].length
  }
  pieces.push(literal(text.slice(last)))
  if (plain) return { source, exact: commandKey(text.replaceAll('{{', '{').replaceAll('}}', '}'), options), regex: null, captures }
  return { source, exact: null, regex: new RegExp(`^:?${pieces.join('')}$`, options.caseSensitive ? '' : 'i'), captures }
}

/** The header part of a pattern as a regex, with SCPI short forms and optional parts when case is ignored. */
function headerRegex(header: string, options: PatternOptions): { regex: string; plain: boolean } {
  if (options.caseSensitive) return { regex: escape(header), plain: true }
  let plain = true
  let out = ''
  for (const token of header.split(/(\[|\]|[^A-Za-z*[\]]+)/)) {
    if (token === '') continue
    if (token === '[') {
      out += '(?:'
      plain = false
    } else if (token === ']') {
      out += ')?'
    } else {
      const mixed = MIXED_WORD.exec(token)
      if (mixed !== null) {
        out += `${escape(mixed[1]!)}(?:${escape(mixed[2]!)})?`
        plain = false
      } else {
        out += escape(token)
      }
    }
  }
  return { regex: out, plain }
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}

/**
 * The key an exact command is looked up by: trimmed, white space runs made one space, no space
 * around commas, without a leading `:`, upper case unless case matters.
 *
 * @example
 * commandKey(' :meas:volt? ', { caseSensitive: false }) // 'MEAS:VOLT?'
 */
export function commandKey(command: string, options: PatternOptions): string {
  const key = command.trim().replace(/^:/, '').replace(/\s+/g, ' ').replace(/ ?, ?/g, ',')
  return options.caseSensitive ? key : key.toUpperCase()
}

/**
 * The captured placeholder texts (trimmed) when `command` matches, else null.
 *
 * @example
 * matchPattern(compilePattern('APPL {v},{c}', { caseSensitive: false }), 'APPL 5, 0.1') // { v: '5', c: '0.1' }
 */
export function matchPattern(pattern: CompiledPattern, command: string, options: PatternOptions): Record<string, string> | null {
  if (pattern.exact !== null) return commandKey(command, options) === pattern.exact ? {} : null
  const match = pattern.regex!.exec(command.trim())
  if (match === null) return null
  const captured: Record<string, string> = {}
  pattern.captures.forEach((name, i) => (captured[name] = match[i + 1]!.trim()))
  return captured
}

/**
 * The commands of one line: split at `;` outside quoted strings, each trimmed, empty ones dropped.
 *
 * @example
 * splitCommands('VOLT 5;:MEAS:VOLT?;DISP:TEXT "a;b"') // ['VOLT 5', ':MEAS:VOLT?', 'DISP:TEXT "a;b"']
 */
export function splitCommands(line: string): string[] {
  if (!line.includes(';')) {
    const one = line.trim()
    return one === '' ? [] : [one]
  }
  const out: string[] = []
  let quote = ''
  let start = 0
  for (let i = 0; i < line.length; i++) {
    const c = line[i]
    if (quote !== '') {
      if (c === quote) quote = ''
    } else if (c === '"' || c === "'") {
      quote = c
    } else if (c === ';') {
      const part = line.slice(start, i).trim()
      if (part !== '') out.push(part)
      start = i + 1
    }
  }
  const part = line.slice(start).trim()
  if (part !== '') out.push(part)
  return out
}

/**
 * Whether a command is a query: its header (the text before the first space) ends with `?`.
 *
 * @example
 * isQuery('MEAS:VOLT? DEF') // true
 */
export function isQuery(command: string): boolean {
  const space = command.search(/\s/)
  return (space === -1 ? command : command.slice(0, space)).endsWith('?')
}
