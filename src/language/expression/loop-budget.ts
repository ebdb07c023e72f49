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
 */
import { PyException } from './values.js'

/** The longest the loops of one synchronous stretch of evaluation may run, in milliseconds. */
export const LOOP_TIME_LIMIT_MS = 2000

const CHECK_EVERY = 65_536

let spent = 0
let nextCheck = CHECK_EVERY
/** When this stretch's loops were first timed; undefined until a stretch reaches its first check. */
let since: number | undefined

/** One loop item taken. */
export function spend(): void {
  if (++spent >= nextCheck) check()
}

/** `n` items made at once (a range turned into a list): counted, and timed, before they are made. */
export function spendMany(n: number): void {
  spent += n
  if (spent >= nextCheck) check()
}

function check(): void {
  nextCheck = spent + CHECK_EVERY
  const now = performance.now()
  if (since === undefined) {
    since = now
    // Microtasks run once the synchronous stretch under way has returned.
    queueMicrotask(restart)
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
}
