/**
 * Benchmark 4: snapshot save and load of a system of many instances of 10 declarative models,
 * at three sizes, to show that time and file size grow linearly; and at 10,000 instances (every
 * size of a smoke run) the same with runtime state (`include_state`), as a ratio to the
 * structure-only save and load of the same run.
 *
 * @example
 * const result = await snapshots.run(ctx)
 */
import { stat } from 'node:fs/promises'
import { startMimicProcess } from '../lib/mimic-process.mjs'
import { declarativeModel, instanceMap } from '../lib/models.mjs'
import { median, bytes, sig } from '../lib/stats.mjs'

const MODELS = 10
const CHUNK = 10_000

/** @type {import('../lib/benchmark.mjs').Benchmark} */
export const snapshots = {
  id: '4',
  key: 'snapshots',
  title: 'Snapshot save and load (10 models)',
  async run(ctx) {
    const sizes = ctx.smoke ? [100, 1000] : [1000, 10_000, 100_000]
    const dir = await ctx.tmpDir()
    const mimic = await startMimicProcess({ python: ctx.python, extensions: ctx.fixtures, dir, workers: 1 })
    ctx.onCleanup(() => mimic.stop())
    const models = {}
    for (let m = 0; m < MODELS; m++) models[`Device${m}`] = declarativeModel({ variant: m })
    await mimic.api('PUT', '/api/v3/system/models', models)

    const measured = []
    let have = 0
    for (const size of sizes) {
      if (measured.length && Date.now() > ctx.deadline) {
        ctx.note(`${size} instances skipped: the benchmark ran out of its time budget`)
        continue
      }
      let t = performance.now()
      for (let from = have; from < size; from += CHUNK) {
        await mimic.api(
          'PUT',
          '/api/v3/system/instances',
          instanceMap({ prefix: 'd', from, to: Math.min(size, from + CHUNK), model: (i) => `Device${i % MODELS}` }),
        )
      }
      const createSeconds = (performance.now() - t) / 1000
      have = size
      const rounds = ctx.smoke || size >= 100_000 ? 1 : 3
      const save = []
      const load = []
      let fileBytes = 0
      for (let round = 0; round < rounds; round++) {
        t = performance.now()
        const saved = await mimic.call('/api/v3/system/snapshots', 'save', { label: `bench ${size}` })
        save.push((performance.now() - t) / 1000)
        if (!saved.persisted_path) throw new Error('save wrote no file (is the store in memory mode?)')
        fileBytes = (await stat(saved.persisted_path)).size
        t = performance.now()
        const loaded = await mimic.call('/api/v3/system/snapshots', 'load', { id: saved.id })
        load.push((performance.now() - t) / 1000)
        if (loaded.instances !== size || loaded.models !== MODELS)
          throw new Error(`load of ${size} instances reported ${loaded.instances} instances, ${loaded.models} models`)
      }
      const entry = { size, createSeconds, save, load, fileBytes }
      if (size <= 10_000) {
        // With state: the values of every attribute, timers, polling; the system was run once so
        // that they are not the defaults.
        await mimic.call('/api/v3/system', 'run', { steps: 1 })
        const stateSave = []
        const stateLoad = []
        let stateBytes = 0
        for (let round = 0; round < rounds; round++) {
          t = performance.now()
          const saved = await mimic.call('/api/v3/system/snapshots', 'save', { label: `bench ${size} state`, include_state: true })
          stateSave.push((performance.now() - t) / 1000)
          if (saved.state !== true) throw new Error('save with include_state saved no state')
          stateBytes = (await stat(saved.persisted_path)).size
          t = performance.now()
          const loaded = await mimic.call('/api/v3/system/snapshots', 'load', { id: saved.id })
          stateLoad.push((performance.now() - t) / 1000)
          if (loaded.instances !== size || loaded.state !== true) throw new Error(`load with state of ${size} instances reported ${JSON.stringify(loaded)}`)
        }
        Object.assign(entry, { stateSave, stateLoad, stateBytes })
        ctx.log(`${size} with state: save ${sig(median(stateSave))} s, load ${sig(median(stateLoad))} s, ${bytes(stateBytes)}`)
      }
      measured.push(entry)
      ctx.log(`${size}: save ${sig(median(save))} s, load ${sig(median(load))} s, ${bytes(fileBytes)}`)
    }

    const rows = []
    const base = measured[0]
    for (const m of measured) {
      const s = median(m.save)
      const l = median(m.load)
      const growth =
        m === base
          ? ''
          : `; x${sig(m.size / base.size)} instances: save x${sig(s / median(base.save))}, load x${sig(l / median(base.load))}, file x${sig(m.fileBytes / base.fileBytes)}`
      const decisive = m.size === 10_000
      rows.push({
        case: `${m.size.toLocaleString('en-US')} instances`,
        mimic: `save ${sig(s * 1000)} ms, load ${sig(l * 1000)} ms, file ${bytes(m.fileBytes)}`,
        peer: '—',
        ratio: `${sig((s / m.size) * 1e6)} / ${sig((l / m.size) * 1e6)} us per instance${growth}`,
        target: decisive ? 'each <= 1 s' : 'linear growth',
        verdict: ctx.smoke ? 'smoke' : decisive ? (s <= 1 && l <= 1 ? 'met' : 'missed') : 'info',
      })
      if (m.stateSave && (decisive || ctx.smoke)) {
        const ss = median(m.stateSave)
        const sl = median(m.stateLoad)
        rows.push({
          case: `${m.size.toLocaleString('en-US')} instances with state`,
          mimic: `save ${sig(ss * 1000)} ms, load ${sig(sl * 1000)} ms, file ${bytes(m.stateBytes)}`,
          peer: 'the structure-only save and load above',
          ratio: `save x${sig(ss / s)}, load x${sig(sl / l)}, file x${sig(m.stateBytes / m.fileBytes)}`,
          target: 'each <= 1 s',
          verdict: ctx.smoke ? 'smoke' : ss <= 1 && sl <= 1 ? 'met' : 'missed',
        })
      }
    }
    const lines = [
      `${MODELS} declarative models of five attributes; instances spread evenly; durable store (a file per save). Times are end-to-end HTTP calls \`snapshots/method/save\` and \`load {id}\`.`,
      '',
      '| instances | create (PUT) | save rounds (s) | load rounds (s) | file | bytes per instance |',
      '|---|---|---|---|---|---|',
      ...measured.map(
        (m) =>
          `| ${m.size} | ${sig(m.createSeconds)} s | ${m.save.map((x) => sig(x)).join(', ')} | ${m.load.map((x) => sig(x)).join(', ')} | ${bytes(m.fileBytes)} | ${sig(m.fileBytes / m.size)} |`,
      ),
      '',
      'With runtime state (`save` with `include_state: true`, after one system step; the load replaces a system of as many instances):',
      '',
      '| instances | save rounds (s) | load rounds (s) | file | bytes per instance |',
      '|---|---|---|---|---|',
      ...measured
        .filter((m) => m.stateSave)
        .map(
          (m) =>
            `| ${m.size} | ${m.stateSave.map((x) => sig(x)).join(', ')} | ${m.stateLoad.map((x) => sig(x)).join(', ')} | ${bytes(m.stateBytes)} | ${sig(m.stateBytes / m.size)} |`,
        ),
    ]
    return { rows, details: lines.join('\n') }
  },
}
