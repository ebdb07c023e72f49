/**
 * `sorted()` and `list.sort()` as CPython sorts (Objects/listobject.c, `listsort`). A sort is
 * stable and asks only `<`, so for a consistent order any stable sort gives CPython's result;
 * but values without one (NaN among floats) and pairs that cannot be compared (a str and a
 * list) show the steps taken: which pairs are compared, so which TypeError is raised, and where
 * a NaN ends up. JS's `Array.prototype.sort` takes other steps, hence this module.
 *
 * The steps are CPython's: keys computed first; `reverse` by reversing before and after an
 * ascending sort (so equal items keep their order); runs found by `count_run` (a strictly
 * descending run reversed) and extended to `minrun` items by binary insertion. A list of fewer
 * than 64 items is one such run, so its steps are exactly CPython's. Longer lists merge their
 * runs pairwise, without CPython's galloping: the same result whenever the order is consistent.
 *
 * @example
 * pySort([3n, 1n, 2n], null, false) // [1n, 2n, 3n]
 */
import { spendWork } from './loop-budget.js'
import { pyLess, type PyCallable, type PyValue } from './values.js'

interface Entry {
  readonly key: PyValue
  readonly value: PyValue
}

/** The items of `items` in sorted order (a new array), by `key` and `reverse` as CPython's. */
export function pySort(items: readonly PyValue[], key: PyCallable | null, reverse: boolean): PyValue[] {
  // Up to n log2 n comparisons, and a key call per item: spent before the sort starts, which
  // cannot stop halfway.
  const n = items.length
  if (n > 1) spendWork(n * Math.ceil(Math.log2(n)) + (key === null ? 0 : n), key === null ? 'a sort' : 'a sort with a key')
  const entries: Entry[] = items.map((value) => ({ key: key === null ? value : key.call([value], null), value }))
  if (reverse) entries.reverse()
  listSort(entries)
  if (reverse) entries.reverse()
  return entries.map((e) => e.value)
}

const lt = (a: Entry, b: Entry): boolean => pyLess(a.key, b.key)

function listSort(a: Entry[]): void {
  const n = a.length
  if (n < 2) return
  const minrun = minRun(n)
  const runs: Array<{ start: number; length: number }> = []
  for (let lo = 0; lo < n;) {
    const remaining = n - lo
    const run = countRun(a, lo, n)
    let length = run.length
    if (run.descending) reverseSlice(a, lo, lo + length)
    if (length < minrun) {
      const force = Math.min(remaining, minrun)
      binarySort(a, lo, lo + force, lo + length)
      length = force
    }
    runs.push({ start: lo, length })
    lo += length
  }
  while (runs.length > 1) {
    const merged: typeof runs = []
    for (let i = 0; i + 1 < runs.length; i += 2) {
      const left = runs[i] as (typeof runs)[number]
      const right = runs[i + 1] as (typeof runs)[number]
      mergeRuns(a, left.start, right.start, right.start + right.length)
      merged.push({ start: left.start, length: left.length + right.length })
    }
    if (runs.length % 2 === 1) merged.push(runs[runs.length - 1] as (typeof runs)[number])
    runs.splice(0, runs.length, ...merged)
  }
}

/** CPython's `merge_compute_minrun`: n itself under 64, else a length between 32 and 64. */
function minRun(n: number): number {
  let r = 0
  while (n >= 64) {
    r |= n & 1
    n >>= 1
  }
  return n + r
}

/** CPython's `count_run`: the length of the run at `lo`, ascending or strictly descending. */
function countRun(a: Entry[], lo: number, hi: number): { length: number; descending: boolean } {
  if (lo + 1 === hi) return { length: 1, descending: false }
  let i = lo + 1
  if (lt(a[i] as Entry, a[i - 1] as Entry)) {
    for (i++; i < hi; i++) if (!lt(a[i] as Entry, a[i - 1] as Entry)) break
    return { length: i - lo, descending: true }
  }
  for (i++; i < hi; i++) if (lt(a[i] as Entry, a[i - 1] as Entry)) break
  return { length: i - lo, descending: false }
}

/** CPython's `binarysort`: `a[lo:start]` is sorted; inserts each of `a[start:hi]` after its equals. */
function binarySort(a: Entry[], lo: number, hi: number, start: number): void {
  if (start === lo) start++
  for (; start < hi; start++) {
    const pivot = a[start] as Entry
    let l = lo
    let r = start
    do {
      const p = l + ((r - l) >> 1)
      if (lt(pivot, a[p] as Entry)) r = p
      else l = p + 1
    } while (l < r)
    for (let p = start; p > l; p--) a[p] = a[p - 1] as Entry
    a[l] = pivot
  }
}

function reverseSlice(a: Entry[], lo: number, hi: number): void {
  for (let i = lo, j = hi - 1; i < j; i++, j--) [a[i], a[j]] = [a[j] as Entry, a[i] as Entry]
}

/** Merges the sorted runs `a[lo:mid]` and `a[mid:hi]`, stably: the right item goes first only when smaller. */
function mergeRuns(a: Entry[], lo: number, mid: number, hi: number): void {
  const left = a.slice(lo, mid)
  let i = 0
  let j = mid
  let k = lo
  while (i < left.length && j < hi) a[k++] = lt(a[j] as Entry, left[i] as Entry) ? (a[j++] as Entry) : (left[i++] as Entry)
  while (i < left.length) a[k++] = left[i++] as Entry
}
