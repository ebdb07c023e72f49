// The dashboard's adapter panel for a text instrument, in Debian's Chromium (as test/ui-e2e.test.ts):
// the example power supply is prepared, a client sends SCPI commands over TCP, and the panel shows
// the protocol's own counters and the latest commands with their replies.
import assert from 'node:assert/strict'
import { join, resolve } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { CHROMIUM, chromiumMissing, startDashboard, type DashboardRig } from './helpers/dashboard.js'
import { LineClient } from './helpers/line-client.js'

const KEY = 'ui-ascii-key'
const ROOT = resolve(import.meta.dirname, '..')
const missing = chromiumMissing()

let rig: DashboardRig

describe('the dashboard in Chromium (ui-ascii-e2e)', () => {
  before(async () => {
    if (missing) return
    const system = { file: join(ROOT, 'examples/instruments/system.yaml'), extensions: [join(ROOT, 'examples/instruments/extensions')] }
    rig = await startDashboard({ key: KEY, system, prefix: 'mimic-ui-ascii-' })
  })

  after(async () => {
    if (!missing) await rig?.close()
  })

  test(
    'the adapter panel of a text instrument shows its counters and latest exchanges',
    { skip: missing ? `${CHROMIUM} not installed` : false, timeout: 60_000 },
    async () => {
      await rig.signIn()
      const view = await rig.openInstance('psu')
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
})
