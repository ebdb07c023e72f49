/** `interpolate`: a curve through [time, value] points, read at the instance time (signals.ts `interpolator`). */
import { interpolator } from '../signals.js'
import { choice, defineActionKind, outputType, targetPath, valueAction } from './kind.js'

export const interpolateKind = defineActionKind({
  kind: 'interpolate',
  fields: {
    points: '[[t, v], ...], two finite numbers each, t strictly increasing (required)',
    method: 'linear (default), step (each value holds until the next point) or spline (the natural cubic spline through the points)',
    fill_value: 'beyond the first and last point: extrapolate (default: the end segment continued as a line; the end value for step) or a number',
    output_type: 'float (default) or int (rounded half to even)',
  },
  compile(input) {
    const { context, fields, fieldPath } = input
    const targets = context.targets(input.target, targetPath(input))
    const method = choice(input, 'method', ['linear', 'step', 'spline'] as const, 'linear')
    const points: Array<[number, number]> = []
    if (!Array.isArray(fields.points) || fields.points.length === 0) context.problem(fieldPath('points'), 'required: a list of [time, value] pairs')
    else {
      fields.points.forEach((p, i) => {
        if (!Array.isArray(p) || p.length !== 2 || !p.every((x) => typeof x === 'number' && Number.isFinite(x))) {
          return context.problem(`${fieldPath('points')}[${i}]`, 'expected [time, value], two finite numbers')
        }
        const last = points[points.length - 1]
        if (last !== undefined && (p[0] as number) <= last[0]) return context.problem(`${fieldPath('points')}[${i}]`, 'times must increase strictly')
        points.push([p[0] as number, p[1] as number])
      })
    }
    let fill: 'extrapolate' | number = 'extrapolate'
    if (fields.fill_value !== undefined && fields.fill_value !== 'extrapolate') {
      if (typeof fields.fill_value === 'number' && Number.isFinite(fields.fill_value)) fill = fields.fill_value
      else context.problem(fieldPath('fill_value'), "expected 'extrapolate' or a number")
    }
    const out = outputType(input)
    if (!targets || points.length === 0) return null
    const at = interpolator({ points, method, fill })
    return (env, plan) => valueAction(plan, env, targets, () => out(at(env.ctx.frame.time)))
  },
  doc: {
    summary: 'Writes the value of a curve through `points` at the instance time.',
    example: {
      interpolate: '$out(load)',
      points: [
        [0, 2.0],
        [3600, 8.5],
      ],
      method: 'linear',
      fill_value: 'extrapolate',
    },
  },
})
