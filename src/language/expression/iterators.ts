/**
 * Python's iterators as the builtins make them (`iter`, `reversed`, `map`, `filter`, `zip`,
 * `enumerate`) and `next`: each pulls its items one at a time when asked, as CPython's do, and has
 * the name CPython's type has (`list_iterator`, `range_iterator`, `map`), which its error messages
 * print. Generator expressions are made by the compiler (compiler.ts).
 *
 * @example
 * const it = pyIter([1n, 2n])
 * pyNext(it) // 1n
 */
import { spend } from './loop-budget.js'
import {
  dictKeys as keysOf,
  MAX_MATERIALISED,
  PyCallable,
  PyException,
  PyIterator,
  pyEquals,
  PyRange,
  PyTuple,
  truthy,
  typeName,
  type PyDict,
  type PyKwargs,
  type Pulled,
  type PyValue,
} from './values.js'

/** CPython's `long` bounds: a range within them gets the fast iterator type, others the long one. */
const LONG_MIN = -(2n ** 63n)
const LONG_MAX = 2n ** 63n - 1n

function fitsLong(n: bigint): boolean {
  return n >= LONG_MIN && n <= LONG_MAX
}

function calls(f: PyValue): PyCallable {
  if (f instanceof PyCallable) return f
  throw new PyException('TypeError', `'${typeName(f)}' object is not callable`)
}

/**
 * `f(*args)` for an iterator that calls a function for each item; a StopIteration it raises (a
 * `next()` inside it) ends the iteration for whoever is pulling, as in CPython, so undefined.
 */
function callForItem(f: PyValue, args: PyValue[]): PyValue | undefined {
  try {
    return calls(f).call(args, null)
  } catch (err) {
    if (err instanceof PyException && err.type === 'StopIteration') return undefined
    throw err
  }
}

/** The items of a str as Python indexes them (code points). */
function characters(s: string): string[] {
  return [...s]
}

/**
 * Where an iterator takes its items from: `pull` gives the next one (undefined at the end),
 * `rest` all those not pulled yet at once. `sequence` says the items come straight from a list,
 * tuple, str or range, which nothing else can pull from.
 */
interface Source {
  readonly pull: () => Pulled
  readonly rest: () => PyValue[]
  readonly typeName: string
  readonly sequence: boolean
}

function fixedItems(items: readonly PyValue[], typeName: string): Source {
  let i = 0
  return {
    pull: () => (i < items.length ? (items[i++] ?? null) : undefined),
    rest: () => {
      const out = items.slice(i)
      i = items.length
      return out
    },
    typeName,
    sequence: true,
  }
}

/** A list's items: a list that grows while it is iterated gives its new items too, as CPython's list iterator does. */
function listItems(v: PyValue[]): Source {
  let i = 0
  return {
    pull: () => {
      if (i < v.length) return v[i++] ?? null
      i = Infinity // exhausted for good, even if the list grows
      return undefined
    },
    rest: () => {
      const out = i < v.length ? v.slice(i) : []
      i = Infinity
      return out
    },
    typeName: 'list_iterator',
    sequence: true,
  }
}

/**
 * The keys of `d` one at a time (last first for `reverse`); a dict whose size changes in between
 * raises CPython's RuntimeError, and keeps raising it.
 */
function dictItems(d: PyDict, reverse: boolean): Source {
  const keys = keysOf(d)
  if (reverse) keys.reverse()
  let size = d.size
  let i = 0
  const pull = (): Pulled => {
    if (i > keys.length) return undefined
    if (d.size !== size) {
      size = -1
      throw new PyException('RuntimeError', 'dictionary changed size during iteration')
    }
    if (i < keys.length) return keys[i++] ?? null
    i++ // exhausted: CPython lets go of the dict, so no more checks
    return undefined
  }
  // Not a `sequence`: a loop that changes the dict must meet the RuntimeError at its next item.
  return { pull, rest: () => drainPull(pull), typeName: reverse ? 'dict_reversekeyiterator' : 'dict_keyiterator', sequence: false }
}

/** The items of a range from `first` by `step`, `n` of them. */
function rangeItems(first: bigint, step: bigint, n: bigint, typeName: string): Source {
  let i = 0n
  const pull = (): Pulled => {
    if (i >= n) return undefined
    spend()
    return first + i++ * step
  }
  return {
    pull,
    rest: () => {
      if (n - i > BigInt(MAX_MATERIALISED)) throw new PyException('MemoryError', 'range too large to materialise')
      return drainPull(pull)
    },
    typeName,
    sequence: true,
  }
}

