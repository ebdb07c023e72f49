/**
 * Finds the .py file behind an `import` key, inside the operator's extension directories only.
 *
 * @example
 * const file = await resolveImportPath('py_temp_sensor.py', ['/srv/mimic/extensions'])
 */
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
