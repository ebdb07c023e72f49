// The dashboard of a server started without a product key, in Debian's Chromium: it opens
// straight on the system page, asks for no key and offers none to change, and its first request
// is the only one that goes without a key (as every request does on such a server).
// test/helpers/dashboard.ts always gives its server a key, so this file starts its own.
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import pino from 'pino'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
// @ts-expect-error a plain .mjs build script without type declarations
import { buildUi } from '../scripts/build-ui.mjs'
import { parseConfig } from '../src/config.js'
import { startMimic, type MimicServer } from '../src/mimic.js'
import { buildApp } from '../src/server/app.js'
import { registerDashboard } from '../src/server/dashboard.js'
import { registerEvents } from '../src/server/events.js'
import { CHROMIUM, chromiumMissing } from './helpers/dashboard.js'

const missing = chromiumMissing()
let dir: string
let mimic: MimicServer | undefined
let app: FastifyInstance | undefined
let browser: BrowserContext | undefined
let rig: { page: Page; url: string; pageErrors: string[] }

describe('the dashboard in Chromium (ui-edit-nokey)', () => {
  before(async () => {
    if (missing) return
    dir = await mkdtemp(join(tmpdir(), 'mimic-ui-nokey-'))
    await buildUi({ outDir: join(dir, 'ui') })
    await writeFile(join(dir, 'system.yaml'), 'models:\n  m:\n    attributes: { x: 1.0 }\ninstances:\n  - a: m\n')
    const config = parseConfig({ port: 0, system: join(dir, 'system.yaml'), extensions: [dir], snapshotsDir: join(dir, 'snapshots'), pythonWorkers: 1 }, {})
    const logger = pino({ level: 'silent' })
    mimic = await startMimic(config, { logger })
    const system = mimic.system
    app = await buildApp({
      system,
      logger,
      bodyLimit: config.bodyLimit,
      fastLane: true,
      plugins: [(a) => void registerEvents(a, system), (a) => registerDashboard(a, { dir: join(dir, 'ui') })],
    })
    await app.listen({ host: '127.0.0.1', port: 0 })
    browser = await chromium.launchPersistentContext(join(dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu'],
    })
    const page = browser.pages()[0] ?? (await browser.newPage())
    const pageErrors: string[] = []
    page.on('pageerror', (err) => pageErrors.push(err.message))
    rig = { page, url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`, pageErrors }
  })

  after(async () => {
    await browser?.close().catch(() => {})
    await app?.close()
    await mimic?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  test('a server without a product key: no key asked for', { skip: missing ? `${CHROMIUM} not installed` : false, timeout: 60_000 }, async () => {
    const { page, url } = rig
    const refused: string[] = []
    page.on('response', (res) => {
      if (res.status() >= 400) refused.push(`${res.status()} ${res.url()}`)
    })
    await page.goto(`${url}/ui/`)
    await page.locator('.overview-view').waitFor()
    await page.locator('.sidebar a[href="#/instance/a"]').waitFor()
    assert.equal(await page.locator('input[name=product-key]').count(), 0)
    assert.equal(await page.getByRole('button', { name: 'Change key' }).count(), 0)
    await page.reload()
    await page.locator('.overview-view').waitFor()
    assert.equal(await page.locator('input[name=product-key]').count(), 0)
    assert.deepEqual(refused, [])
    assert.deepEqual(rig.pageErrors, [])
  })
})
