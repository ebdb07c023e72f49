import type { System } from '../../system/system.js'
import type { BrowserGuard } from '../browser-guard.js'
import { correlationIdOf, faultFor, type FaultLog } from '../faults.js'
import { parseJsonBody } from '../json-body.js'
import { JsonText, answerTree, treeFaultContext } from '../tree-routes.js'
import type { LaneHandler } from './connection.js'
import type { LaneRequest } from './parse.js'
import type { LaneResponse } from './response.js'

/** Tree URLs the fast lane answers: plain segments only (no percent-encoding, query or empty segment). */
const LANE_URL = /^\/api\/v3\/system(?:\/[A-Za-z0-9_-]+)*$/

/** What the tree handler needs. */
export interface TreeLaneOptions {
  system: System
  /** The Bearer check of the fastify routes (auth.ts). */
  authorized: (header: string | undefined) => boolean
  /** The browser checks of the fastify routes (browser-guard.ts). */
  guard: Pick<BrowserGuard, 'refusal'>
  logger: FaultLog
  /**
   * Told of every answer the lane gives (method, status, seconds since the handler took the
   * request), as the onResponse hook tells of node:http's: called where the answer is made, so
   * that counting a `run` costs no promise of its own.
   */
  observe?: (method: string, status: number, seconds: number) => void
}

/**
 * The lane's handler for the tree: requests with a plain URL, an accepted key, headers the
 * browser checks pass and a body that parses, answered by the same code as the fastify route
 * (tree-routes.ts `answerTree`, faults.ts `faultFor`). Everything else is declined before it
 * runs, so fastify answers it, 401s, 403s and 400s included. A request with an Origin (a
 * browser's) is declined too: fastify adds the CORS headers where they are due.
 *
 * @example
 * const lane = attachFastLane(app.server, treeLaneHandler({ system, authorized: bearerCheck(key), guard, logger }), { bodyLimit, logger })
 */
export function treeLaneHandler(options: TreeLaneOptions): LaneHandler {
  const { system, authorized, guard, logger, observe } = options
  return (req) => {
    const began = observe ? performance.now() : 0
    const headers = req.headers
    if (!LANE_URL.test(req.url) || headers.origin !== undefined || !authorized(headers.authorization)) return undefined
    const refused = guard.refusal({
      method: req.method,
      url: req.url,
      host: headers.host,
      origin: undefined,
      secFetchSite: headers['sec-fetch-site'],
      contentType: headers['content-type'],
      hasBody: req.body.length > 0,
    })
    if (refused) return undefined
    let body: unknown
    try {
      body = parseJsonBody(req.body)
    } catch {
      return undefined
    }
    return answerLane(system, req, body, logger, observe && ((status) => observe(req.method, status, (performance.now() - began) / 1000)))
  }
}

/** The lane's answer to a tree request it took: the route's document, or the fault fastify would send. */
function answerLane(
  system: System,
  req: LaneRequest,
  body: unknown,
  log: FaultLog,
  observe: ((status: number) => void) | undefined,
): LaneResponse | Promise<LaneResponse> {
  const id = correlationIdOf(req.headers['x-correlation-id'])
  const context = treeFaultContext(req.method)
  const answered = (result: unknown): LaneResponse => {
    const response = {
      status: 200,
      headers: `x-correlation-id: ${id}\r\ncache-control: no-store\r\n`,
      body: result instanceof JsonText ? result.text : JSON.stringify(result),
    }
    observe?.(200)
    return response
  }
  const failed = (error: unknown): LaneResponse => {
    const { status, fault } = faultFor(error, context, id, log)
    observe?.(status)
    return { status, headers: `x-correlation-id: ${id}\r\n`, body: JSON.stringify(fault) }
  }
  try {
    const result = answerTree(system, req.method, req.url, body, context)
    // A read is answered in this turn, without a promise chain (see answerTree).
    if (!(result instanceof Promise)) return answered(result)
    return result.then((value) => {
      try {
        return answered(value)
      } catch (error) {
        return failed(error)
      }
    }, failed)
  } catch (error) {
    return failed(error)
  }
}
