// A reporter for node's test runner (scripts/run-tests.mjs adds it beside `spec`): how long each
// test file took — the sum of its top-level tests, which run one after another; node's runner
// reports no per-file duration of its own — kept for the next run's order, and the slowest files
// printed after the run.
import { mkdirSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'

/** Where the lengths of the previous run are kept, relative to the repository. */
export const TIMES_FILE = 'node_modules/.cache/mimic-test-times.json'

const root = new URL('..', import.meta.url).pathname

// eslint-disable-next-line require-yield -- it prints with writeSync, see below
export default async function* testTimes(source) {
  const seconds = {}
  let done = false
  for await (const event of source) {
    if (event.type === 'test:pass' || event.type === 'test:fail') {
      if (event.data.nesting !== 0 || !event.data.file) continue
      const file = relative(root, event.data.file)
      seconds[file] = (seconds[file] ?? 0) + (event.data.details?.duration_ms ?? 0) / 1000
    } else if (!done && event.type === 'test:diagnostic' && event.data.nesting === 0 && String(event.data.message).startsWith('tests ')) {
      // The summary's first line: every file is done. Written at once, not yielded:
      // --test-force-exit ends the process before a reporter's stream is read to its end.
      done = true
      report(seconds)
    }
  }
  if (!done) report(seconds)
}

function report(seconds) {
  const files = Object.keys(seconds)
  if (files.length === 0) return
  // Merged into the previous run's lengths, so that a run of a few files keeps the others'.
  const path = join(root, TIMES_FILE)
  let kept = {}
  try {
    kept = JSON.parse(readFileSync(path, 'utf8'))
  } catch {
    // First run on this machine.
  }
  for (const file of files) kept[file] = Math.round(seconds[file] * 10) / 10
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
