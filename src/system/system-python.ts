/**
 * The Python binding of a system: `reload_modules`, which makes the Python objects of its
 * instances anew from their `.py` files, and the extension directories it may be limited to.
 * What one instance loads is its own binding's (instance-python.ts).
 */

import { realpath } from 'node:fs/promises'
import { resolve, sep } from 'node:path'
import { ForbiddenError, ValidationError, summarize } from '../errors.js'
import type { CallArgs } from '../tree/component.js'
import type { System } from './system.js'

/**
 * `reload_modules` (the reference product's name): every instance whose Python objects are
 * loaded makes them anew from its `.py` files as they are now, so an edited extension takes
 * effect without a restart. kwarg `directories` (a path or a list, each inside an extension
 * directory, else 403) limits it to instances with a file there. Taken between two system
 * steps; an instance whose new code fails to load goes to ERROR and the first failure is
 * thrown after all were tried.
 *
 * @example
 * await system.call('reload_modules', { args: [], kwargs: { directories: ['extensions'] } })
 * // { reloaded: ['sensor_1'], files: ['/srv/extensions/py_temp_sensor.py'], directories: ['/srv/extensions'] }
 */
export async function reloadModules(system: System, call: CallArgs): Promise<{ reloaded: string[]; files: string[]; directories: string[] }> {
  const unknown = Object.keys(call.kwargs).filter((k) => k !== 'directories')
  if (unknown.length || call.args.length > 1) {
    const details = [
      ...unknown.map((k) => ({ path: `kwargs.${k}`, message: 'unknown argument (reload_modules takes directories)' })),
      ...(call.args.length > 1 ? [{ path: 'args', message: 'reload_modules takes one argument, directories' }] : []),
    ]
    throw new ValidationError(summarize('reload_modules', details), details)
  }
  const given = call.kwargs.directories ?? call.args[0]
  const directories = given === undefined || given === null ? undefined : await extensionDirectories(given, system.services.extensions)
  const within = directories && ((file: string) => directories.some((dir) => file === dir || file.startsWith(dir.endsWith(sep) ? dir : dir + sep)))
  return await system.engine.between(async () => {
    const reloaded: string[] = []
    const files = new Set<string>()
    let failure: unknown
    for (const instance of system.instances.all()) {
      try {
        const own = await instance.lifecycle.reloadPython(within)
        if (own.length === 0 && !(within === undefined && instance.binding)) continue
        reloaded.push(instance.name)
        for (const file of own) files.add(file)
      } catch (err) {
        failure ??= err
      }
    }
    if (failure !== undefined) throw failure
    return { reloaded, files: [...files], directories: directories ?? [...system.services.extensions].map((d) => resolve(d)) }
  })
}

/**
 * The directories a `reload_modules` call names, each resolved (symlinks too) and checked to lie
 * inside one of the extension directories: 422 for a value that is not a path or a list of
 * them, 403 for a directory outside.
 */
async function extensionDirectories(given: unknown, extensions: readonly string[]): Promise<string[]> {
  const list = typeof given === 'string' ? [given] : given
  if (!Array.isArray(list) || list.length === 0 || !list.every((d): d is string => typeof d === 'string' && d !== '')) {
    throw new ValidationError('reload_modules: directories is a directory or a list of them', [
      { path: 'kwargs.directories', message: 'expected a path or a list of paths' },
    ])
  }
  const roots = await Promise.all(extensions.map(async (d) => await realpath(d).catch(() => resolve(d))))
  const inside = (dir: string): boolean => roots.some((root) => dir === root || dir.startsWith(root.endsWith(sep) ? root : root + sep))
  return await Promise.all(
    list.map(async (dir, i) => {
      // A relative directory is taken from the server's working directory (as --extensions is), else inside an extension directory.
      const candidates = dir.startsWith('/') ? [resolve(dir)] : [resolve(dir), ...roots.map((root) => resolve(root, dir))]
      for (const candidate of candidates) {
        const real = await realpath(candidate).catch(() => undefined)
        if (real !== undefined && inside(real)) return real
      }
      const path = `kwargs.directories${typeof given === 'string' ? '' : `[${i}]`}`
      const message = `'${dir}' is not a directory inside the extension directories (${extensions.join(', ') || 'none configured'})`
      throw new ForbiddenError(`reload_modules: ${message}`, [{ path, message }])
    }),
  )
}
