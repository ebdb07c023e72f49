/** `saw`: a sawtooth between two values with a period of the instance time (signals.ts `sawValue`). */
import { PyException } from '../../expression/index.js'
import { sawValue } from '../signals.js'
import { asNumber, choice, defineActionKind, outputType, targetPath, valueAction } from './kind.js'

export const sawKind = defineActionKind({
  kind: 'saw',
  fields: {
    start_value: 'the value at the start of each period, a number or an expression (default 0)',
    stop_value: 'the value it climbs to by the end of each period, a number or an expression (required)',
    period: 'seconds of instance time, > 0, a number or an expression (required)',
    type: 'regular: start + (stop - start)·p (default), or reverse: stop - (stop - start)·p, p the fraction of the period gone',
    output_type: 'float (default) or int (rounded half to even)',
  },
  compile(input) {
    const { context, fieldPath } = input
    const targets = context.targets(input.target, targetPath(input))
    const start = context.number(input.fields.start_value, fieldPath('start_value'), 0, input.scope)
    const stop = context.number(input.fields.stop_value, fieldPath('stop_value'), undefined, input.scope)
    const period = context.number(input.fields.period, fieldPath('period'), undefined, input.scope)
    if (period && 'constant' in period && !(asNumber(period.constant) > 0)) context.problem(fieldPath('period'), 'must be > 0')
    const type = choice(input, 'type', ['regular', 'reverse'] as const, 'regular')
    const out = outputType(input)
    if (!targets || !start || !stop || !period) return null
    return (env, plan) => {
      const [s0, s1, p] = [env.evaluator(start), env.evaluator(stop), env.evaluator(period)]
      return valueAction(plan, env, targets, () => {
        const length = asNumber(p())
        if (!(length > 0)) throw new PyException('ValueError', `saw period must be > 0, got ${length}`)
        return out(sawValue({ start: asNumber(s0()), stop: asNumber(s1()), period: length, type }, env.ctx.frame.time))
      })
    }
  },
  doc: {
    summary:
      "A sawtooth between `start_value` and `stop_value`, once every `period` seconds of the instance time: p = (t mod period) / period, Python's modulo, so negative times wrap too.",
    example: { saw: '$out(sweep)', start_value: 10, stop_value: 1000, period: 5 },
  },
})
