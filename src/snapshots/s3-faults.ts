/**
 * Turns an error of the AWS SDK into the fault a client or an operator can act on. An object store
 * that cannot be used (unreachable, its bucket gone, credentials refused, a 5xx) is a 503 naming the
 * endpoint, since nothing the client sends can fix it; anything else the store answers is a 500 with
 * its status and code.
 */
import { InternalError, MimicError, StoreUnavailableError } from '../errors.js'

/** What the SDK puts on an error it throws: the service's status and code, or a Node system error's code. */
interface SdkError {
  name?: string
  code?: string
  message?: string
  $metadata?: { httpStatusCode?: number }
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ECONNABORTED'])
const DENIED = new Set(['AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'ExpiredToken', 'InvalidToken', 'Forbidden'])

/**
 * The HTTP status the store answered, or undefined when no answer came.
 *
 * @example
 * storeStatus(await client.send(cmd).catch((e) => e)) // 404
 */
export function storeStatus(err: unknown): number | undefined {
  return (err as SdkError | undefined)?.$metadata?.httpStatusCode
}

/**
 * True when the store answered that the object is not there (GET: NoSuchKey, HEAD: NotFound).
 *
 * @example
 * if (isMissing(err)) return undefined
 */
export function isMissing(err: unknown): boolean {
  const name = (err as SdkError | undefined)?.name
  return name === 'NoSuchKey' || (storeStatus(err) === 404 && name !== 'NoSuchBucket')
}

/**
 * True when a conditional write lost (412 Precondition Failed, or 409 from a concurrent one).
 *
 * @example
 * if (lostRace(err)) continue
 */
export function lostRace(err: unknown): boolean {
  const status = storeStatus(err)
  const name = (err as SdkError | undefined)?.name
  return status === 412 || name === 'PreconditionFailed' || name === 'ConditionalRequestConflict'
}

/**
 * The fault of an SDK error: what was attempted (`save snapshot 3f0c…`), the store's URL and its
 * endpoint go into the message.
 *
 * @example
 * throw storeFault(err, { action: 'list snapshots in', store: 's3://bucket/prefix', endpoint: 'http://127.0.0.1:9000' })
 */
export function storeFault(err: unknown, ctx: { action: string; store: string; endpoint: string }): MimicError {
  if (err instanceof MimicError) return err
  const e = (err ?? {}) as SdkError
  const status = storeStatus(err)
  const reason = e.message || e.name || String(err)
  const at = `${ctx.store} at ${ctx.endpoint}`
  const details = [{ path: 'store', message: reason, endpoint: ctx.endpoint }]
  if (e.name === 'NoSuchBucket') {
    return new StoreUnavailableError(`Cannot ${ctx.action} ${ctx.store}: the bucket does not exist at ${ctx.endpoint}`, details, { cause: err })
  }
  if (e.name === 'CredentialsProviderError') {
    return new StoreUnavailableError(
      `Cannot ${ctx.action} ${at}: no AWS credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or a role): ${reason}`,
      details,
      { cause: err },
    )
  }
  if (status === undefined) {
    const unreachable =
      (e.code !== undefined && NETWORK_CODES.has(e.code)) || e.name === 'TimeoutError' || /ECONN|ENOTFOUND|EAI_AGAIN|timed? ?out|socket/i.test(reason)
    const what = unreachable ? 'the object store is unreachable' : 'the object store cannot be used'
    return new StoreUnavailableError(`Cannot ${ctx.action} ${at}: ${what}: ${reason}`, details, { cause: err })
  }
  if (status === 401 || status === 403 || (e.name !== undefined && DENIED.has(e.name))) {
    return new StoreUnavailableError(`Cannot ${ctx.action} ${at}: the object store refused access (${status} ${e.name ?? ''}): ${reason}`, details, {
      cause: err,
    })
  }
  if (status >= 500) {
    return new StoreUnavailableError(`Cannot ${ctx.action} ${at}: the object store answered ${status} ${e.name ?? ''}: ${reason}`, details, { cause: err })
  }
  return new InternalError(`Cannot ${ctx.action} ${at}: the object store answered ${status} ${e.name ?? ''}: ${reason}`, details, { cause: err })
}
