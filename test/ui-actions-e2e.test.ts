// The dashboard's actions panel in Debian's Chromium (as test/ui-e2e.test.ts): a system with a
// declarative model is served, the instance page lists its actions in model order with kinds,
// targets and where each is in the model, an action switched off is skipped when the system is
// stepped through the API while the others go on, a refused switch is put back with a message,
// and the model's page shows the actions as written (YAML that reads back as the definition).
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Page } from 'playwright-core'
import { parse } from 'yaml'
import { toYaml } from '../ui/src/yaml.ts'
import { CHROMIUM, chromiumMissing, startDashboard, type DashboardRig } from './helpers/dashboard.js'

const KEY = 'ui-actions-key'
const missing = chromiumMissing()

// Three actions and one inside a condition; a second model has no actions at all.
const SYSTEM = `
models:
  mixer:
    name: Mixer
    timer: { time_step: 1.0 }
    attributes:
      a: { default: 0.0, type: float }
      b: { default: 0.0, type: float }
      c: { default: 0.0, type: float }
      hot: { default: false, type: bool }
    actions:
      - { name: count_a, description: Adds one to a every step, function: $out(a), call: $in(a) + 1 }
      - { name: count_b, function: $out(b), call: $in(b) + 2 }
      - { name: jitter, noise: $out(c), std: 1.0, seed: 3 }
    conditions:
      - if: $in(a) > 2
        actions: [{ name: flag_hot, set: $out(hot), value: true }]
  gauge:
    attributes:
      x: { default: 1.0, type: float }
instances:
  - m1: mixer
  - g1: gauge
`

let rig: DashboardRig
let page: Page
let pageErrors: string[]

