/**
 * Maps a failure reported by a Python worker onto the fault catalogue.
 *
 * @example
 * if (!reply.ok) throw remoteError(reply.error, { instance: 'sensor', action: "call 'run'" })
 */
import { InternalError, NotFoundError, UserCodeError, ValidationError } from '../errors.js'
import type { MimicError } from '../errors.js'
import type { WireError } from './messages.js'

/**
 * What the failing request was about, for the fault message.
 *
 * @example
 * const context: RemoteErrorContext = { instance: 'sensor', action: "call 'run'" }
 */
export interface RemoteErrorContext {
  instance: string
  /** e.g. `load`, `call 'run'`, `set 'temperature'`. */
  action: string
}

/**
 * Builds the MimicError for a worker failure: user exceptions are 500 with the traceback,
 * load problems, writes to read-only bindings and arguments that do not fit a method 422 naming
 * the entry, unknown names 404.
 * The detail's message never repeats its path, which the fault message puts before it.
 *
 * @example
 * remoteError({ kind: 'load', message: "class 'X' not found in a.py", path: 'import.a.py.class' },
 *             { instance: 'sensor', action: 'load' })   // ValidationError
 */
export function remoteError(error: WireError | undefined, context: RemoteErrorContext): MimicError {
  const kind = error?.kind ?? 'protocol'
  const path = error?.path ?? (kind === 'load' ? 'import' : context.action)
  // The path is said once: a message that starts with it already (`actions[0].call: ...`) loses it here.
  const given = error?.message ?? 'the Python worker gave no reason'
  const message = given.startsWith(`${path}: `) ? given.slice(path.length + 2) : given
  const detail = {
    path,
    message,
    ...(error?.traceback ? { traceback: error.traceback } : {}),
  }
  const where = `instance '${context.instance}'`
  switch (kind) {
    case 'user_code':
      return new UserCodeError(`Python code of ${where} raised during ${context.action}: ${message}`, [detail])
    case 'load':
      return new ValidationError(`Cannot load Python code of ${where}: ${detail.path}: ${message}`, [detail])
    case 'read_only':
      return new ValidationError(`${message}`, [detail])
    case 'not_found':
      return new NotFoundError(message, [detail])
    case 'arguments':
      return new ValidationError(`The arguments of ${context.action} on ${where} do not fit: ${message}`, [detail])
    default:
      return new InternalError(`Python worker refused ${context.action} of ${where}: ${message}`, [detail])
  }
}
