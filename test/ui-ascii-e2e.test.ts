// The dashboard's adapter panel for a text instrument, in Debian's Chromium (as test/ui-e2e.test.ts):
// the example power supply is prepared, a client sends SCPI commands over TCP, and the panel shows
// the protocol's own counters and the latest commands with their replies.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import pino from 'pino'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { parseConfig } from '../src/config.js'
import { startMimic, type MimicServer } from '../src/mimic.js'
import { buildApp } from '../src/server/app.js'
// @ts-expect-error a plain .mjs build script without type declarations
import { buildUi } from '../scripts/build-ui.mjs'
import { registerDashboard } from '../src/server/dashboard.js'
import { registerEvents } from '../src/server/events.js'
import { LineClient } from './helpers/line-client.js'

const CHROMIUM = '/usr/bin/chromium'
const KEY = 'ui-ascii-key'
const ROOT = resolve(import.meta.dirname, '..')
const missing = !existsSync(CHROMIUM)
if (missing && process.env.CI) throw new Error(`${CHROMIUM} is missing: install Debian's chromium to run the dashboard test`)

let dir: string
let mimic: MimicServer
let app: FastifyInstance
let browser: BrowserContext
let page: Page
let url: string

before(async () => {
  if (missing) return
  dir = await mkdtemp(join(tmpdir(), 'mimic-ui-ascii-'))
  const assets = join(dir, 'ui')
  await buildUi({ outDir: assets })
  const config = parseConfig(
    {
      port: 0,
      productKey: KEY,
      system: join(ROOT, 'examples/instruments/system.yaml'),
      extensions: [join(ROOT, 'examples/instruments/extensions')],
      snapshotsDir: join(dir, 'snapshots'),
      pythonWorkers: 1,
    },
    {},
  )
  const logger = pino({ level: 'silent' })
  mimic = await startMimic(config, { logger })
  app = await buildApp({
    system: mimic.system,
    logger,
    productKey: KEY,
    bodyLimit: config.bodyLimit,
    fastLane: true,
    plugins: [(a) => void registerEvents(a, mimic.system), (a) => registerDashboard(a, { dir: assets })],
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  browser = await chromium.launchPersistentContext(join(dir, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
  page = browser.pages()[0] ?? (await browser.newPage())
  page.setDefaultTimeout(8000)
})

after(async () => {
  if (missing) return
  await browser?.close().catch(() => {})
  await app?.close()
  await mimic?.close()
  if (dir) await rm(dir, { recursive: true, force: true })
})

test(
  'the adapter panel of a text instrument shows its counters and latest exchanges',
  { skip: missing ? `${CHROMIUM} not installed` : false, timeout: 60_000 },
  async () => {
    await page.goto(`${url}/ui`)
    await page.fill('input[name=product-key]', KEY)
    await page.click('[data-action=login]')
    await page.locator('.overview-view').waitFor()
    await page.click('.sidebar a[href="#/instance/psu"]')
    const view = page.locator('[data-instance=psu]')
    await view.locator('[data-method=prepare]').click()
    const panel = view.locator('[data-adapter=ascii]')
    await panel.locator('.badge', { hasText: 'RUNNING' }).waitFor()
    await panel.getByText('AsciiInstrument · TCP').waitFor()

    const port = Number(await panel.locator('dd.num').first().textContent())
    const client = await LineClient.connect(port)
    try {
      assert.equal(await client.query('APPL 4,0.3;APPL?'), '"4.0,0.3"')
      client.send('NOT:A:COMMAND\n')
      assert.equal(await client.query('*OPC?'), '1')
    } finally {
      client.close()
    }
    await panel.locator('[data-counter=queries]', { hasText: '2' }).waitFor()
    await panel.locator('[data-counter=commands]', { hasText: '2' }).waitFor()
    await panel.locator('[data-counter=errors]', { hasText: '1' }).waitFor()
    const recent = panel.locator('.adapter-recent tbody tr')
    await recent.filter({ hasText: 'APPL 4,0.3;APPL?' }).filter({ hasText: '"4.0,0.3"' }).waitFor()
    await recent.filter({ hasText: 'NOT:A:COMMAND' }).filter({ hasText: '(no reply)' }).waitFor()
    // A Modbus-only fact is not shown for this adapter.
    assert.equal(await panel.getByText('Unit id').isVisible(), false)
  },
)
