/**
 * Python's iterators as the builtins make them (`zip`, `enumerate`, and the iterator of a list,
 * tuple, str, dict or range that a loop pulls): each pulls its items one at a time when asked, as
 * CPython's do, and has the name CPython's type has (`list_iterator`, `range_iterator`, `zip`),
 * which its error messages print. Generator expressions are made by the compiler (compiler.ts).
 *
 * @example
 * const it = pyIter([1n, 2n])
 * it.nextValue() // 1n
 */
import { dictKeys as keysOf, MAX_MATERIALISED, PyException, PyIterator, PyRange, PyTuple, typeName, type PyDict, type Pulled, type PyValue } from './values.js'

/** CPython's `long` bounds: a range within them gets the fast iterator type, others the long one. */
const LONG_MIN = -(2n ** 63n)
const LONG_MAX = 2n ** 63n - 1n

function fitsLong(n: bigint): boolean {
  return n >= LONG_MIN && n <= LONG_MAX
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
  const pull = (): Pulled => (i < n ? first + i++ * step : undefined)
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
