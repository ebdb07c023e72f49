// Runs the test files named on its command line with node's test runner, in the order given
// (scripts/run-tests.mjs starts it). `node --test <files>` sorts its files by name before it runs
// them, so the order run-tests.mjs chooses (the longest files first, the short ones filling in at
// the end) needs the runner's own API, which keeps it. Each file named (a test file, or an entry
// of run-tests.mjs that imports several) runs in a process of its own with this process's node
// flags (run-tests.mjs sets --enable-source-maps or tsx, the synchronous output of test-stdout.mjs
// and --test-timeout, which bounds each test in the files).
//
//   node [flags] scripts/test-files.mjs <file>...
//
// MIMIC_TEST_CONCURRENCY: how many files run at once (run-tests.mjs always sets it).
// The reports: node's `spec` on stdout, and scripts/test-times.mjs, as `node --test` would print
// them with `--test-reporter=spec --test-reporter=./scripts/test-times.mjs`. The exit code is 1
// when a test or a file failed.
import { run } from 'node:test'
import { spec } from 'node:test/reporters'
import testTimes from './test-times.mjs'

const files = process.argv.slice(2)
const concurrency = Number(process.env.MIMIC_TEST_CONCURRENCY) || 1
// --test-timeout (as run-tests.mjs passes it) also bounds each file as a whole, as `node --test` does.
const timeout = Number(process.execArgv.find((arg) => arg.startsWith('--test-timeout='))?.split('=')[1]) || Infinity

// forceExit: a file whose tests have all finished exits even if a handle lingers (run-tests.mjs says why).
const reports = run({ files, concurrency, timeout, forceExit: true })
// A failing `todo` test fails nothing, as with `node --test`.
reports.on('test:fail', (event) => {
  if (!event.todo) process.exitCode = 1
})
reports.compose(new spec()).pipe(process.stdout)
reports.compose(testTimes).pipe(process.stdout)
