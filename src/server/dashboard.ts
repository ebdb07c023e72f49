/**
 * Serves the built dashboard (docs/dashboard.md) at `/ui`: the static files that `npm run build`
 * writes to `dist/ui`. A dozen files with known types do not need a static-file plugin; a fixed
 * content-type map and a lookup that cannot leave the assets directory are all it takes.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { readFile, realpath, stat } from 'node:fs/promises'
import { extname, join, resolve, sep } from 'node:path'
import { NotFoundError } from '../errors.js'
import { PACKAGE_ROOT } from '../version.js'

/** Where the build puts the dashboard, relative to the package root. */
export const DASHBOARD_DIR = join('dist', 'ui')

/** Options of the dashboard route. */
export interface DashboardOptions {
  /** Directory holding the built `index.html` and `assets/` (default: `<package root>/dist/ui`). */
  dir?: string
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
}

// The page talks to its own origin only; uPlot sizes its canvas through inline styles.
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}

/**
 * Registers `GET /ui`, `/ui/` and `/ui/<file>`. Files under `assets/` carry a content hash in
 * their names and are cached for good; `index.html` is never cached, so a rebuilt dashboard is
 * picked up on reload. Without a build, every `/ui` URL answers a 503 page that says what to run.
 *
 * @example
 * await buildApp({ system, logger, bodyLimit, plugins: [(app) => registerDashboard(app)] })
 * // GET http://127.0.0.1:8000/ui -> the dashboard
 */
export function registerDashboard(app: FastifyInstance, opts: DashboardOptions = {}): void {
  const dir = resolve(opts.dir ?? join(PACKAGE_ROOT, DASHBOARD_DIR))
  let root: Promise<string | null> | undefined
  // Resolved once the first request comes, and again while missing: a build made while the
  // server runs is picked up without a restart.
  const rootDir = async (): Promise<string | null> => {
    root ??= realpath(dir).then((real) => stat(join(real, 'index.html')).then((s) => (s.isFile() ? real : null)), () => null)
    const found = await root
    if (found === null) root = undefined
    return found
  }

  const serve = async (req: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const base = await rootDir()
    if (base === null) return reply.status(503).headers({ ...SECURITY_HEADERS, 'cache-control': 'no-store' }).type('text/html; charset=utf-8').send(notBuiltPage(dir))
    const rel = (req.params as { '*'?: string })['*'] ?? ''
    const file = await locate(base, rel || 'index.html')
    if (!file) throw new NotFoundError(`No dashboard file '/ui/${rel}'`, [{ path: `ui/${rel}`, message: 'not found' }])
    const body = await readFile(file)
    const immutable = file.startsWith(join(base, 'assets') + sep)
    return reply
      .headers({ ...SECURITY_HEADERS, 'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache' })
      .type(CONTENT_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream')
      .send(body)
  }

  app.get('/ui', { schema: { hide: true } }, serve)
  app.get('/ui/*', { schema: { hide: true } }, serve)
}

/**
 * The file `rel` names inside `base`, or null. Refuses anything that could step outside: `..`
 * segments, backslashes, NUL bytes, dot-files, and symlinks that resolve elsewhere.
 */
async function locate(base: string, rel: string): Promise<string | null> {
  let decoded: string
  try {
    decoded = decodeURIComponent(rel.split('?')[0]!)
  } catch {
    return null
  }
  const segments = decoded.split('/').filter((s) => s.length > 0)
  if (!segments.length || segments.some((s) => s === '..' || s.startsWith('.') || s.includes('\\') || s.includes('\0'))) return null
  const candidate = join(base, ...segments)
  try {
    const real = await realpath(candidate)
    if (!real.startsWith(base + sep)) return null
    return (await stat(real)).isFile() ? real : null
  } catch {
    return null
  }
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
