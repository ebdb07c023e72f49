/**
 * Finds the .py file behind an `import` key, inside the operator's extension directories only.
 *
 * @example
 * const file = await resolveImportPath('py_temp_sensor.py', ['/srv/mimic/extensions'])
 */
import { realpathSync, statSync } from 'node:fs'
import { realpath, stat } from 'node:fs/promises'
import path from 'node:path'
import { ForbiddenError, ValidationError } from '../errors.js'

async function realOrResolved(p: string): Promise<string> {
  try {
    return await realpath(p)
  } catch {
    return path.resolve(p)
  }
}

async function isFile(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isFile()
  } catch {
    return false
  }
}

function isInside(file: string, dir: string): boolean {
  const rel = path.relative(dir, file)
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel)
}

function forbidden(key: string, dirs: string[]): ForbiddenError {
  const allowed = dirs.length ? dirs.join(', ') : '(none configured)'
  const message = `import '${key}' is outside the allowed extension directories: ${allowed}`
  return new ForbiddenError(message, [{ path: `import.${key}`, message }])
}

/**
 * Resolves an `import` key to the real path of a .py file.
 *
 * A relative key is looked up in each directory in order; an absolute key must lie inside one of
 * them. Both are checked after resolving symlinks, so neither `..` nor a link can escape.
 * Throws ForbiddenError (403) for anything outside, ValidationError (422, path `import.<key>`)
 * for a missing file or a name that does not end in `.py`.
 *
 * @example
 * await resolveImportPath('/srv/ext/a.py', ['/srv/ext'])   // '/srv/ext/a.py'
 * await resolveImportPath('../etc/x.py', ['/srv/ext'])     // throws ForbiddenError
 */
export async function resolveImportPath(key: string, extensionDirs: string[]): Promise<string> {
  const detailPath = `import.${key}`
  if (!key.endsWith('.py')) {
    const message = `import '${key}' must name a .py file`
    throw new ValidationError(message, [{ path: detailPath, message }])
  }
  const dirs = await Promise.all(extensionDirs.map(realOrResolved))
  if (dirs.length === 0) throw forbidden(key, extensionDirs)

  const candidates = path.isAbsolute(key) ? [path.normalize(key)] : dirs.map((dir) => path.resolve(dir, key))
  for (const [index, candidate] of candidates.entries()) {
    // Refuse a lexical escape before touching the file system, so the answer does not reveal
    // whether a file outside exists.
    const lexicallyInside = path.isAbsolute(key)
      ? extensionDirs.some((d) => isInside(candidate, path.resolve(d))) || dirs.some((d) => isInside(candidate, d))
      : isInside(candidate, dirs[index]!)
    if (!lexicallyInside) throw forbidden(key, extensionDirs)
    if (!(await isFile(candidate))) continue
    const real = await realpath(candidate)
    if (!dirs.some((dir) => isInside(real, dir))) throw forbidden(key, extensionDirs)
    return real
  }
  const message = `file '${key}' not found in the extension directories: ${extensionDirs.join(', ')}`
  throw new ValidationError(message, [{ path: detailPath, message }])
}

/**
 * Finds the .py file a dotted name of an action's `imports` names under the extension
 * directories, the way an `import` block finds its files: `extensions.thermal_model.thermal_step`
 * is `thermal_model.py` (the first part may name the directory itself, or a folder in it) and
 * `thermal_step` inside it. The longest part that is a file wins; undefined when none is (a
 * module the interpreter imports, such as `numpy`). Symlinks that leave the directories are ignored.
 *
 * @example
 * await resolveModuleFile('extensions.thermal_model.thermal_step', ['/srv/extensions'])
 * // { file: '/srv/extensions/thermal_model.py', attribute: 'thermal_step' }
 */
export async function resolveModuleFile(name: string, extensionDirs: string[]): Promise<{ file: string; attribute: string } | undefined> {
  // The same look-up as a model's compile-time check, so that both always agree on the file.
  return resolveModuleFileSync(name, extensionDirs)
}

/**
 * `resolveModuleFile` without awaiting, for checks that run while a model compiles: the file a
 * dotted name of an action's `imports` names under the extension directories, after symlinks,
 * or undefined (a link that leaves the directories counts as no file).
 *
 * @example
 * resolveModuleFileSync('extensions.thermal_model.thermal_step', ['/srv/extensions'])
 * // { file: '/srv/extensions/thermal_model.py', attribute: 'thermal_step' }
 */
export function resolveModuleFileSync(name: string, extensionDirs: string[]): { file: string; attribute: string } | undefined {
  const parts = name.split('.')
  if (parts.some((p) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(p))) return undefined
  for (const given of extensionDirs) {
    let dir: string
    try {
      dir = realpathSync(given)
    } catch {
      dir = path.resolve(given)
    }
    const dirName = path.basename(path.resolve(given))
    for (let k = parts.length; k >= 1; k--) {
      const candidates = [parts.slice(0, k)]
      if (k >= 2 && parts[0] === dirName) candidates.unshift(parts.slice(1, k))
      for (const segments of candidates) {
        const candidate = path.join(dir, ...segments.slice(0, -1), `${segments[segments.length - 1]}.py`)
        try {
          if (!statSync(candidate).isFile()) continue
          const real = realpathSync(candidate)
          if (!isInside(real, dir)) continue
          return { file: real, attribute: parts.slice(k).join('.') }
        } catch {
          continue
        }
      }
    }
  }
  return undefined
}
