/**
 * The `time` module as an action's `imports` serve it natively (MODEL_LANGUAGE.md section 2): the
 * wall clock and the monotonic clocks, in seconds (floats) and nanoseconds (ints). Anything else
 * of Python's `time` is not here (an expression must not sleep).
 *
 * @example
 * // imports: {time: time}, call: "time.time() - $in(started)"
 * TIME_MODULE.attributes.get('monotonic')
 */
import { PyCallable, PyException, PyModule, type PyKwargs, type PyValue } from './values.js'

function clock(name: string, read: () => PyValue): PyCallable {
  return new PyCallable(name, (args: PyValue[], kwargs: PyKwargs) => {
    const given = args.length + (kwargs?.size ?? 0)
    if (given > 0) throw new PyException('TypeError', `time.${name}() takes no arguments (${given} given)`)
    return read()
  })
}

const wallMs = (): number => performance.timeOrigin + performance.now()

export const TIME_MODULE = new PyModule(
  'time',
  new Map<string, PyValue>([
    ['time', clock('time', () => wallMs() / 1000)],
    ['time_ns', clock('time_ns', () => BigInt(Math.round(wallMs() * 1e6)))],
    ['monotonic', clock('monotonic', () => performance.now() / 1000)],
    ['monotonic_ns', clock('monotonic_ns', () => BigInt(Math.round(performance.now() * 1e6)))],
    ['perf_counter', clock('perf_counter', () => performance.now() / 1000)],
    ['perf_counter_ns', clock('perf_counter_ns', () => BigInt(Math.round(performance.now() * 1e6)))],
  ]),
)
