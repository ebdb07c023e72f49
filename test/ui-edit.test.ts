// Building a system in the dashboard, in Debian's Chromium against a real server (as
// test/ui-e2e.test.ts): a model written in the YAML editor (its problems shown at their line:col
// first), an instance made from it with a parameter, a connection wired from a list of
// attributes and seen carrying values as the system steps (and not while switched off), a value
// forced and cleared, the timer's step and pause, the system exported and imported into a fresh
// server (and a bad file refused with nothing changed), deletes with their confirmation, and no
// request of the dashboard answered 404 (the Logs page would fill with them).
//
// MIMIC_UI_SHOTS=docs also writes the screenshots docs/dashboard.md shows.
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Page } from 'playwright-core'
import { parse } from 'yaml'
import { CHROMIUM, chromiumMissing, startDashboard, type DashboardRig } from './helpers/dashboard.js'
import { eventually } from './helpers/wait.js'

const KEY = 'ui-edit-key'
const missing = chromiumMissing()
const SHOTS = process.env.MIMIC_UI_SHOTS ? resolve(import.meta.dirname, '..', process.env.MIMIC_UI_SHOTS) : ''

// One instance to start from: a counter that adds one every step.
const SYSTEM = `
models:
  counter:
    attributes:
      n: { default: 0.0, type: float }
    actions:
      - { name: count, function: $out(n), call: "$in(n) + 1" }
instances:
  - src: counter
`

// The model typed into the editor: its default is a string where a float is declared (line 4).
const BAD_MODEL = `meta_parameters:
  label: { type: str, default: panel }
attributes:
  shown: { default: "zero", type: float, unit: "%" }
  caption: { default: "", type: str }
actions:
  - { name: caption, set: $out(caption), value: "$param(label)" }
`

let rig: DashboardRig
let fresh: DashboardRig
let page: Page
const notFound: string[] = []

