/**
 * Every /api route refuses a missing or wrong product key. The route list comes from the server
 * itself (fastify's route tree, cross-checked with `hasRoute`, plus the OpenAPI document), so a
 * route added later is covered without touching this file.
 *
 * That the server refuses to listen beyond loopback without a key is tested in
 * test/cli.test.ts ("serve refuses a non-loopback address without a product key").
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, HTTPMethods } from 'fastify'
import { TEST_KEY, startTestServer, type TestServer } from '../helpers/server.js'
import { SYS } from './helpers.js'

interface Route {
  url: string
  methods: HTTPMethods[]
}

/**
 * Reads fastify's printed route tree (`printRoutes({ commonPrefix: false })`): every line is a
 * node whose path is its parent's plus its own part; a `*` part is a wildcard below its parent.
 */
function routeTable(app: FastifyInstance): Route[] {
  const routes: Route[] = []
  const stack: Array<{ depth: number; path: string }> = []
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ]*)[├└]── (.+?)(?: \(([A-Z, ]+)\))?$/.exec(line.replace(/\u00a0/g, ' '))
    if (!m) continue
    const depth = m[1]!.length / 4
    while (stack.length && stack[stack.length - 1]!.depth >= depth) stack.pop()
    const parent = stack[stack.length - 1]?.path ?? ''
    const part = m[2]!
    const path = part === '*' && !parent.endsWith('/') ? `${parent}/*` : parent + part
    stack.push({ depth, path })
    if (m[3]) routes.push({ url: path, methods: m[3].split(', ') as HTTPMethods[] })
  }
  return routes
}

/** A concrete URL for a route pattern (a wildcard becomes a real child path). */
function concrete(url: string): string {
  return url
    .replace(/\*$/, 'instances')
    .replace(/\{path\}/g, 'instances')
    .replace(/\{method\}/g, 'run')
}

describe('product key on every /api route', () => {
  let t: TestServer
  let routes: Route[]
  before(async () => {
    t = await startTestServer()
    routes = routeTable(t.server.app)
    const openapi = (await t.api('GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> }
    for (const [url, ops] of Object.entries(openapi.paths)) {
      routes.push({
        url,
        methods: Object.keys(ops)
          .filter((m) => m !== 'parameters')
          .map((m) => m.toUpperCase() as HTTPMethods),
      })
    }
  })
  after(async () => t.close())

  it('the route table read from the server is the one fastify serves', () => {
    const apiRoutes = routes.filter((r) => r.url.startsWith('/api/'))
    assert.ok(
      apiRoutes.some((r) => r.url === SYS),
      JSON.stringify(routes),
    )
    assert.ok(
      apiRoutes.some((r) => r.url === `${SYS}/*`),
      JSON.stringify(routes),
    )
    // HEAD routes fastify adds by itself are not all visible to hasRoute; the /api ones are.
    // A path the OpenAPI document names under the tree (`/api/v3/system/definition`) is served by
    // the tree's wildcard route.
    const served = (method: string, url: string): boolean =>
      t.server.app.hasRoute({ method, url }) || (url.startsWith(`${SYS}/`) && t.server.app.hasRoute({ method, url: `${SYS}/*` }))
    for (const route of apiRoutes.filter((r) => !r.url.includes('{'))) {
      for (const method of route.methods) assert.ok(served(method, route.url), `${method} ${route.url}`)
    }
  })

  it('a missing, wrong or malformed key answers 401 on every method of every /api route, also through percent-encoded paths', async (ctx) => {
    const wrong: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer nope' },
      { authorization: `Bearer ${TEST_KEY}x` },
      { authorization: `Bearer ${TEST_KEY.slice(0, -1)}` },
      { authorization: `Bearer ${TEST_KEY.toUpperCase()}` },
      { authorization: TEST_KEY },
      { authorization: `Basic ${Buffer.from(`user:${TEST_KEY}`).toString('base64')}` },
      { authorization: 'Bearer ' },
      { 'x-product-key': TEST_KEY },
    ]
    let checked = 0
    for (const route of routes.filter((r) => r.url.startsWith('/api/'))) {
      const url = concrete(route.url)
      // The router decodes percent-encoding; the key check must not be fooled by it.
      const variants = [url, url.replace('/api/', '/%61pi/'), url.replace('/system', '/%73ystem'), `${url}/`, `${url}?x=1`]
      for (const method of route.methods) {
        for (const path of variants) {
          for (const headers of wrong) {
            const res = await fetch(`${t.url}${path}`, {
              method,
              headers: { ...headers, ...(['PUT', 'PATCH', 'POST'].includes(method) ? { 'content-type': 'application/json' } : {}) },
              body: ['PUT', 'PATCH', 'POST'].includes(method) ? '{"kwargs": {}}' : undefined,
            })
            const text = await res.text()
            assert.equal(res.status, 401, `${method} ${path} with ${JSON.stringify(headers)} -> ${res.status} ${text.slice(0, 200)}`)
            if (method !== 'HEAD') assert.equal(JSON.parse(text).event, 'unauthorized')
            checked++
          }
        }
      }
    }
    ctx.diagnostic(`${checked} unauthorized requests refused`)
    assert.ok(checked > 100)
    // Nothing was changed by any of them.
    assert.deepEqual((await t.api('GET', `${SYS}/models`)).body.children, [])
  })

  it('the right key is accepted (scheme case-insensitive), and the open endpoints need none', async () => {
    for (const authorization of [`Bearer ${TEST_KEY}`, `bearer ${TEST_KEY}`, `Bearer   ${TEST_KEY}`]) {
      const res = await fetch(`${t.url}${SYS}`, { headers: { authorization } })
      assert.equal(res.status, 200, authorization)
    }
    // /mcp (the MCP endpoint) and /metrics ask for the same key as /api; every other route is open.
    assert.equal((await fetch(`${t.url}/metrics`)).status, 401, 'GET /metrics without a key')
    assert.equal((await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${TEST_KEY}` } })).status, 200, 'GET /metrics with the key')
    for (const route of routes.filter((r) => !r.url.startsWith('/api/') && r.url !== '/mcp' && r.url !== '/metrics' && r.methods.includes('GET'))) {
      const res = await fetch(`${t.url}${concrete(route.url).replace(/\/instances$/, '/')}`)
      assert.notEqual(res.status, 401, route.url)
    }
    for (const method of ['GET', 'POST', 'DELETE']) {
      assert.equal((await fetch(`${t.url}/mcp`, { method })).status, 401, `${method} /mcp without a key`)
      assert.equal((await fetch(`${t.url}/mcp`, { method, headers: { authorization: 'Bearer wrong' } })).status, 401, `${method} /mcp with a wrong key`)
    }
    assert.equal((await fetch(`${t.url}/mcp`, { headers: { authorization: `Bearer ${TEST_KEY}` } })).status, 405, 'GET /mcp with the key: stateless, POST only')
  })
})
