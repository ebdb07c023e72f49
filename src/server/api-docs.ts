/**
 * The API documentation: `/openapi.json` (the OpenAPI document) and `/docs` (Swagger UI reading
 * it). Swagger UI's files come from the `swagger-ui-dist` package and are served from memory
 * (see static-files.ts), loaded on the first request for them.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { NotFoundError } from '../errors.js'
import { buildOpenApi } from './openapi.js'
import { loadFile, StaticFile } from './static-files.js'

/** The Swagger UI files the page uses; source maps and the ES bundles stay out. */
const UI_FILES = ['swagger-ui.css', 'index.css', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'favicon-32x32.png', 'favicon-16x16.png']

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Mimic HTTP API</title>
<link rel="stylesheet" href="/docs/static/swagger-ui.css">
<link rel="stylesheet" href="/docs/static/index.css">
<link rel="icon" type="image/png" href="/docs/static/favicon-32x32.png" sizes="32x32">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/static/swagger-ui-bundle.js"></script>
<script src="/docs/static/swagger-ui-standalone-preset.js"></script>
<script src="/docs/static/initializer.js"></script>
</body>
</html>
`

// A file of its own rather than an inline script, so the page needs no 'unsafe-inline'.
const INITIALIZER = `window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: 'StandaloneLayout',
  })
}
`

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'content-security-policy':
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}

/**
 * Registers `/openapi.json`, `/docs`, `/docs/json` (the same document) and `/docs/static/<file>`.
 * A name that is not one of the page's files (`/docs/static/../x` included) is a 404 fault:
 * nothing is looked up on disk.
 *
 * @example
 * registerApiDocs(app) // GET /docs -> Swagger UI
 */
export function registerApiDocs(app: FastifyInstance): void {
  const openApi = JSON.stringify(buildOpenApi())
  let files: Promise<Map<string, StaticFile>> | undefined
  const load = async (): Promise<Map<string, StaticFile>> => {
    const dir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
    const loaded = new Map<string, StaticFile>()
    for (const name of UI_FILES) loaded.set(name, await loadFile(join(dir, name), 'no-cache', SECURITY_HEADERS))
    loaded.set(
      'initializer.js',
      await StaticFile.from(Buffer.from(INITIALIZER), { contentType: 'text/javascript; charset=utf-8', cacheControl: 'no-cache', headers: SECURITY_HEADERS }),
    )
    loaded.set(
      'index.html',
      await StaticFile.from(Buffer.from(PAGE), { contentType: 'text/html; charset=utf-8', cacheControl: 'no-cache', headers: SECURITY_HEADERS }),
    )
    return loaded
  }
  const serve = async (name: string, req: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    // A failed load (a broken install) is not kept: the next request tries again.
    files ??= load().catch((err: unknown) => {
      files = undefined
      throw err
    })
    const file = (await files).get(name)
    if (!file) throw new NotFoundError(`No API docs file '/docs/static/${name}'`, [{ path: `docs/static/${name}`, message: 'not found' }])
    return file.send(req, reply)
  }
  const document = async (_req: FastifyRequest, reply: FastifyReply): Promise<unknown> => reply.type('application/json; charset=utf-8').send(openApi)

  app.get('/openapi.json', document)
  app.get('/docs/json', document)
  app.get('/docs', (req, reply) => serve('index.html', req, reply))
  app.get('/docs/static/*', (req, reply) => serve((req.params as { '*'?: string })['*'] ?? '', req, reply))
}
