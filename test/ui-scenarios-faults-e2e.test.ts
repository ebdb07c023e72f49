// The dashboard's Scenarios panel and a Modbus adapter's Faults panel in Debian's Chromium (as
// test/ui-actions-e2e.test.ts): a scenario started from the page shows its state and the time it
// has left counting down as the system steps, and is stopped from the page; faults set from the
// page reach a Modbus client and show in the counters, a refused value shows the server's 422
// with its paths, and Clear returns to normal service.
import assert from 'node:assert/strict'
import { connect as netConnect } from 'node:net'
import { after, before, describe, test } from 'node:test'
import type { Page } from 'playwright-core'
import { CHROMIUM, chromiumMissing, startDashboard, type DashboardRig } from './helpers/dashboard.js'

const KEY = 'ui-scenarios-key'
const missing = chromiumMissing()

// A supply held at 230 V by its action; `sag` holds 180 V for 5 s, `hold` until stopped. A
// second model has no scenarios.
const SYSTEM = `
models:
  supply:
    timer: { time_step: 1.0 }
    attributes:
      v: { default: 230.0, type: float }
    actions:
      - { set: $out(v), value: 230.0 }
    scenarios:
      sag:
        display_name: Voltage sag
        description: down to 180 V
        duration: 5
        overrides: { $out(v): 180.0 }
      hold:
        overrides: { $out(v): 0.0 }
    communication:
      modbus_slave:
        host: 127.0.0.1
        port: 0
        mapping: { v: { address: [0, 1], group: h_r, type: float } }
  gauge:
    attributes:
      x: { default: 1.0, type: float }
instances:
  - p1: supply
  - g1: gauge
`

let rig: DashboardRig
let page: Page
let pageErrors: string[]

