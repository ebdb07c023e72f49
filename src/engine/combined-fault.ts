import { MimicError, type ErrorDetail } from '../errors.js'

/**
 * One fault for failures of several instances: their common kind when they share one, else a 500.
 *
 * @example
 * throw combinedFault(errors, summarize('Step 3', details), details)
 */
export function combinedFault(errors: unknown[], message: string, details: ErrorDetail[]): MimicError {
  const codes = new Set(errors.map((e) => (e instanceof MimicError ? e.code : 'INTERNAL')))
  const code = codes.size === 1 ? [...codes][0]! : 'USER_CODE'
  return new MimicError(code, message, details)
}
