/**
 * A bounded soak against a `mimic serve` child process: 50 concurrent HTTP clients mixing
 * reads, writes and runs, 20 Modbus clients polling, and a snapshot save + load + prepare every
 * few seconds. Pass: no crash, no 5xx, no error-level log record (an unhandled rejection would be
 * one, or kill the process), and open descriptors and resident memory of the server flat between
 * a sample after warm-up and the end. The figures are printed as test diagnostics and recorded in
 * docs/reliability.md.
 *
 * Duration: MIMIC_SOAK_SECONDS (default 60 when CI is set, else 15).
 */
import assert from 'node:assert/strict'
import { Agent } from 'node:http'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { TestClient } from '../unit/modbus/helpers.js'
import { SYS, freePort, procStats, rawRequest, serveMimic, waitFor, workerProcesses, type ServedMimic } from './helpers.js'

const SECONDS = Number(process.env.MIMIC_SOAK_SECONDS ?? (process.env.CI ? 60 : 15))
const HTTP_CLIENTS = 50
const MODBUS_CLIENTS = 20
const SNAPSHOT_EVERY_MS = 3000
const KEY = 'soak-key'
const UNITS = 4
const PANELS = 10

const CODE = `
import math

class Sensor:
    def __init__(self):
        self.temperature = 20.0
        self.ticks = 0
    def tick(self):
        self.ticks += 1
        self.temperature = 20.0 + 5.0 * math.sin(self.ticks / 10.0)
    def calibrate(self, offset=0.0):
        self.temperature += offset
        return self.temperature
`

function system(modbusPort: number): Record<string, unknown> {
  const models: Record<string, unknown> = {
    Panel: { attributes: { value: 0.0, setpoint: 1.0, label: 'panel', mode: { default: 1, type: 'int' } } },
  }
  const instances: Array<Record<string, string>> = []
  for (let u = 1; u <= UNITS; u++) {
    models[`Sensor${u}`] = {
      attributes: { temperature: 0.0, ticks: 0.0, alarm: false },
      import: {
        'sensor.py': {
          class: 'Sensor',
          attributes: { temperature: { property: 'temperature' }, ticks: { property: 'ticks' } },
          methods: { run: 'tick', calibrate: 'calibrate' },
        },
      },
      communication: [
        {
          modbus_slave: {
            host: '127.0.0.1',
            port: modbusPort,
            unit_id: u,
            mapping: { temperature: { address: [0, 1], group: 'h_r', type: 'float' }, alarm: { address: 0, group: 'c_o', type: 'bool' } },
          },
        },
      ],
    }
    instances.push({ [`sensor${u}`]: `Sensor${u}` })
  }
  for (let p = 0; p < PANELS; p++) instances.push({ [`panel${p}`]: 'Panel' })
  return { models, instances, connections: { feed: { from: 'sensor1.attributes.temperature', to: 'panel0.attributes.value' } } }
}

interface Sample {
  at: number
  fds: number
  rssKb: number
  workersRssKb: number
}