function drainPull(pull: () => Pulled): PyValue[] {
  const out: PyValue[] = []
  for (let v = pull(); v !== undefined; v = pull()) out.push(v)
  return out
}

/** An iterator as the source of another (`enumerate(it)`). */
function iteratorItems(it: PyIterator): Source {
  return { pull: () => it.nextValue(), rest: () => it.drain(), typeName: it.typeName, sequence: false }
}

/** The source behind `iter(v)`, with CPython's name of the iterator type. */
function source(v: PyValue): Source {
  if (v instanceof PyIterator) return iteratorItems(v)
  if (Array.isArray(v)) return listItems(v)
  if (v instanceof PyTuple) return fixedItems(v.items, 'tuple_iterator')
  if (typeof v === 'string') return fixedItems(characters(v), /^[\0-\x7f]*$/.test(v) ? 'str_ascii_iterator' : 'str_iterator')
  if (v instanceof Map) return dictItems(v, false)
  if (v instanceof PyRange) {
    const { start, stop, step } = v
    const n = v.length
    // CPython's range_iter: the fast type when every number and the last step fit a C long.
    const fast =
      fitsLong(start) &&
      fitsLong(stop) &&
      fitsLong(step) &&
      n <= LONG_MAX &&
      (n === 0n || (step > 0n ? stop <= LONG_MAX - (step - 1n) : stop >= LONG_MIN + (-1n - step)))
    return rangeItems(start, step, n, fast ? 'range_iterator' : 'longrange_iterator')
  }
  throw new PyException('TypeError', `'${typeName(v)}' object is not iterable`)
}

/** An iterator over a source of its own. */
function iteratorOver(s: Source): PyIterator {
  return new PyIterator(s.typeName, s.pull, { whole: s.rest, sequences: s.sequence })
}

/** `iter(x)`: an iterator is its own. */
export function pyIter(v: PyValue): PyIterator {
  return v instanceof PyIterator ? v : iteratorOver(source(v))
}

/** `iter(callable, sentinel)`: calls until the sentinel comes back, or a StopIteration is raised; then never again. */
export function callableIterator(f: PyValue, sentinel: PyValue): PyIterator {
  if (!(f instanceof PyCallable)) throw new PyException('TypeError', 'iter(v, w): v must be callable')
  return new PyIterator('callable_iterator', () => {
    spend()
    let v: PyValue
    try {
      v = f.call([], null)
    } catch (err) {
      if (err instanceof PyException && err.type === 'StopIteration') return undefined
      throw err
    }
    return v === sentinel || pyEquals(sentinel, v) ? undefined : v
  })
}

/** `reversed(seq)`. */
export function pyReversed(v: PyValue): PyIterator {
  if (Array.isArray(v)) {
    // CPython's list_reverseiterator: a list that shrinks under it ends it.
    let i = v.length - 1
    const pull = (): Pulled => {
      if (i >= 0 && i < v.length) return v[i--] ?? null
      i = -1
      return undefined
    }
    return new PyIterator('list_reverseiterator', pull, { sequences: true })
  }
  if (v instanceof PyTuple || typeof v === 'string')
    return iteratorOver(fixedItems((v instanceof PyTuple ? v.items : characters(v)).slice().reverse(), 'reversed'))
  if (v instanceof Map) return iteratorOver(dictItems(v, true))
  if (v instanceof PyRange) {
    const { start, stop, step } = v
    const n = v.length
    // CPython's range_reverse: the fast type when start, stop, step, -step, start - step and the length fit a C long.
    const fast = fitsLong(start) && fitsLong(stop) && fitsLong(step) && step !== LONG_MIN && fitsLong(start - step) && n <= LONG_MAX
    return iteratorOver(rangeItems(start + (n - 1n) * step, -step, n, fast ? 'range_iterator' : 'longrange_iterator'))
  }
  throw new PyException('TypeError', `'${typeName(v)}' object is not reversible`)
}