describe('the dashboard in Chromium (ui-edit)', () => {
  before(async () => {
    if (missing) return
    rig = await startDashboard({ key: KEY, system: SYSTEM, prefix: 'mimic-ui-edit-' })
    page = rig.page
    page.on('response', (res) => {
      if (res.status() === 404) notFound.push(`${res.request().method()} ${res.url()}`)
    })
  })

  after(async () => {
    if (!missing) {
      await rig?.close()
      await fresh?.close()
    }
  })

  async function shot(name: string): Promise<void> {
    if (SHOTS) await page.screenshot({ path: join(SHOTS, name) })
  }

  async function login(p: Page, url: string, key: string): Promise<void> {
    await p.goto(`${url}/ui/`)
    await p.fill('input[name=product-key]', key)
    await p.click('[data-action=login]')
    await p.locator('.overview-view').waitFor()
  }

  /** Confirms the open dialog with its button named `name`. */
  async function confirm(p: Page, name: string): Promise<void> {
    await p.getByRole('dialog').getByRole('button', { name, exact: true }).click()
    await p.getByRole('dialog').waitFor({ state: 'detached' })
  }

  const skip = missing ? `${CHROMIUM} not installed` : false

  test('a model from the YAML editor: problems at their line:col first, then saved', { skip, timeout: 60_000 }, async () => {
    await login(page, rig.url, KEY)
    await page.getByRole('button', { name: 'New model', exact: true }).click()
    await page.getByRole('textbox', { name: 'Model name' }).fill('display')
    const editor = page.getByRole('textbox', { name: 'Model definition (YAML)' })

    // Not YAML: nothing is sent, the syntax error is shown at its line.
    await editor.fill('attributes:\n  shown: { default: 0.0\n')
    await page.getByRole('button', { name: 'Save model' }).click()
    const problems = page.getByRole('list', { name: 'Problems' })
    await problems.getByRole('listitem').first().waitFor()
    assert.match((await problems.textContent()) ?? '', /^\s*[23]:\d+/)

    // YAML, but the server refuses it: its path, at the line and column of that value.
    await editor.fill(BAD_MODEL)
    await page.getByRole('button', { name: 'Save model' }).click()
    const item = problems.locator('li[data-problem-path="attributes.shown.default"]')
    await item.waitFor()
    assert.equal(await item.getAttribute('data-line'), '4')
    assert.match((await item.textContent()) ?? '', /^4:21 attributes\.shown\.default expected a finite number/)
    await shot('dashboard-model-editor.png')
    await assert.rejects(rig.api('GET', '/models/display'), /404/)

    // Fixed: saved, and the page moves to the model.
    await editor.fill(BAD_MODEL.replace('"zero"', '0.0'))
    await page.getByRole('button', { name: 'Save model' }).click()
    await page.locator('.detail-view h1', { hasText: 'display' }).waitFor()
    const doc = await rig.api('GET', '/models/display')
    assert.deepEqual(doc.definition.attributes.shown, { default: 0.0, type: 'float', unit: '%' })
    assert.deepEqual(doc.definition.meta_parameters, { label: { type: 'str', default: 'panel' } })
  })

  test('an instance from the model with a parameter, and a connection that carries values', { skip, timeout: 60_000 }, async () => {
    await page.getByRole('link', { name: 'New instance of it' }).click()
    await page.getByRole('textbox', { name: 'Instance name' }).fill('panel_1')
    await page.getByRole('combobox', { name: 'Model' }).selectOption('display')
    await page.getByRole('textbox', { name: 'Parameter label' }).fill('Tank level')
    await shot('dashboard-new-instance.png')
    await page.getByRole('button', { name: 'Create instance' }).click()
    await page.locator('[data-instance=panel_1]').waitFor()
    const created = await rig.api('GET', '/definition')
    assert.deepEqual(created.value.instances, [{ src: 'counter' }, { panel_1: { type: 'display', parameters: { label: 'Tank level' } } }])

    // Wire src.n to panel_1.shown, picked from the lists.
    await page.goto(`${rig.url}/ui/#/`)
    await page.getByRole('button', { name: 'New connection', exact: true }).click()
    await page.getByRole('textbox', { name: 'Connection name' }).fill('level_to_panel')
    await page.getByRole('combobox', { name: 'Source attribute' }).selectOption('src.attributes.n')
    await page.getByRole('combobox', { name: 'Target attribute' }).selectOption('panel_1.attributes.shown')
    await page.getByRole('button', { name: 'Create connection' }).click()
    const row = page.locator('tr[data-connection=level_to_panel]')
    await row.waitFor()
    const enabled = row.getByRole('switch', { name: 'Enabled' })
    assert.equal(await enabled.isChecked(), true)
    assert.deepEqual(await rig.api('GET', '/connections/level_to_panel').then((d) => [d.from, d.to, d.enabled]), [
      'src.attributes.n',
      'panel_1.attributes.shown',
      true,
    ])

    // Step the system three times from the timer controls: the value arrives at panel_1.
    await page.goto(`${rig.url}/ui/#/`)
    await page.getByRole('button', { name: 'Prepare all' }).click()
    await page.getByRole('textbox', { name: 'Steps', exact: true }).fill('3')
    await page.getByRole('button', { name: 'Step', exact: true }).click()
    await page.locator('.notice-info', { hasText: 'System: 3 steps done' }).waitFor()
    await page.goto(`${rig.url}/ui/#/instance/panel_1`)
    const shown = page.locator('tr[data-attribute=shown] [data-cell=internal]')
    await eventually(async () => (await shown.textContent()) === '3', 15_000)
    assert.equal(await page.locator('tr[data-attribute=caption] [data-cell=internal]').textContent(), 'Tank level')
    await page.goto(`${rig.url}/ui/#/connections`)
    await eventually(async () => (await row.locator('[data-cell=transfers]').textContent()) === '3', 15_000)
    await shot('dashboard-connections.png')

    // Switched off: src goes on counting, panel_1 keeps what it had.
    await row.getByRole('switch', { name: 'Enabled' }).uncheck()
    await page.locator('.notice-info', { hasText: 'Connection level_to_panel disabled' }).waitFor()
    assert.equal((await rig.api('GET', '/connections/level_to_panel')).enabled, false)
    await rig.api('POST', '/method/run', { kwargs: { steps: 2 } })
    assert.equal((await rig.api('GET', '/instances/src/attributes/n')).internal_value, 5)
    assert.equal((await rig.api('GET', '/instances/panel_1/attributes/shown')).internal_value, 3)
    await row.getByRole('switch', { name: 'Enabled' }).check()
    await page.locator('.notice-info', { hasText: 'Connection level_to_panel enabled' }).waitFor()
    await rig.api('POST', '/method/run', { kwargs: { steps: 1 } })
    assert.equal((await rig.api('GET', '/instances/panel_1/attributes/shown')).internal_value, 6)
  })

  test('a value forced, marked, and cleared', { skip, timeout: 60_000 }, async () => {
    await page.goto(`${rig.url}/ui/#/instance/src`)
    const row = page.locator('tr[data-attribute=n]')
    const external = row.locator('[data-cell=external]')
    await eventually(async () => (await external.getAttribute('data-forced')) === 'false', 15_000)
    await row.getByRole('button', { name: 'Force value' }).click()
    await page.getByRole('textbox', { name: 'Forced value of n' }).fill('42.5')
    await confirm(page, 'Force')
    await eventually(async () => (await external.getAttribute('data-forced')) === 'true', 15_000)
    assert.match((await external.textContent()) ?? '', /^42\.5\s*forced$/)
    const doc = await rig.api('GET', '/instances/src/attributes/n')
    assert.deepEqual([doc.internal_value, doc.external_value, doc.forced], [6, 42.5, true])
    // Forced, it stays through steps while the model computes on.
    await rig.api('POST', '/method/run', { kwargs: { steps: 2 } })
    const stepped = await rig.api('GET', '/instances/src/attributes/n')
    assert.equal(stepped.external_value, 42.5)
    assert.notEqual(stepped.internal_value, 6)
    await shot('dashboard-forced.png')

    await row.getByRole('button', { name: 'Clear forced value of n' }).click()
    await eventually(async () => (await external.getAttribute('data-forced')) === 'false', 15_000)
    assert.equal(await row.locator('.forced-tag').isHidden(), true)
    const cleared = await rig.api('GET', '/instances/src/attributes/n')
    assert.equal(cleared.external_value, cleared.internal_value)

    if (SHOTS) {
      // The other pages, for docs/dashboard.md.
      await page.goto(`${rig.url}/ui/#/model/display`)
      await page.locator('.detail-view pre').first().waitFor()
      await shot('dashboard-model.png')
      await page.goto(`${rig.url}/ui/#/logs`)
      await page.locator('.logs-view tbody tr').first().waitFor()
      await shot('dashboard-logs.png')
      await page.goto(`${rig.url}/ui/#/snapshots`)
      await page.locator('.snapshots-view').waitFor()
      await shot('dashboard-snapshots.png')
    }
  })

  test('pause keeps a started system from stepping; resume steps it again', { skip, timeout: 60_000 }, async () => {
    await page.goto(`${rig.url}/ui/#/`)
    await page.getByRole('textbox', { name: 'Seconds between steps' }).fill('0.05')
    await page.getByRole('button', { name: 'Set rate' }).click()
    await eventually(async () => (await rig.api('GET', '/polling')).interval === 0.05, 15_000)
    const pause = page.getByRole('group', { name: 'Timer' }).getByRole('button', { name: 'Pause' })
    await pause.click()
    await eventually(async () => (await pause.getAttribute('aria-pressed')) === 'true', 15_000)
    assert.equal((await rig.api('GET', '/polling')).enabled, false)
    await rig.api('POST', '/method/start', { kwargs: {} })
    const steps = (await rig.api('GET', '/steps')).value as number
    // The loop was asked for and is paused: a run through the API still steps, the loop does not.
    await rig.api('POST', '/method/run', { kwargs: { steps: 1 } })
    assert.equal((await rig.api('GET', '/steps')).value, steps + 1)
    await pause.click()
    await eventually(async () => (await pause.getAttribute('aria-pressed')) === 'false', 15_000)
    await eventually(async () => ((await rig.api('GET', '/steps')).value as number) > steps + 3, 15_000)
    await shot('dashboard-system.png')
    await rig.api('POST', '/method/stop', { kwargs: {} })
  })

  test('the system exported, and imported into a fresh server; a bad file changes nothing', { skip, timeout: 90_000 }, async (t) => {
    await page.goto(`${rig.url}/ui/#/`)
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export system' }).click()])
    assert.equal(download.suggestedFilename(), 'system.yaml')
    const files = await mkdtemp(join(tmpdir(), 'mimic-ui-files-'))
    t.after(() => rm(files, { recursive: true, force: true }))
    const file = join(files, 'export.yaml')
    await download.saveAs(file)
    const exported = parse(await readFile(file, 'utf8'))
    assert.deepEqual(exported, (await rig.api('GET', '/definition')).value)

    fresh = await startDashboard({ key: KEY, system: 'models: {}\n', prefix: 'mimic-ui-import-' })
    const other = fresh.page
    await login(other, fresh.url, KEY)

    // A file whose connection names an attribute that does not exist: refused at its line, nothing changes.
    const bad = join(files, 'bad.yaml')
    const badText = (await readFile(file, 'utf8')).replace('to: panel_1.attributes.shown', 'to: panel_1.attributes.nothing')
    assert.notEqual(badText, await readFile(file, 'utf8'))
    await writeFile(bad, badText)
    const line = badText.split('\n').findIndex((l) => l.includes('panel_1.attributes.nothing')) + 1
    let chooser = other.waitForEvent('filechooser')
    await other.getByRole('button', { name: 'Import system' }).click()
    await (await chooser).setFiles(bad)
    await confirm(other, 'Import')
    const problems = other.getByRole('list', { name: 'Problems of the imported file' })
    const problem = problems.locator('li[data-problem-path="connections.level_to_panel.to"]')
    await problem.waitFor()
    assert.equal(await problem.getAttribute('data-line'), String(line))
    await other.getByRole('region', { name: 'Import' }).getByText('nothing changed').waitFor()
    if (SHOTS) await other.screenshot({ path: join(SHOTS, 'dashboard-import-problems.png') })
    assert.deepEqual((await fresh.api('GET', '/definition')).value, { models: {}, instances: [], connections: {} })

    // The exported file: everything arrives.
    chooser = other.waitForEvent('filechooser')
    await other.getByRole('button', { name: 'Import system' }).click()
    await (await chooser).setFiles(file)
    await other.getByRole('dialog').getByText('2 instances: src, panel_1').waitFor()
    await confirm(other, 'Import')
    await other.locator('.notice-info', { hasText: 'Imported' }).waitFor()
    assert.deepEqual((await fresh.api('GET', '/definition')).value, exported)
    await other.locator('.sidebar a[href="#/instance/panel_1"]').waitFor()
  })

  test('Delete asks first, and removes connections, instances and models', { skip, timeout: 60_000 }, async () => {
    // A model in use cannot go: the server's reason is shown.
    await page.goto(`${rig.url}/ui/#/model/display`)
    await page.getByRole('button', { name: 'Delete' }).click()
    await confirm(page, 'Delete')
    await page.locator('.notice-error', { hasText: 'Deleting model display failed' }).waitFor()

    // Cancel leaves the connection; Delete removes it.
    await page.goto(`${rig.url}/ui/#/connections`)
    const row = page.locator('tr[data-connection=level_to_panel]')
    await row.getByRole('button', { name: 'Delete' }).click()
    await confirm(page, 'Cancel')
    assert.equal((await rig.api('GET', '/connections/level_to_panel')).name, 'level_to_panel')
    await row.getByRole('button', { name: 'Delete' }).click()
    await confirm(page, 'Delete')
    await row.waitFor({ state: 'detached' })

    await page.goto(`${rig.url}/ui/#/instance/panel_1`)
    await page.locator('[data-instance=panel_1]').getByRole('button', { name: 'Delete' }).click()
    await confirm(page, 'Delete')
    await page.locator('.overview-view').waitFor()
    await page.goto(`${rig.url}/ui/#/model/display`)
    await page.getByRole('button', { name: 'Delete' }).click()
    await confirm(page, 'Delete')
    await page.locator('.overview-view').waitFor()
    assert.deepEqual(Object.keys((await rig.api('GET', '/definition')).value.models), ['counter'])
    assert.deepEqual((await rig.api('GET', '/definition')).value.instances, [{ src: 'counter' }])
  })

  test('the dashboard asked for nothing that is not there, and threw nothing', { skip }, () => {
    assert.deepEqual(notFound, [])
    assert.deepEqual(rig.pageErrors, [])
    assert.deepEqual(fresh?.pageErrors ?? [], [])
  })
})
