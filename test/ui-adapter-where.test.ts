// The dashboard's adapter panel says where an adapter is served (Debian's Chromium, as
// test/ui-e2e.test.ts): a Modbus server shows its port; a Modbus master, a client that holds no
// port of its own, shows the device it polls as its server, not "Port: not listening".
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { CHROMIUM, chromiumMissing, startDashboard, type DashboardRig } from './helpers/dashboard.js'
import { freePort } from './helpers/ports.js'

const KEY = 'ui-where-key'
const missing = chromiumMissing()

let rig: DashboardRig
let port: number

describe('the dashboard in Chromium (ui-adapter-where)', () => {
  before(async () => {
    if (missing) return
    port = await freePort()
    const system = `
models:
  Device:
    attributes:
      level: 7
    communication:
      - modbus_slave:
          port: ${port}
          unit_id: 3
          mapping:
            level: { address: 0, type: uint_16, group: h_r }
  Plc:
    attributes:
      seen: 0
    communication:
      - modbus_master:
          host: 127.0.0.1
          port: ${port}
          slave_id: 3
          poll_interval: 0.2
          bindings:
            - { name: level, area: h_r, address: 0, codec: uint_16, attribute: seen }
instances:
  - device: Device
  - plc: Plc
`
    rig = await startDashboard({ key: KEY, system, prefix: 'mimic-ui-where-' })
  })

  after(async () => {
    if (!missing) await rig?.close()
  })

  test(
    'a listener shows its port, a client shows the server it talks to',
    { skip: missing ? `${CHROMIUM} not installed` : false, timeout: 60_000 },
    async () => {
      await rig.signIn()
      const device = await rig.openInstance('device')
      await device.locator('[data-method=prepare]').click()
      const slave = device.locator('[data-adapter=modbus_slave]')
      await slave.locator('.badge', { hasText: 'RUNNING' }).waitFor()
      await slave.locator('dt', { hasText: /^Port$/ }).waitFor()
      await slave
        .locator('dd.num', { hasText: String(port) })
        .first()
        .waitFor()

      const plc = await rig.openInstance('plc')
      await plc.locator('[data-method=prepare]').click()
      const master = plc.locator('[data-adapter=modbus_master]')
      await master.locator('.badge', { hasText: 'CONNECTED' }).waitFor()
      await master.locator('dt', { hasText: /^Server$/ }).waitFor()
      await master.locator('dd', { hasText: `127.0.0.1:${port}` }).waitFor()
      assert.equal(await master.getByText('not listening').count(), 0)
      assert.equal(await master.locator('dt', { hasText: /^Port$/ }).count(), 0)
    },
  )
})
