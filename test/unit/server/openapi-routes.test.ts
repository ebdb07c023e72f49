// The OpenAPI document covers every route the server answers: a route added without its entry in
// src/server/openapi.ts fails here, so /docs cannot fall behind the code.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import pino from 'pino'
import { parseConfig } from '../../../src/config.js'
import { startMimic, type MimicServer } from '../../../src/mimic.js'
import { buildOpenApi } from '../../../src/server/openapi.js'

/** Pages and their assets: served to browsers, not part of the API. */
const NOT_API = new Set(['/docs', '/docs/json', '/docs/*', '/ui', '/ui/*', '/openapi.json'])
/** The root of the tree cannot be deleted (409) and is no method (400): these answer only faults. */
const FAULT_ONLY = new Set(['DELETE /api/v3/system', 'POST /api/v3/system'])

/**
 * The routes of a fastify app with their methods, from `printRoutes({ commonPrefix: false })`:
 * one line per node of its tree, a child's label continuing its parent's path.
 */
function routesOf(tree: string): Map<string, string[]> {
  const routes = new Map<string, string[]>()
  const stack: Array<{ depth: number; path: string }> = []
  for (const line of tree.split('\n')) {
    const match = /^([\s│]*)[└├]── (\S+)(?: \(([A-Z, ]+)\))?$/.exec(line)
    if (!match) continue
    const depth = match[1]!.length
    while (stack.length && stack[stack.length - 1]!.depth >= depth) stack.pop()
    const parent = stack[stack.length - 1]?.path ?? ''
    const label = match[2]!
    const path = !parent ? label : parent.endsWith('/') || label.startsWith('/') ? parent + label : `${parent}/${label}`
    stack.push({ depth, path })
    if (match[3])
      routes.set(
        path,
        match[3].split(', ').filter((m) => m !== 'HEAD'),
      )
  }
  return routes
}

describe('OpenAPI document', () => {
  let server: MimicServer
  before(async () => {
    server = await startMimic(parseConfig({ port: 0 }), { logger: pino({ level: 'silent' }) })
  })
  after(async () => server?.close())

  it('documents every route and method the server answers', () => {
    const paths = buildOpenApi().paths as Record<string, Record<string, unknown>>
    const routes = routesOf(server.app.printRoutes({ commonPrefix: false }))
    assert.ok(routes.has('/api/v3/events') && routes.has('/mcp') && routes.has('/health'), `the route list was read: ${[...routes.keys()].join(' ')}`)
    const missing: string[] = []
    for (const [route, methods] of routes) {
      if (NOT_API.has(route)) continue
      // The tree's one wildcard route is documented by the concrete paths of its kinds of node.
      const documented = route === '/api/v3/system/*' ? Object.keys(paths).filter((p) => p.startsWith('/api/v3/system/')) : [route]
      for (const method of methods) {
        if (FAULT_ONLY.has(`${method} ${route}`)) continue
        if (!documented.some((p) => paths[p]?.[method.toLowerCase()])) missing.push(`${method} ${route}`)
      }
    }
    assert.deepEqual(missing, [], 'routes without an entry in the OpenAPI document')
  })

  it('documents no path the server does not answer', () => {
    const paths = buildOpenApi().paths as Record<string, Record<string, unknown>>
    for (const path of Object.keys(paths)) {
      const url = path.replace(/\{\w+\}/g, 'x')
      for (const method of Object.keys(paths[path]!).filter((k) => k !== 'parameters')) {
        assert.ok(server.app.hasRoute({ url: url.includes('/api/v3/system/') ? '/api/v3/system/*' : url, method: method.toUpperCase() }), `${method} ${path}`)
      }
    }
  })

  it('names every path parameter with one name, never a chain (Swagger sends a / in one as %2F)', () => {
    const paths = buildOpenApi().paths as Record<string, Record<string, any>>
    assert.ok(!Object.keys(paths).some((p) => p.includes('{path}')), 'no generic {path}')
    for (const [path, item] of Object.entries(paths)) {
      const named = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
      const declared = (item.parameters ?? []).filter((p: { in: string }) => p.in === 'path')
      assert.deepEqual(declared.map((p: { name: string }) => p.name).sort(), [...named].sort(), `${path} declares its path parameters`)
      for (const p of declared) assert.ok(p.example !== undefined, `${path}: {${p.name}} has an example for "Try it out"`)
    }
    assert.ok(paths['/api/v3/system/instances/{instance}/attributes/{attribute}/attr/{property}']?.put)
    assert.ok(paths['/api/v3/system/instances/{instance}/communication/{adapter}/method/{method}']?.post)
  })
})
