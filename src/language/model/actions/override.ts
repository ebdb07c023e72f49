/**
 * `override` (also spelt `overrides`): attribute values and settings held while the instance is
 * active, written again after the conditions of each step, and what was there before put back
 * when it stops.
 */
import { NotFoundError } from '../../../errors.js'
import { plainJson } from '../../../values/number.js'
import { typeProblem } from '../../../definition/model-schema.js'
import { toPy } from '../convert.js'
import { isMap, writeFailure } from '../compile-context.js'
import { StateReader, type StateValue } from '../state.js'
import { isReference, type Target } from '../targets.js'
import { booleanField, defineActionKind, pathField, type KindInput, type RuntimeMaker } from './kind.js'

const FIELDS = {
  fail_on_missing: 'true: a dotted path that names nothing fails the start (default false: it is logged and skipped)',
}

const SUMMARY =
  'Takes a map of {reference or dotted path: value}: sets those values when the instance starts, holds the attribute values against the actions (they are written again after the conditions of every step), and puts back what was there before when it stops.'

export const overrideKind = defineActionKind({
  kind: 'override',
  lifecycle: true,
  fields: FIELDS,
  compile: compileOverride,
  doc: {
    summary: SUMMARY,
    example: { override: { '$out(mode)': 'service', 'communication.modbus_slave.response_delay': 0.25 } },
  },
})

export const overridesKind = defineActionKind({
  kind: 'overrides',
  lifecycle: true,
  fields: FIELDS,
  compile: compileOverride,
  doc: {
    summary: `The same as \`override\` (the spelling of a scenario's \`overrides\`). ${SUMMARY}`,
    example: { overrides: { '$out(v_nominal)': 180.0 } },
  },
})

function compileOverride(input: KindInput): RuntimeMaker | null {
  const { context } = input
  const failOnMissing = booleanField(input, 'fail_on_missing', false)
  if (!isMap(input.target) || Object.keys(input.target).length === 0) {
    context.problem(`${input.path}.${input.kind}`, 'expected a map of {reference or dotted path: value}')
    return null
  }
  const attributeOverrides: Array<{ target: Target; value: unknown }> = []
  const pathOverrides: Array<{ path: string; value: unknown }> = []
  for (const [key, value] of Object.entries(input.target)) {
    const at = `${input.path}.${input.kind}.${key}`
    if (isReference(key) || !key.includes('.')) {
      const targets = context.targets(key, at)
      if (targets) attributeOverrides.push({ target: targets[0] as Target, value })
    } else {
      const path = pathField(context, key, at, true)
      // A dotted path names a setting (`timer.dt`), which takes plain JSON.
      if (path) pathOverrides.push({ path, value: plainJson(value) })
    }
  }
  return (env, plan) => {
    const host = env.ctx.host
    const label = plan.label
    const held = attributeOverrides.map(({ target, value }) => ({ target, value: toPy(value, 'any'), write: env.writer(target) }))
    let saved: Array<() => Promise<void> | void> = []
    let active = false
    // What the attributes held before it took them ({value} of an external override, or none),
    // for a snapshot; and what a restored snapshot says they held, for the next activation.
    let befores: StateValue[] = []
    let restored: StateValue[] | undefined
    const apply = (): void => {
      for (const h of held) {
        try {
          h.write(h.value)
        } catch (err) {
          throw writeFailure(host.name, label, plan.path, err)
        }
      }
    }
    return {
      plan,
      enabled: plan.enabled,
      run() {},
      reset() {},
      reapply(pins) {
        if (!active) return
        apply()
        if (pins === undefined) return
        for (const { target } of held) {
          const attr = target.side === 'internal' ? host.attribute(target.attribute) : undefined
          if (attr) pins.pin(attr, attr.internalValue)
        }
      },
      async activate() {
        const given = restored
        restored = undefined
        befores = []
        held.forEach(({ target }, i) => {
          const attr = host.attribute(target.attribute)
          if (!attr) return void befores.push(null)
          if (target.side === 'external') {
            const presented = given ? (given[i] as { value: unknown } | null) : attr.presented
            const was = presented ?? undefined
            befores.push((was ?? null) as StateValue)
            saved.push(() => attr.setPresented(was))
          } else {
            const was = given ? given[i] : attr.internalValue
            befores.push(was as StateValue)
            saved.push(() => attr.setComputed(was))
          }
        })
        apply()
        env.ctx.undo.commit()
        for (const { path, value } of pathOverrides) {
          const before = await host.readPath(path)
          if (before === undefined) {
            if (failOnMissing)
              throw new NotFoundError(`action '${plan.name}': '${path}' names nothing on instance '${host.name}'`, [
                { path: plan.path, message: `'${path}' not found` },
              ])
            host.warn(`override: '${path}' names nothing`, { action: plan.name })
            continue
          }
          await host.writePath(path, value)
          saved.push(() => host.writePath(path, before.value))
        }
        active = true
      },
      state() {
        return active ? { before: befores } : undefined
      },
      restore(state, path) {
        // null: what a behaviour gives back when it takes a failed restore back.
        if (state === null) return void (restored = undefined)
        const read = new StateReader(state, path)
        const list = read.list('before')
        if (read.ok && list.length !== held.length)
          read.problem('before', `expected ${held.length} values (one per attribute it overrides), got ${list.length}`)
        else
          held.forEach(({ target }, i) => {
            const attr = host.attribute(target.attribute)
            const value = list[i]
            if (!attr) return
            const problem =
              target.side === 'internal'
                ? typeProblem(attr.valueType, value)
                : value === null || (typeof value === 'object' && !Array.isArray(value) && Object.hasOwn(value, 'value'))
                  ? null
                  : 'expected {"value": ...} (the external value it replaced) or null'
            if (problem !== null) read.problem(`before.${i}`, problem)
          })
        if (!read.ok) return read.problems
        restored = list as StateValue[]
      },
      async deactivate() {
        active = false
        const undo = saved.reverse()
        saved = []
        for (const fn of undo) await fn()
      },
    }
  }
}
