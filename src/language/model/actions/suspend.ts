/** `suspend`: components of the instance disabled while it is active, and put back when it stops. */
import { NotFoundError } from '../../../errors.js'
import { isMap } from '../compile-context.js'
import { StateReader, type StateValue } from '../state.js'
import { booleanField, defineActionKind, pathField } from './kind.js'

export const suspendKind = defineActionKind({
  kind: 'suspend',
  lifecycle: true,
  fields: {
    paths: 'the dotted paths of the components, one or a list, when `suspend` itself does not give them',
    targets: 'an alias of `paths`',
    fail_on_missing: 'true: a path that names nothing fails the start (default false: it is logged and skipped)',
  },
  compile(input) {
    const { context, fields } = input
    const raw = isMap(input.target) ? (input.target.paths ?? input.target.targets) : (input.target ?? fields.paths ?? fields.targets)
    const base = isMap(input.target) ? `${input.path}.suspend.${input.target.paths !== undefined ? 'paths' : 'targets'}` : `${input.path}.suspend`
    const failOnMissing = booleanField(input, 'fail_on_missing', false)
    const list = typeof raw === 'string' ? [raw] : raw
    if (!Array.isArray(list) || list.length === 0) {
      context.problem(base, 'expected a dotted path or a list of them (communication.modbus_slave, actions.noise_0, ...)')
      return null
    }
    const paths: string[] = []
    list.forEach((p, i) => {
      const checked = pathField(context, p, Array.isArray(raw) ? `${base}[${i}]` : base, true)
      if (checked) paths.push(checked)
    })
    if (paths.length !== list.length) return null
    return (env, plan) => {
      const host = env.ctx.host
      let restore: Array<() => Promise<void>> = []
      // Per path, the `enabled` it had before it was suspended (null: suspended by a method), for a
      // snapshot; and what a restored snapshot says it had, for the next activation.
      let befores: StateValue[] = []
      let restored: StateValue[] | undefined
      return {
        plan,
        enabled: plan.enabled,
        run() {},
        reset() {},
        async activate() {
          const given = restored
          restored = undefined
          befores = []
          for (const [i, path] of paths.entries()) {
            const was = await host.readPath(`${path}.enabled`)
            const undo = await host.suspendPath(path)
            if (undo && typeof was?.value === 'boolean') {
              const back = typeof given?.[i] === 'boolean' ? (given[i] as boolean) : was.value
              befores.push(back)
              restore.push(() => host.writePath(`${path}.enabled`, back))
            } else if (undo) {
              befores.push(null)
              restore.push(undo)
            } else if (failOnMissing)
              throw new NotFoundError(`action '${plan.name}': '${path}' names nothing on instance '${host.name}'`, [
                { path: plan.path, message: `'${path}' not found` },
              ])
            else {
              befores.push(null)
              host.warn(`suspend: '${path}' names nothing`, { action: plan.name })
            }
          }
        },
        async deactivate() {
          const undo = restore.reverse()
          restore = []
          befores = []
          for (const fn of undo) await fn()
        },
        state() {
          return restore.length > 0 ? { before: befores } : undefined
        },
        restore(state, path) {
          if (state === null) return void (restored = undefined)
          const read = new StateReader(state, path)
          const list = read.list('before')
          if (read.ok && (list.length !== paths.length || !list.every((b) => b === null || typeof b === 'boolean')))
            read.problem('before', `expected ${paths.length} values, each true, false or null`)
          if (!read.ok) return read.problems
          restored = list as StateValue[]
        },
      }
    }
  },
  doc: {
    summary:
      'Disables components of the instance while it is active (a node with an `enabled` property such as an action or `polling`, one with `disable`/`enable`; an adapter is detached), and puts them back when it stops. A path that names nothing is logged and skipped.',
    example: { suspend: 'actions.noise_2' },
  },
})
