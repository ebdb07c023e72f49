import { MimicError, type FaultCode, FAULT_KINDS } from './errors.js'

/**
 * Calls a snapshots method on a running server for the CLI and returns its `result`.
 * A fault from the server becomes a MimicError with the server's message and details.
 *
 * @example
 * await snapshotCall({ url: 'http://127.0.0.1:8000' }, 'list', {})
 */
export async function snapshotCall(opts: { url: string; productKey?: string }, method: string, kwargs: Record<string, unknown>): Promise<unknown> {
  const url = `${opts.url.replace(/\/+$/, '')}/api/v3/system/snapshots/method/${method}`
  let response: Response
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(opts.productKey ? { authorization: `Bearer ${opts.productKey}` } : {}) },
      body: JSON.stringify({ kwargs }),
      signal: AbortSignal.timeout(60_000),
    })
  } catch (err) {
    throw new MimicError('WORKER_GONE', `Cannot reach the Mimic server at ${opts.url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`)
  }
  const body = (await response.json().catch(() => ({}))) as { result?: unknown; error?: { message?: string; details?: [] } }
  if (!response.ok) {
    const code = (Object.keys(FAULT_KINDS) as FaultCode[]).find((k) => FAULT_KINDS[k].status === response.status) ?? 'INTERNAL'
    throw new MimicError(code, body.error?.message ?? `HTTP ${response.status}`, body.error?.details ?? [])
  }
  return body.result
}
