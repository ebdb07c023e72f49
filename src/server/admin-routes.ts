import type { FastifyInstance, FastifyRequest } from 'fastify'
import { BadRequestError, UnauthorizedError } from '../errors.js'
import { isRecord } from '../definition/is-record.js'
import type { System } from '../system/system.js'

/**
 * The admin form of the reference product's guides, `POST /system/reload`: the system's
 * `reload_modules` method (System.reloadModules), answered as `POST
 * /api/v3/system/method/reload_modules` answers. It is only another address of that method:
 * the tree stays the one place the behaviour lives. The body is empty, `{"kwargs": {...}}` as a
 * method call's, or the kwargs themselves (`{"directories": [...]}`). It asks for the product
 * key as the API does.
 *
 * @example
 * registerAdminRoutes(app, system, bearerCheck(config.productKey))
 * // POST /system/reload -> {"result": {"reloaded": ["sensor_1"], "files": [...], "directories": [...]}}
 */
export function registerAdminRoutes(app: FastifyInstance, system: System, authorized: (header: string | undefined) => boolean): void {
  app.post('/system/reload', async (req: FastifyRequest) => {
    req.mimicFault = { action: 'reload_modules', component: system.faultInfo(), node: system }
    if (!authorized(req.headers.authorization)) throw new UnauthorizedError()
    return { result: await system.call('reload_modules', { args: [], kwargs: kwargsOf(req.body) }) }
  })
}

function kwargsOf(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null || body === '') return {}
  if (!isRecord(body)) throw new BadRequestError('The body of POST /system/reload is a JSON object: {"kwargs": {"directories": [...]}} or {}')
  if (body.kwargs === undefined) return body
  if (!isRecord(body.kwargs)) throw new BadRequestError('kwargs must be a JSON object')
  return body.kwargs
}
