/**
 * How long the loops of expressions may run before the server's one thread is given back.
 *
 * Python runs `next(x for x in range(10**15) if x < 0)` or `any(x < 0 for x in iter(int, 1))`
 * for as long as it takes. Here declarative behaviour runs on the server's thread, so a loop that
 * long would stop every instance, every request and every protocol with it. Each item a loop
 * takes (a comprehension, a generator expression, a `for` statement, an item pulled from a range
 * or from `iter(f, sentinel)`) calls `spend`; a range made into a list spends its length. Every 65,536 items the clock is read; once the
 * loops of one synchronous stretch of evaluation (an instance step, or the steps of the instances
 * stepped together) have run for `LOOP_TIME_LIMIT_MS`, the expression under way raises a
 * RuntimeError that names the limit, and the evaluations after it in the same stretch do too at
 * their next loop item. The count starts again when the event loop turns.
 *
 * A counter and a comparison per item: the first 65,536 items of a stretch read no clock.
 *
 * The same budget covers single native operations that cannot stop halfway (a sort, a big
 * repetition, a bigint power): each spends, before it runs, a count of work proportional to its
 * size (`spendWork`), refused at once past `OPERATION_WORK_LIMIT`, so no single operation keeps
 * the thread for long and the clock is read as often as their work deserves.
 *
 * Memory has its budget too: what large values an instance step builds (lists, tuples, str)
 * counts towards `STEP_MEMORY_LIMIT` estimated bytes (`allocate`), so a step that builds
 * a hundred lists of a million items is refused before V8's heap is full. The count starts again
 * with each instance step (`beginStep`) and when the event loop turns.
 */
import { PyException } from './values.js'

/** The longest the loops of one synchronous stretch of evaluation may run, in milliseconds. */
export const LOOP_TIME_LIMIT_MS = 2000

const CHECK_EVERY = 65_536

/**
 * The most work one native operation may do, in the items of a loop it stands for (a sort of n
 * items does about n log2 n comparisons): one that would do more is refused before it starts.
 */
export const OPERATION_WORK_LIMIT = 2 ** 25

/** The most memory (estimated bytes: 8 an item of a list or tuple, 1 a character) one instance step may build. */
export const STEP_MEMORY_LIMIT = 256 * 2 ** 20

/** Allocations smaller than this are not counted: only large values can fill the heap quickly, and the loops that would make many small ones are timed. */
const COUNTED_ALLOCATION = 1024

let spent = 0
let nextCheck = CHECK_EVERY
/** When this stretch's loops were first timed; undefined until a stretch reaches its first check. */
let since: number | undefined
/** Estimated bytes built by this step (or stretch) in counted allocations. */
let built = 0
/** Whether a restart is queued for the end of this synchronous stretch. */
let armed = false

/** One loop item taken. */
export function spend(): void {
  if (++spent >= nextCheck) check()
}

/** `n` items made at once (a range turned into a list): counted, and timed, before they are made. */
export function spendMany(n: number): void {
  spent += n
  if (spent >= nextCheck) check()
}

/**
 * A native operation about to do `work` items of work (`what` names it in the error): refused
 * past {@link OPERATION_WORK_LIMIT}, else spent as loop items are.
 *
 * @example
 * spendWork(n * Math.ceil(Math.log2(n + 1)), 'sorted()')
 */
export function spendWork(work: number, what: string): void {
  if (work > OPERATION_WORK_LIMIT) {
    throw new PyException(
      'RuntimeError',
      `${what} would take about ${Math.ceil(work).toLocaleString('en-US')} steps of work, more than Mimic's limit of ${OPERATION_WORK_LIMIT.toLocaleString('en-US')} for one operation`,
    )
  }
  spent += work
  if (spent >= nextCheck) check()
}

/**
 * `bytes` (estimated) about to be built for `what`: counted towards the step's memory budget,
 * MemoryError past {@link STEP_MEMORY_LIMIT}. Small allocations are not counted.
 *
 * @example
 * allocate(8 * n, 'a list of 1000000 items')
 */
export function allocate(bytes: number, what: string): void {
  if (bytes < COUNTED_ALLOCATION) return
  built += bytes
  arm()
  if (built > STEP_MEMORY_LIMIT) {
    const mib = (n: number): string => `${(n / 2 ** 20).toLocaleString('en-US', { maximumFractionDigits: 1 })} MiB`
    built -= bytes
    throw new PyException(
      'MemoryError',
      `${what} would bring what this step built to about ${mib(built + bytes)}, more than Mimic's limit of ${mib(STEP_MEMORY_LIMIT)} for one step`,
    )
  }
}

/**
 * An instance step begins: the memory it builds is counted afresh (what the steps before it built
 * is garbage by now, or kept in attributes whose own sizes are bounded). Loop time is not: the
 * steps of one stretch hold the thread together.
 *
 * @example
 * beginStep()
 */
export function beginStep(): void {
  built = 0
}

/**
 * Starts the budget afresh, as the event loop's turn does: for a caller that evaluates
 * independent expressions one after another in one synchronous stretch and answers for the time
 * they take itself (a test comparing thousands of expressions with python3).
 *
 * @example
 * restartBudget()
 */
export function restartBudget(): void {
  restart()
}

function arm(): void {
  if (armed) return
  armed = true
  // Microtasks run once the synchronous stretch under way has returned.
  queueMicrotask(restart)
}

function check(): void {
  nextCheck = spent + CHECK_EVERY
  const now = performance.now()
  if (since === undefined) {
    since = now
    arm()
    return
  }
  if (now - since > LOOP_TIME_LIMIT_MS) {
    // The next item of any loop in this stretch checks again at once.
    nextCheck = spent + 1
    throw new PyException(
      'RuntimeError',
      `loops ran for more than ${LOOP_TIME_LIMIT_MS / 1000} s (${spent.toLocaleString('en-US')} items): stopped so that the server keeps answering`,
    )
  }
}

function restart(): void {
  spent = 0
  nextCheck = CHECK_EVERY
  since = undefined
  built = 0
  armed = false
}
