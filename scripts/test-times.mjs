// A reporter for node's test runner (scripts/run-tests.mjs adds it beside `spec`): how long each
// test file took — the sum of its top-level tests, which run one after another; node's runner
// reports no per-file duration of its own — kept for the next run's order, and the slowest files
// printed after the run. It also counts each file's tests under the running Node's major version
// (COUNTS_FILE) and names the files whose count differs from the other version's last run: CI runs
// the suite on Node 20 and then on Node 24, and a test that one of them never runs shows there.
import { mkdirSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { sourceOf } from './build-tests.mjs'

/** Where the lengths of the previous run are kept, relative to the repository. */
export const TIMES_FILE = 'node_modules/.cache/mimic-test-times.json'
/** How many tests each file ran, by Node major version: `{ "20": { "test/x.test.ts": 12 } }`. */
export const COUNTS_FILE = 'node_modules/.cache/mimic-test-counts.json'

const root = new URL('..', import.meta.url).pathname

// eslint-disable-next-line require-yield -- it prints with writeSync, see below
export default async function* testTimes(source) {
  const seconds = {}
  const counts = {}
  let done = false
  for await (const event of source) {
    if (event.type === 'test:pass' || event.type === 'test:fail') {
      if (!event.data.file) continue
      // A file of the run's compiled copy (scripts/build-tests.mjs) is named by its source.
      const copy = process.env.MIMIC_TEST_COPY
      const file = (copy && sourceOf(event.data.file, copy)) || relative(root, event.data.file)
      // Tests at any depth, not suites: what the summary's "tests" line counts.
      if (event.data.details?.type !== 'suite') counts[file] = (counts[file] ?? 0) + 1
      if (event.data.nesting !== 0) continue
      seconds[file] = (seconds[file] ?? 0) + (event.data.details?.duration_ms ?? 0) / 1000
    } else if (!done && event.type === 'test:diagnostic' && event.data.nesting === 0 && String(event.data.message).startsWith('tests ')) {
      // The summary's first line: every file is done. Written at once, not yielded:
      // --test-force-exit ends the process before a reporter's stream is read to its end.
      done = true
      report(seconds)
      compareCounts(counts)
    }
  }
  if (!done) {
    report(seconds)
    compareCounts(counts)
  }
}

/** Keeps this run's test counts per file and prints the files another Node version counted otherwise. */
function compareCounts(counts) {
  const files = Object.keys(counts)
  if (files.length === 0) return
  const major = process.versions.node.split('.')[0]
  const path = join(root, COUNTS_FILE)
  let kept = {}
  try {
    kept = JSON.parse(readFileSync(path, 'utf8'))
  } catch {
    // First run on this machine.
  }
  const lines = []
  for (const [other, theirs] of Object.entries(kept)) {
    if (other === major) continue
    for (const file of files.sort()) {
      if (theirs[file] !== undefined && theirs[file] !== counts[file])
        lines.push(`  ${file}: ${counts[file]} on Node ${major}, ${theirs[file]} on Node ${other}\n`)
    }
    // A file with no test at all is missed only in a run of every file (run-tests.mjs says so).
    if (process.env.MIMIC_TEST_ALL_FILES === '1')
      for (const file of Object.keys(theirs).sort())
        if (counts[file] === undefined && theirs[file] > 0) lines.push(`  ${file}: none on Node ${major}, ${theirs[file]} on Node ${other}\n`)
  }
  kept[major] = { ...kept[major], ...counts }
  try {
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(`${path}.${process.pid}`, JSON.stringify(kept, null, 1) + '\n')
    renameSync(`${path}.${process.pid}`, path)
  } catch {
    // Only the comparison of the next run depends on it.
  }
  if (lines.length) writeSync(1, `test files that ran another number of tests on another Node version (its last run here):\n${lines.join('')}\n`)
}

function report(seconds) {
  const files = Object.keys(seconds)
  if (files.length === 0) return
  // Merged into the previous run's lengths, so that a run of a few files keeps the others'. Only
  // a run of every file replaces a length: a file run alone takes a half or a third of the time it
  // takes beside the others (security-survival: 16 s against 34-48 s), and ordered by that, it
  // started among the last of the next full run and made it longer. A run of some files records
  // only files that have no length yet.
  const path = join(root, TIMES_FILE)
  let kept = {}
  try {
    kept = JSON.parse(readFileSync(path, 'utf8'))
  } catch {
    // First run on this machine.
  }
  const everyFile = process.env.MIMIC_TEST_ALL_FILES === '1'
  for (const file of files) if (everyFile || kept[file] === undefined) kept[file] = Math.round(seconds[file] * 10) / 10
  try {
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(`${path}.${process.pid}`, JSON.stringify(kept, null, 1) + '\n')
    renameSync(`${path}.${process.pid}`, path)
  } catch {
    // Only the order of the next run depends on it.
  }
  const slowest = files.sort((a, b) => seconds[b] - seconds[a]).slice(0, 10)
  const lines = slowest.map((file) => `${seconds[file].toFixed(1).padStart(7)}  ${file}\n`)
  writeSync(1, `\nslowest test files (seconds, sum of their top-level tests):\n${lines.join('')}\n`)
}