describe('the dashboard in Chromium (ui-actions-e2e)', () => {
  before(async () => {
    if (missing) return
    rig = await startDashboard({ key: KEY, system: SYSTEM, prefix: 'mimic-ui-actions-' })
    ;({ page, pageErrors } = rig)
  })

  after(async () => {
    if (!missing) await rig?.close()
  })

  const api = (method: string, path: string, body?: unknown): Promise<Record<string, unknown>> => rig.api(method, path, body)

  async function values(): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {}
    for (const name of ['a', 'b', 'c', 'hot']) out[name] = (await api('GET', `/instances/m1/attributes/${name}`)).internal_value
    return out
  }

  async function steps(n: number): Promise<void> {
    await api('POST', '/method/run', { kwargs: { steps: n } })
  }

  test(
    'the actions panel lists an instance’s actions and switches one off and on',
    { skip: missing ? `${CHROMIUM} not installed` : false, timeout: 60_000 },
    async () => {
      await rig.signIn()
      const view = await rig.openInstance('m1')
      const panel = view.locator('.actions-panel')
      await panel.and(page.locator('[data-loaded=listed]')).waitFor()
      const rows = panel.locator('tbody tr')

      // Model order, with kind, targets, where each is in the model, and the description.
      const listed = await rows.evaluateAll((trs) =>
        trs.map((tr) => ({
          name: tr.getAttribute('data-action-name'),
          kind: tr.querySelector('[data-cell=kind]')?.textContent,
          targets: tr.querySelector('[data-cell=targets]')?.textContent,
          at: tr.querySelector('[data-cell=model-path]')?.textContent,
        })),
      )
      assert.deepEqual(listed, [
        { name: 'count_a', kind: 'function', targets: '$out(a)', at: 'actions[0]' },
        { name: 'count_b', kind: 'function', targets: '$out(b)', at: 'actions[1]' },
        { name: 'jitter', kind: 'noise', targets: '$out(c)', at: 'actions[2]' },
        { name: 'flag_hot', kind: 'set', targets: '$out(hot)', at: 'conditions[0].actions[0]' },
      ])
      await rows.filter({ hasText: 'count_a' }).getByText('Adds one to a every step').waitFor()
      for (const name of ['count_a', 'count_b', 'jitter', 'flag_hot'])
        assert.equal(await panel.getByRole('checkbox', { name: `Action ${name} enabled` }).isChecked(), true)

      // Switch count_b off: the page shows it disabled, the server has it disabled.
      const countB = panel.getByRole('checkbox', { name: 'Action count_b enabled' })
      await countB.uncheck()
      const rowB = rows.filter({ hasText: 'count_b' })
      await page.locator('.notice-info', { hasText: 'm1: action count_b disabled' }).waitFor()
      await rowB.locator('.switch-state', { hasText: 'off' }).waitFor()
      assert.match((await rowB.getAttribute('class')) ?? '', /action-disabled/)
      assert.equal(await countB.isChecked(), false)
      assert.equal((await api('GET', '/instances/m1/actions/count_b')).enabled, false)

      // Step the system through the API: b stays, a counts, c moves, hot is set.
      await api('POST', '/method/prepare', { kwargs: {} })
      const before = await values()
      await steps(4)
      const off = await values()
      assert.equal(off.b, before.b, 'the disabled action did not write b')
      assert.equal(off.a, (before.a as number) + 4)
      assert.notEqual(off.c, before.c)
      assert.equal(off.hot, true)
      // The attribute table shows the same through the event stream.
      await view.locator('tr[data-attribute=a] [data-cell=internal]', { hasText: '4' }).waitFor()
      assert.equal(await view.locator('tr[data-attribute=b] [data-cell=internal]').textContent(), '0')

      // Switch it back on: b counts again.
      await countB.check()
      await page.locator('.notice-info', { hasText: 'm1: action count_b enabled' }).waitFor()
      await rowB.locator('.switch-state', { hasText: 'on' }).waitFor()
      assert.doesNotMatch((await rowB.getAttribute('class')) ?? '', /action-disabled/)
      await steps(2)
      const on = await values()
      assert.equal(on.b, (off.b as number) + 4)
      assert.equal(on.a, (off.a as number) + 2)
      await view.locator('tr[data-attribute=b] [data-cell=internal]', { hasText: '4' }).waitFor()

      // A switch whose request fails is put back, with a message; the action stays as it was.
      const enabledOfA = '**/api/v3/system/instances/m1/actions/count_a/attr/enabled'
      await page.route(enabledOfA, (route) => route.abort('connectionrefused'))
      const countA = panel.getByRole('checkbox', { name: 'Action count_a enabled' })
      // click, not uncheck: the failed request may put the switch back before a state check could see it change
      await countA.click()
      await page.locator('.notice-error', { hasText: 'Disabling action count_a of m1 failed' }).waitFor()
      await page.waitForFunction(() => (document.querySelector('input[aria-label="Action count_a enabled"]') as HTMLInputElement | null)?.checked === true)
      assert.doesNotMatch((await rows.filter({ hasText: 'count_a' }).getAttribute('class')) ?? '', /action-disabled/)
      assert.equal((await api('GET', '/instances/m1/actions/count_a')).enabled, true)
      await page.unroute(enabledOfA)
      while (await page.locator('.notice-close').count()) await page.locator('.notice-close').first().click()

      // The model's page shows its actions and conditions as written.
      await panel.locator('[data-action=model-actions]').click()
      const written = page.locator('.detail-view pre[data-block=model-actions]')
      await written.waitFor()
      const yaml = (await written.textContent()) ?? ''
      assert.match(yaml, /^actions:\n {2}- \{ name: count_a, description: Adds one to a every step, function: \$out\(a\), call: \$in\(a\) \+ 1 \}\n/)
      assert.match(yaml, /- \{ name: jitter, noise: \$out\(c\), std: 1, seed: 3 \}/)
      assert.match(yaml, /\nconditions:\n {2}- if: \$in\(a\) > 2\n {4}actions:\n {6}- \{ name: flag_hot, set: \$out\(hot\), value: true \}/)

      // An instance whose model has no actions shows no actions panel and no message.
      await page.click('.sidebar a[href="#/instance/g1"]')
      await page.locator('[data-instance=g1] tr[data-attribute=x]').waitFor()
      await page.locator('[data-instance=g1] .actions-panel[data-loaded=none]').waitFor({ state: 'attached' })
      assert.equal(await page.locator('[data-instance=g1] .actions-panel').isVisible(), false)
      assert.equal(await page.locator('.notice-error').count(), 0)
      assert.deepEqual(pageErrors, [])
    },
  )

  test('the actions as the model page writes them read back as the same definition', async () => {
    const file = parse(await readFile(resolve(import.meta.dirname, '../examples/devices/system.yaml'), 'utf8')) as {
      models: Record<string, Record<string, unknown>>
    }
    const odd: Record<string, unknown> = {
      actions: [{ name: 'odd', set: '$out(s)', value: "'a: b' # c", note: 'true', empty: {}, none: [], n: null, multi: 'x\ny', num: '0.5' }],
    }
    for (const definition of [...Object.values(file.models), odd]) {
      const behaviour = Object.fromEntries(['actions', 'conditions', 'if_chain'].filter((k) => k in definition).map((k) => [k, definition[k]]))
      assert.deepEqual(parse(toYaml(behaviour)), behaviour)
    }
  })
})
