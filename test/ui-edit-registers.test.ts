// The Registers tab of an instance with a Modbus adapter, in Debian's Chromium against a real
// server: every mapped attribute with its group, 0-based address, 1-based PLC address, type, raw
// words and decoded value; the raw words are compared with what Debian's mbpoll reads from the
// adapter's port, for holding and input registers in both word orders, a scaled register, a
// string, coils and discrete inputs, and again after a value changes. MIMIC_UI_SHOTS=docs also
// writes the screenshot docs/dashboard.md shows.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import { CHROMIUM, chromiumMissing, startDashboard, type DashboardRig } from './helpers/dashboard.js'
import { freePort } from './helpers/ports.js'
import { eventually } from './helpers/wait.js'

const MBPOLL = '/usr/bin/mbpoll'
const KEY = 'ui-registers-key'
const missing = chromiumMissing()
if (!existsSync(MBPOLL) && process.env.CI) throw new Error(`${MBPOLL} is missing: apt-get install mbpoll`)
const skip = missing ? `${CHROMIUM} not installed` : !existsSync(MBPOLL) ? `${MBPOLL} not installed (apt-get install mbpoll)` : false
const SHOTS = process.env.MIMIC_UI_SHOTS ? resolve(import.meta.dirname, '..', process.env.MIMIC_UI_SHOTS) : ''

let rig: DashboardRig
let port: number

