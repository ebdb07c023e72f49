import type { z } from 'zod'
import { issueMessage } from '../definition/zod-issue.js'
import type { ErrorDetail } from '../errors.js'
import type { CallArgs } from './component.js'

/**
 * A method's arguments, given by position (in the order of `names`) or by keyword, checked with
 * `schema` (a strict object of `names`): the parsed values, and one detail with its path for each
 * argument that is bad, unknown, or given both ways. The caller adds its own checks to `details`
 * and throws one 422 for all of them.
 *
 * @example
 * const { data, details } = methodArguments('tail', call, ['limit', 'since'], schema)
 * if (details.length) throw new ValidationError(summarize('tail', details), details)
 */
export function methodArguments<T>(
  method: string,
  call: CallArgs,
  names: readonly string[],
  schema: z.ZodType<T>,
): { data: T | undefined; details: ErrorDetail[] } {
  const details: ErrorDetail[] = []
  const kwargs: Record<string, unknown> = { ...call.kwargs }
  if (call.args.length > names.length) details.push({ path: 'args', message: `${method} takes at most ${names.length} arguments (${names.join(', ')})` })
  call.args.slice(0, names.length).forEach((value, i) => {
    const name = names[i]!
    if (Object.hasOwn(kwargs, name)) details.push({ path: `kwargs.${name}`, message: 'given both by position and by name' })
    kwargs[name] = value
  })
  const parsed = schema.safeParse(kwargs)
  if (parsed.success) return { data: parsed.data, details }
  for (const issue of parsed.error.issues) {
    const message = issue.code === 'unrecognized_keys' ? `unknown argument (${method} takes ${names.join(', ')})` : issueMessage(issue)
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [issue.path.join('.')]
    for (const key of keys) details.push({ path: `kwargs.${key}`, message })
  }
  return { data: undefined, details }
}
