/** `call`: a method of the instance's tree called when it is prepared or started, and another when it stops. */
import { isMap } from '../compile-context.js'
import { defineActionKind, listField, mapField, pathField } from './kind.js'

export const callKind = defineActionKind({
  kind: 'call',
  lifecycle: true,
  fields: {
    path: 'the dotted path of the method, when the spec is a map (`call: {path: ..., args: [...]}`); else the value of `call` itself',
    args: 'its positional arguments, a list',
    kwargs: 'its keyword arguments, a map',
    stop_path: 'the dotted path of a method called when the instance stops',
    stop_args: 'its positional arguments, a list',
    stop_kwargs: 'its keyword arguments, a map',
  },
  compile(input) {
    const { context, fields, fieldPath } = input
    const spec: Record<string, unknown> = isMap(input.target) ? { ...input.target, ...fields } : { ...fields, path: input.target }
    const at = (key: string): string =>
      isMap(input.target) && Object.hasOwn(input.target, key) ? `${input.path}.call.${key}` : key === 'path' ? `${input.path}.call` : fieldPath(key)
    const path = pathField(context, spec.path, at('path'), true)
    const stopPath = pathField(context, spec.stop_path, at('stop_path'), false)
    const args = listField(context, spec.args, at('args'))
    const kwargs = mapField(context, spec.kwargs, at('kwargs'))
    const stopArgs = listField(context, spec.stop_args, at('stop_args'))
    const stopKwargs = mapField(context, spec.stop_kwargs, at('stop_kwargs'))
    if (path === null) return null
    return (env, plan) => {
      const host = env.ctx.host
      return {
        plan,
        enabled: plan.enabled,
        run() {},
        reset() {},
        async activate() {
          await host.callPath(path, args, kwargs)
        },
        async deactivate() {
          if (stopPath !== null && stopPath !== undefined) await host.callPath(stopPath, stopArgs, stopKwargs)
        },
      }
    }
  },
  doc: {
    summary: 'Calls a method of the instance (`communication.modbus_slave.detach`) when it starts, and the method of `stop_path` when it stops.',
    example: { call: 'communication.modbus_slave.detach', stop_path: 'communication.modbus_slave.attach' },
  },
})
