import type { z } from 'zod'

/**
 * A zod issue's message in the words of Mimic's other problems: a choice lists its options
 * plainly (`expected one of 'float', 'int', ...`, not `Invalid option: expected one of "float"|...`).
 *
 * @example
 * issueMessage(issue) // "expected one of 'float', 'int', 'bool', 'str', 'list', 'dict', 'any'"
 */
export function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_value' && issue.values.length > 1) return `expected one of ${issue.values.map(shown).join(', ')}`
  return issue.message.replace(/^Invalid input: /, '')
}

/** A value as a problem message shows it: strings quoted as Python does, the rest as JSON. */
function shown(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`
  return JSON.stringify(value) ?? String(value)
}
