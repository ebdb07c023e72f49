#!/usr/bin/env node
/**
 * The same benchmarks against the server of an earlier commit and of this checkout, in one run,
 * alternating (before, after; then after, before; ...) so that the machine's load falls on both
 * alike. Writes bench/BEFORE-AFTER.md: each summary row's Mimic figure before and after, and
 * their ratio, in a section per benchmark; the sections of benchmarks not run are kept. The
 * peers of a benchmark run in both halves; only the figure of Mimic is compared.
 *
 *   node bench/before-after.mjs --before 4c117e5 modbus http declarative snapshots
 *   --rounds N     rounds of each side (default 2); the table gives the median of each side
 *   --out FILE     write the comparison elsewhere
 *
 * The earlier commit is checked out in a temporary worktree, uses this checkout's node_modules
 * (a commit whose dependencies differ may fail to build: the build's error says so) and is built
 * there with its own `npm run build`. The benchmarks' harness is this checkout's (bench/run.mjs
 * --server starts the other checkout's `mimic serve`), so both sides are measured by one harness.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, symlinkSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { median } from './lib/stats.mjs'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const argv = process.argv.slice(2)
const option = (name, fallback) => {
  const i = argv.indexOf(name)
  return i >= 0 ? argv[i + 1] : fallback
}
const before = option('--before')
const rounds = Number(option('--rounds', '2'))
const out = option('--out', join(ROOT, 'bench/BEFORE-AFTER.md'))
const benchmarks = argv.filter((a, i) => !a.startsWith('--') && !['--before', '--rounds', '--out'].includes(argv[i - 1]))
if (!before || !Number.isInteger(rounds) || rounds < 1) {
  console.error('usage: node bench/before-after.mjs --before <commit> [--rounds N] [--out FILE] [benchmark ...]')
  process.exit(2)
}

const git = (...args) => {
  const r = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.trim()}`)
  return r.stdout.trim()
}
const describe = (rev) => git('log', '-1', '--format=%h %ad %s', '--date=format:%Y-%m-%d %H:%M', rev)
const beforeSha = git('rev-parse', '--verify', `${before}^{commit}`)
const afterDescription = `${describe('HEAD')}${git('status', '--porcelain', '--untracked-files=no') ? ' (with uncommitted changes)' : ''}`

const log = (text) => console.error(text)
const work = await mkdtemp(join(tmpdir(), 'mimic-before-after-'))
const tree = join(work, 'before')
try {
  log(`checking out ${describe(beforeSha)} in ${tree}`)
  git('worktree', 'add', '--detach', tree, beforeSha)
  symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'))
  log('building it (npm run build)')
  const build = spawnSync('npm', ['run', 'build'], { cwd: tree, encoding: 'utf8' })
  if (build.status !== 0) throw new Error(`the earlier commit does not build with this checkout's node_modules:\n${build.stdout}${build.stderr}`)

  const loads = []
  /** @type {{ before: Map<string, number[]>, after: Map<string, number[]> }} */
  const figures = { before: new Map(), after: new Map() }
  /** The text of each row's Mimic figure (the last round's) and how its number reads. */
  const rows = new Map()
  /** Each benchmark's title, from its report's heading (`## 3. Modbus FC3 read ...`). */
  const titles = new Map()
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? ['before', 'after'] : ['after', 'before']
    for (const side of order) {
      const file = join(work, `${side}-${round}.md`)
      const args = [join(ROOT, 'bench/run.mjs'), ...benchmarks, '--no-install', '--out', file]
      if (side === 'before') args.push('--server', tree)
      loads.push(loadavg()[0])
      log(`round ${round}: ${side}`)
      const run = spawnSync(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] })
      if (!existsSync(file)) throw new Error(`bench/run.mjs wrote no report for the ${side} side (exit ${run.status})`)
      const report = await readFile(file, 'utf8')
      for (const [, id, title] of report.matchAll(/^## (\d+)\. (.+)$/gm)) titles.set(id, title)
      for (const row of summaryRows(report)) {
        const key = `${row.id} | ${row.case}`
        if (row.value === undefined) continue
        if (!figures[side].has(key)) figures[side].set(key, [])
        figures[side].get(key).push(row.value)
        rows.set(key, { ...rows.get(key), [side]: row.text, unit: row.unit })
      }
    }
  }

  // One section per benchmark: a run rewrites the sections of the benchmarks it ran and keeps the
  // others, each with the command, date and loads it was measured with.
  const header = [
    `Measured by \`node bench/before-after.mjs ${argv.join(' ')}\` on ${new Date().toISOString()}: the same benchmarks`,
    `(bench/run.mjs) against the server of each side, ${rounds} round(s) each, alternating; the machine's load average`,
    `(1 min) at the start of each half: ${loads.map((l) => l.toFixed(1)).join(', ')}.`,
    '',
    `- before: ${describe(beforeSha)}`,
    `- after: ${afterDescription}`,
    '',
    '| case | before (median) | after (median) | after / before | better | rounds: before; after |',
    '|---|---|---|---|---|---|',
  ]
  const sections = new Map(existsSync(out) ? sectionsOf(await readFile(out, 'utf8')) : [])
  const ran = new Map()
  for (const [key, row] of rows) {
    const b = figures.before.get(key)
    const a = figures.after.get(key)
    if (!b || !a) continue
    const ratio = median(a) / median(b)
    const [id, name] = key.split(' | ')
    const each = `${b.map(fmt).join(', ')}; ${a.map(fmt).join(', ')}`
    if (!ran.has(id)) ran.set(id, [`## ${id}. ${titles.get(id) ?? `benchmark ${id}`}`, '', ...header])
    ran.get(id).push(`| ${name} | ${fmt(median(b))} ${row.unit} | ${fmt(median(a))} ${row.unit} | ${ratio.toFixed(3)} | ${better(row.unit)} | ${each} |`)
  }
  for (const [id, section] of ran) sections.set(id, section.join('\n'))
  const lines = [
    '# Benchmarks before and after',
    '',
    'Each section compares the server of an earlier commit with this one, on the benchmarks of',
    'bench/run.mjs run alternately against each. Each figure is the first number of the Mimic column',
    "of the benchmark's summary (bench/RESULTS.md says what each case measures). A run of",
    '`node bench/before-after.mjs` rewrites the sections of the benchmarks it ran and keeps the others.',
    '',
    ...[...sections.entries()].sort(([a], [b]) => Number(a) - Number(b)).map(([, text]) => `${text.trimEnd()}\n`),
  ]
  await writeFile(out, lines.join('\n'))
  log(`wrote ${out}`)
} finally {
  spawnSync('git', ['worktree', 'remove', '--force', tree], { cwd: ROOT })
  await rm(work, { recursive: true, force: true })
}

