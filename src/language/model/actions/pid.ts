/** `pid`: a PID controller in the parallel form (signals.ts `Pid`), its integral kept between steps. */
import { Pid } from '../signals.js'
import { asNumber, constantNumber, defineActionKind, targetPath, valueAction } from './kind.js'

export const pidKind = defineActionKind({
  kind: 'pid',
  fields: {
    setpoint: 'the value it steers to, an expression (required)',
    input: 'the measured value, an expression (required, or its alias `feedback`)',
    feedback: 'an alias of `input`',
    kp: 'proportional gain (default 1)',
    ki: 'integral gain (default 0)',
    kd: 'derivative gain (default 0)',
    sample_time: "seconds between updates, its output held in between (default 0: every step, with the step's dt)",
    output_min: 'the lowest output (default: none); while clamped the integral holds',
    output_max: 'the highest output (default: none)',
  },
  compile(input) {
    const { context, fields, fieldPath, scope } = input
    const targets = context.targets(input.target, targetPath(input))
    if (fields.setpoint === undefined) context.problem(fieldPath('setpoint'), 'required')
    const feedbackKey = fields.input !== undefined ? 'input' : 'feedback'
    if (fields[feedbackKey] === undefined) context.problem(fieldPath('input'), 'required (or its alias feedback)')
    const setpoint = fields.setpoint === undefined ? null : context.number(fields.setpoint, fieldPath('setpoint'), undefined, scope)
    const feedback = fields[feedbackKey] === undefined ? null : context.number(fields[feedbackKey], fieldPath(feedbackKey), undefined, scope)
    const kp = constantNumber(input, 'kp', 1)
    const ki = constantNumber(input, 'ki', 0)
    const kd = constantNumber(input, 'kd', 0)
    const sampleTime = constantNumber(input, 'sample_time', 0)
    const min = constantNumber(input, 'output_min', -Infinity)
    const max = constantNumber(input, 'output_max', Infinity)
    if (sampleTime < 0) context.problem(fieldPath('sample_time'), 'must be >= 0')
    if (min > max) context.problem(fieldPath('output_min'), 'must not be above output_max')
    if (!targets || !setpoint || !feedback) return null
    return (env, plan) => {
      const pid = new Pid({ kp, ki, kd, sampleTime, min, max })
      const [sp, pv] = [env.evaluator(setpoint), env.evaluator(feedback)]
      const frame = env.ctx.frame
      return valueAction(
        plan,
        env,
        targets,
        () => {
          // A failed step takes back the integral and the memory of this update with its writes.
          pid.remember()
          env.ctx.undo.state(pid)
          return pid.update(asNumber(sp()), asNumber(pv()), frame.time, frame.dt)
        },
        () => pid.reset(),
        { state: () => pid.saveState(), restore: (state, path) => pid.restoreState(state, path) },
      )
    }
  },
  doc: {
    summary:
      'On e = setpoint - input: `kp·e + I + kd·(e - e_prev)/dt` with `I += ki·e·dt`, clamped to [output_min, output_max] (no windup). `reset()` forgets the integral; a snapshot keeps it.',
    example: { pid: '$out(heater)', setpoint: '$in(sp)', input: '$in(temp)', kp: 8.0, ki: 0.4, output_min: 0, output_max: 100 },
  },
})
