/**
 * Containment of client-given paths: a path is accepted only if, after resolving every symlink
 * that exists, it lies inside one of the allowed roots. What is checked is what gets used: the
 * caller receives the resolved path and does its I/O on it, so a symlink cannot redirect the
 * write after the check.
 */
import { lstat, realpath } from 'node:fs/promises'
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path'
import { ForbiddenError, ValidationError } from '../errors.js'
import { errnoCode, toMimicError } from './fs-error.js'

const CONTROL = /[\u0000-\u001f\u007f]/

/**
 * Checks a client-given path or directory string: a non-empty string without NUL or control
 * characters. `field` is the kwarg name reported in the 422.
 *
 * @example
 * checkPathText(kwargs.path, 'path') // returns the string, or throws ValidationError
 */
export function checkPathText(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new ValidationError(`${field} must be a non-empty string`, [{ path: field, message: 'expected a non-empty string' }])
  }
  if (CONTROL.test(value)) {
    throw new ValidationError(`${field} must not contain NUL or control characters`, [{ path: field, message: 'contains NUL or control characters' }])
  }
  return value
}

/**
 * Checks a file name: no path separators, not `.` or `..`, no control characters, at most
 * 255 bytes.
 *
 * @example
 * checkName('plant-a.json', 'name') // 'plant-a.json'
 * checkName('../etc', 'name')       // throws ValidationError with path 'name'
 */
export function checkName(value: unknown, field: string): string {
  const name = checkPathText(value, field)
  const fail = (message: string): never => {
    throw new ValidationError(`Invalid ${field} ${JSON.stringify(name)}: ${message}`, [{ path: field, message }])
  }
  if (name.includes('/') || name.includes('\\')) fail('must not contain path separators')
  if (name === '.' || name === '..') fail('must not be "." or ".."')
  if (Buffer.byteLength(name) > 255) fail('longer than 255 bytes')
  return name
}

/**
 * A snapshot id a client gives (`save` with `id`, as `mimic fleet save` sends one id to every
 * shard): letters, digits, `.`, `_` and `-`, at most 128, so that `<id>.json` is a plain file
 * name and the id is a key segment of the object store too. Anything else is a 422 with `field`.
 *
 * @example
 * checkSnapshotId('fleet-20260101-1200', 'kwargs.id') // 'fleet-20260101-1200'
 */
export function checkSnapshotId(value: string, field: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(value)) {
    const message = "expected letters, digits, '.', '_' and '-' (at most 128, not starting with '.', '_' or '-')"
    throw new ValidationError(`Invalid snapshot id ${JSON.stringify(value)}: ${message}`, [{ path: field, message }])
  }
  return value
}

/**
 * The real location of `path`: the realpath of its nearest existing ancestor joined with the
 * parts that do not exist yet. A dangling symlink on the way is refused, since writing through
 * it would land wherever it points.
 *
 * @example
 * await canonicalPath('/tmp/link-to-snapshots/new/plant.json') // '/var/lib/snapshots/new/plant.json'
 */
export async function canonicalPath(path: string): Promise<string> {
  const missing: string[] = []
  let current = resolve(path)
  for (;;) {
    try {
      const real = await realpath(current)
      return missing.length === 0 ? real : join(real, ...missing.reverse())
    } catch (err) {
      const code = errnoCode(err)
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw toMimicError(err, { action: 'resolve', path: current })
      if (code === 'ENOENT' && (await isDanglingLink(current))) {
        throw new ForbiddenError(`Path ${path} goes through a dangling symlink: ${current}`, [{ path: current, message: 'dangling symlink' }])
      }
    }
    const parent = dirname(current)
    if (parent === current) return resolve(path)
    missing.push(basename(current))
    current = parent
  }
}

/**
 * Options of {@link resolveInside}.
 *
 * @example
 * { base: '/srv/snapshots', roots: ['/srv/snapshots', '/mnt/shared'], field: 'path' }
 */
export interface ResolveInsideOptions {
  /** Base for relative paths (the snapshots directory). */
  base: string
  /** Directories the result must lie in (the base is usually one of them). */
  roots: readonly string[]
  /** The kwarg name for the 403 details. */
  field: string
}

/**
 * Resolves a client-given path (relative to `base`) and returns its real location, or throws
 * ForbiddenError (403) when that lies outside every root.
 *
 * @example
 * await resolveInside('sub/plant.json', { base: dir, roots: [dir], field: 'path' })
 * await resolveInside('../../etc/passwd', { base: dir, roots: [dir], field: 'path' }) // 403
 */
export async function resolveInside(given: string, opts: ResolveInsideOptions): Promise<string> {
  const target = await canonicalPath(isAbsolute(given) ? given : join(opts.base, given))
  const roots = await Promise.all(opts.roots.map((root) => canonicalPath(root)))
  if (roots.some((root) => isWithin(target, root))) return target
  const message = `Path ${JSON.stringify(given)} resolves to ${target}, outside the allowed directories (${roots.join(', ')})`
  throw new ForbiddenError(message, [{ path: opts.field, message: 'outside the allowed directories' }])
}

/**
 * True when `child` is `root` itself or lies below it (both already canonical).
 *
 * @example
 * isWithin('/a/b/c.json', '/a/b') // true
 * isWithin('/a/bc', '/a/b')       // false
 */
export function isWithin(child: string, root: string): boolean {
  if (child === root) return true
  const prefix = root.endsWith(sep) ? root : root + sep
  return child.startsWith(prefix)
}

async function isDanglingLink(path: string): Promise<boolean> {
  try {
    return (await lstat(path)).isSymbolicLink()
  } catch {
    return false
  }
}
