/** `set`: a value, or the value of an expression, written to its targets each step. */
import { defineActionKind, targetPath, valueAction } from './kind.js'

export const setKind = defineActionKind({
  kind: 'set',
  fields: {
    value:
      'the result: a number, boolean, list or map as written, or a string, which is an expression (`"\'auto\'"` for a text constant; plain text that names nothing known is that text) (required)',
  },
  compile(input) {
    const { context, fields, fieldPath, scope } = input
    const targets = context.targets(input.target, targetPath(input))
    if (!Object.hasOwn(fields, 'value')) context.problem(fieldPath('value'), 'required')
    const value = Object.hasOwn(fields, 'value') ? context.setValue(fields.value, fieldPath('value'), scope) : null
    if (!targets || !value) return null
    input.fuse(value, targets)
    return (env, plan) => valueAction(plan, env, targets, env.evaluator(value))
  },
  doc: {
    summary: 'Writes `value` to its targets.',
    example: { set: '$out(v)', value: '$param(nominal_v)' },
  },
})
