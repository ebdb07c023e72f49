#!/usr/bin/env node
// `npm test`: builds (the CLI tests run the `mimic` command's bundle, the server serves the built
// dashboard; incremental, an up-to-date build takes seconds, see tsconfig.json), bundles each test
// file (scripts/build-tests.mjs: esbuild, a few seconds), then runs every test file with node's
// test runner — the compiled TypeScript, and the Python SDK's unittest suite through
// test/python-sdk.test.ts — so one closing summary counts everything. Type-checks and lint are
// `npm run check`, not part of this loop: esbuild strips the types without checking them.
// MIMIC_TEST_TSX=1 runs the TypeScript files themselves through tsx instead (slower: see
// build-tests.mjs).
// `node scripts/run-tests.mjs modbus` (or `npm test -- modbus`) runs the files whose path contains
// "modbus".
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { buildTests, compiledPath, copyDir, removeCopy } from './build-tests.mjs'
import { TIMES_FILE } from './test-times.mjs'

const root = new URL('..', import.meta.url).pathname
const tsc = join(root, 'node_modules/typescript/bin/tsc')
const only = process.argv.slice(2)
// `npm run build`'s steps. The client package first: the server imports it by its name, from
// packages/client/dist. `tsc -b` skips a project whose inputs are all older than its build info.
const build = [[tsc, '-b', 'packages/client/tsconfig.json', 'tsconfig.json'], [join(root, 'scripts/build-ui.mjs')], [join(root, 'scripts/build-cli.mjs')]]
for (const step of build) {
  const done = spawnSync(process.execPath, step, { cwd: root, stdio: 'inherit' })
  if (done.status !== 0) process.exit(done.status ?? 1)
}

const files = []
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) walk(path)
    else if (name.endsWith('.test.ts')) files.push(path)
  }
}
walk(join(root, 'test'))
const selected = only.length ? files.filter((f) => only.some((o) => f.includes(o))) : files

// Longest files first, so that the last ones to finish are short: the run takes about as long as
// its longest file plus what is left when that one starts. The lengths are those of the previous
// run on this machine (scripts/test-times.mjs keeps them); without one (a fresh checkout, CI: npm ci
// empties node_modules and its cache), these, the longest of a run on two cores (10-55 s each,
// longest first), start first, each in a process of its own (see withSharedProcesses).
const SLOW = [
  'test/bench-smoke.test.ts',
  'test/reliability/security-survival.test.ts',
  'test/reliability/modbus-idle.test.ts',
  'test/reliability/mqtt-lifecycle.test.ts',
  'test/protocols/conformance.test.ts',
  'test/opcua-adapter.test.ts',
  'test/cli.test.ts',
  'test/security-opcua.test.ts',
  'test/reliability/python-faults.test.ts',
  'test/reliability/pipelined-floods.test.ts',
  'test/fleet-command.test.ts',
  'test/openapi-try.test.ts',
  'test/reliability/soak.test.ts',
  'test/reliability/shutdown-run.test.ts',
  'test/modbus-faults.test.ts',
  'test/reliability/ascii-hostile.test.ts',
  'test/snapshots-shutdown.test.ts',
  'test/bacnet.test.ts',
  'test/metrics.test.ts',
  'test/opcua-security.test.ts',
]
let seconds = {}
try {
  seconds = JSON.parse(readFileSync(join(root, TIMES_FILE), 'utf8'))
} catch {
  // No previous run: the fixed list above orders the start.
}
const weight = (file) => {
  const name = relative(root, file)
  if (typeof seconds[name] === 'number') return seconds[name]
  const slow = SLOW.indexOf(name)
  return slow >= 0 ? 1000 - slow : 0
}
selected.sort((a, b) => weight(b) - weight(a))

// Four files at a time on two cores: many files spend much of their time waiting (time-outs a
// test asserts, brokers and clients in other processes, Chromium), so two at a time left the
// cores idle for about a third of the run. Full runs on this two-core machine, every test
// passing: 334 s at two, 263-285 s at three, 243-247 s at four; with the longest files really
// first (test-files.mjs), the cores stay busy through the run. With files sharing processes, five
// and six at a time were no faster (216 and 215 s, against 202-225 s at four): the cores were busy
// 96 % of the run (vmstat). MIMIC_TEST_CONCURRENCY sets another number.
const concurrency = Number(process.env.MIMIC_TEST_CONCURRENCY) || 4

// Most test files share a process with others: a file's own process costs about 0.65 s of CPU
// before and around its tests (the runner's child, loading and compiling the bundle, the server's
// code warming up again), about a third of a small file's CPU. 48 small integration files took
// 68 s of CPU one process each and 36 s in one process, all passing. The files of a process,
// imported by one entry, run one after another; node's runner still names each test's own file (in
// the summary, the failures and scripts/test-times.mjs). No test file has hooks outside its
// describe blocks (a lint rule in eslint.config.js), so one file's servers are closed before the
// next file starts.
// A file keeps a process of its own when
// - it is in test/reliability/: those tests count the descriptors, memory and processes of a
//   process, or signal it;
// - it holds a line starting with `// @own-process` (and the reason), e.g. a test of which modules
//   a fresh process has loaded;
// - it is longer than a group (GROUP_SECONDS) by itself, so that the long files run side by side.
// The files of test/lane-off/ set MIMIC_FAST_LANE for their whole process: they share processes
// only with each other. A run of one file (`npm test -- test/unit/x`) runs it alone, and so does
// every file through tsx.
const GROUP_SECONDS = 20
// Without a recorded length (a fresh checkout, CI), a unit file counts as 1 s and any other as 4 s:
// about what most take, so that a group of files nobody timed yet stays well within the time
// limit of a file (--test-timeout below).
const unrecorded = (file) => (file.startsWith(join(root, 'test/unit/')) ? 1 : 4)

