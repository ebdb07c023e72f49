/**
 * How CPython's functions written in C take their arguments. Which of its calling conventions a
 * function uses decides what it accepts (keywords or not, how many) and the words of the
 * TypeError it raises otherwise, so each native builtin, `math` function and method here declares
 * the convention its CPython counterpart has, and is checked by one of these functions with the
 * same messages (CPython 3.11, `Python/getargs.c` and `Objects/methodobject.c`).
 *
 * @example
 * checkArgs(positional(2, 3), 'replace', 'str.replace', ['a', 'b'], null) // ['a', 'b']
 */
import { PyException, type PyKwargs, type PyValue } from './values.js'

/**
 * A calling convention, as data:
 * - `noargs`: `METH_NOARGS` (`str.upper()`).
 * - `one`: `METH_O`, exactly one positional argument (`abs(x)`, `list.append(x)`).
 * - `positional`: positional arguments only, counted by `_PyArg_CheckPositional` (`divmod`,
 *   `str.replace`, `math.atan2`).
 * - `tuple`: positional arguments only, parsed by `PyArg_ParseTuple` (`str.find`).
 * - `keywords`: Argument Clinic with named parameters (`_PyArg_UnpackKeywords`): the first
 *   `posonly` are positional-only, the first `maxpos` may be given by position (the rest are
 *   keyword-only), the first `minpos` are required.
 * - `python`: a function written in Python (`random.uniform(a, b)`): every parameter by position
 *   or by name, the first `required` required; `method` counts `self` in the messages, as
 *   CPython does for a bound method.
 * - `any`: checked by the function itself.
 */
export type Convention =
  | { readonly kind: 'noargs' }
  | { readonly kind: 'one' }
  | { readonly kind: 'positional' | 'tuple'; readonly min: number; readonly max: number }
  | { readonly kind: 'keywords'; readonly names: readonly string[]; readonly posonly: number; readonly maxpos: number; readonly minpos: number }
  | { readonly kind: 'python'; readonly names: readonly string[]; readonly required: number; readonly method: boolean }
  | { readonly kind: 'any' }

export const NOARGS: Convention = { kind: 'noargs' }
export const ONE: Convention = { kind: 'one' }
export const ANY: Convention = { kind: 'any' }

/** Positional arguments only, between `min` and `max`, counted as `_PyArg_CheckPositional` does. */
export function positional(min: number, max = min): Convention {
  return { kind: 'positional', min, max }
}

/** Positional arguments only, between `min` and `max`, as `PyArg_ParseTuple` counts them. */
export function parsedTuple(min: number, max = min): Convention {
  return { kind: 'tuple', min, max }
}

/**
 * Named parameters as Argument Clinic declares them. By default every parameter may be given by
 * position or by name and the first `minpos` are required.
 */
export function keywords(names: readonly string[], minpos: number, options: { posonly?: number; maxpos?: number } = {}): Convention {
  return { kind: 'keywords', names, posonly: options.posonly ?? 0, maxpos: options.maxpos ?? names.length, minpos }
}

/** A function written in Python with these parameters, the first `required` of them required. */
export function pythonFunction(names: readonly string[], required: number, options: { method?: boolean } = {}): Convention {
  return { kind: 'python', names, required, method: options.method ?? false }
}

/**
 * Checks a call against its convention and gives the arguments: the positional ones as given,
 * or for `keywords` one entry per parameter in order, undefined where not given. `name` is what
 * count messages use (`replace`), `qualname` what keyword refusals use (`str.replace`).
 */
export function checkArgs(
  convention: Convention,
  name: string,
  qualname: string,
  args: readonly PyValue[],
  kwargs: PyKwargs,
): ReadonlyArray<PyValue | undefined> {
  const n = args.length
  switch (convention.kind) {
    case 'any':
      return args
    case 'keywords':
      return unpackKeywords(convention, name, args, kwargs)
    case 'python':
      return pythonArgs(convention, qualname, args, kwargs)
    default:
  }
  if (kwargs !== null && kwargs.size > 0) throw new PyException('TypeError', `${qualname}() takes no keyword arguments`)
  switch (convention.kind) {
    case 'noargs':
      if (n > 0) throw new PyException('TypeError', `${qualname}() takes no arguments (${n} given)`)
      return args
    case 'one':
      if (n !== 1) throw new PyException('TypeError', `${qualname}() takes exactly one argument (${n} given)`)
      return args
    case 'positional': {
      const { min, max } = convention
      if (n >= min && n <= max) return args
      const bound = min === max ? '' : n < min ? 'at least ' : 'at most '
      const count = n < min ? min : max
      throw new PyException('TypeError', `${name} expected ${bound}${count} argument${plural(count)}, got ${n}`)
    }
    case 'tuple': {
      const { min, max } = convention
      if (n >= min && n <= max) return args
      const bound = min === max ? 'exactly' : n < min ? 'at least' : 'at most'
      const count = n < min ? min : max
      throw new PyException('TypeError', `${name}() takes ${bound} ${count} argument${plural(count)} (${n} given)`)
    }
  }
}