describe('the dashboard in Chromium (ui-scenarios-faults-e2e)', () => {
  before(async () => {
    if (missing) return
    rig = await startDashboard({ key: KEY, system: SYSTEM, prefix: 'mimic-ui-scenarios-' })
    ;({ page, pageErrors } = rig)
  })

  after(async () => {
    if (!missing) await rig?.close()
  })

  const api = (method: string, path: string, body?: unknown): Promise<Record<string, any>> => rig.api(method, path, body)

  /** One read of holding registers 0..1 as a Modbus client sends it: the function code answered and the exception code, if any. */
  async function modbusRead(port: number): Promise<{ fc: number; exception?: number }> {
    const socket = netConnect({ host: '127.0.0.1', port })
    try {
      const answer = await new Promise<Buffer>((resolve, reject) => {
        let received = Buffer.alloc(0)
        const timer = setTimeout(() => reject(new Error('no Modbus answer within 3 s')), 3000)
        socket.on('error', (err) => {
          clearTimeout(timer)
          reject(err)
        })
        socket.on('connect', () => socket.write(Buffer.from([0, 1, 0, 0, 0, 6, 1, 3, 0, 0, 0, 2])))
        socket.on('data', (chunk) => {
          received = Buffer.concat([received, chunk])
          if (received.length < 9 || received.length < 6 + received.readUInt16BE(4)) return
          clearTimeout(timer)
          resolve(received)
        })
      })
      const fc = answer.readUInt8(7)
      return fc & 0x80 ? { fc, exception: answer.readUInt8(8) } : { fc }
    } finally {
      socket.destroy()
    }
  }

  test(
    'the Scenarios panel starts a scenario, counts its time down as the system steps, and stops it; the Faults panel sets, shows, refuses and clears faults',
    { skip: missing ? `${CHROMIUM} not installed` : false, timeout: 90_000 },
    async () => {
      await api('POST', '/instances/p1/polling/method/disable', { kwargs: {} })
      await api('POST', '/instances/p1/method/prepare', { kwargs: {} })
      const port = (await api('GET', '/instances/p1/communication/modbus_slave')).port as number
      await rig.signIn()
      const view = await rig.openInstance('p1')
      const panel = view.locator('.scenarios-panel')
      await panel.and(page.locator('[data-loaded=listed]')).waitFor()

      // Both scenarios, in model order, idle; the one with a duration says how long it will last.
      const sag = panel.locator('tr[data-scenario=sag]')
      const hold = panel.locator('tr[data-scenario=hold]')
      assert.deepEqual(await panel.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-scenario'))), ['sag', 'hold'])
      await sag.getByText('Voltage sag').waitFor()
      await sag.getByText('down to 180 V').waitFor()
      await sag.locator('[data-cell=state]', { hasText: 'idle' }).waitFor()
      await sag.locator('[data-cell=remaining]', { hasText: '5 s when started' }).waitFor()
      await hold.locator('[data-cell=remaining]', { hasText: 'until stopped' }).waitFor()
      assert.equal(await sag.locator('[data-cell=runs]').textContent(), '0')

      // Start: active, 5 s left; each step of the system counts it down; the value is held.
      await sag.locator('[data-action=scenario-start]').click()
      await page.locator('.notice-info', { hasText: 'p1: scenario sag started' }).waitFor()
      await sag.locator('[data-cell=state]', { hasText: 'active' }).waitFor()
      await sag.locator('[data-cell=remaining]', { hasText: /^5 s$/ }).waitFor()
      assert.equal(await sag.locator('[data-cell=runs]').textContent(), '1')
      assert.equal((await api('GET', '/instances/p1/attributes/v')).internal_value, 180)
      await api('POST', '/instances/p1/method/run', { kwargs: {} })
      await api('POST', '/instances/p1/method/run', { kwargs: {} })
      await api('POST', '/instances/p1/method/run', { kwargs: {} })
      await sag.locator('[data-cell=elapsed]', { hasText: /^2 s$/ }).waitFor()
      await sag.locator('[data-cell=remaining]', { hasText: /^3 s$/ }).waitFor()
      await view.locator('tr[data-attribute=v] [data-cell=internal]', { hasText: '180' }).waitFor()

      // Stop: finished, and the model's value is back after the next step.
      await sag.locator('[data-action=scenario-stop]').click()
      await page.locator('.notice-info', { hasText: 'p1: scenario sag stopped' }).waitFor()
      await sag.locator('[data-cell=state]', { hasText: 'finished' }).waitFor()
      assert.equal((await api('GET', '/instances/p1/scenarios/sag')).state, 'finished')
      await api('POST', '/instances/p1/method/run', { kwargs: {} })
      await view.locator('tr[data-attribute=v] [data-cell=internal]', { hasText: '230' }).waitFor()

      // Faults: none at first; set from the editor, seen by a Modbus client and in the counter.
      const faults = view.locator('.adapter-panel[data-adapter=modbus_slave] .faults-panel')
      const current = faults.locator('[data-cell=faults]')
      await current.and(page.locator('[data-active=false]')).waitFor()
      assert.equal(await current.textContent(), '{}')
      await faults.locator('textarea').fill('{"exception": {"code": 6, "functions": [3]}}')
      await faults.locator('[data-action=faults-set]').click()
      await page.locator('.notice-info', { hasText: 'p1.modbus_slave: faults set' }).waitFor()
      await current.and(page.locator('[data-active=true]')).waitFor()
      assert.deepEqual(JSON.parse((await current.textContent()) ?? ''), { exception: { code: 6, functions: [3] } })
      assert.deepEqual(await modbusRead(port), { fc: 0x83, exception: 6 })
      await faults.locator('[data-counter=fault_exceptions]', { hasText: /^1$/ }).waitFor()

      // A bad value: the server's problems with their paths; the faults in force stay.
      await faults.locator('textarea').fill('{"exception": {"code": 300}, "corrupt": {"kind": "crc"}}')
      await faults.locator('[data-action=faults-set]').click()
      const problems = faults.locator('.fault-problems')
      await problems.locator('li', { hasText: 'value.exception.code' }).waitFor()
      await problems.locator('li', { hasText: 'value.corrupt.kind' }).waitFor()
      assert.deepEqual(await problems.locator('.problem-path').allTextContents(), ['value.exception.code', 'value.corrupt.kind'])
      assert.deepEqual((await api('GET', '/instances/p1/communication/modbus_slave/attr/faults')).value, { exception: { code: 6, functions: [3] } })

      // Clear: normal service, the problems go away, the counter stays.
      await faults.locator('[data-action=faults-clear]').click()
      await page.locator('.notice-info', { hasText: 'p1.modbus_slave: faults cleared' }).waitFor()
      await current.and(page.locator('[data-active=false]')).waitFor()
      assert.equal(await problems.isVisible(), false)
      assert.deepEqual((await api('GET', '/instances/p1/communication/modbus_slave/attr/faults')).value, {})
      assert.deepEqual(await modbusRead(port), { fc: 3 })
      assert.equal(await faults.locator('[data-counter=fault_exceptions]').textContent(), '1')

      // Faults set elsewhere (a script, a scenario) show in the panel through the event stream.
      await api('PUT', '/instances/p1/communication/modbus_slave/attr/faults', { value: { no_response: true } })
      await current.filter({ hasText: 'no_response' }).waitFor()
      // A change of a detail only (the same kinds in force) shows too.
      await api('PUT', '/instances/p1/communication/modbus_slave/attr/faults', { value: { exception: { code: 6, functions: [3] } } })
      await current.filter({ hasText: '"code": 6' }).waitFor()
      await api('PUT', '/instances/p1/communication/modbus_slave/attr/faults', { value: { exception: { code: 4, functions: [3] } } })
      await current.filter({ hasText: '"code": 4' }).waitFor()
      await api('PUT', '/instances/p1/communication/modbus_slave/attr/faults', { value: {} })
      await current.and(page.locator('[data-active=false]')).waitFor()

      // An instance whose model has no scenarios shows no Scenarios panel and no message.
      await page.click('.sidebar a[href="#/instance/g1"]')
      await page.locator('[data-instance=g1] tr[data-attribute=x]').waitFor()
      await page.locator('[data-instance=g1] .scenarios-panel[data-loaded=none]').waitFor({ state: 'attached' })
      assert.equal(await page.locator('[data-instance=g1] .scenarios-panel').isVisible(), false)
      assert.equal(await page.locator('.notice-error').count(), 0)
      assert.deepEqual(pageErrors, [])
    },
  )
})
