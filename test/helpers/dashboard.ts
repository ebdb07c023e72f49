// The dashboard in Debian's Chromium, for the end-to-end tests of its panels: a real server
// (loaded from a system file) behind an app that serves the built dashboard and the event stream,
// and one browser page. Without Chromium the tests skip, except under CI, where that is an error.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import pino from 'pino'
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core'
import { parseConfig } from '../../src/config.js'
import { startMimic, type MimicServer } from '../../src/mimic.js'
import { buildApp } from '../../src/server/app.js'
// @ts-expect-error a plain .mjs build script without type declarations
import { buildUi } from '../../scripts/build-ui.mjs'
import { registerDashboard } from '../../src/server/dashboard.js'
import { registerEvents } from '../../src/server/events.js'
import { httpRequest } from './http.js'

export const CHROMIUM = '/usr/bin/chromium'

/** Why the dashboard tests cannot run here (no Chromium), or false; under CI a missing Chromium throws. */
export function chromiumMissing(): boolean {
  const missing = !existsSync(CHROMIUM)
  if (missing && process.env.CI) throw new Error(`${CHROMIUM} is missing: install Debian's chromium to run the dashboard tests`)
  return missing
}

/** A running server with the dashboard, and a browser page on it. */
export interface DashboardRig {
  url: string
  mimic: MimicServer
  page: Page
  /** Errors the page threw (a test asserts there are none). */
  pageErrors: string[]
  /** A request to the HTTP API the way any script would send it; asserts a 200 and answers the document. */
  api(method: string, path: string, body?: unknown): Promise<Record<string, any>>
  /** Opens the dashboard and signs in with the rig's product key, as a user does; resolves on the overview. */
  signIn(): Promise<void>
  /** Follows the sidebar's link to an instance; answers its view. */
  openInstance(name: string): Promise<Locator>
  close(): Promise<void>
}

/**
 * Starts a server loading `system` (YAML text, or a file), an app with the dashboard built into a temp
 * directory and the event stream, and Chromium with one page.
 *
 * @example
 * const rig = await startDashboard({ key: 'k', system: 'models: {...}' })
 * await rig.page.goto(`${rig.url}/ui/`)
 */
export async function startDashboard(opts: {
  key: string
  /** The system as YAML text, or the path of a system file with its extensions directories. */
  system: string | { file: string; extensions: string[] }
  prefix?: string
}): Promise<DashboardRig> {
  const dir = await mkdtemp(join(tmpdir(), opts.prefix ?? 'mimic-ui-'))
  const assets = join(dir, 'ui')
  await buildUi({ outDir: assets })
  let system: { file: string; extensions: string[] }
  if (typeof opts.system === 'string') {
    await writeFile(join(dir, 'system.yaml'), opts.system)
    system = { file: join(dir, 'system.yaml'), extensions: [dir] }
  } else system = opts.system
  const config = parseConfig(
    { port: 0, start: false, productKey: opts.key, system: system.file, extensions: system.extensions, snapshotsDir: join(dir, 'snapshots'), pythonWorkers: 1 },
    {},
  )
  const logger = pino({ level: 'silent' })
  const mimic = await startMimic(config, { logger })
  let app: FastifyInstance | undefined
  let browser: BrowserContext | undefined
  const close = async (): Promise<void> => {
    await browser?.close().catch(() => {})
    await app?.close()
    await mimic.close()
    await rm(dir, { recursive: true, force: true })
  }
  try {
    app = await buildApp({
      system: mimic.system,
      logger,
      productKey: opts.key,
      bodyLimit: config.bodyLimit,
      fastLane: true,
      plugins: [(a) => void registerEvents(a, mimic.system), (a) => registerDashboard(a, { dir: assets })],
    })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    browser = await chromium.launchPersistentContext(join(dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1440, height: 900 },
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })
    const page = browser.pages()[0] ?? (await browser.newPage())
    page.setDefaultTimeout(8000)
    const pageErrors: string[] = []
    page.on('pageerror', (err) => pageErrors.push(err.message))
    const api = async (method: string, path: string, body?: unknown): Promise<Record<string, any>> => {
      const res = await httpRequest(`${url}/api/v3/system${path}`, {
        method,
        headers: { authorization: `Bearer ${opts.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      const doc = JSON.parse(res.text) as Record<string, any>
      assert.equal(res.status, 200, `${method} ${path}: ${JSON.stringify(doc)}`)
      return doc
    }
    const signIn = async (): Promise<void> => {
      await page.goto(`${url}/ui`)
      await page.fill('input[name=product-key]', opts.key)
      await page.click('[data-action=login]')
      await page.locator('.overview-view').waitFor()
    }
    const openInstance = async (name: string): Promise<Locator> => {
      await page.click(`.sidebar a[href="#/instance/${name}"]`)
      const view = page.locator(`[data-instance=${name}]`)
      await view.waitFor()
      return view
    }
    return { url, mimic, page, pageErrors, api, signIn, openInstance, close }
  } catch (err) {
    await close()
    throw err
  }
}
