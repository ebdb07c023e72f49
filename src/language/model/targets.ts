/**
 * Action targets and override keys: which attribute a reference names, and which of its two
 * values (MODEL_LANGUAGE.md section 2): `$out(a)`, `$in(a)`, `#attr(a)`, `#in(a)`, `#internal(a)`
 * and a bare name write the internal value; `$ext(a)`, `#ext(a)`, `#external(a)`, `#out(a)` the
 * external (presented) one. Leading dots (`$in(..enable)`) climb from the action to its model.
 *
 * @example
 * parseTarget('$out(power)')   // { attribute: 'power', side: 'internal' }
 * parseTarget('#ext(power)')   // { attribute: 'power', side: 'external' }
 */

/** The attribute a target names and the value it writes. */
export interface Target {
  attribute: string
  side: 'internal' | 'external'
}

const FORMS: ReadonlyArray<readonly [RegExp, Target['side']]> = [
  [/^\$(?:out|in)\((.*)\)$/s, 'internal'],
  [/^#(?:attr|in|internal)\((.*)\)$/s, 'internal'],
  [/^(?:\$ext|#ext|#external|#out)\((.*)\)$/s, 'external'],
]

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * The target a reference names, or why it names none. A dotted path (`communication.x.y`) is no
 * attribute target: callers that accept component paths check for it first.
 */
export function parseTarget(text: string): Target | string {
  const source = text.trim()
  for (const [form, side] of FORMS) {
    const m = form.exec(source)
    if (m !== null) return checkName(stripDots((m[1] ?? '').trim()), side, source)
  }
  if (source.startsWith('$') || source.startsWith('#'))
    return `'${source}' is not a reference the model language knows ($out(a), $in(a), #attr(a), $ext(a), ...)`
  return checkName(stripDots(source), 'internal', source)
}

function stripDots(name: string): string {
  return name.replace(/^\.+/, '')
}

function checkName(name: string, side: Target['side'], source: string): Target | string {
  if (name === '__timer') return { attribute: name, side }
  if (!NAME.test(name)) return `'${source}' does not name an attribute`
  return { attribute: name, side }
}

/** Whether `text` is written as a reference (`$...(` or `#...(`) rather than a name or path. */
export function isReference(text: string): boolean {
  return /^\s*[$#][A-Za-z]*\(/.test(text)
}
