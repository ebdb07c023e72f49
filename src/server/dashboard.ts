/**
 * Serves the built dashboard (docs/dashboard.md) at `/ui`: the static files that `npm run build`
 * writes to `dist/ui`, read into memory once (see static-files.ts) on the first request. A
 * dashboard built while the server runs without one is picked up on the next request; a rebuild
 * over an existing one is served after a restart.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { NotFoundError } from '../errors.js'
import { PACKAGE_ROOT } from '../version.js'
import { loadDirectory, type StaticFiles } from './static-files.js'

/** Where the build puts the dashboard, relative to the package root. */
export const DASHBOARD_DIR = join('dist', 'ui')

/** Options of the dashboard route. */
export interface DashboardOptions {
  /** Directory holding the built `index.html` and `assets/` (default: `<package root>/dist/ui`). */
  dir?: string
}

// The page talks to its own origin only; uPlot sizes its canvas through inline styles.
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy':
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}

/**
 * Registers `GET /ui`, `/ui/` and `/ui/<file>`. Files under `assets/` carry a content hash in
 * their names and are cached for good; `index.html` is revalidated on every load (ETag), so a
 * new dashboard is picked up on reload. Without a build, every `/ui` URL answers a 503 page that
 * says what to run.
 *
 * @example
 * await buildApp({ system, logger, bodyLimit, fastLane: true, plugins: [(app) => registerDashboard(app)] })
 * // GET http://127.0.0.1:8000/ui -> the dashboard
 */
export function registerDashboard(app: FastifyInstance, opts: DashboardOptions = {}): void {
  const dir = resolve(opts.dir ?? join(PACKAGE_ROOT, DASHBOARD_DIR))
  let loaded: Promise<StaticFiles | null> | undefined
  const files = async (): Promise<StaticFiles | null> => {
    loaded ??= isBuilt(dir).then((built) => (built ? loadDirectory(dir, cacheControl, SECURITY_HEADERS) : null))
    const found = await loaded.catch(() => null)
    // Looked for again on the next request while missing or unreadable.
    if (found === null) loaded = undefined
    return found
  }

  const serve = async (req: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const bundle = await files()
    if (bundle === null)
      return reply
        .status(503)
        .headers({ ...SECURITY_HEADERS, 'cache-control': 'no-store' })
        .type('text/html; charset=utf-8')
        .send(notBuiltPage(dir))
    const rel = (req.params as { '*'?: string })['*'] ?? ''
    const file = bundle.get(rel === '' ? 'index.html' : rel)
    if (!file) throw new NotFoundError(`No dashboard file '/ui/${rel}'`, [{ path: `ui/${rel}`, message: 'not found' }])
    return file.send(req, reply)
  }

  app.get('/ui', serve)
  app.get('/ui/*', serve)
}

function cacheControl(rel: string): string {
  return rel.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache'
}

async function isBuilt(dir: string): Promise<boolean> {
  return stat(join(dir, 'index.html')).then(
    (s) => s.isFile(),
    () => false,
  )
}

function notBuiltPage(dir: string): string {
  const escaped = dir.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Mimic dashboard not built</title>
<style>body{font:15px/1.5 system-ui,sans-serif;background:#10151b;color:#d8dee6;max-width:40rem;margin:4rem auto;padding:0 1rem}
code{background:#1d2630;padding:.1rem .35rem;border-radius:3px}h1{font-size:1.3rem}</style></head>
<body><h1>The dashboard is not built</h1>
<p>This server has no dashboard files in <code>${escaped}</code>.</p>
<p>Build them in the Mimic package directory with <code>npm run build</code>, then reload this page.
The HTTP API under <code>/api/v3</code> works without them.</p></body></html>
`
}
