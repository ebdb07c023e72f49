/**
 * An action's `imports`: the modules its expressions may name, checked against the pure modules
 * every model may import ({@link ACTION_MODULES}) and what the operator trusts besides.
 *
 * @example
 * compileImports({ m: 'math' }, 'actions[0].imports', context) // { m: 'math' }
 */
import type { CompileContext } from '../compile-context.js'
import { isMap } from '../compile-context.js'

/**
 * The modules an action's `imports` may name without the operator's say (mirrored by
 * ALLOWED_MODULES of python/mimic_sdk/expressions.py, a test holds them together): pure modules
 * of the standard library that reach no file, process, environment variable, socket or importer.
 * Left out on purpose: `operator` (attrgetter, methodcaller), `string` (Formatter), `zoneinfo`
 * (reads files by name), and every module that runs, opens or imports something by name
 * (`timeit`, `pydoc`, `codecs`, `linecache`, `logging`, `platform`, `imp`, `posixpath`, ...).
 * Only a name's first part is checked here; the worker checks each part it walks.
 *
 * @example
 * ACTION_MODULES.has('statistics') // true
 * ACTION_MODULES.has('os')         // false
 */
export const ACTION_MODULES: ReadonlySet<string> = new Set(
  (
    'math cmath random statistics decimal fractions numbers datetime time calendar itertools functools collections heapq bisect re ' +
    'json struct binascii base64 hashlib zlib colorsys'
  ).split(' '),
)

/** How the operator allows more, said in every refusal. */
const HOW_TO_ALLOW =
  'actions may import pure modules of the standard library (docs/python-actions.md) and helper files under the extension directories; ' +
  'the operator may trust more modules with --action-modules (MIMIC_ACTION_MODULES)'

/** An action's `imports` as alias -> module; problems go to `context`. */
export function compileImports(raw: unknown, path: string, context: CompileContext): Record<string, string> {
  if (raw === undefined) return {}
  const out: Record<string, string> = {}
  const add = (alias: string, module: unknown, at: string): void => {
    if (typeof module !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/.test(module)) {
      return context.problem(at, 'expected a module name such as math, numpy or extensions.helpers.step')
    }
    if (alias.startsWith('_') || !/^[A-Za-z][A-Za-z0-9_]*$/.test(alias)) return context.problem(at, `'${alias}' is not a valid name`)
    const parts = module.split('.')
    if (parts.some((p) => p.startsWith('_'))) return context.problem(at, `'${module}': names starting with '_' are not allowed`)
    // A refused module still names its alias, so the expressions using it get no second problem.
    if (!context.importAllowed(module, ACTION_MODULES)) context.problem(at, `'${module}' may not be imported by an action: ${HOW_TO_ALLOW}`)
    out[alias] = module
  }
  if (typeof raw === 'string') add(raw.split('.').pop() ?? raw, raw, path)
  else if (Array.isArray(raw))
    raw.forEach((m, i) =>
      typeof m === 'string' ? add(m.split('.').pop() ?? m, m, `${path}[${i}]`) : context.problem(`${path}[${i}]`, 'expected a module name'),
    )
  else if (isMap(raw)) for (const [alias, module] of Object.entries(raw)) add(alias, module, `${path}.${alias}`)
  else context.problem(path, 'expected a map of alias -> module ({m: math}), a module name or a list of them')
  return out
}
