/**
 * Static files served from memory: the dashboard's build and the API docs page. Each file is
 * read once, its ETag computed and its gzip and brotli forms compressed once; a request then
 * costs a map lookup and a write of bytes already held.
 *
 * Why not a static-file plugin: `@fastify/static` opens a file stream per request, and on
 * Node 20 the streams of pipelined responses queued behind an unread one are never closed when
 * the client goes away, so a client that pipelines hundreds of requests and hangs up leaks one
 * descriptor per request (docs/reliability.md). Serving a dozen known files from memory leaves
 * nothing per request to leak, and no request can reach the file system, so no path can step
 * outside the files that were loaded.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { extname, join } from 'node:path'
import { promisify } from 'node:util'
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib'

const gzipAsync = promisify(gzip)
const brotliAsync = promisify(brotliCompress)

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

/** Types worth compressing: text. Images and fonts are compressed already. */
const COMPRESSIBLE = /^(text\/|application\/json|image\/svg)/

/** Files below this size are sent as they are: compression would save less than its headers. */
const MIN_COMPRESS_BYTES = 1024

/**
 * One file held in memory with its precomputed forms.
 *
 * @example
 * const file = await StaticFile.from(Buffer.from('<p>hi</p>'), { contentType: 'text/html; charset=utf-8', cacheControl: 'no-cache' })
 */
export class StaticFile {
  private constructor(
    readonly body: Buffer,
    readonly gzip: Buffer | undefined,
    readonly brotli: Buffer | undefined,
    readonly etag: string,
    readonly headers: Readonly<Record<string, string>>,
  ) {}

  /** Builds the file: ETag from its content, compressed forms where they pay. */
  static async from(body: Buffer, opts: { contentType: string; cacheControl: string; headers?: Record<string, string> }): Promise<StaticFile> {
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
    let gz: Buffer | undefined
    let br: Buffer | undefined
    if (COMPRESSIBLE.test(opts.contentType) && body.length >= MIN_COMPRESS_BYTES) {
      ;[gz, br] = await Promise.all([
        gzipAsync(body, { level: 9 }),
        // Quality 9 is within a few percent of the maximum at a tenth of its time (the docs'
        // 1.5 MB bundle compresses in about 0.2 s once, instead of 3 s).
        brotliAsync(body, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 9, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: body.length } }),
      ])
      if (gz.length > body.length * 0.9) gz = undefined
      if (br !== undefined && br.length > body.length * 0.9) br = undefined
    }
    const headers: Record<string, string> = { ...opts.headers, 'content-type': opts.contentType, 'cache-control': opts.cacheControl, etag }
    if (gz !== undefined || br !== undefined) headers.vary = 'accept-encoding'
    return new StaticFile(body, gz, br, etag, headers)
  }

  /**
   * Answers a GET or HEAD: 304 when the client's `If-None-Match` holds the ETag, otherwise the
   * best encoding the client accepts.
   */
  send(req: FastifyRequest, reply: FastifyReply): FastifyReply {
    void reply.headers(this.headers)
    if (matchesEtag(req.headers['if-none-match'], this.etag)) return reply.status(304).send()
    const accepted = req.headers['accept-encoding'] ?? ''
    if (this.brotli !== undefined && acceptsEncoding(accepted, 'br')) return reply.header('content-encoding', 'br').send(this.brotli)
    if (this.gzip !== undefined && acceptsEncoding(accepted, 'gzip')) return reply.header('content-encoding', 'gzip').send(this.gzip)
    return reply.send(this.body)
  }
}

/**
 * A set of files by their path relative to the set's URL prefix (`assets/main.js`).
 *
 * @example
 * const files = await loadDirectory('/srv/ui', (rel) => (rel === 'index.html' ? 'no-cache' : 'public, max-age=31536000, immutable'))
 * files.get('index.html')?.send(req, reply)
 */
export type StaticFiles = ReadonlyMap<string, StaticFile>

/**
 * Loads every regular file below `dir` (dot-files and symlinks are skipped, so nothing outside
 * the directory is read). `cacheControl` gives each file's Cache-Control by its relative path.
 */
export async function loadDirectory(dir: string, cacheControl: (rel: string) => string, headers: Record<string, string> = {}): Promise<StaticFiles> {
  const files = new Map<string, StaticFile>()
  const walk = async (sub: string): Promise<void> => {
    for (const entry of await readdir(join(dir, sub), { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue
      const rel = sub === '' ? entry.name : `${sub}/${entry.name}`
      if (entry.isDirectory()) await walk(rel)
      else if (entry.isFile()) files.set(rel, await loadFile(join(dir, rel), cacheControl(rel), headers))
    }
  }
  await walk('')
  return files
}

/**
 * Loads one file; its content type comes from its extension.
 *
 * @example
 * const css = await loadFile('/srv/docs/swagger-ui.css', 'no-cache')
 */
export async function loadFile(path: string, cacheControl: string, headers: Record<string, string> = {}): Promise<StaticFile> {
  return StaticFile.from(await readFile(path), { contentType: contentTypeOf(path), cacheControl, headers })
}

/**
 * The content type of a file name by its extension.
 *
 * @example
 * contentTypeOf('main.js') // 'text/javascript; charset=utf-8'
 */
export function contentTypeOf(name: string): string {
  return CONTENT_TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream'
}

/** `If-None-Match`: a list of entity tags, `*`, or weak tags (compared weakly, RFC 9110 13.1.2). */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  return header.split(',').some((tag) => {
    const t = tag.trim()
    return t === '*' || t === etag || t === `W/${etag}`
  })
}

/** Whether `Accept-Encoding` allows `coding` (present without `q=0`). */
function acceptsEncoding(header: string, coding: string): boolean {
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';')
    if (name !== coding) continue
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    return q === undefined || Number(q.slice(2)) > 0
  }
  return false
}