/** `map(function, iterable, ...)`. */
export function pyMap(args: readonly PyValue[], kwargs: PyKwargs): PyIterator {
  if (kwargs !== null && kwargs.size > 0) throw new PyException('TypeError', 'map() takes no keyword arguments')
  if (args.length < 2) throw new PyException('TypeError', 'map() must have at least two arguments.')
  const f = args[0] ?? null
  const its = args.slice(1).map((a) => source(a).pull)
  return new PyIterator(
    'map',
    () => {
      const items: PyValue[] = []
      for (const pull of its) {
        const v = pull()
        if (v === undefined) return undefined
        items.push(v)
      }
      return callForItem(f, items)
    },
    { sticky: false },
  )
}

/** `filter(function, iterable)`; a function of None keeps the true items. */
export function pyFilter(f: PyValue, iterable: PyValue): PyIterator {
  const { pull } = source(iterable)
  return new PyIterator(
    'filter',
    () => {
      for (let v = pull(); v !== undefined; v = pull()) {
        if (f === null) {
          if (truthy(v)) return v
          continue
        }
        const keep = callForItem(f, [v])
        if (keep === undefined) return undefined
        if (truthy(keep)) return v
      }
      return undefined
    },
    { sticky: false },
  )
}

/** `enumerate(iterable, start)`. */
export function pyEnumerate(iterable: PyValue, start: bigint): PyIterator {
  const { pull, rest, sequence } = source(iterable)
  let count = start
  return new PyIterator(
    'enumerate',
    () => {
      const v = pull()
      return v === undefined ? undefined : new PyTuple([count++, v])
    },
    {
      sticky: false,
      sequences: sequence,
      // Consumed whole: the counting adds nothing Python could tell apart from pulling in turn.
      whole: () => {
        const first = count
        const items = rest()
        count += BigInt(items.length)
        return items.map((v, i) => new PyTuple([first + BigInt(i), v]))
      },
    },
  )
}

/** `zip(*iterables, strict=...)`, with CPython's steps: a strict zip finds a length mismatch when the shortest runs out. */
export function pyZip(iterables: readonly PyValue[], strict: boolean): PyIterator {
  const sources = iterables.map(source)
  const pulls = sources.map((s) => s.pull)
  const argument = (i: number): string => (i === 1 ? 'argument 1' : `arguments 1-${i}`)
  const pull = (): Pulled => {
    if (pulls.length === 0) return undefined
    const items: PyValue[] = []
    for (let i = 0; i < pulls.length; i++) {
      const v = (pulls[i] as () => Pulled)()
      if (v !== undefined) {
        items.push(v)
        continue
      }
      if (!strict) return undefined
      if (i > 0) throw new PyException('ValueError', `zip() argument ${i + 1} is shorter than ${argument(i)}`)
      for (let j = 1; j < pulls.length; j++) {
        if ((pulls[j] as () => Pulled)() !== undefined) throw new PyException('ValueError', `zip() argument ${j + 1} is longer than ${argument(j)}`)
      }
      return undefined
    }
    return new PyTuple(items)
  }
  const sequences = sources.every((s) => s.sequence)
  // Consumed whole, a zip of sequences only is made at once: no iterator of anyone else's is
  // pulled further than Python would pull it.
  const whole = sequences
    ? (): PyValue[] => {
        const lists = sources.map((s) => s.rest())
        const n = lists.length === 0 ? 0 : Math.min(...lists.map((l) => l.length))
        if (strict && lists.length > 0) {
          const i = lists.findIndex((l) => l.length === n)
          if (i > 0) throw new PyException('ValueError', `zip() argument ${i + 1} is shorter than ${argument(i)}`)
          const j = lists.findIndex((l) => l.length > n)
          if (j > 0) throw new PyException('ValueError', `zip() argument ${j + 1} is longer than ${argument(j)}`)
        }
        const out: PyValue[] = []
        for (let k = 0; k < n; k++) out.push(new PyTuple(lists.map((l) => l[k] ?? null)))
        return out
      }
    : undefined
  return new PyIterator('zip', pull, { sticky: false, sequences, whole })
}

/** `next(iterator[, default])`. */
export function pyNext(it: PyValue, dflt?: PyValue): PyValue {
  if (!(it instanceof PyIterator)) throw new PyException('TypeError', `'${typeName(it)}' object is not an iterator`)
  const v = it.nextValue()
  if (v !== undefined) return v
  if (dflt !== undefined) return dflt
  throw new PyException('StopIteration', '')
}