/** The sections of an earlier BEFORE-AFTER.md by benchmark number (`## 3. ...` up to the next). */
function sectionsOf(text) {
  return [...text.matchAll(/^## (\d+)\. [\s\S]*?(?=^## |(?![\s\S]))/gm)].map((m) => [m[1], m[0]])
}

/**
 * The rows of a report's summary table: benchmark number, case, and the first number of the
 * Mimic column with its unit (`/s`, `ms`, `KiB`, ...), or no value when the column has none.
 */
function summaryRows(report) {
  const section = report.split('\n## Summary')[1]?.split('\n## ')[0] ?? ''
  const rows = []
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim())
    if (cells.length < 5 || !/^\d+$/.test(cells[1] ?? '')) continue
    const text = cells[3] ?? ''
    const m = /(-?[\d,]*\.?\d+)\s*(M instance-steps\/s|M instance-steps per CPU-second|\/s|ms|us|s\b|KiB|MiB|%)?/.exec(text)
    rows.push({ id: cells[1], case: cells[2], text, value: m ? Number(m[1].replaceAll(',', '')) : undefined, unit: m?.[2] ?? '' })
  }
  return rows
}

/** Whether a larger figure in `unit` is better: rates are, times, sizes and CPU shares are not. */
function better(unit) {
  return unit.endsWith('/s') || unit.includes(' per ') ? 'higher' : 'lower'
}

function fmt(n) {
  return Math.abs(n) >= 100 ? Math.round(n).toLocaleString('en-US') : String(Number(n.toPrecision(3)))
}
