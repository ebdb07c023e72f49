import { z } from 'zod'

/** Names of models, instances, connections and attributes (API.md section 3, rule 7). */
export const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_-]*$/
export const NAME_MAX_LENGTH = 128

/**
 * Names no component, property or attribute may take: the methods clients call on nodes (a child
 * of that name would make the method unreachable), the verb segments of the URL scheme, and the
 * keys that reach into a JavaScript object's prototype.
 */
export const RESERVED_NAMES: ReadonlySet<string> = new Set([
  'run',
  'prepare',
  'start',
  'stop',
  'reset',
  'save',
  'list',
  'load',
  'enable',
  'disable',
  'detach',
  'attach',
  'delete',
  'persist_all_in_memory',
  'method',
  'attr',
  '__proto__',
  'constructor',
  'prototype',
])

/**
 * Why `name` is not a valid component name, or null when it is.
 *
 * @example
 * nameProblem('sensor-1') // null
 * nameProblem('a.b')      // "must match [A-Za-z_][A-Za-z0-9_-]* ..."
 */
export function nameProblem(name: string): string | null {
  if (typeof name !== 'string' || name.length === 0) return 'name must be a non-empty string'
  if (name.length > NAME_MAX_LENGTH) return `name is longer than ${NAME_MAX_LENGTH} characters`
  if (!NAME_PATTERN.test(name)) return `'${printable(name)}' must match [A-Za-z_][A-Za-z0-9_-]* (dots separate path parts)`
  if (RESERVED_NAMES.has(name)) return `'${name}' is reserved (a method name or a JavaScript prototype key)`
  return null
}

/**
 * Why `name` is not a valid attribute name, or null when it is. An attribute lives beside its
 * instance's lifecycle methods (`run`, `prepare`, `start`, `stop`, `reset`, which a Python class
 * bound to the model maps too), under the URL's verbs (`method`, `attr`) and may not reach a
 * prototype: those stay reserved. The methods of other nodes do not: `enable` is an attribute
 * name, as the reference product's drive models use it.
 *
 * @example
 * attributeNameProblem('enable') // null
 * attributeNameProblem('start')  // "'start' is reserved ..."
 */
export function attributeNameProblem(name: string): string | null {
  const problem = nameProblem(name)
  if (problem === null || !RESERVED_NAMES.has(name) || ATTRIBUTE_RESERVED.has(name)) return problem
  return null
}

/** What an attribute may not be named, of the reserved names (see {@link attributeNameProblem}). */
const ATTRIBUTE_RESERVED: ReadonlySet<string> = new Set(['run', 'prepare', 'start', 'stop', 'reset', 'method', 'attr', '__proto__', 'constructor', 'prototype'])

/** A zod schema for a component name. */
export const nameSchema = z.string().superRefine((value, ctx) => {
  const problem = nameProblem(value)
  if (problem) ctx.addIssue({ code: 'custom', message: problem })
})

/** A Python identifier (class, property or method name in an `import` block). */
export const pythonIdentifier = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a Python identifier')

/** Shows control characters and look-alikes escaped so that an error message stays readable. */
export function printable(text: string): string {
  return JSON.stringify(text)
    .slice(1, -1)
    .replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