describe('the dashboard in Chromium (ui-edit-registers)', () => {
  before(async () => {
    if (skip) return
    port = await freePort()
    rig = await startDashboard({
      key: KEY,
      prefix: 'mimic-ui-registers-',
      system: `
models:
  meter:
    attributes:
      voltage: { default: 230.5, type: float }
      energy: { default: 123456, type: int }
      current: { default: 12.3, type: float }
      frequency: { default: -2.5, type: float }
      serial: { default: "MX-7", type: str }
      status: { default: 42, type: int }
      breaker: { default: true, type: bool }
      alarm: { default: false, type: bool }
      door: { default: true, type: bool }
    communication:
      - modbus_slave:
          host: 127.0.0.1
          port: ${port}
          unit_id: 1
          mapping:
            voltage: { address: [0, 1], group: h_r, type: float }
            energy: { address: [2, 3], group: h_r, type: uint_32, word_order: little }
            current: { address: 4, group: h_r, type: uint_16, scale: 0.1 }
            frequency: { address: [5, 6], group: h_r, type: float, byte_order: little }
            serial: { address: [10, 12], group: h_r, type: str }
            status: { address: 0, group: i_r, type: int_16 }
            breaker: { address: 0, group: c_o, type: bool }
            alarm: { address: 1, group: c_o, type: bool }
            door: { address: 3, group: d_i, type: bool }
instances:
  - meter: meter
`,
    })
    await rig.api('POST', '/instances/meter/method/prepare', { kwargs: {} })
  })

  after(async () => {
    if (!skip) await rig?.close()
  })

  /** The raw words (hex) or bits mbpoll reads at a 0-based address. */
  async function mbpoll(group: string, address: number, count: number): Promise<string> {
    const type = { h_r: '4:hex', i_r: '3:hex', c_o: '0', d_i: '1' }[group]!
    const args = ['-m', 'tcp', '-p', String(port), '-a', '1', '-0', '-1', '-o', '2', '-r', String(address), '-c', String(count), '-t', type, '127.0.0.1']
    const { stdout } = await promisify(execFile)(MBPOLL, args)
    return [...stdout.matchAll(/^\[\d+\]:\s+(\S+)/gm)].map((m) => (m[1]!.startsWith('0x') ? `0x${m[1]!.slice(2).toUpperCase()}` : m[1]!)).join(' ')
  }

  interface Row {
    attribute: string
    group: string
    address: string
    plc: string
    type: string
    raw: string
    decoded: string
  }

  async function rows(): Promise<Row[]> {
    return rig.page.locator('table.registers tbody tr').evaluateAll((trs) =>
      trs.map((tr) => ({
        attribute: tr.getAttribute('data-register') ?? '',
        group: tr.getAttribute('data-group') ?? '',
        address: tr.querySelector('[data-cell=address]')?.textContent ?? '',
        plc: tr.querySelector('[data-cell=plc]')?.textContent ?? '',
        type: tr.querySelector('[data-cell=type]')?.textContent ?? '',
        raw: tr.querySelector('[data-cell=raw]')?.textContent ?? '',
        decoded: tr.querySelector('[data-cell=decoded]')?.textContent ?? '',
      })),
    )
  }

  /** Checks every row's raw words against mbpoll; answers the rows. */
  async function matchMbpoll(): Promise<Row[]> {
    const listed = await rows()
    for (const row of listed) {
      const [first, last = first] = row.address.split('–').map(Number) as [number, number?]
      assert.equal(await mbpoll(row.group, first, last! - first + 1), row.raw, `${row.attribute} at ${row.group} ${row.address}`)
    }
    return listed
  }

  test('the Registers tab lists the register map with the words mbpoll reads', { skip, timeout: 90_000 }, async () => {
    const { page, url } = rig
    await page.goto(`${url}/ui/`)
    await page.fill('input[name=product-key]', KEY)
    await page.click('[data-action=login]')
    await page.locator('.overview-view').waitFor()
    await page.click('.sidebar a[href="#/instance/meter"]')
    const tab = page.getByRole('tab', { name: 'Registers' })
    await tab.click()
    assert.equal(await tab.getAttribute('aria-selected'), 'true')
    await page.getByRole('tabpanel').locator('table.registers').waitFor()
    await eventually(async () => (await rows()).every((r) => r.raw !== '–'), 15_000)

    const listed = await matchMbpoll()
    assert.deepEqual(
      listed.map((r) => [r.attribute, r.group, r.address, r.plc, r.decoded]),
      [
        ['breaker', 'c_o', '0', '00001', 'true'],
        ['alarm', 'c_o', '1', '00002', 'false'],
        ['door', 'd_i', '3', '10004', 'true'],
        ['status', 'i_r', '0', '30001', '42'],
        ['voltage', 'h_r', '0–1', '40001–40002', '230.5'],
        ['energy', 'h_r', '2–3', '40003–40004', '123456'],
        ['current', 'h_r', '4', '40005', '12.3'],
        ['frequency', 'h_r', '5–6', '40006–40007', '-2.5'],
        ['serial', 'h_r', '10–12', '40011–40013', 'MX-7'],
      ],
    )
    assert.equal(listed.find((r) => r.attribute === 'voltage')!.raw, '0x4366 0x8000')
    assert.equal(listed.find((r) => r.attribute === 'energy')!.raw, '0xE240 0x0001')
    assert.equal(listed.find((r) => r.attribute === 'current')!.raw, '0x007B')
    assert.match(listed.find((r) => r.attribute === 'energy')!.type, /uint_32 \(words little\)/)
    if (SHOTS) await page.screenshot({ path: join(SHOTS, 'dashboard-registers.png') })

    // A value changed through the API: the tab follows, and still matches mbpoll.
    await rig.api('PUT', '/instances/meter/attributes', { voltage: -1.25, energy: 7, alarm: true, serial: 'AB' })
    await eventually(async () => (await rows()).find((r) => r.attribute === 'voltage')?.decoded === '-1.25', 15_000)
    await eventually(async () => (await rows()).find((r) => r.attribute === 'serial')?.decoded === 'AB', 15_000)
    const changed = await matchMbpoll()
    assert.equal(changed.find((r) => r.attribute === 'voltage')!.raw, '0xBFA0 0x0000')
    assert.equal(changed.find((r) => r.attribute === 'serial')!.raw, '0x4142 0x0000 0x0000')

    // Keyboard: arrows move between the tabs.
    await page.getByRole('tab', { name: 'Registers' }).focus()
    await page.keyboard.press('ArrowLeft')
    assert.equal(await page.getByRole('tab', { name: 'Attributes' }).getAttribute('aria-selected'), 'true')
    assert.equal(await page.locator('table.registers').first().isHidden(), true)
    assert.deepEqual(rig.pageErrors, [])
  })
})
