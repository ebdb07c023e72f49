// The dashboard end to end in a real browser (Debian's Chromium driven by playwright-core): the
// page is built from ui/ into a temp directory, served by a real Mimic running the pt100 example
// (Python-backed tank_sensor), and used the way a person would: key, instance, run, plot, edit,
// a fault from Python, snapshots save/load/delete.
//
// MIMIC_UI_SCREENSHOT=docs/dashboard.png additionally records a longer trend and writes the
// screenshot the README shows.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { after, before, describe, test } from 'node:test'
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

const CHROMIUM = '/usr/bin/chromium'
const KEY = 'ui-e2e-key'
const ROOT = resolve(import.meta.dirname, '..')
const SCREENSHOT = process.env.MIMIC_UI_SCREENSHOT

const missing = !existsSync(CHROMIUM)
if (missing && process.env.CI) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run the dashboard test`)

let dir: string
let mimic: MimicServer
let app: FastifyInstance
let browser: BrowserContext
let page: Page
let url: string
const pageErrors: string[] = []

describe('the dashboard in Chromium (ui-e2e)', () => {
  before(async () => {
    if (missing) return
    dir = await mkdtemp(join(tmpdir(), 'mimic-ui-'))
    const assets = join(dir, 'ui')
    await buildUi({ outDir: assets })
    const config = parseConfig(
      {
        port: 0,
        start: false,
        productKey: KEY,
        system: join(ROOT, 'examples/pt100/system.yaml'),
        extensions: [join(ROOT, 'examples/pt100/extensions')],
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
      viewport: { width: 1440, height: 900 },
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
    page = browser.pages()[0] ?? (await browser.newPage())
    page.setDefaultTimeout(8000)
    page.on('pageerror', (err) => pageErrors.push(err.message))
  })

  after(async () => {
    if (missing) return
    await browser?.close().catch(() => {})
    await app?.close()
    await mimic?.close()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  /** The number the trend legend shows for a series right now. */
  async function seriesValue(key: string): Promise<number> {
    const text = await page.locator(`[data-series="${key}"] .series-value`).textContent()
    return Number.parseFloat(text ?? '')
  }

  async function points(): Promise<number> {
    return Number(await page.locator('.chart-plot').getAttribute('data-points'))
  }

  test(
    'the dashboard in Chromium: key, instance, run, plot, edit, faults, snapshots',
    { skip: missing ? `${CHROMIUM} not installed (apt-get install -y chromium); set CI to make this a failure` : false, timeout: 60_000 },
    async () => {
      // A wrong key is refused with a readable message; the right one opens the overview.
      await page.goto(`${url}/ui`)
      await page.fill('input[name=product-key]', 'not-the-key')
      await page.click('[data-action=login]')
      await page.locator('.login-error', { hasText: 'refused this key' }).waitFor()
      await page.fill('input[name=product-key]', KEY)
      await page.click('[data-action=login]')
      await page.locator('.overview-view').waitFor()
      await page.locator('.live[data-status=live]').waitFor()
      assert.equal(await page.evaluate(() => sessionStorage.getItem('mimic.productKey')), KEY)

      // The tree lists instances with their state, models and connections.
      const sensorLink = page.locator('.sidebar a[href="#/instance/tank_sensor"]')
      await sensorLink.locator('.badge', { hasText: 'INITIALIZED' }).waitFor()
      await page.locator('.sidebar a[href="#/model/PT100"]').waitFor()
      await page.locator('.sidebar a[href="#/connection/sensor_to_panel"]').waitFor()

      // Open the Python-backed instance, plot its temperature, prepare and run it.
      await sensorLink.click()
      const view = page.locator('[data-instance=tank_sensor]')
      const temperature = view.locator('tr[data-attribute=temperature]')
      await temperature.locator('[data-cell=internal]', { hasText: '20' }).waitFor()
      await temperature.locator('input.switch').check()
      await page.locator('[data-series="tank_sensor.temperature"]').waitFor()
      assert.equal(await seriesValue('tank_sensor.temperature'), 20)
      await view.locator('[data-method=prepare]').click()
      await view.locator('.badge', { hasText: 'PREPARED' }).waitFor()
      await view.locator('[data-method=run]').click()
      await page.waitForFunction(
        () => Number.parseFloat(document.querySelector('[data-series="tank_sensor.temperature"] .series-value')?.textContent ?? '') > 20,
      )
      const afterRun = await seriesValue('tank_sensor.temperature')

      // Start: polling steps it on its own; the plotted value keeps changing.
      await view.locator('.polling-row input').fill('0.2')
      await view.locator('.polling-row button').click()
      await view.locator('[data-method=start]').click()
      await view.locator('.badge', { hasText: 'RUNNING' }).first().waitFor()
      await page.waitForFunction(
        (v) => Number.parseFloat(document.querySelector('[data-series="tank_sensor.temperature"] .series-value')?.textContent ?? '') > v + 1,
        afterRun,
      )
      assert.ok((await points()) >= 3, 'the trend recorded the changes')
      assert.equal(await page.locator('.chart-plot canvas').count(), 1)

      if (SCREENSHOT) {
        // The README picture: a longer trend of two series, before any fault is provoked.
        await view.locator('tr[data-attribute=resistance] input.switch').check()
        await page.selectOption('select[aria-label="Time window"]', '30')
        await page.waitForTimeout(25_000)
        await mkdir(dirname(resolve(ROOT, SCREENSHOT)), { recursive: true })
        await page.screenshot({ path: resolve(ROOT, SCREENSHOT) })
      }

      // Pause freezes the picture while recording goes on.
      await page.click('[data-action=pause]')
      await page.locator('.chart-panel.paused').waitFor()
      await page.click('[data-action=pause]')

      // Edit a value through the API: the live table shows it. The answer to the PUT is held back
      // until the user has typed the next value, as on a slow link where the event stream is first:
      // what was typed meanwhile stays in the field.
      const setpoint = view.locator('tr[data-attribute=setpoint]')
      const setpointPath = '**/instances/tank_sensor/attributes/setpoint/attr/internal_value'
      let release = (): void => {}
      const released = new Promise<void>((resolve) => (release = resolve))
      await page.route(setpointPath, async (route) => {
        const response = await route.fetch()
        await released
        await route.fulfill({ response })
      })
      await setpoint.locator('.edit-cell input').fill('75.5')
      await setpoint.locator('.edit-cell button').click()
      await setpoint.locator('[data-cell=internal]', { hasText: '75.5' }).waitFor()

      // Faults are readable: a bad value is caught in the page, an argument the method does not take shows its path.
      await setpoint.locator('.edit-cell input').fill('hot')
      release()
      await page.locator('.notice-info', { hasText: 'tank_sensor.setpoint = 75.5' }).waitFor()
      await page.unroute(setpointPath)
      assert.equal(await setpoint.locator('.edit-cell input').inputValue(), 'hot')
      await setpoint.locator('.edit-cell button').click()
      await page.locator('.notice-error', { hasText: "'hot' is not a number" }).waitFor()
      await view.locator('[data-kwargs=calibrate]').fill('{"offset": 0.5, "bogus": 1}')
      await view.locator('button[data-method=calibrate]').click()
      const fault = page.locator('.notice-error', { hasText: 'calibrate on tank_sensor failed' })
      await fault.waitFor()
      assert.match((await fault.textContent()) ?? '', /422/)
      assert.match((await fault.textContent()) ?? '', /kwargs\.bogus/)
      if (process.env.MIMIC_UI_FAULT_SHOT) await page.screenshot({ path: process.env.MIMIC_UI_FAULT_SHOT })
      while (await page.locator('.notice-close').count()) await page.locator('.notice-close').first().click()

      // The Modbus adapter shows where it listens and counts requests.
      const adapter = view.locator('[data-adapter=modbus_slave]')
      await adapter.locator('.badge', { hasText: 'RUNNING' }).waitFor()
      await adapter.locator('[data-action=detach]').click()
      await adapter.locator('.badge', { hasText: 'DETACHED' }).waitFor()
      await adapter.locator('[data-action=attach]').click()
      await adapter.locator('.badge', { hasText: 'RUNNING' }).waitFor()
      // A client's read shows in the adapter's trace (docs/traces.md): an FC3 read of registers 0-1.
      const node = await fetch(`${url}/api/v3/system/instances/tank_sensor/communication/modbus_slave`, { headers: { authorization: `Bearer ${KEY}` } })
      const { port } = (await node.json()) as { port: number }
      const socket = connect(port, '127.0.0.1')
      await new Promise<Buffer>((done) => {
        socket.once('data', done)
        socket.write(Buffer.from([0, 1, 0, 0, 0, 6, 1, 3, 0, 0, 0, 2]))
      })
      socket.destroy()
      const traced = adapter.locator('[data-trace] tbody tr', { hasText: 'holding_registers' })
      await traced.waitFor()
      assert.match((await traced.first().textContent()) ?? '', /read.*address=0.*count=2/)

      // Snapshots: save with label and notes.
      await page.click('.sidebar a[href="#/snapshots"]')
      await page.fill('input[name=label]', 'e2e baseline')
      await page.fill('textarea[name=notes]', 'two instances, one connection')
      await page.click('[data-action=save-snapshot]')
      const row = page.locator('tr[data-snapshot]', { hasText: 'e2e baseline' })
      await row.waitFor()
      await row.locator('.notes', { hasText: 'two instances, one connection' }).waitFor()

      // Change the structure behind the page's back; the tree follows through the stream.
      const put = await fetch(`${url}/api/v3/system/instances`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ spare: 'Display' }),
      })
      assert.equal(put.status, 200)
      await page.locator('.sidebar a[href="#/instance/spare"]').waitFor()

      // Load asks first and says what it replaces; cancel changes nothing, confirm loads.
      await row.locator('[data-action=load-snapshot]').click()
      const dialog = page.locator('dialog.dialog')
      await dialog.waitFor()
      const said = (await dialog.textContent()) ?? ''
      assert.match(said, /replaces the whole active system/)
      assert.match(said, /3 instances/)
      assert.match(said, /spare/)
      await dialog.locator('[data-action=cancel]').click()
      assert.equal(await page.locator('.sidebar a[href="#/instance/spare"]').count(), 1)
      await row.locator('[data-action=load-snapshot]').click()
      await dialog.locator('[data-action=confirm]').click()
      await page.locator('.notice-info', { hasText: 'Loaded e2e baseline' }).waitFor()
      await page.locator('.sidebar a[href="#/instance/spare"]').waitFor({ state: 'detached' })
      await page.locator('.sidebar a[href="#/instance/tank_sensor"] .badge', { hasText: 'INITIALIZED' }).waitFor()
      assert.deepEqual(
        [...mimic.system.instances.all()].map((i) => i.name),
        ['tank_sensor', 'panel'],
      )

      // Delete, after a confirmation.
      await row.locator('[data-action=delete-snapshot]').click()
      await dialog.locator('[data-action=confirm]').click()
      await row.waitFor({ state: 'detached' })

      assert.deepEqual(pageErrors, [])
    },
  )

  describe('serving the dashboard files', () => {
    let home: string
    let server: MimicServer
    let web: FastifyInstance
    let bare: FastifyInstance

    before(async () => {
      home = await mkdtemp(join(tmpdir(), 'mimic-ui-static-'))
      const assets = join(home, 'built')
      await mkdir(join(assets, 'assets'), { recursive: true })
      await writeFile(join(assets, 'index.html'), '<!doctype html><title>dash</title>')
      await writeFile(join(assets, 'assets', 'index-abc123.js'), 'console.log(1)')
      await writeFile(join(assets, 'assets', 'index-abc123.css'), 'body{}')
      await writeFile(join(home, 'secret.txt'), 'outside')
      await symlink(join(home, 'secret.txt'), join(assets, 'assets', 'link.txt'))
      const logger = pino({ level: 'silent' })
      const config = parseConfig({ port: 0, productKey: KEY, snapshotsDir: join(home, 'snapshots'), extensions: [home] }, {})
      server = await startMimic(config, { logger })
      web = await buildApp({
        system: server.system,
        logger,
        productKey: KEY,
        bodyLimit: config.bodyLimit,
        fastLane: true,
        plugins: [(a) => registerDashboard(a, { dir: assets })],
      })
      bare = await buildApp({
        system: server.system,
        logger,
        productKey: KEY,
        bodyLimit: config.bodyLimit,
        fastLane: true,
        plugins: [(a) => registerDashboard(a, { dir: join(home, 'not-built') })],
      })
    })

    after(async () => {
      await web?.close()
      await bare?.close()
      await server?.close()
      if (home) await rm(home, { recursive: true, force: true })
    })

    test('/ui and /ui/ answer the page without a key, never cached, with a strict content policy', async () => {
      for (const url of ['/ui', '/ui/']) {
        const res = await web.inject({ url })
        assert.equal(res.statusCode, 200, url)
        assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
        assert.equal(res.headers['cache-control'], 'no-cache')
        assert.match(String(res.headers['content-security-policy']), /default-src 'self'/)
        assert.equal(res.headers['x-content-type-options'], 'nosniff')
        assert.match(res.body, /<title>dash<\/title>/)
      }
    })

    test('hashed assets get their content type and are cached for good', async () => {
      const js = await web.inject({ url: '/ui/assets/index-abc123.js' })
      assert.equal(js.statusCode, 200)
      assert.equal(js.headers['content-type'], 'text/javascript; charset=utf-8')
      assert.match(String(js.headers['cache-control']), /immutable/)
      const css = await web.inject({ url: '/ui/assets/index-abc123.css' })
      assert.equal(css.headers['content-type'], 'text/css; charset=utf-8')
    })

    test('nothing outside the built directory can be reached', async () => {
      for (const url of [
        '/ui/../secret.txt',
        '/ui/assets/../../secret.txt',
        '/ui/%2e%2e/secret.txt',
        '/ui/assets/%2e%2e%2f%2e%2e%2fsecret.txt',
        '/ui/assets/link.txt',
        '/ui/assets/..%5c..%5csecret.txt',
        '/ui/assets/missing.js',
        '/ui/assets',
      ]) {
        const res = await web.inject({ url })
        assert.equal(res.statusCode, 404, url)
        assert.doesNotMatch(res.body, /outside/, url)
      }
      const missing = await web.inject({ url: '/ui/assets/missing.js' })
      assert.equal(missing.json().type, 'fault')
    })

    test('without a build, /ui explains how to make one', async () => {
      for (const url of ['/ui', '/ui/assets/index.js']) {
        const res = await bare.inject({ url })
        assert.equal(res.statusCode, 503)
        assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
        assert.match(res.body, /npm run build/)
      }
    })
  })
})
