// "Try it out" for every route of /openapi.json: each operation sent as Swagger UI sends it (its path
// parameters filled with their examples, each encoded with encodeURIComponent, its example body)
// to a server running the example system `npm start` serves, and answered by the node it names;
// then Swagger UI itself, in Chromium, runs operations of the tree from /docs.
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { chromium, type BrowserContext } from 'playwright-core'
import { CHROMIUM, chromiumMissing } from './helpers/dashboard.js'
import { serveProcess, type ServerProcess } from './helpers/process.js'

const ROOT = new URL('..', import.meta.url).pathname
const EXAMPLE = ['--system', join(ROOT, 'examples/pt100/system.yaml'), '--extensions', join(ROOT, 'examples/pt100/extensions'), '--snapshots-mode', 'memory']
const VERBS = ['get', 'put', 'patch', 'post', 'delete'] as const

interface Operation {
  verb: (typeof VERBS)[number]
  path: string
  url: string
  body?: unknown
}

/** Every operation of the document, as "Try it out" sends it with the examples filled in. */
function operations(doc: { paths: Record<string, Record<string, any>> }): Operation[] {
  const ops: Operation[] = []
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!path.startsWith('/api/v3/system')) continue
    const examples = new Map<string, string>((item.parameters ?? []).map((p: { name: string; example: string }) => [p.name, p.example]))
    const url = path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(examples.get(name) ?? ''))
    for (const verb of VERBS) {
      const op = item[verb]
      if (!op) continue
      const body = op.requestBody?.content?.['application/json']?.example
      ops.push({ verb, path, url, ...(body === undefined ? {} : { body }) })
    }
  }
  // Reads first, then changes, deletions last and deepest first (an attribute before its instance,
  // the instance before its model).
  const rank = (op: Operation): number => (op.verb === 'get' ? 0 : op.verb === 'delete' ? 100 - op.path.split('/').length : 1)
  return ops.sort((a, b) => rank(a) - rank(b) || a.path.localeCompare(b.path))
}

describe('"Try it out" answers for every route of the OpenAPI document', () => {
  let server: ServerProcess
  before(async () => {
    server = await serveProcess(EXAMPLE, { MIMIC_PRODUCT_KEY: '' })
  })
  after(async () => server?.stop('SIGTERM'))

  it('each operation with its examples reaches its node, on the example system', async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, any>> }
    const ops = operations(doc)
    assert.ok(ops.length > 50, `${ops.length} operations`)
    const failures: string[] = []
    for (const op of ops) {
      const res = await server.api(op.verb.toUpperCase(), op.url, op.body)
      // A read answers 200. A change answers 200, or a 409 the node gives for a reason of its own
      // (an attribute its model declares cannot be deleted); never a 404 or a 400 for the path.
      const declined = res.status === 409 && res.body?.type === 'fault'
      if (res.status !== 200 && !(op.verb !== 'get' && declined)) failures.push(`${op.verb.toUpperCase()} ${op.url}: ${res.status} ${res.text.slice(0, 200)}`)
    }
    assert.deepEqual(failures, [])
  })
})

describe('Swagger UI at /docs runs operations of the tree in Chromium', { skip: chromiumMissing() && 'Chromium is not installed' }, () => {
  let server: ServerProcess
  let browser: BrowserContext
  let dir: string
  before(async () => {
    server = await serveProcess(EXAMPLE, { MIMIC_PRODUCT_KEY: '' })
    dir = await mkdtemp(join(tmpdir(), 'mimic-swagger-'))
    browser = await chromium.launchPersistentContext(join(dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })
  })
  after(async () => {
    await browser?.close().catch(() => {})
    await server?.stop('SIGTERM')
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  for (const [operationId, expect] of [
    ['getInstancesInstanceAttributesAttributeProperty', /"value":/],
    ['callInstancesInstanceMethod', /"result": true/],
    ['getInstancesInstanceCommunicationAdapter', /"type": "ModbusSlave"/],
  ] as const) {
    it(`${operationId}: Try it out, Execute, 200`, async () => {
      const page = browser.pages()[0] ?? (await browser.newPage())
      // Generous: the page loads Swagger UI's 1.5 MB bundle, on a machine that may be busy.
      page.setDefaultTimeout(60_000)
      if (!page.url().endsWith('/docs')) await page.goto(`${server.url}/docs`)
      const block = page.locator(`[id$="-${operationId}"]`)
      await block.locator('.opblock-summary').click()
      await block.getByRole('button', { name: 'Try it out' }).click()
      await block.getByRole('button', { name: 'Execute' }).click()
      const status = block.locator('.live-responses-table .response .response-col_status').first()
      await status.waitFor()
      assert.equal((await status.textContent())?.trim(), '200', await block.locator('.live-responses-table').innerText())
      assert.match(await block.locator('.live-responses-table .response .response-col_description').first().innerText(), expect)
      const requestUrl = await block.locator('.request-url').innerText()
      assert.doesNotMatch(requestUrl, /%2F/i)
    })
  }
})
