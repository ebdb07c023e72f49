/**
 * Benchmark 5: resident memory of the server per declarative instance (10,000 of them), and per
 * Python-backed instance (server and Python workers together).
 *
 * @example
 * const result = await memory.run(ctx)
 */
import { startMimicProcess } from '../lib/mimic-process.mjs'
import { declarativeModel, instanceMap, sensorModel } from '../lib/models.mjs'
import { processTree } from '../lib/proc-stats.mjs'
import { bytes, sig } from '../lib/stats.mjs'

const CHUNK = 5000
const settle = () => new Promise((r) => setTimeout(r, 500))

/** @type {import('../lib/benchmark.mjs').Benchmark} */
export const memory = {
  id: '5',
  key: 'memory',
  title: 'Memory per instance',
  async run(ctx) {
    const declarative = ctx.smoke ? 500 : 10_000
    const python = ctx.smoke ? 20 : 1000
    const workers = 2

    const dir = await ctx.tmpDir()
    const mimic = await startMimicProcess({ python: ctx.python, extensions: ctx.fixtures, dir, workers })
    ctx.onCleanup(() => mimic.stop())
    const models = {}
    for (let m = 0; m < 10; m++) models[`Device${m}`] = declarativeModel({ variant: m })
    await mimic.api('PUT', '/api/v3/system/models', { ...models, Sensor: sensorModel() })
    // One request of each kind first, so lazily built parts (routes, validators) count in the base.
    await mimic.api('PUT', '/api/v3/system/instances', { warm: 'Device0' })
    await mimic.call('/api/v3/system', 'prepare')
    await mimic.api('GET', '/api/v3/system/instances/warm')
    await settle()
    const base = processTree(mimic.pid)
    for (let from = 0; from < declarative; from += CHUNK) {
      await mimic.api(
        'PUT',
        '/api/v3/system/instances',
        instanceMap({ prefix: 'd', from, to: Math.min(declarative, from + CHUNK), model: (i) => `Device${i % 10}` }),
      )
    }
    await mimic.call('/api/v3/system', 'prepare')
    await settle()
    const withDeclarative = processTree(mimic.pid)
    const perDeclarative = (withDeclarative.main.rssBytes - base.main.rssBytes) / declarative

    // Python: one instance per worker first, so the interpreters' own memory is in the base.
    await mimic.api('PUT', '/api/v3/system/instances', instanceMap({ prefix: 'p', from: 0, to: workers, model: () => 'Sensor' }))
    for (let i = 0; i < workers; i++) await mimic.call(`/api/v3/system/instances/p${i}`, 'prepare')
    await settle()
    const pyBase = processTree(mimic.pid)
    await mimic.api('PUT', '/api/v3/system/instances', instanceMap({ prefix: 'p', from: workers, to: workers + python, model: () => 'Sensor' }))
    for (let i = workers; i < workers + python; i++) await mimic.call(`/api/v3/system/instances/p${i}`, 'prepare')
    await settle()
    const pyAfter = processTree(mimic.pid)
    if (pyAfter.children.length !== workers) throw new Error(`expected ${workers} Python workers, found ${pyAfter.children.length}`)
    const perPythonServer = (pyAfter.main.rssBytes - pyBase.main.rssBytes) / python
    const perPythonWorkers = (pyAfter.rssBytes - pyAfter.main.rssBytes - (pyBase.rssBytes - pyBase.main.rssBytes)) / python

    const rows = [
      {
        case: `${declarative.toLocaleString('en-US')} declarative instances`,
        mimic: `${bytes(perDeclarative)} per instance (server RSS ${bytes(base.main.rssBytes)} -> ${bytes(withDeclarative.main.rssBytes)})`,
        peer: '—',
        ratio: `${sig(perDeclarative / (50 * 1024))} of the target`,
        target: '<= 50 KiB per instance',
        verdict: ctx.smoke ? 'smoke' : perDeclarative <= 50 * 1024 ? 'met' : 'missed',
      },
      {
        case: `${python.toLocaleString('en-US')} Python-backed instances`,
        mimic: `${bytes(perPythonServer + perPythonWorkers)} per instance (server ${bytes(perPythonServer)}, workers ${bytes(perPythonWorkers)})`,
        peer: '—',
        ratio: '—',
        target: 'reported',
        verdict: ctx.smoke ? 'smoke' : 'info',
      },
    ]
    const line = (label, tree) => `| ${label} | ${bytes(tree.main.rssBytes)} | ${tree.children.map((c) => bytes(c.rssBytes)).join(', ') || '—'} |`
    const details = [
      'RSS from /proc of the server process and of its Python workers, 0.5 s after the last request (garbage not yet collected counts: an upper bound).',
      '',
      '| moment | server RSS | worker RSS |',
      '|---|---|---|',
      line('1 instance', base),
      line(`+ ${declarative} declarative, prepared`, withDeclarative),
      line(`+ ${workers} Python-backed (one per worker)`, pyBase),
      line(`+ ${python} more Python-backed, prepared`, pyAfter),
    ]
    return { rows, details: details.join('\n') }
  },
}
