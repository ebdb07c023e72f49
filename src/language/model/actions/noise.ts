/** `noise`: Python's `random.Random(seed).gauss` added to the target's clean value each step. */
import { textSeedOf } from '../../expression/random-module.js'
import { toPy } from '../convert.js'
import type { Undoable } from '../runtime.js'
import { Noise, textSeed } from '../signals.js'
import { StateReader, type StateValue } from '../state.js'
import type { Target } from '../targets.js'
import { asNumber, choice, constantNumber, defineActionKind, outputType, targetPath, targetWriter, type ActionRuntime } from './kind.js'

export const noiseKind = defineActionKind({
  kind: 'noise',
  fields: {
    type: "white (default), pink (Kellet's filter of the white draws) or brownian (their running sum)",
    mean: 'the mean of the draws (default 0)',
    std: 'their standard deviation, >= 0 (default 1)',
    mode: 'additive: value + n (default), or proportional: value · (1 + n)',
    output_type: 'float (default) or int (rounded half to even)',
    seed: 'an integer or a string (default: a hash of the instance and action names, so two instances differ and a run repeats)',
  },
  compile(input) {
    const { context, fields, fieldPath, scope } = input
    const targets = context.targets(input.target, targetPath(input))
    const type = choice(input, 'type', ['white', 'pink', 'brownian'] as const, 'white')
    const mode = choice(input, 'mode', ['additive', 'proportional'] as const, 'additive')
    const mean = constantNumber(input, 'mean', 0)
    const std = constantNumber(input, 'std', 1)
    if (std < 0) context.problem(fieldPath('std'), 'must be >= 0')
    const out = outputType(input)
    let seed: bigint | undefined
    if (fields.seed !== undefined && fields.seed !== null) {
      if (typeof fields.seed === 'number' && Number.isSafeInteger(fields.seed)) seed = BigInt(fields.seed)
      // A str seeds as random.seed(text) does in CPython, so the numbers are Python's.
      else if (typeof fields.seed === 'string') seed = textSeedOf(fields.seed)
      else context.problem(fieldPath('seed'), 'expected an integer or a string')
    }
    void scope
    if (!targets) return null
    const first = targets[0] as Target
    return (env, plan) => {
      const noise = new Noise({ type, mean, std, seed: seed ?? textSeed(`${env.ctx.host.name}/${plan.name}`) })
      const attr = first.attribute === '__timer' ? undefined : env.ctx.host.attribute(first.attribute)
      // The value the noise rides on: the target's value, unless it still holds what this action
      // wrote last step (nothing else wrote it since): then the clean value under that noise.
      let lastBase = 0
      let lastWritten: unknown = Symbol('none')
      // A failed step takes back what this step wrote, so also what it remembers of the write.
      let baseBefore = lastBase
      let writtenBefore = lastWritten
      const undoable: Undoable = {
        undo: () => {
          lastBase = baseBefore
          lastWritten = writtenBefore
        },
      }
      const read = (): number => {
        if (attr === undefined) return env.ctx.frame.time
        const current = first.side === 'external' ? attr.externalValue : attr.internalValue
        if (current === lastWritten) return lastBase
        return asNumber(toPy(current, attr.valueType))
      }
      const write = targetWriter(env, targets, plan.label, plan.path)
      const runtime: ActionRuntime = {
        plan,
        enabled: plan.enabled,
        run() {
          const base = read()
          const n = noise.sample()
          const value = out(mode === 'proportional' ? base * (1 + n) : base + n)
          write(value)
          baseBefore = lastBase
          writtenBefore = lastWritten
          env.ctx.undo.state(undoable)
          lastBase = base
          lastWritten = attr === undefined ? undefined : first.side === 'external' ? attr.externalValue : attr.internalValue
        },
        reset() {
          noise.reset()
          lastWritten = Symbol('none')
        },
        state() {
          const state: Record<string, StateValue> = { noise: noise.saveState(), last_base: lastBase }
          if (typeof lastWritten !== 'symbol') state.last_written = lastWritten as StateValue
          return state
        },
        restore(state, path) {
          const read = new StateReader(state, path)
          const base = read.number('last_base', {})
          if (!read.ok) return read.problems
          const problems = noise.restoreState(read.raw('noise'), `${path}.noise`)
          if (problems) return problems
          lastBase = base
          lastWritten = read.has('last_written') ? read.raw('last_written') : Symbol('none')
        },
      }
      return runtime
    }
  },
  doc: {
    summary:
      "Adds noise to the target's value. It rides on the clean value: when nothing else wrote the target since its last write, it starts from the value under last step's noise, so noise on a constant does not drift. `reset()` starts the generator over.",
    example: { noise: '$out(v)', type: 'white', mean: 0.0, std: 0.5, seed: 11 },
  },
})