function plural(n: number): string {
  return n === 1 ? '' : 's'
}

/** `_PyArg_UnpackKeywords`, in the order it checks and with its messages. */
function unpackKeywords(
  convention: Extract<Convention, { kind: 'keywords' }>,
  name: string,
  args: readonly PyValue[],
  kwargs: PyKwargs,
): Array<PyValue | undefined> {
  const { names, posonly, maxpos, minpos } = convention
  const maxargs = names.length
  const nargs = args.length
  let nkw = kwargs?.size ?? 0
  const fn = `${name}()`
  if (nargs + nkw > maxargs) {
    throw new PyException('TypeError', `${fn} takes at most ${maxargs} ${nargs === 0 ? 'keyword ' : ''}argument${plural(maxargs)} (${nargs + nkw} given)`)
  }
  if (nargs > maxpos) {
    if (maxpos === 0) throw new PyException('TypeError', `${fn} takes no positional arguments`)
    throw new PyException('TypeError', `${fn} takes ${minpos < maxpos ? 'at most' : 'exactly'} ${maxpos} positional argument${plural(maxpos)} (${nargs} given)`)
  }
  const minPosonly = Math.min(posonly, minpos)
  if (nargs < minPosonly) {
    throw new PyException(
      'TypeError',
      `${fn} takes ${minPosonly < maxpos ? 'at least' : 'exactly'} ${minPosonly} positional argument${plural(minPosonly)} (${nargs} given)`,
    )
  }
  const out: Array<PyValue | undefined> = names.map((_p, i) => (i < nargs ? args[i] : undefined))
  for (let i = Math.max(nargs, posonly); i < maxargs; i++) {
    if (nkw === 0 && i >= minpos) break
    const value = nkw > 0 ? kwargs?.get(names[i] as string) : undefined
    out[i] = value
    if (value !== undefined) nkw--
    else if (i < minpos) throw new PyException('TypeError', `${fn} missing required argument '${names[i]}' (pos ${i + 1})`)
  }
  if (nkw > 0 && kwargs !== null) {
    for (let i = posonly; i < nargs; i++) {
      if (kwargs.has(names[i] as string)) throw new PyException('TypeError', `argument for ${fn} given by name ('${names[i]}') and position (${i + 1})`)
    }
    for (const key of kwargs.keys()) {
      const at = names.indexOf(key)
      if (at < posonly || at >= maxargs) throw new PyException('TypeError', `'${key}' is an invalid keyword argument for ${fn}`)
    }
  }
  return out
}

/** How CPython binds the arguments of a function written in Python (`initialize_locals`). */
function pythonArgs(
  convention: Extract<Convention, { kind: 'python' }>,
  qualname: string,
  args: readonly PyValue[],
  kwargs: PyKwargs,
): Array<PyValue | undefined> {
  const { names, required, method } = convention
  const fn = `${qualname}()`
  const out: Array<PyValue | undefined> = names.map((_p, i) => args[i])
  for (const [key, value] of kwargs ?? []) {
    const at = names.indexOf(key)
    if (at < 0) throw new PyException('TypeError', `${fn} got an unexpected keyword argument '${key}'`)
    if (out[at] !== undefined) throw new PyException('TypeError', `${fn} got multiple values for argument '${key}'`)
    out[at] = value
  }
  if (args.length > names.length) {
    const self = method ? 1 : 0
    const max = names.length + self
    // With defaults CPython says "from 1 to 3 positional arguments", plural whatever the numbers.
    const takes = required === names.length ? `${max} positional argument${plural(max)}` : `from ${required + self} to ${max} positional arguments`
    const given = args.length + self
    throw new PyException('TypeError', `${fn} takes ${takes} but ${given} ${given === 1 ? 'was' : 'were'} given`)
  }
  const missing = names.slice(0, required).filter((_p, i) => out[i] === undefined)
  if (missing.length > 0) {
    const quoted = missing.map((p) => `'${p}'`)
    const list = quoted.length === 1 ? quoted[0] : quoted.length === 2 ? quoted.join(' and ') : `${quoted.slice(0, -1).join(', ')}, and ${quoted.at(-1)}`
    throw new PyException('TypeError', `${fn} missing ${missing.length} required positional argument${plural(missing.length)}: ${list}`)
  }
  return out
}