describe(`soak for ${SECONDS} s`, () => {
  let dir: string
  let server: ServedMimic | undefined
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-rel-soak-'))
    await mkdir(join(dir, 'extensions'))
    await writeFile(join(dir, 'extensions', 'sensor.py'), CODE)
  })
  after(async () => {
    server?.kill()
    await rm(dir, { recursive: true, force: true })
  })

  it(
    `${HTTP_CLIENTS} HTTP clients, ${MODBUS_CLIENTS} Modbus clients, snapshot save/load every ${SNAPSHOT_EVERY_MS / 1000} s: no crash, no 5xx, fds and RSS flat`,
    { timeout: (SECONDS + 60) * 1000 },
    async (ctx) => {
      const modbusPort = await freePort()
      await writeFile(join(dir, 'system.json'), JSON.stringify(system(modbusPort)))
      server = await serveMimic([
        '--system',
        join(dir, 'system.json'),
        '--extensions',
        join(dir, 'extensions'),
        '--snapshots-dir',
        join(dir, 'snapshots'),
        '--product-key',
        KEY,
        '--python-workers',
        '2',
      ])
      const srv = server
      const agent = new Agent({ keepAlive: true, maxSockets: HTTP_CLIENTS + 5 })
      const auth = { authorization: `Bearer ${KEY}` }
      const api = (method: string, path: string, body?: unknown): ReturnType<typeof rawRequest> =>
        rawRequest(srv.url, method, path, { body, headers: auth, agent })
      assert.equal((await api('POST', `${SYS}/method/prepare`, {})).status, 200)

      const statuses = new Map<string, number>()
      const unexpected: string[] = []
      const count = (kind: string, status: number, body: unknown): void => {
        const key = `${kind} ${status}`
        statuses.set(key, (statuses.get(key) ?? 0) + 1)
        // 409: a Python-backed instance between a snapshot load and the prepare that follows it.
        if (status !== 200 && !(status === 409 && /not prepared|ERROR/.test(JSON.stringify(body)))) {
          if (unexpected.length < 20) unexpected.push(`${key}: ${JSON.stringify(body).slice(0, 300)}`)
        }
      }
      let stop = false
      const random = (n: number): number => Math.floor(Math.random() * n)

      const httpClient = async (id: number): Promise<number> => {
        let done = 0
        while (!stop) {
          const r = random(100)
          const panel = `panel${random(PANELS)}`
          const sensor = `sensor${1 + random(UNITS)}`
          let kind: string
          let res: Awaited<ReturnType<typeof api>>
          try {
            if (r < 25) {
              kind = 'read'
              res = await api('GET', `${SYS}/instances/${r < 12 ? panel : sensor}/attributes/${r < 12 ? 'value' : 'temperature'}/attr/internal_value`)
            } else if (r < 35) {
              kind = 'read-doc'
              res = await api('GET', `${SYS}/instances/${r < 30 ? panel : sensor}`)
            } else if (r < 55) {
              kind = 'write'
              res = await api('PUT', `${SYS}/instances/${panel}/attributes/setpoint/attr/internal_value`, { value: id + done / 1000 })
            } else if (r < 62) {
              kind = 'patch'
              res = await api('PATCH', `${SYS}/instances/${panel}/attributes/mode`, { internal_value: random(100) })
            } else if (r < 75) {
              kind = 'run-instance'
              res = await api('POST', `${SYS}/instances/${r < 68 ? panel : sensor}/method/run`, {})
            } else if (r < 82) {
              kind = 'call'
              res = await api('POST', `${SYS}/instances/${sensor}/method/calibrate`, { kwargs: { offset: 0 } })
            } else if (r < 92) {
              kind = 'run-system'
              res = await api('POST', `${SYS}/method/run`, { kwargs: { steps: 1 + random(3), dt: 0.1 } })
            } else {
              kind = 'health'
              res = await api('GET', r < 96 ? '/health' : `${SYS}/instances`)
            }
          } catch (err) {
            kind = 'network'
            res = { status: 0, body: (err as Error).message, headers: {} }
          }
          count(kind, res.status, res.body)
          done++
          await sleep(20 + random(20))
        }
        return done
      }

      const modbusTally = { reads: 0, exceptions: 0, timeouts: 0, reconnects: 0 }
      const modbusClient = async (): Promise<void> => {
        let client: TestClient | undefined
        let closed = false
        while (!stop) {
          try {
            // The server closes connections when a snapshot load stops the adapters; a request
            // written to a closed socket would only time out, so notice the close and reconnect.
            if (closed) {
              client = undefined
              closed = false
              modbusTally.reconnects++
            }
            if (!client) {
              const fresh = await TestClient.connect(modbusPort)
              void fresh.closed.then(() => (closed = fresh === client))
              client = fresh
            }
            const response = await client.request({ fc: 3, address: 0, quantity: 2 }, { unitId: 1 + random(UNITS), timeoutMs: 2000 })
            if ('exception' in response) modbusTally.exceptions++
            else modbusTally.reads++
            await sleep(20 + random(20))
          } catch (err) {
            // The listener closes while a snapshot load replaces the system, until prepare() restarts it.
            if (/time-out/.test((err as Error).message)) modbusTally.timeouts++
            client?.close()
            client = undefined
            closed = false
            modbusTally.reconnects++
            await sleep(100)
          }
        }
        client?.close()
      }

      const snapshotTally = { saves: 0, loads: 0, failures: [] as string[] }
      const snapshotter = async (): Promise<void> => {
        while (!stop) {
          for (const until = Date.now() + SNAPSHOT_EVERY_MS; !stop && Date.now() < until;) await sleep(100)
          if (stop) break
          const saved = await api('POST', `${SYS}/snapshots/method/save`, { kwargs: { label: `soak ${snapshotTally.saves}` } })
          count('save', saved.status, saved.body)
          if (saved.status !== 200) continue
          snapshotTally.saves++
          const loaded = await api('POST', `${SYS}/snapshots/method/load`, { kwargs: { id: saved.body.result.id } })
          count('load', loaded.status, loaded.body)
          if (loaded.status === 200) snapshotTally.loads++
          const prepared = await api('POST', `${SYS}/method/prepare`, {})
          count('prepare', prepared.status, prepared.body)
        }
      }

      const samples: Sample[] = []
      const sample = (): Sample => {
        const { fds, rssKb } = procStats(srv.pid)
        const workersRssKb = workerProcesses(srv.pid).live.reduce((sum, w) => {
          try {
            return sum + procStats(w.pid).rssKb
          } catch {
            return sum
          }
        }, 0)
        return { at: Date.now(), fds, rssKb, workersRssKb }
      }
      const idleBefore = sample()
      const started = Date.now()
      const sampler = (async () => {
        while (!stop) {
          samples.push(sample())
          await sleep(1000)
        }
      })()
      const load = Promise.all([
        ...Array.from({ length: HTTP_CLIENTS }, (_, i) => httpClient(i)),
        ...Array.from({ length: MODBUS_CLIENTS }, () => modbusClient()),
        snapshotter(),
      ])
      await sleep(SECONDS * 1000)
      const end = sample()
      stop = true
      const results = await load
      await sampler
      const requests = (results.slice(0, HTTP_CLIENTS) as number[]).reduce((a, b) => a + b, 0)
      const elapsed = (Date.now() - started) / 1000

      // Idle again: client connections closed, the server should drop back to where it started
      // within 1.5 s (asserted below with the last sample).
      agent.destroy()
      const idleAfter = await waitFor(() => {
        const now = sample()
        return now.fds <= idleBefore.fds + 5 && now
      }, 1500).catch(() => sample())

      // The warm-up sample: a third into the run, once pools, caches and JIT have settled.
      const warm = samples[Math.floor(samples.length / 3)]!
      const maxFds = Math.max(...samples.map((s) => s.fds))
      const maxRss = Math.max(...samples.map((s) => s.rssKb))
      const mb = (kb: number): string => `${(kb / 1024).toFixed(1)} MiB`
      ctx.diagnostic(
        `${elapsed.toFixed(1)} s: ${requests} HTTP requests (${Math.round(requests / elapsed)}/s), ` +
          `${modbusTally.reads} Modbus reads, ${modbusTally.exceptions} exception answers, ${modbusTally.timeouts} time-outs, ${modbusTally.reconnects} reconnects, ` +
          `${snapshotTally.saves} saves + ${snapshotTally.loads} loads`,
      )
      ctx.diagnostic(`statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`)
      ctx.diagnostic(`server fds: idle ${idleBefore.fds}, warm ${warm.fds}, end ${end.fds}, max ${maxFds}, idle after ${idleAfter.fds}`)
      ctx.diagnostic(
        `server RSS: idle ${mb(idleBefore.rssKb)}, warm ${mb(warm.rssKb)}, end ${mb(end.rssKb)}, max ${mb(maxRss)}, idle after ${mb(idleAfter.rssKb)}; ` +
          `Python workers RSS: warm ${mb(warm.workersRssKb)}, end ${mb(end.workersRssKb)}`,
      )

      assert.equal(srv.child.exitCode, null, `the server died: ${srv.stderr()}`)
      assert.deepEqual(unexpected, [], 'answers other than 200 (and 409 for an instance not yet prepared after a load)')
      assert.ok(![...statuses.keys()].some((k) => / 5\d\d$/.test(k)), JSON.stringify([...statuses]))
      assert.deepEqual(
        srv.logs.filter((r) => Number(r.level) >= 50).map((r) => r.msg),
        [],
        'error-level log records',
      )
      assert.equal(srv.stderr(), '', 'nothing on stderr (an unhandled rejection would be reported there)')
      assert.ok(requests > HTTP_CLIENTS * SECONDS, `only ${requests} HTTP requests in ${SECONDS} s`)
      assert.ok(modbusTally.reads > MODBUS_CLIENTS * SECONDS, `only ${modbusTally.reads} Modbus reads`)
      // Loads kept coming through the run: each cycle waits for its save and load, which take longer
      // on a busy machine, so at least half the cycles the period allows (not all of them).
      assert.ok(snapshotTally.loads >= Math.floor((SECONDS * 1000) / SNAPSHOT_EVERY_MS / 2), `only ${snapshotTally.loads} loads`)
      // Flat: under the same load, the end may exceed the warm-up sample only by a margin.
      assert.ok(end.fds <= warm.fds + 20, `fds grew from ${warm.fds} to ${end.fds}`)
      assert.ok(idleAfter.fds <= idleBefore.fds + 5, `idle fds grew from ${idleBefore.fds} to ${idleAfter.fds}`)
      assert.ok(end.rssKb <= warm.rssKb * 1.3 + 20 * 1024, `RSS grew from ${mb(warm.rssKb)} to ${mb(end.rssKb)}`)
      assert.ok(end.workersRssKb <= warm.workersRssKb * 1.3 + 10 * 1024, `worker RSS grew from ${mb(warm.workersRssKb)} to ${mb(end.workersRssKb)}`)

      const stopAt = Date.now()
      srv.child.kill('SIGTERM')
      assert.deepEqual(await srv.exited, { code: 0, signal: null })
      ctx.diagnostic(`SIGTERM -> exit ${Date.now() - stopAt} ms`)
    },
  )
})
