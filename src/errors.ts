/**
 * The fault catalogue: every error Mimic reports has one class here, with a stable `code`,
 * the `event` name used in fault documents and one HTTP status. Nothing below the HTTP layer
 * knows HTTP, but every layer throws these, so the server can turn any of them into the
 * fault document of API.md section 6 without guessing.
 *
 * @example
 * throw new ValidationError("Model 'pt100': 1 error", [{ path: 'attributes.x', message: 'required' }])
 */

/** One problem inside a larger input, located by a dotted path (and a YAML position when known). */
export interface ErrorDetail {
  path: string
  message: string
  line?: number
  column?: number
  [key: string]: unknown
}

/** Every fault kind: its code, the event name of the fault document and its HTTP status. */
export const FAULT_KINDS = {
  BAD_REQUEST: { event: 'bad_request', status: 400, type: 'BadRequestError' },
  UNAUTHORIZED: { event: 'unauthorized', status: 401, type: 'UnauthorizedError' },
  FORBIDDEN: { event: 'forbidden', status: 403, type: 'ForbiddenError' },
  NOT_FOUND: { event: 'not_found', status: 404, type: 'NotFoundError' },
  CONFLICT: { event: 'conflict', status: 409, type: 'ConflictError' },
  PAYLOAD_TOO_LARGE: { event: 'payload_too_large', status: 413, type: 'PayloadTooLargeError' },
  UNSUPPORTED_MEDIA_TYPE: { event: 'unsupported_media_type', status: 415, type: 'UnsupportedMediaTypeError' },
  VALIDATION: { event: 'validation', status: 422, type: 'ValidationError' },
  USER_CODE: { event: 'user_code', status: 500, type: 'UserCodeError' },
  INTERNAL: { event: 'internal', status: 500, type: 'InternalError' },
  WORKER_GONE: { event: 'worker_gone', status: 503, type: 'WorkerGoneError' },
  SHUTTING_DOWN: { event: 'shutting_down', status: 503, type: 'ShuttingDownError' },
  STORE_UNAVAILABLE: { event: 'store_unavailable', status: 503, type: 'StoreUnavailableError' },
  WORKER_TIMEOUT: { event: 'worker_timeout', status: 504, type: 'WorkerTimeoutError' },
} as const

export type FaultCode = keyof typeof FAULT_KINDS

/** Base of every error Mimic throws at a boundary. */
export class MimicError extends Error {
  readonly code: FaultCode
  readonly details: ErrorDetail[]
  /** The component the fault is about, when it is not the node the request addressed. */
  component?: { name: string; path: string; state: string | null }

  /**
   * @example
   * new InternalError('Cannot write /srv/a.json: EIO', [], { cause: err }) // err stays in `.cause` for the log
   */
  constructor(code: FaultCode, message: string, details: ErrorDetail[] = [], options?: ErrorOptions) {
    super(message, options)
    this.code = code
    this.details = details
    this.name = FAULT_KINDS[code].type
  }

  get status(): number {
    return FAULT_KINDS[this.code].status
  }

  get event(): string {
    return FAULT_KINDS[this.code].event
  }
}

/** 400: the body is not JSON, or the envelope is wrong. */
export class BadRequestError extends MimicError {
  constructor(message: string, details: ErrorDetail[] = [], options?: ErrorOptions) {
    super('BAD_REQUEST', message, details, options)
  }
}

/** 401: missing or wrong product key. */
export class UnauthorizedError extends MimicError {
  constructor(message = 'Missing or wrong product key (send Authorization: Bearer <key>)') {
    super('UNAUTHORIZED', message)
  }
}

/** 403: a path outside the directories the operator allowed. */
export class ForbiddenError extends MimicError {
  constructor(message: string, details: ErrorDetail[] = [], options?: ErrorOptions) {
    super('FORBIDDEN', message, details, options)
  }
}

/** 404: unknown component, property, method, model or snapshot. */
export class NotFoundError extends MimicError {
  constructor(message: string, details: ErrorDetail[] = [], options?: ErrorOptions) {
    super('NOT_FOUND', message, details, options)
  }
}

/** 409: the request conflicts with the current state (a model in use, a port taken). */
export class ConflictError extends MimicError {
  constructor(message: string, details: ErrorDetail[] = [], options?: ErrorOptions) {
    super('CONFLICT', message, details, options)
  }
}

