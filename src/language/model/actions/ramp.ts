/** `ramp`: from a start value to a stop value over a duration of the instance time (signals.ts `rampValue`). */
import { rampValue } from '../signals.js'
import { asNumber, choice, constantNumber, defineActionKind, outputType, targetPath, valueAction } from './kind.js'

export const rampKind = defineActionKind({
  kind: 'ramp',
  fields: {
    start_value: 'the value at time 0 and before, a number or an expression (default 0)',
    stop_value: 'the value from `duration` on, a number or an expression (required)',
    duration: 'seconds of instance time from start to stop, a number or an expression (required)',
    type: "linear (default), spline (the smooth step 3u² - 2u³) or overshoot (the reference product's curve)",
    overshoot: 'percent of the span it passes `stop_value` by (default 5 with `type: overshoot`, else 0)',
    stabilization_time: 'seconds after `duration` until it settles at `stop_value` (default: half the duration with `type: overshoot`, else 0)',
    output_type: 'float (default) or int (rounded half to even)',
  },
  compile(input) {
    const { context, fieldPath } = input
    const targets = context.targets(input.target, targetPath(input))
    const start = context.number(input.fields.start_value, fieldPath('start_value'), 0, input.scope)
    const stop = context.number(input.fields.stop_value, fieldPath('stop_value'), undefined, input.scope)
    const duration = context.number(input.fields.duration, fieldPath('duration'), undefined, input.scope)
    const type = choice(input, 'type', ['linear', 'spline', 'overshoot'] as const, 'linear')
    // The reference product's guides give `overshoot: 5` (percent of the span) with `type:
    // overshoot`; it documents no default, so the guides' value is it. Its settling time, when not
    // given, is half the ramp's duration (the reference product's curve, signals.ts).
    const overshoot = constantNumber(input, 'overshoot', type === 'overshoot' ? 5 : 0)
    const stabilization = input.fields.stabilization_time === undefined && type === 'overshoot' ? undefined : constantNumber(input, 'stabilization_time', 0)
    if (stabilization !== undefined && stabilization < 0) context.problem(fieldPath('stabilization_time'), 'must be >= 0')
    const out = outputType(input)
    if (!targets || !start || !stop || !duration) return null
    return (env, plan) => {
      const [s0, s1, d] = [env.evaluator(start), env.evaluator(stop), env.evaluator(duration)]
      return valueAction(plan, env, targets, () => {
        const length = asNumber(d())
        return out(
          rampValue(
            {
              start: asNumber(s0()),
              stop: asNumber(s1()),
              duration: length > 0 ? length : Number.MIN_VALUE,
              type,
              overshoot,
              stabilization: stabilization ?? Math.max(0, length) / 2,
            },
            env.ctx.frame.time,
          ),
        )
      })
    }
  },
  doc: {
    summary:
      'Goes from `start_value` to `stop_value` over `duration` seconds of the instance time, then holds `stop_value` (after an overshoot, if it has one).',
    example: { ramp: '$out(speed)', start_value: 0, stop_value: 1500, duration: 12, type: 'spline' },
  },
})
