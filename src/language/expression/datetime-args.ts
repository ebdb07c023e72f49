/**
 * Argument parsing for the natively served `datetime` module, with the messages CPython's C
 * implementation gives for the same calls: keyword/position rules and argument counts as
 * `PyArg_ParseTupleAndKeywords` words them, C `int` conversion with its OverflowErrors, and the
 * no-argument and one-argument method forms.
 *
 * @example
 * const [year, month] = parseArgs({ fname: null, names: ['year', 'month'], required: 2 }, [2020n, 1n], null, [cInt, cInt])
 */
import { asBigInt, isInt } from './arithmetic.js'
import { checkArgs, NOARGS, ONE, parsedTuple } from './call-args.js'
import { PyException, typeName, type PyKwargs, type PyValue } from './values.js'

/** How a function takes its arguments: CPython's format string, as data. */
export interface ArgSpec {
  /** The name messages use (`replace` gives `replace() ...`); null gives `function ...`. */
  fname: string | null
  names: readonly string[]
  /** How many leading parameters are required. */
  required: number
  /** How many may be given by position (the rest are keyword-only); all by default. */
  positional?: number
}

/** Thrown by a converter that wants CPython's `argument N must be X, not Y`. */
export class ArgTypeError {
  constructor(readonly expected: string) {}
}

/** A converter of one argument. */
export type Converter<T> = (v: PyValue) => T

const INT_MAX = 2n ** 31n - 1n
const LONG_MAX = 2n ** 63n - 1n

/** CPython's `i` converter: an int that fits a C int, with its TypeError and OverflowErrors. */
export function cInt(v: PyValue): number {
  if (!isInt(v)) throw new PyException('TypeError', `'${typeName(v)}' object cannot be interpreted as an integer`)
  const n = asBigInt(v)
  if (n > LONG_MAX || n < -LONG_MAX - 1n) throw new PyException('OverflowError', 'Python int too large to convert to C long')
  if (n > INT_MAX) throw new PyException('OverflowError', 'signed integer is greater than maximum')
  if (n < -INT_MAX - 1n) throw new PyException('OverflowError', 'signed integer is less than minimum')
  return Number(n)
}

/** CPython's `U` converter (a str). */
export function cStr(v: PyValue): string {
  if (typeof v === 'string') return v
  throw new ArgTypeError('str')
}

/** Any object (`O`). */
export function cAny(v: PyValue): PyValue {
  return v
}

function fnText(spec: ArgSpec): string {
  return spec.fname === null ? 'function' : `${spec.fname}()`
}

/**
 * Parses `args` and `kwargs` as `PyArg_ParseTupleAndKeywords` does: each parameter from its
 * position or its keyword, converted in order; `undefined` for an optional one not given.
 */
export function parseArgs(spec: ArgSpec, args: readonly PyValue[], kwargs: PyKwargs, converters: ReadonlyArray<Converter<unknown>>): unknown[] {
  const { names, required } = spec
  const len = names.length
  const positional = spec.positional ?? len
  const nargs = args.length
  let nkw = kwargs?.size ?? 0
  const fn = fnText(spec)
  if (nargs + nkw > len) {
    throw new PyException('TypeError', `${fn} takes at most ${len} ${nargs === 0 ? 'keyword ' : ''}argument${len === 1 ? '' : 's'} (${nargs + nkw} given)`)
  }
  const out: unknown[] = new Array<unknown>(len).fill(undefined)
  for (let i = 0; i < len; i++) {
    if (i === positional && positional < nargs) {
      const bound = required < len ? 'at most' : 'exactly'
      throw new PyException(
        'TypeError',
        positional === 0
          ? `${fn} takes no positional arguments`
          : `${fn} takes ${bound} ${positional} positional argument${positional === 1 ? '' : 's'} (${nargs} given)`,
      )
    }
    let current: PyValue | undefined
    if (i < nargs) current = args[i]
    else if (nkw > 0) {
      current = kwargs?.get(names[i] as string)
      if (current !== undefined) nkw--
    }
    if (current !== undefined) {
      out[i] = convert(spec, i, current, converters[i] ?? cAny)
      continue
    }
    if (i < required) throw new PyException('TypeError', `${fn} missing required argument '${names[i]}' (pos ${i + 1})`)
    if (nkw === 0) return out
  }
  if (nkw > 0 && kwargs !== null) {
    for (let i = 0; i < nargs; i++) {
      if (kwargs.has(names[i] as string)) throw new PyException('TypeError', `argument for ${fn} given by name ('${names[i]}') and position (${i + 1})`)
    }
    for (const key of kwargs.keys()) {
      if (!names.includes(key)) {
        throw new PyException('TypeError', `'${key}' is an invalid keyword argument for ${spec.fname === null ? 'this function' : `${spec.fname}()`}`)
      }
    }
  }
  return out
}

function convert(spec: ArgSpec, i: number, v: PyValue, converter: Converter<unknown>): unknown {
  try {
    return converter(v)
  } catch (err) {
    if (err instanceof ArgTypeError) {
      throw new PyException('TypeError', `${fnText(spec)} argument ${i + 1} must be ${err.expected}, not ${v === null ? 'None' : typeName(v)}`)
    }
    throw err
  }
}

/** A method that takes no arguments (`METH_NOARGS`); `qualname` as `date.weekday`. */
export function noArgs(qualname: string, args: readonly PyValue[], kwargs: PyKwargs): void {
  checkArgs(NOARGS, qualname, qualname, args, kwargs)
}

/** A method that takes exactly one positional argument (`METH_O`). */
export function oneArg(qualname: string, args: readonly PyValue[], kwargs: PyKwargs): PyValue {
  return checkArgs(ONE, qualname, qualname, args, kwargs)[0] ?? null
}

/** A function parsed by `PyArg_ParseTuple` alone (positional only, no keywords). */
export function tupleArgs(fname: string, args: readonly PyValue[], kwargs: PyKwargs, min: number, max: number): void {
  checkArgs(parsedTuple(min, max), fname, fname, args, kwargs)
}