/** 413: the request body is larger than the configured limit. */
export class PayloadTooLargeError extends MimicError {
  constructor(message: string) {
    super('PAYLOAD_TOO_LARGE', message)
  }
}

/**
 * 415: a request body that is not declared as JSON. A web page on another origin can send a
 * body without asking the server first only as text/plain, a form or multipart, so refusing
 * those keeps such pages from driving the API.
 */
export class UnsupportedMediaTypeError extends MimicError {
  constructor(message: string, details: ErrorDetail[] = []) {
    super('UNSUPPORTED_MEDIA_TYPE', message, details)
  }
}

/** 422: an invalid definition or value; `details` lists every problem with its path. */
export class ValidationError extends MimicError {
  constructor(message: string, details: ErrorDetail[] = [], options?: ErrorOptions) {
    super('VALIDATION', message, details, options)
  }
}

/** 500: the user's Python code raised; the traceback is in `details`. */
export class UserCodeError extends MimicError {
  constructor(message: string, details: ErrorDetail[] = [], options?: ErrorOptions) {
    super('USER_CODE', message, details, options)
  }
}

/** 500: a bug in Mimic itself. */
export class InternalError extends MimicError {
  constructor(message: string, details: ErrorDetail[] = [], options?: ErrorOptions) {
    super('INTERNAL', message, details, options)
  }
}

/** 503: the Python worker that held the instance is gone. */
export class WorkerGoneError extends MimicError {
  constructor(message: string, details: ErrorDetail[] = [], options?: ErrorOptions) {
    super('WORKER_GONE', message, details, options)
  }
}

/** 503: the server is shutting down, so the work asked for was stopped (a `run` after its step under way) or not begun. */
export class ShuttingDownError extends MimicError {
  constructor(message: string, details: ErrorDetail[] = [], options?: ErrorOptions) {
    super('SHUTTING_DOWN', message, details, options)
  }
}

/** 503: the snapshot object store cannot be used: unreachable, its bucket missing, or it refused the credentials. */
export class StoreUnavailableError extends MimicError {
  constructor(message: string, details: ErrorDetail[] = [], options?: ErrorOptions) {
    super('STORE_UNAVAILABLE', message, details, options)
  }
}

/** 504: a call into Python ran past its time limit. */
export class WorkerTimeoutError extends MimicError {
  constructor(message: string, details: ErrorDetail[] = [], options?: ErrorOptions) {
    super('WORKER_TIMEOUT', message, details, options)
  }
}

/** Summarises a list of problems as "<subject>: N errors: first; second; ...". */
export function summarize(subject: string, details: ErrorDetail[]): string {
  const n = details.length
  return `${subject}: ${n} error${n === 1 ? '' : 's'}: ${listProblems(details, (text) => text)}`
}

/**
 * The message of a definition that failed validation, the first problem first on one line:
 * "<subject> schema validation failed: <path>: <message>", then the others and how many there
 * are. Clients that show only the first line of a fault (or only its start) still show what is
 * wrong and where.
 *
 * @example
 * validationFailure("Model 'x'", [{ path: 'attributes.y', message: 'expected a number' }])
 * // "Model 'x' schema validation failed: attributes.y: expected a number"
 */
export function validationFailure(subject: string, details: ErrorDetail[]): string {
  const n = details.length
  return `${subject} schema validation failed: ${listProblems(details, oneLine)}${n > 1 ? ` (${n} errors)` : ''}`
}

/** "path: message; path: message; ..." for the first five problems. */
function listProblems(details: ErrorDetail[], write: (text: string) => string): string {
  const shown = details
    .slice(0, 5)
    .map((d) => write(d.path ? `${d.path}: ${d.message}` : d.message))
    .join('; ')
  return `${shown}${details.length > 5 ? '; ...' : ''}`
}

function oneLine(text: string): string {
  return text.includes('\n') ? text.replace(/\s*\n\s*/g, ' ') : text
}

/**
 * A configuration problem (src/config.ts), reported by the CLI before anything starts. Lives here,
 * beside the other errors, so that the CLI tells it apart without loading the configuration's
 * schemas.
 */
export class ConfigError extends Error {}