function withSharedProcesses(files, dir) {
  const entries = []
  const pools = { shared: [], laneOff: [] }
  for (const file of files) {
    const seconds = weight(file) || unrecorded(file)
    const name = relative(root, file)
    const own = name.startsWith('test/reliability/') || seconds > GROUP_SECONDS || /^\/\/ @own-process/m.test(readFileSync(file, 'utf8'))
    if (own) entries.push({ files: [file], seconds })
    else pools[name.startsWith('test/lane-off/') ? 'laneOff' : 'shared'].push({ file, seconds })
  }
  for (const pool of Object.values(pools)) entries.push(...packed(pool))
  let groups = 0
  return entries
    .sort((a, b) => b.seconds - a.seconds)
    .map((entry) => {
      if (entry.files.length === 1) return compiledPath(entry.files[0], dir)
      const path = join(dir, `group-${++groups}.mjs`)
      // Static imports: the files' tests are all known before the first one ends (with
      // --test-force-exit, the process ends once every test it knows of has).
      writeFileSync(path, entry.files.map((file) => `import ${JSON.stringify(pathToFileURL(compiledPath(file, dir)).href)}\n`).join(''))
      return path
    })
}

/** Packs files into groups of at most GROUP_SECONDS, the longest first, each into the first group it fits. */
function packed(pool) {
  const groups = []
  for (const { file, seconds } of pool.sort((a, b) => b.seconds - a.seconds)) {
    const group = groups.find((g) => g.seconds + seconds <= GROUP_SECONDS)
    if (group) {
      group.files.push(file)
      group.seconds += seconds
    } else groups.push({ files: [file], seconds })
  }
  return groups
}

// The compiled copy of the files (see build-tests.mjs), or the TypeScript through tsx.
const throughTsx = process.env.MIMIC_TEST_TSX === '1'
const copy = copyDir()
let testFiles = selected
if (!throughTsx) {
  await buildTests(copy)
  testFiles = withSharedProcesses(selected, copy)
}

// A version manager's `python3` (pyenv's shim: a shell script that forks about thirty shells)
// costs about 80 ms of CPU per start, against 20 ms for the interpreter itself, and the tests
// start `python3` a few hundred times (each test process's server asks it for its real path once,
// CLI tests start servers, tests run Python scripts). Like the version manager's own `exec`, the
// run puts the directory of the interpreter it resolves to first on PATH; where `python3` is the
// interpreter itself, PATH is left as it is.
const env = { ...process.env, PATH: pathWithPythonFirst(process.env.PATH ?? '') }
function pathWithPythonFirst(path) {
  const asked = spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' })
  const real = asked.status === 0 ? asked.stdout.trim() : ''
  const found = path.split(':').find((dir) => dir && existsSync(join(dir, 'python3')))
  if (!real || !found || dirname(real) === found) return path
  // Only where that directory's own `python3` is the same interpreter.
  const same = (a, b) => existsSync(a) && existsSync(b) && realpathSync(a) === realpathSync(b)
  return same(join(dirname(real), 'python3'), real) ? `${dirname(real)}:${path}` : path
}

// The files run through scripts/test-files.mjs, node's test runner by its API: `node --test`
// would run them sorted by name, not in the order above. Each file's process gets this one's node
// flags. A file whose tests have all finished exits even if a third-party handle lingers
// (test-files.mjs: forceExit; once in a while Chromium's teardown in the dashboard test kept its
// file alive until the time limit). Leaks of Mimic's own processes, sockets and descriptors are
// asserted by the tests in test/reliability, so this hides none of them.
// --test-timeout bounds each test, and each test file as a whole: the benchmarks' smoke run
// (test/bench-smoke.test.ts) takes about 40 s on a quiet machine and up to its own 235 s limit
// beside other test files on two busy cores, so the bound is above that.
// Beside node's `spec`, scripts/test-times.mjs records each file's length for the next run's order
// and prints the slowest files after the summary.
const run = spawnSync(
  process.execPath,
  [
    ...(throughTsx ? ['--import', 'tsx'] : ['--enable-source-maps']),
    // Test files' reports written synchronously, so that a forced exit drops none (test-stdout.mjs).
    '--import',
    join(root, 'scripts/test-stdout.mjs'),
    '--test-timeout=240000',
    join(root, 'scripts/test-files.mjs'),
    ...testFiles,
  ],
  // MIMIC_TEST_ALL_FILES: the reporter may name a file that ran no test (a run of some files leaves
  // the others out), and it replaces the recorded lengths only after a run of every file.
  // MIMIC_TEST_COPY: the reporter names the compiled files by their sources.
  {
    cwd: root,
    stdio: 'inherit',
    env: {
      ...env,
      MIMIC_TEST_CONCURRENCY: String(concurrency),
      MIMIC_TEST_ALL_FILES: only.length ? '0' : '1',
      ...(throughTsx ? {} : { MIMIC_TEST_COPY: copy }),
    },
  },
)
if (!throughTsx) removeCopy(copy)
process.exit(run.status ?? 1)
