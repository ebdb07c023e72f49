/**
 * The time answering requests may take in one turn of the event loop, shared by the fast lane and
 * the connections node:http serves. An answer may take tens of milliseconds to make (a node
 * document of megabytes; a large attribute document is encoded only once, Attribute.documentBody),
 * and a dozen connections asking for one at the same moment must not keep `/health` and every
 * other client waiting until all of them are made: once the budget of a turn is spent,
 * requests still to start wait for the next turn (setImmediate), and the I/O that arrived in the
 * meantime is served first.
 */

/** Milliseconds of synchronous answering per turn before the rest waits for the next turn. */
export const TURN_BUDGET_MS = 20

let spentMs = 0
let resetScheduled = false

/**
 * Adds time spent answering in this turn; the count starts from zero in the next turn.
 *
 * @example
 * const started = performance.now(); answer(); spendInTurn(performance.now() - started)
 */
export function spendInTurn(ms: number): void {
  spentMs += ms
  if (resetScheduled) return
  resetScheduled = true
  setImmediate(() => {
    spentMs = 0
    resetScheduled = false
  })
}

/**
 * True once this turn's budget is spent: start no new answer before the next turn.
 *
 * @example
 * if (turnBudgetSpent()) setImmediate(startLater)
 */
export function turnBudgetSpent(): boolean {
  return spentMs >= TURN_BUDGET_MS
}
