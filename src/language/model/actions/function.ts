/** `function`: the value of an expression, written to its targets each step. */
import { defineActionKind, targetPath, valueAction } from './kind.js'

export const functionKind = defineActionKind({
  kind: 'function',
  fields: {
    call: 'the expression whose value the targets take: Python, over several lines if need be, or a function body ending in `return` (required)',
  },
  compile(input) {
    const { context, fields, fieldPath, scope } = input
    const targets = context.targets(input.target, targetPath(input))
    if (fields.call === undefined) context.problem(fieldPath('call'), 'required: the expression whose value the targets take')
    const call = fields.call === undefined ? null : context.value(fields.call, fieldPath('call'), scope)
    if (!targets || !call) return null
    input.fuse(call, targets)
    return (env, plan) => valueAction(plan, env, targets, env.evaluator(call))
  },
  doc: {
    summary: 'Writes the value of `call` to its targets; other keys of the action are named constants of the expression.',
    example: { name: 'power', function: '$out(p)', call: '$in(v) * $in(i) * pf', pf: 0.95 },
  },
})
