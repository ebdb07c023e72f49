// The Logs panel of the dashboard in a real browser (Debian's Chromium driven by playwright-core),
// served by a real Mimic: an instance's Python output shows, the level filter hides info records,
// follow mode appends new records, Clear empties the view.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

const CHROMIUM = '/usr/bin/chromium'
const missing = !existsSync(CHROMIUM)
if (missing && process.env.CI) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the dashboard test`)

const FILES = {
  'parrot.py': `
class Parrot:
    def speak(self, text="hello"):
        print("parrot:", text)
        return text
`,
}

describe('dashboard Logs panel', { skip: missing ? `${CHROMIUM} not installed` : false }, () => {
  let t: TestServer
  let browser: BrowserContext
  let page: Page
  const say = async (text: string): Promise<void> => {
    assert.equal((await t.call('/api/v3/system/instances/polly', 'speak', { text })).status, 200)
  }

  before(async () => {
    t = await startTestServer({ files: FILES })
    await t.api('PUT', '/api/v3/system/models', { Parrot: { attributes: {}, import: { 'parrot.py': { class: 'Parrot', methods: { speak: 'speak' } } } } })
    await t.api('PUT', '/api/v3/system/instances', { polly: 'Parrot' })
    await t.call('/api/v3/system/instances/polly', 'prepare')
    await say('first words')
    browser = await chromium.launchPersistentContext(join(t.dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })
    page = browser.pages()[0] ?? (await browser.newPage())
    page.setDefaultTimeout(8000)
  })
  after(async () => {
    await browser?.close().catch(() => {})
    await t?.close()
  })

  it("shows an instance's records, filters by level, follows new ones and clears", async () => {
    await page.goto(`${t.url}/ui`)
    await page.fill('input[name=product-key]', TEST_KEY)
    await page.click('[data-action=login]')
    await page.locator('.overview-view').waitFor()
    await page.locator('.sidebar a[href="#/logs"]').waitFor()

    await page.goto(`${t.url}/ui#/logs/polly`)
    const rows = page.locator('.logs-view tr.log-row')
    await rows.filter({ hasText: 'parrot: first words' }).waitFor()
    assert.equal(await rows.filter({ hasText: 'parrot: first words' }).locator('td').nth(2).textContent(), 'polly')

    // Follow mode (on by default) appends what is logged while the panel is open.
    await say('second words')
    await rows.filter({ hasText: 'parrot: second words' }).waitFor()

    // A fault of this instance is a warning; the level filter keeps only it.
    assert.equal((await t.call('/api/v3/system/instances/polly', 'fly')).status, 404)
    await page.selectOption('.logs-view select[name=level]', 'warn')
    await rows.filter({ hasText: "no method 'fly'" }).waitFor()
    await page.waitForFunction(() => !document.querySelector('.logs-view')?.textContent?.includes('parrot: first words'))
    assert.ok((await rows.count()) >= 1)
    for (const level of await page.locator('.logs-view .log-level').allTextContents()) assert.ok(['warn', 'error', 'fatal'].includes(level), level)

    // Clear empties this view (and only this node's view on the server).
    await page.click('[data-action=clear-logs]')
    await page.locator('.logs-view .empty-row').waitFor()
    const instanceView = await t.call('/api/v3/system/instances/polly/logs', 'tail')
    assert.deepEqual(instanceView.body.result, [])
    const systemView = await t.call('/api/v3/system/logs', 'tail', { contains: 'first words' })
    assert.equal(systemView.body.result.length, 1)
  })
})
