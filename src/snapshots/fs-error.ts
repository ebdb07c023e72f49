/**
 * Turns a Node file-system error into the fault a client can act on. The OS reason
 * (`EROFS: read-only file system, ...`) stays in the message, because "cannot write" alone
 * does not tell an operator whether to fix permissions, a mount or a full disk.
 */
import { ConflictError, ForbiddenError, InternalError, MimicError, NotFoundError } from '../errors.js'

/**
 * What was being attempted, for the message.
 *
 * @example
 * const ctx: FsErrorContext = { action: 'read snapshot', path: '/srv/snapshots/a.json' }
 */
export interface FsErrorContext {
  action: string
  path: string
  /** The request's field that named the file (`path`), for the fault's detail; else the file itself. */
  field?: string
}

const DENIED = new Set(['EACCES', 'EPERM', 'EROFS'])
const CONFLICTING = new Set(['ENOSPC', 'EDQUOT', 'ENOTDIR', 'EISDIR', 'EEXIST', 'ENOTEMPTY', 'EBUSY', 'EFBIG'])

/**
 * The errno code of a Node system error, or undefined for anything else.
 *
 * @example
 * errnoCode(await readFile('/nope').catch((e) => e)) // 'ENOENT'
 */
export function errnoCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code
    return typeof code === 'string' ? code : undefined
  }
  return undefined
}

/**
 * Maps a file-system error to a MimicError: denied (EACCES/EPERM/EROFS) -> 403, no space or
 * something in the way (ENOSPC/ENOTDIR/EISDIR/...) -> 409, missing -> 404 `File not found`,
 * anything else -> 500. A MimicError passes through unchanged.
 *
 * @example
 * try { await fs.writeFile(p, data) } catch (err) { throw toMimicError(err, { action: 'write snapshot', path: p }) }
 */
export function toMimicError(err: unknown, ctx: FsErrorContext): MimicError {
  if (err instanceof MimicError) return err
  const code = errnoCode(err)
  const reason = err instanceof Error ? err.message : String(err)
  const details = [{ path: ctx.field ?? ctx.path, message: reason }]
  if (code === 'ENOENT') return new NotFoundError(`File not found: ${ctx.path}`, details, { cause: err })
  if (code !== undefined && DENIED.has(code)) {
    return new ForbiddenError(`Cannot ${ctx.action} ${ctx.path}: ${reason}`, details, { cause: err })
  }
  if (code !== undefined && CONFLICTING.has(code)) {
    return new ConflictError(`Cannot ${ctx.action} ${ctx.path}: ${reason}`, details, { cause: err })
  }
  return new InternalError(`Cannot ${ctx.action} ${ctx.path}: ${reason}`, details, { cause: err })
}
