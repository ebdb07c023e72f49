/**
 * The fast lane's work for `GET .../attributes/<attr>` without the sockets: the lane's tree
 * handler (path, key, tree, document) and the response bytes, in a tight loop, for a float
 * attribute holding an integral value (written `230.0`), a float holding a fraction, an int and a
 * string. It runs the compiled code (dist/) of each checkout given, in one process and in
 * interleaved turns, so that two builds see the same machine:
 *
 *   node bench/profile/attribute-get.mjs [iterations=100000] [rounds=9] [checkout ...]
 *
 * (default checkout: this one). Prints per case and checkout the median and the best round in
 * microseconds per request, and with two checkouts the median of the per-round ratios
 * (second / first).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import pino from 'pino'

const [iterations = '100000', rounds = '9', ...given] = process.argv.slice(2)
const checkouts = (given.length ? given : ['.']).map((c) => resolve(c))
const KEY = 'bench-key'
const CASES = ['voltage', 'current', 'count', 'label']
const logger = pino({ level: 'silent' })

/** A running server of one checkout with one instance, and its lane handler. */
async function setUp(root) {
  const { parseConfig } = await import(`${root}/dist/src/config.js`)
  const { startMimic } = await import(`${root}/dist/src/mimic.js`)
  const { treeLaneHandler } = await import(`${root}/dist/src/server/fast-lane/handler.js`)
  const { serializeResponse } = await import(`${root}/dist/src/server/fast-lane/response.js`)
  // The lane declines what the browser checks refuse, as the server's own handler does (app.ts):
  // it needs the same guard, or every request fails before the tree sees it.
  const { BrowserGuard } = await import(`${root}/dist/src/server/browser-guard.js`)
  const dir = await mkdtemp(join(tmpdir(), 'mimic-attr-get-'))
  const config = parseConfig({ port: 0, productKey: KEY, snapshotsDir: join(dir, 'snapshots'), extensions: [dir], pythonWorkers: 1 }, {})
  const mimic = await startMimic(config, { logger })
  const put = async (path, body) => {
    const res = await fetch(`${mimic.url}/api/v3/system/${path}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    if (res.status !== 200) throw new Error(`PUT ${path}: ${res.status} ${await res.text()}`)
  }
  await put('models', {
    Meter: {
      attributes: {
        voltage: { default: 230, type: 'float', unit: 'V' },
        current: { default: 12.25, type: 'float', unit: 'A' },
        count: { default: 30, type: 'int' },
        label: 'meter one',
      },
    },
  })
  await put('instances', { m1: 'Meter' })
  const guard = new BrowserGuard({ allowedHosts: [], corsOrigins: [], productKeySet: true })
  const handler = treeLaneHandler({ system: mimic.system, authorized: (h) => h === `Bearer ${KEY}`, guard, logger })
  const answer = (req) => {
    const response = handler(req)
    // A declined request (undefined) would be fastify's to answer: here it means the case measures nothing.
    if (response === undefined || typeof response.then === 'function') throw new Error(`the lane did not answer ${req.url} at once`)
    return serializeResponse(response, 5000)
  }
  return { root, answer, close: async () => (await mimic.close(), await rm(dir, { recursive: true, force: true })) }
}

const servers = []
for (const root of checkouts) servers.push(await setUp(root))
const times = new Map()
let sink = 0
for (let round = 0; round < Number(rounds); round++) {
  for (const attr of CASES) {
    const req = {
      method: 'GET',
      url: `/api/v3/system/instances/m1/attributes/${attr}`,
      headers: { authorization: `Bearer ${KEY}`, host: '127.0.0.1' },
      body: '',
    }
    for (const server of round % 2 ? [...servers].reverse() : servers) {
      const started = process.hrtime.bigint()
      for (let i = 0; i < Number(iterations); i++) sink += server.answer(req).length
      const us = Number(process.hrtime.bigint() - started) / 1000 / Number(iterations)
      const key = `${attr} ${server.root}`
      times.set(key, [...(times.get(key) ?? []), us])
    }
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const attr of CASES) {
  for (const server of servers) {
    const xs = times.get(`${attr} ${server.root}`)
    const value = /,"internal_value":([^,]*),/.exec(
      server.answer({ method: 'GET', url: `/api/v3/system/instances/m1/attributes/${attr}`, headers: { authorization: `Bearer ${KEY}` }, body: '' }),
    )?.[1]
    console.log(`${attr.padEnd(8)} ${String(value).padEnd(12)} ${server.root}: median ${median(xs).toFixed(3)} us, best ${Math.min(...xs).toFixed(3)} us`)
  }
  if (servers.length === 2) {
    const [a, b] = servers.map((s) => times.get(`${attr} ${s.root}`))
    console.log(`${attr.padEnd(8)} ratio ${median(a.map((x, i) => b[i] / x)).toFixed(3)} (median of per-round ratios, second / first)`)
  }
}
for (const server of servers) await server.close()
if (sink === 0) console.log('')
